package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// adminPrices is GET /admin/prices: the clusters whose provider bills
// above their launch cost (OP1, Q2).
func (h *handler) adminPrices(c echo.Context) error {
	list, err := h.Store.PricesAbove(c.Request().Context())
	if err != nil {
		return err
	}
	p := views.AdminPricesPage{Meta: h.meta(c, "Prices")}
	for _, a := range list {
		cl := a.Cluster
		r := views.PriceRow{Cluster: cl.ID, Org: cl.OrgID, OrgName: a.OrgName, Provider: cl.Provider, Offer: cl.OfferID,
			Status: string(cl.Status), Launch: models.DecimalUSD(cl.UpstreamMachineHour), Billed: models.DecimalUSD(cl.BilledMachineHour),
			Customer: models.DecimalUSD(cl.MachineHour), Live: !cl.Status.Terminal()}
		if cl.PriceAboveAt != nil {
			r.Since = views.FormatTime(*cl.PriceAboveAt)
		}
		p.Rows = append(p.Rows, r)
	}
	return page(c, http.StatusOK, views.AdminPricesView(p), views.AdminPricesView(p))
}
