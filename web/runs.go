package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// listRuns is /runs (X17): the organisation's runs.
func (h *handler) listRuns(c echo.Context) error {
	ctx := c.Request().Context()
	rs, err := h.Store.RunsForOrg(ctx, principal(c).Org.ID, 200)
	if err != nil {
		return err
	}
	pg := views.RunsPage{Meta: h.meta(c, "Runs")}
	for _, r := range rs {
		b, err := h.Store.RunBill(ctx, r, h.Store.Now())
		if err != nil {
			return err
		}
		pg.Rows = append(pg.Rows, runRow(r, b))
	}
	return render(c, http.StatusOK, views.RunsView(pg))
}

// showRun is /runs/{id} (X17), through the caller's organisation (A3).
func (h *handler) showRun(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.Store.RunForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	b, err := h.Store.RunBill(ctx, r, h.Store.Now())
	if err != nil {
		return err
	}
	rule := "every rank exits 0"
	if r.FinishRule == models.FinishRank0 {
		rule = "rank 0 exits 0"
	}
	pg := views.RunPage{Meta: h.meta(c, r.Name), Run: runRow(r, b), Command: r.Command, ResumeCommand: r.ResumeCommand,
		CheckpointDir: r.CheckpointDir, FinishRule: rule,
		Paid:       fmt.Sprintf("%d machine-minutes", b.PaidMachineMinutes),
		Productive: fmt.Sprintf("%d minutes", b.ProductiveMinutes), Lost: fmt.Sprintf("%d minutes", b.LostMinutes)}
	for _, i := range b.Interruptions {
		row := views.RunInterruptionRow{At: i.DetectedAt.UTC().Format("2006-01-02 15:04 UTC"), Node: i.Node, Cause: i.Cause, Message: i.Message,
			Detection: i.DetectedAt.Sub(i.FailedAt).Round(time.Second).String(), Resume: "not resumed yet",
			Lost: (time.Duration(i.LostSeconds) * time.Second).String(), Warned: i.Warned}
		if i.ResumedAt != nil {
			row.Resume = "every rank ran again " + i.ResumedAt.Sub(i.DetectedAt).Round(time.Second).String() + " later"
		}
		pg.Interruptions = append(pg.Interruptions, row)
	}
	return render(c, http.StatusOK, views.RunView(pg))
}

func runRow(r models.Run, b models.RunBill) views.RunRow {
	return views.RunRow{ID: r.ID, Name: r.Name, Status: string(r.Status), Message: r.Message, ClusterID: r.ClusterID,
		Shape:    fmt.Sprintf("%d × %d %s", r.Nodes, r.GPUsPerNode, models.AcceleratorLabel(r.Accelerator)),
		Price:    "$" + models.DecimalUSD(r.USDPerHour) + "/h (locked)",
		Restarts: fmt.Sprintf("%d of %d", r.Restarts, r.RestartBudget),
		ETTR:     fmt.Sprintf("%d.%d %%", b.ETTRPermille/10, b.ETTRPermille%10),
		Created:  r.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")}
}
