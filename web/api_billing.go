package web

import (
	"net/http"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// The balance is the organisation's (one ledger), so the billing API
// answers for the whole organisation whatever the key's environment, to
// owners' and admins' keys only (A3 scopes clusters and quotes, not money).

// apiBillingBalance is GET /v1/billing/balance (B1).
func (h *handler) apiBillingBalance(c echo.Context) error {
	w := models.MonthOf(h.Store.Now())
	st, err := h.statementOf(c, w)
	if err != nil {
		return err
	}
	out := api.BillingBalance{Balance: models.DecimalUSD(st.balance.Balance()), Accruing: models.DecimalUSD(st.balance.Accruing),
		BurnRate: models.DecimalUSD(st.burn), SpendThisMonth: models.DecimalUSD(st.spend), Month: w.Month(),
		TestMode: h.Payments == nil && !h.topUpsOff()}
	if st.burn > 0 {
		hrs := float64(max(st.balance.Balance(), 0)) / float64(st.burn)
		out.HoursRemaining = &hrs
	}
	return c.JSON(http.StatusOK, out)
}

// apiBillingUsage is GET /v1/billing/usage?month=YYYY-MM (B3): the billing
// page's usage rows.
func (h *handler) apiBillingUsage(c echo.Context) error {
	w, err := h.monthParam(c)
	if err != nil {
		return err
	}
	lines, err := h.Store.UsageForMonth(c.Request().Context(), principal(c).Org.ID, w)
	if err != nil {
		return err
	}
	vols, err := h.Store.VolumeUsageForMonth(c.Request().Context(), principal(c).Org.ID, w)
	if err != nil {
		return err
	}
	total := models.Spend(lines)
	out := api.BillingUsage{Month: w.Month(), Clusters: []api.ClusterUsage{}, Volumes: []api.VolumeUsage{}}
	for _, v := range vols { // V3, X11: every volume that billed, attached or not
		vu := api.VolumeUsage{VolumeID: v.Volume.ID, Name: v.Volume.Name, SizeGB: v.Volume.SizeGB,
			USDPerHour: models.DecimalUSD(v.Volume.HourRate()), Minutes: v.Minutes, Amount: models.DecimalUSD(v.Total()),
			Status: usageStatus(v.Accumulating), Deleted: v.Volume.DeletedAt != nil}
		if v.Attached != nil {
			vu.ClusterID = v.Attached.ID
		}
		total += v.Total()
		out.Volumes = append(out.Volumes, vu)
	}
	out.Total = models.DecimalUSD(total)
	for _, l := range lines {
		cu := api.ClusterUsage{ClusterID: l.Cluster.ID, Name: l.Cluster.Name, Amount: models.DecimalUSD(l.Completed + l.Accumulating),
			Status: usageStatus(l.Accumulating), Machines: []api.MachineUsage{}}
		for _, m := range l.Machines {
			mu := api.MachineUsage{NodeID: m.NodeID, Node: m.Name, MachinePrice: models.DecimalUSD(m.MachineHour),
				Minutes: m.Minutes + m.AccumulatingMinutes, Amount: models.DecimalUSD(m.Completed + m.Accumulating),
				Status: usageStatus(m.Accumulating), Intervals: []api.StateInterval{}}
			for _, iv := range m.Intervals {
				mu.Intervals = append(mu.Intervals, api.StateInterval{State: iv.State, StartedAt: iv.StartedAt.UTC(), EndedAt: utcPtr(iv.EndedAt)})
			}
			cu.Machines = append(cu.Machines, mu)
		}
		out.Clusters = append(out.Clusters, cu)
	}
	return c.JSON(http.StatusOK, out)
}

// usageStatus is Completed, or Accumulating while the open period runs up.
func usageStatus(accumulating models.Money) string {
	if accumulating > 0 {
		return models.EntryAccumulating
	}
	return models.EntryCompleted
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
