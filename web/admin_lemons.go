package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// repairMinutes is a duration in whole minutes ("under a minute" below one).
func repairMinutes(d time.Duration) string {
	if d < time.Minute {
		return "under 1 min"
	}
	return strconv.Itoa(int(d.Round(time.Minute).Minutes())) + " min"
}

// adminLemons is GET /admin/lemons (X2): quarantined
// machines with their history, and the time to repair.
func (h *handler) adminLemons(c echo.Context) error {
	ctx := c.Request().Context()
	lemons, err := h.Store.Lemons(ctx)
	if err != nil {
		return err
	}
	rep, err := h.Store.RecentRepairs(ctx)
	if err != nil {
		return err
	}
	p := views.AdminLemonsPage{Meta: h.meta(c, "Lemons"), Repair: views.RepairFigure{Repairs: rep.Repairs}}
	if rep.Repairs > 0 {
		p.Repair.Median, p.Repair.P90, p.Repair.Longest = repairMinutes(rep.Median), repairMinutes(rep.P90), repairMinutes(rep.Longest)
	}
	for _, l := range lemons {
		r := views.LemonRow{ID: strconv.FormatInt(l.ID, 10), Provider: l.Provider, Machine: l.Machine,
			Quarantined: views.FormatTime(l.QuarantinedAt), Reason: l.Reason, ReleasedBy: l.ReleasedBy}
		if l.ReleasedAt != nil {
			r.Released = views.FormatTime(*l.ReleasedAt)
		}
		for _, f := range l.Faults {
			fr := views.FaultRow{At: views.FormatTime(f.At), Cluster: f.ClusterID, Node: f.Node, Detail: f.Detail}
			switch f.Kind {
			case models.FaultVerification:
				fr.Kind = "failed verification"
			case models.FaultDied:
				fr.Kind = "died after ready"
			default:
				fr.Kind = "went down before ready"
			}
			fr.Kind += " · " + models.EvidenceLabel(f.Evidence) // X19: what the fault rests on
			if f.Evidence == models.EvidenceTenant && !f.Counted {
				fr.Kind += " (not counted: one organisation's alone)"
			}
			if f.RepairSeconds != nil {
				fr.Repair = repairMinutes(time.Duration(*f.RepairSeconds) * time.Second)
			}
			r.Faults = append(r.Faults, fr)
		}
		p.Rows = append(p.Rows, r)
	}
	return page(c, http.StatusOK, views.AdminLemonsView(p), views.AdminLemonsView(p))
}

// releaseLemon is POST /admin/lemons/{id}/release: the machine may be
// placed again (audited).
func (h *handler) releaseLemon(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return models.ErrNotFound
	}
	q, err := h.act(c).ReleaseMachine(c.Request().Context(), id)
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Machine "+q.Machine+" released from quarantine: it may be placed again.")
	return redirect(c, "/admin/lemons")
}
