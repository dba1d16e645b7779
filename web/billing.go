package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// showBilling is GET /billing (owners and admins): balance, burn rate of
// running clusters, hours remaining and the ledger (B1).
func (h *handler) showBilling(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	balance, err := h.Store.Balance(ctx, p.Org.ID)
	if err != nil {
		return err
	}
	burn, err := h.Store.BurnRate(ctx, p.Org.ID)
	if err != nil {
		return err
	}
	entries, err := h.Store.LedgerEntries(ctx, p.Org.ID, 200)
	if err != nil {
		return err
	}
	bp := views.BillingPage{Meta: h.meta(c, "Billing"), Balance: models.USD(balance),
		BurnRate: models.USD(burn) + "/h", HoursRemaining: hoursRemaining(balance, burn), TestMode: h.Payments == nil}
	if bp.AutoRecharge, err = h.autoRechargeForm(ctx, p.Org.ID, bp.Meta.CSRF); err != nil {
		return err
	}
	for _, e := range entries {
		bp.Entries = append(bp.Entries, views.LedgerRow{At: e.CreatedAt.Format("2006-01-02 15:04"), Kind: e.Kind,
			Description: e.Description, Status: titleCase(e.Status), Amount: models.USD(e.Amount), Negative: e.Amount < 0})
	}
	return render(c, http.StatusOK, views.BillingPageView(bp))
}

func hoursRemaining(balance, burn models.Money) string {
	switch {
	case burn <= 0:
		return "—"
	case balance <= 0:
		return "0 h"
	}
	return fmt.Sprintf("%.1f h", float64(balance)/float64(burn)) // display only; money stays integer
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
