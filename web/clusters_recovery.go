package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// toRecoveryJSON is the cluster's recovery object (R4).
func toRecoveryJSON(r models.Recovery) api.Recovery {
	j := api.Recovery{Mode: r.Mode, MaxAttempts: r.MaxAttempts, CooldownMinutes: r.CooldownMinutes,
		EpisodeStartedAt: r.EpisodeStartedAt, AttemptsUsed: r.AttemptsUsed, LastAttemptAt: r.LastAttemptAt,
		NextAttemptAt: r.NextAttemptAt, Requested: r.Requested, Exhausted: r.Exhausted, Outcomes: []api.MachineOutcome{}}
	for _, o := range r.Outcomes {
		j.Outcomes = append(j.Outcomes, api.MachineOutcome(o))
	}
	return j
}

// recoveryView is the recovery panel and its form (problems set after a
// refused form).
func recoveryView(cl models.Cluster, now time.Time, problems map[string]string) *views.RecoveryView {
	if !cl.Lifecycle().OnceUp() {
		return nil
	}
	r, form := cl.Recovery(), cl.PolicyForm()
	v := &views.RecoveryView{ClusterID: cl.ID, Mode: r.Mode, MaxAttempts: strconv.Itoa(form.MaxAttempts),
		Cooldown: strconv.Itoa(form.CooldownMinutes), Problems: problems, Exhausted: r.Exhausted, Requested: r.Requested,
		CanEdit:       cl.CanSetRecovery(),
		CanRecoverNow: cl.CanRecoverNow(),
		Attempts:      strconv.Itoa(r.AttemptsUsed)}
	if r.Mode == models.RecoveryRestart {
		v.Attempts += " of " + strconv.Itoa(r.MaxAttempts)
	}
	if r.EpisodeStartedAt != nil {
		v.Episode = r.EpisodeStartedAt.Format("15:04:05 MST, 2 Jan")
	}
	if cl.DampedAt != nil && r.EpisodeStartedAt != nil {
		v.Paused = cl.DampedAt.Format("15:04:05")
	}
	if r.LastAttemptAt != nil {
		v.LastAttempt = r.LastAttemptAt.Format("15:04:05")
	}
	if r.NextAttemptAt != nil && now.Before(*r.NextAttemptAt) && r.EpisodeStartedAt != nil {
		v.NextAttempt = r.NextAttemptAt.Format("15:04:05")
	}
	for _, o := range r.Outcomes {
		v.Outcomes = append(v.Outcomes, views.OutcomeView{Node: o.Node, Outcome: o.Outcome, Message: o.Message})
	}
	return v
}

// policyFromForm reads the dashboard form; numbers that are not numbers are
// field problems like any other.
func policyFromForm(c echo.Context) (models.RecoveryPolicy, models.FieldErrors) {
	fe := models.FieldErrors{}
	num := func(field string) int {
		n, err := strconv.Atoi(strings.TrimSpace(c.FormValue(field)))
		if err != nil {
			fe[field] = "Enter a whole number."
		}
		return n
	}
	p := models.RecoveryPolicy{Mode: c.FormValue("mode"), MaxAttempts: num("maxAttempts"), CooldownMinutes: num("cooldownMinutes")}
	for k, v := range p.Validate() {
		if _, ok := fe[k]; !ok {
			fe[k] = v
		}
	}
	return p, fe
}

// setRecovery is POST /clusters/{id}/recovery: the dashboard's policy form (R3).
func (h *handler) setRecovery(c echo.Context) error {
	p, fe := policyFromForm(c)
	var cl models.Cluster
	var err error
	if len(fe) == 0 {
		cl, err = h.act(c).SetRecoveryPolicy(c.Request().Context(), c.Param("id"), p)
		if errors.As(err, &fe) {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	if len(fe) == 0 {
		return redirect(c, "/clusters/"+cl.ID)
	}
	cl, err = h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	cp, err := h.clusterPage(c, cl)
	if err != nil {
		return err
	}
	cp.Recovery = recoveryView(cl, h.Store.Now(), fe)
	if cp.Recovery != nil {
		cp.Recovery.Mode, cp.Recovery.MaxAttempts, cp.Recovery.Cooldown = p.Mode, c.FormValue("maxAttempts"), c.FormValue("cooldownMinutes")
	}
	return page(c, http.StatusUnprocessableEntity, views.ClusterPageView(cp), views.ClusterLive(cp))
}

// requestRecoverNow records "recover now" and wakes the recovery job (R5).
func (h *handler) requestRecoverNow(c echo.Context) (models.Cluster, error) {
	cl, err := h.act(c).RecoverNow(c.Request().Context(), c.Param("id"))
	if errors.Is(err, models.ErrNothingToRecover) {
		return cl, &APIError{Status: http.StatusConflict, Code: "nothing_to_recover",
			Message: "No machine of this cluster is down: there is nothing to recover."}
	}
	if err != nil {
		return cl, err
	}
	h.kick(c, "recovery")
	return cl, nil
}

// recoverNow is POST /clusters/{id}/recover.
func (h *handler) recoverNow(c echo.Context) error {
	cl, err := h.requestRecoverNow(c)
	if err != nil {
		return err
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// apiSetRecovery is PUT /v1/gpu/clusters/{id}/recovery (R3).
func (h *handler) apiSetRecovery(c echo.Context) error {
	var body api.RecoveryPolicy
	if _, err := h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id")); err != nil {
		return err // another organisation's cluster is not found, whatever the body
	}
	if _, err := decodeJSON(c, &body); err != nil {
		return err
	}
	var p models.RecoveryPolicy
	fe := models.FieldErrors{}
	if body.Mode == nil {
		fe["mode"] = "Required: restart or off."
	} else {
		p.Mode = *body.Mode
	}
	if body.MaxAttempts == nil {
		fe["maxAttempts"] = "Required: 1 to 10."
	} else {
		p.MaxAttempts = *body.MaxAttempts
	}
	if body.CooldownMinutes == nil {
		fe["cooldownMinutes"] = "Required: 1 to 120."
	} else {
		p.CooldownMinutes = *body.CooldownMinutes
	}
	if len(fe) > 0 {
		return invalid(fe)
	}
	cl, err := h.act(c).SetRecoveryPolicy(c.Request().Context(), c.Param("id"), p)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusOK, cl)
}

// apiRecoverNow is POST /v1/gpu/clusters/{id}/recover (R5): 202, the
// recovery job makes the attempt.
func (h *handler) apiRecoverNow(c echo.Context) error {
	cl, err := h.requestRecoverNow(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}
