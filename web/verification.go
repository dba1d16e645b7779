package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Verification before hand-over (X13): the report in the API, "run
// verification again" and "keep it as it is", for the API and the page.

// verificationJSON is the cluster's hand-over report, nil when none ran.
func verificationJSON(ctx context.Context, st *models.Store, cl models.Cluster) (*api.Verification, error) {
	run, err := st.VerificationFor(ctx, cl.OrgID, cl.ID)
	if err != nil || run == nil {
		return nil, err
	}
	raw, err := json.Marshal(run.ReportOf()) // the report's JSON is the API's (the same names)
	if err != nil {
		return nil, err
	}
	var out api.Verification
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if out.Machines == nil {
		out.Machines = []api.VerifiedMachine{}
	}
	if out.Pairs == nil {
		out.Pairs = []api.VerifiedPair{}
	}
	if out.Swaps == nil {
		out.Swaps = []api.VerificationSwap{}
	}
	for i := range out.Machines {
		if out.Machines[i].Errors == nil {
			out.Machines[i].Errors = []string{}
		}
	}
	out.Status = run.Status
	return &out, nil
}

// apiVerifyAgain is POST /v1/gpu/clusters/{id}/verify: run the same
// verification on a ready cluster; nothing is swapped. The cluster is the
// customer's: the body must say {"confirmDisruption": true} (X13), else
// 422 confirmation_required names what the checks do to its jobs.
func (h *handler) apiVerifyAgain(c echo.Context) error {
	var body api.VerifyAgainRequest
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) > 0 { // no body: not confirmed
		c.Request().Body = io.NopCloser(bytes.NewReader(raw))
		if _, err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	cl, err := h.act(c).VerifyAgain(c.Request().Context(), c.Param("id"), body.ConfirmDisruption)
	if err != nil {
		return verifyConflict(err, "Verification runs again on a ready cluster, one run at a time.")
	}
	h.kick(c, "verify")
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}

// apiKeepUnverified is POST /v1/gpu/clusters/{id}/keep: keep a cluster
// that failed verification as it is (degraded → ready).
func (h *handler) apiKeepUnverified(c echo.Context) error {
	cl, err := h.act(c).KeepUnverified(c.Request().Context(), c.Param("id"))
	if err != nil {
		return verifyConflict(err, "Only a cluster degraded by a failed verification can be kept as it is.")
	}
	return h.clusterJSONResponse(c, http.StatusOK, cl)
}

// verifyAgain is POST /clusters/{id}/verify; the page's confirm dialog
// names the disruption and sends confirm_disruption (X13).
func (h *handler) verifyAgain(c echo.Context) error {
	cl, err := h.act(c).VerifyAgain(c.Request().Context(), c.Param("id"), c.FormValue("confirm_disruption") == "true")
	if err != nil {
		return verifyConflict(err, "Verification runs again on a ready cluster, one run at a time.")
	}
	h.kick(c, "verify")
	return redirect(c, "/clusters/"+cl.ID)
}

// keepUnverified is POST /clusters/{id}/keep.
func (h *handler) keepUnverified(c echo.Context) error {
	cl, err := h.act(c).KeepUnverified(c.Request().Context(), c.Param("id"))
	if err != nil {
		return verifyConflict(err, "Only a cluster degraded by a failed verification can be kept as it is.")
	}
	return redirect(c, "/clusters/"+cl.ID)
}

func verifyConflict(err error, msg string) error {
	if de := (*models.DisruptionError)(nil); errors.As(err, &de) {
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "confirmation_required", Message: de.Error(),
			Fields: map[string]string{"confirmDisruption": "Set it to true to run verification on the cluster's GPUs anyway."}}
	}
	if errors.Is(err, models.ErrConflict) && !errors.Is(err, models.ErrNotFound) {
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: msg}
	}
	return err
}

// verificationView is the hand-over report on the cluster page; nil when
// no verification ran.
func verificationView(cl models.Cluster, run *models.VerifyRun) *views.VerificationView {
	if run == nil {
		return nil
	}
	rep := run.ReportOf()
	v := &views.VerificationView{Status: run.Status, Title: "Verification before hand-over", Summary: rep.Summary,
		SwapsUsed: fmt.Sprintf("%d of %d used", len(rep.Swaps), run.MaxSwaps),
		CanRerun:  cl.Lifecycle().VerifyAgainOffered(run.Status), CanKeep: cl.CanKeepUnverified()}
	if run.Rerun {
		v.Title = fmt.Sprintf("Verification run %d (nothing swapped)", run.Run)
		v.SwapsUsed = "none on a run again"
	}
	if run.Status == models.VerifyRunning {
		v.Window = verifyWindow(cl, *run)
	}
	if v.Summary == "" {
		v.Summary = "Every machine runs its GPU, memory-error and stress check; the fabric checks follow."
	}
	if r := rep.Ring; r != nil && r.Status != "pending" {
		v.Ring = r.Measured()
		if r.Detail != "" {
			v.Ring += " — " + r.Detail
		}
		v.RingState = r.Status
	}
	for _, m := range rep.Machines {
		mv := views.VerifiedMachineView{Node: m.Node, Machine: m.MachineID, State: m.Status, GPUs: m.GPUs, Errors: m.Errors}
		switch {
		case m.Stress == "" || m.Status == "pending" || m.Status == "swapping":
		case m.Stress == "skipped":
			mv.Stress = "skipped — " + m.StressDetail
		case m.StressPassed:
			mv.Stress = m.Stress + " passed"
		default:
			mv.Stress = m.Stress + " failed"
		}
		v.Machines = append(v.Machines, mv)
	}
	for _, p := range rep.Pairs {
		pv := views.VerifiedPairView{Pair: p.A + " ↔ " + p.B, State: p.Status, Detail: p.Detail}
		if p.Status != "pending" {
			pv.BusBW = fmt.Sprintf("%.1f GB/s", p.BusBW)
		}
		v.Pairs = append(v.Pairs, pv)
	}
	if rep.MedianPair > 0 {
		v.Median = fmt.Sprintf("· median %.1f GB/s; slow below %d %% of what a pair allows or more than %d %% below the median",
			rep.MedianPair, rep.Thresholds.RingPercent, rep.Thresholds.PairBelowMedianPercent)
	}
	for _, s := range rep.Swaps {
		sv := views.SwapView{Node: s.Node, Reason: s.Reason, Outcome: s.Outcome, At: s.At.UTC().Format("15:04")}
		if s.JoinedAt != nil && s.Outcome == "joined" {
			sv.Joined = s.JoinedAt.UTC().Format("15:04")
		}
		v.Swaps = append(v.Swaps, sv)
	}
	return v
}

// verifyWindow says when a running verification gives up, and what a swap
// is given (L4, X5): the replacement's join deadline for the machine kind
// plus the checks.
func verifyWindow(cl models.Cluster, run models.VerifyRun) string {
	s := "Gives up at " + run.Deadline.UTC().Format("15:04") + " UTC"
	if run.Rerun {
		return s + "."
	}
	return fmt.Sprintf("%s; a swap extends it: the replacement joins within %s and the checks take %s.",
		s, minutes(cl.SwapJoinDeadline()), minutes(models.VerifyChecksDuration(cl.Nodes)))
}

// verifyProgress is the progress line of a verifying cluster (X13): the
// time elapsed counts from the verification's start, not the launch's, and
// the line says when it gives up (the run's deadline). Before the verify
// job opened the run it has just begun.
func verifyProgress(p *views.ProgressView, run *models.VerifyRun, now time.Time) {
	if run == nil || run.Status != models.VerifyRunning {
		p.Elapsed, p.GivesUp = elapsed(0), ""
		return
	}
	p.Elapsed = elapsed(max(now.Sub(run.StartedAt), 0))
	p.GivesUp = "gives up at " + run.Deadline.UTC().Format("15:04")
}
