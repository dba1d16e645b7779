package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
)

// apiSubmitRun is POST /v1/runs (X17): it quotes and locks the price,
// launches the run's cluster verified and answers the run; the
// Idempotency-Key returns the same run for the same body (L1). Bounds
// (X19): active runs per organisation, submissions per hour, the size of
// the command and env (models.RunSpec.Validate).
func (h *handler) apiSubmitRun(c echo.Context) error {
	var body api.RunBody
	if _, err := decodeJSON(c, &body); err != nil {
		return err
	}
	key := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
	if len(key) > 180 {
		return invalid(models.FieldErrors{"Idempotency-Key": "at most 180 characters"})
	}
	r, created, err := h.act(c).SubmitRun(c.Request().Context(), models.RunSpec{
		Name: body.Name, Accelerator: body.Accelerator, Nodes: body.Nodes, GPUsPerNode: body.GPUsPerNode, Offers: body.Offers,
		MaxHourlyPrice: body.MaxHourlyPrice, Location: body.Location, VolumeGB: body.VolumeGB, VolumeID: body.VolumeID,
		Image: body.Image, Command: body.Command, Env: body.Env, CheckpointDir: body.CheckpointDir, CheckpointSeconds: body.CheckpointSeconds,
		ResumeCommand: body.ResumeCommand, ResumeEnv: body.ResumeEnv, RestartBudget: body.RestartBudget, FinishRule: body.FinishRule,
		HookURL: body.HookURL, Verify: body.Verify, SSHKeyIDs: body.SSHKeyIDs, IdemKey: key,
	})
	switch {
	case err == nil:
	case errors.Is(err, models.ErrTooManyRuns), errors.Is(err, models.ErrRunRate):
		return &APIError{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: err.Error()}
	default:
		return launchError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		h.kick(c, "provision")
	}
	j, err := h.runJSON(c, r)
	if err != nil {
		return err
	}
	return c.JSON(status, j)
}

// apiGetRun is GET /v1/runs/{id}, through the caller's organisation (A3).
func (h *handler) apiGetRun(c echo.Context) error {
	p := principal(c)
	r, err := h.Store.RunForOrg(c.Request().Context(), p.Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	if err := checkKeyEnv(p, r.EnvID, r.ID); err != nil {
		return err // A3: a key sees its own environment's runs only
	}
	j, err := h.runJSON(c, r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// apiListRuns is GET /v1/runs: the organisation's runs, newest first (at most 200).
func (h *handler) apiListRuns(c echo.Context) error {
	rs, err := h.Store.RunsForOrg(c.Request().Context(), principal(c).Org.ID, 200)
	if err != nil {
		return err
	}
	rs = inKeyEnv(principal(c), rs, func(r models.Run) string { return r.EnvID })
	out := api.RunList{Runs: []api.Run{}}
	for _, r := range rs {
		j, err := h.runJSON(c, r)
		if err != nil {
			return err
		}
		out.Runs = append(out.Runs, j)
	}
	return c.JSON(http.StatusOK, out)
}

// runJSON is the run with its bill and interruptions (X17).
func (h *handler) runJSON(c echo.Context, r models.Run) (api.Run, error) {
	b, err := h.Store.RunBill(c.Request().Context(), r, h.Store.Now())
	if err != nil {
		return api.Run{}, err
	}
	return toRunJSON(r, b), nil
}

func toRunJSON(r models.Run, b models.RunBill) api.Run {
	j := api.Run{ID: r.ID, Name: r.Name, Status: string(r.Status), Message: r.Message, ClusterID: r.ClusterID, QuoteID: r.QuoteID,
		OfferID: r.OfferID, Accelerator: r.Accelerator, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, USDPerHour: models.DecimalUSD(r.USDPerHour),
		Image: r.Image, Command: r.Command, ResumeCommand: r.ResumeCommand, CheckpointDir: r.CheckpointDir, FinishRule: r.FinishRule,
		RestartBudget: r.RestartBudget, Restarts: r.Restarts, CreatedAt: r.CreatedAt, RanksStartedAt: r.RanksStartedAt, EndedAt: r.EndedAt,
		Bill: api.RunBill{PaidMachineMinutes: b.PaidMachineMinutes, ProductiveMinutes: b.ProductiveMinutes, WallMinutes: b.WallMinutes,
			ETTRPercent: fmt.Sprintf("%d.%d", b.ETTRPermille/10, b.ETTRPermille%10), LostMinutes: b.LostMinutes},
		Interruptions: []api.RunInterruption{}}
	for _, i := range b.Interruptions {
		ji := api.RunInterruption{Cause: i.Cause, Node: i.Node, Message: i.Message, FailedAt: i.FailedAt, DetectedAt: i.DetectedAt,
			DetectionSeconds: int64(i.DetectedAt.Sub(i.FailedAt).Seconds()), ResumedAt: i.ResumedAt, LostSeconds: i.LostSeconds,
			Replaced: i.Replaced, Warned: i.Warned, CheckpointLanded: i.CheckpointLanded}
		if i.ResumedAt != nil {
			s := int64(i.ResumedAt.Sub(i.DetectedAt).Seconds())
			ji.ResumeSeconds = &s
		}
		j.Interruptions = append(j.Interruptions, ji)
	}
	return j
}
