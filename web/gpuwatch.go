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

// The GPU watch's settings (X15): the stall alert and
// the opt-in idle rule, on the API (GET/PUT /v1/gpu/clusters/{id}/gpu-watch,
// gpuWatch at launch) and on the cluster page.

// toGPUWatchJSON is the watch as the API answers it.
func toGPUWatchJSON(w models.GPUWatch) api.GPUWatch {
	p := w.Policy()
	j := api.GPUWatch{Summary: sentence(p.Sentence()),
		Stall: api.StallWatch{Enabled: !p.StallOff, Minutes: p.StallMinutes, Since: w.StallSince},
		Idle: api.IdleWatch{Enabled: p.IdleOn, ThresholdPct: p.IdleBelowPct, Hours: p.IdleHours, Action: p.IdleAction,
			GraceMinutes: p.IdleGraceMinutes, IdleSince: w.IdleSince, MailedAt: w.IdleMailedAt}}
	if w.StallKey != "" {
		msg := w.StallMessage
		j.Stall.Current = &msg
	}
	j.Idle.ActionAt = idleActionAt(w)
	return j
}

// idleActionAt is when the idle rule's stop or terminate is due (or was
// requested); nil when none is coming.
func idleActionAt(w models.GPUWatch) *time.Time {
	p := w.Policy()
	switch {
	case !p.IdleOn || p.IdleAction == models.IdleMail:
		return nil
	case w.IdleActedAt != nil:
		return w.IdleActedAt
	case w.IdleMailedAt != nil:
		t := w.IdleMailedAt.Add(time.Duration(p.IdleGraceMinutes) * time.Minute)
		return &t
	}
	return nil
}

func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// watchFromBody lays a body over a policy: what is left out keeps its value.
func watchFromBody(p models.WatchPolicy, b *api.GPUWatchBody) models.WatchPolicy {
	if b == nil {
		return p
	}
	if s := b.Stall; s != nil {
		if s.Enabled != nil {
			p.StallOff = !*s.Enabled
		}
		if s.Minutes != nil {
			p.StallMinutes = *s.Minutes
		}
	}
	if i := b.Idle; i != nil {
		if i.Enabled != nil {
			p.IdleOn = *i.Enabled
		}
		if i.ThresholdPct != nil {
			p.IdleBelowPct = *i.ThresholdPct
		}
		if i.Hours != nil {
			p.IdleHours = *i.Hours
		}
		if i.Action != nil {
			p.IdleAction = *i.Action
		}
		if i.GraceMinutes != nil {
			p.IdleGraceMinutes = *i.GraceMinutes
		}
	}
	return p
}

// launchWatch is the launch body's gpuWatch as a policy; nil when absent.
func launchWatch(b *api.GPUWatchBody) *models.WatchPolicy {
	if b == nil {
		return nil
	}
	p := watchFromBody(models.DefaultWatchPolicy(), b)
	return &p
}

// prefixed names field errors under the launch body's gpuWatch.
func prefixed(fe models.FieldErrors, prefix string) models.FieldErrors {
	out := models.FieldErrors{}
	for k, v := range fe {
		out[prefix+k] = v
	}
	return out
}

// apiGetGPUWatch is GET /v1/gpu/clusters/{id}/gpu-watch.
func (h *handler) apiGetGPUWatch(c echo.Context) error {
	w, err := h.Store.GPUWatchFor(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toGPUWatchJSON(w))
}

// apiSetGPUWatch is PUT /v1/gpu/clusters/{id}/gpu-watch: the fields sent
// change, the others stay; anything out of bounds is a 422 naming the
// field and changes nothing (A4).
func (h *handler) apiSetGPUWatch(c echo.Context) error {
	ctx := c.Request().Context()
	w, err := h.Store.GPUWatchFor(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err // another organisation's cluster is not found, whatever the body
	}
	var body api.GPUWatchBody
	if _, err := decodeJSON(c, &body); err != nil {
		return err
	}
	if w, err = h.act(c).SetGPUWatch(ctx, c.Param("id"), watchFromBody(w.Policy(), &body)); err != nil {
		return watchError(err)
	}
	return c.JSON(http.StatusOK, toGPUWatchJSON(w))
}

// watchError answers an ended cluster with 409.
func watchError(err error) error {
	if errors.Is(err, models.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Code: "cluster_ended",
			Message: "This cluster has ended or is being terminated: there are no GPUs left to watch."}
	}
	return err
}

// watchView is the page's GPU watch panel and form; nil once the cluster
// ended or before it is up.
func watchView(cl models.Cluster, w models.GPUWatch, problems map[string]string) *views.WatchView {
	if !cl.Lifecycle().Watchable() {
		return nil
	}
	p := w.Policy()
	v := &views.WatchView{ClusterID: cl.ID, StallOn: !p.StallOff, StallMinutes: strconv.Itoa(p.StallMinutes),
		IdleOn: p.IdleOn, IdleBelow: strconv.Itoa(p.IdleBelowPct), IdleHours: strconv.Itoa(p.IdleHours),
		IdleAction: p.IdleAction, IdleGrace: strconv.Itoa(p.IdleGraceMinutes), Problems: problems, Summary: sentence(p.Sentence())}
	if w.StallKey != "" {
		v.Stall = w.StallMessage
	}
	if p.IdleOn {
		v.IdleState = "A GPU is at work."
		if w.IdleSince != nil {
			v.IdleState = "Every GPU idle since " + w.IdleSince.Format("15:04 MST, 2 Jan") + "."
		}
		if at := idleActionAt(w); at != nil && w.IdleActedAt == nil {
			v.IdleState += " The cluster will be " + map[string]string{models.IdleStop: "stopped", models.IdleTerminate: "terminated"}[p.IdleAction] +
				" at " + at.Format("15:04 MST, 2 Jan") + " unless a GPU gets to work."
		}
	}
	return v
}

// watchFromForm reads the page's form: checkboxes and numbers.
func watchFromForm(c echo.Context) (models.WatchPolicy, models.FieldErrors) {
	fe := models.FieldErrors{}
	num := func(field, name string) int {
		n, err := strconv.Atoi(strings.TrimSpace(c.FormValue(name)))
		if err != nil {
			fe[field] = "Enter a whole number."
		}
		return n
	}
	p := models.WatchPolicy{StallOff: c.FormValue("stall") != "on", StallMinutes: num("stall.minutes", "stall_minutes"),
		IdleOn: c.FormValue("idle") == "on", IdleBelowPct: num("idle.thresholdPct", "idle_threshold"),
		IdleHours: num("idle.hours", "idle_hours"), IdleAction: c.FormValue("idle_action"),
		IdleGraceMinutes: num("idle.graceMinutes", "idle_grace")}
	for k, v := range p.Validate() {
		if _, ok := fe[k]; !ok {
			fe[k] = v
		}
	}
	return p, fe
}

// gpuWatchPage is GET /clusters/{id}/gpu-watch: the form's address
// reloaded (a refused form is answered there) leads to the cluster's page.
func (h *handler) gpuWatchPage(c echo.Context) error {
	cl, err := h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/clusters/"+cl.ID+"#gpu-watch")
}

// setGPUWatch is POST /clusters/{id}/gpu-watch: the page's form.
func (h *handler) setGPUWatch(c echo.Context) error {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	p, fe := watchFromForm(c)
	if len(fe) == 0 {
		_, err = h.act(c).SetGPUWatch(ctx, cl.ID, p)
		if errors.As(err, &fe) {
			err = nil
		}
		if err != nil {
			return watchError(err)
		}
	}
	if len(fe) == 0 {
		return redirect(c, "/clusters/"+cl.ID)
	}
	cp, err := h.clusterPage(c, cl)
	if err != nil {
		return err
	}
	w, err := h.Store.GPUWatchFor(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return err
	}
	cp.Watch = watchView(cl, w, fe)
	if cp.Watch != nil { // keep what was typed
		cp.Watch.StallOn, cp.Watch.StallMinutes = !p.StallOff, c.FormValue("stall_minutes")
		cp.Watch.IdleOn, cp.Watch.IdleBelow, cp.Watch.IdleHours = p.IdleOn, c.FormValue("idle_threshold"), c.FormValue("idle_hours")
		cp.Watch.IdleAction, cp.Watch.IdleGrace = p.IdleAction, c.FormValue("idle_grace")
	}
	return page(c, http.StatusUnprocessableEntity, views.ClusterPageView(cp), views.ClusterLive(cp))
}
