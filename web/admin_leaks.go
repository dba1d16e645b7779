package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// adminLeaks is GET /admin/leaks: machines of ended clusters the reconcile
// job found still at their provider, with when found and released (X10).
func (h *handler) adminLeaks(c echo.Context) error {
	leaks, err := h.Store.Leaks(c.Request().Context())
	if err != nil {
		return err
	}
	p := views.AdminLeaksPage{Meta: h.meta(c, "Leaks")}
	for _, l := range leaks {
		r := views.LeakRow{Cluster: l.ClusterID, Org: l.OrgID, Provider: l.Provider, Machine: l.NodeID, State: l.State,
			Found: views.FormatTime(l.FoundAt)}
		if l.ReleasedAt != nil {
			r.Released = views.FormatTime(*l.ReleasedAt)
		}
		p.Rows = append(p.Rows, r)
	}
	return page(c, http.StatusOK, views.AdminLeaksView(p), views.AdminLeaksView(p))
}
