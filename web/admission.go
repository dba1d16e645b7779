package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// topUpPath is where an organisation adds funds (B4).
const topUpPath = "/billing"

// insufficientBalance is L2's 402-style refusal: what the balance must cover
// and how much to add, with where to add it.
func insufficientBalance(ib *models.InsufficientBalanceError) *APIError {
	ae := &APIError{Status: http.StatusPaymentRequired, Code: "insufficient_balance",
		Message: balanceMessage(ib.Admission) + " Add " + models.USD(ib.Shortfall()) + " at " + topUpPath + ".",
		Extra: map[string]any{"balance": models.DecimalUSD(ib.Balance), "committed": models.DecimalUSD(ib.Committed),
			"required": models.DecimalUSD(ib.Required), "shortfall": models.DecimalUSD(ib.Shortfall()), "topUpUrl": topUpPath}}
	ae.Href, ae.Action = addFundsLink(ib.Shortfall()) // A4: Add funds with the shortfall
	return ae
}

// balanceMessage explains L2 with the organisation's figures; callers say
// where to add the shortfall.
func balanceMessage(a models.Admission) string {
	if a.Volume {
		return fmt.Sprintf("Your balance is %s and one hour of your clusters and volumes is %s; what is left must cover %s (one hour of the volume's added size, at least $10), as for a launch.",
			models.USD(a.Balance), models.USD(a.Committed), models.USD(a.Required))
	}
	if a.Committed == 0 {
		return fmt.Sprintf("Your balance is %s; a launch needs %s (one hour of the whole cluster, at least $10).",
			models.USD(a.Balance), models.USD(a.Required))
	}
	return fmt.Sprintf("Your balance is %s and one hour of your running and starting clusters and your volumes is %s; what is left must cover %s (one hour of this cluster, at least $10).",
		models.USD(a.Balance), models.USD(a.Committed), models.USD(a.Required))
}

// balanceProblem is the page's L2 refusal: the figures and how much to add.
func balanceProblem(a models.Admission) string {
	return balanceMessage(a) + " Add " + models.USD(a.Shortfall()) + "."
}

// notInStockMessage explains a launch refused because the offer's counted
// machines were taken since it was quoted (X12).
func notInStockMessage(nc *models.NoCapacityError) string {
	free := 0
	if nc.Free != nil {
		free = *nc.Free
	}
	return fmt.Sprintf("This offer has %d machines free now, fewer than the %d this cluster needs: other launches took them since the price was quoted.",
		free, nc.Shape.Nodes)
}

// notInStock answers a launch form whose offer ran out since it was quoted:
// 409 with the refusal and what can start now with the same shape.
func (h *handler) notInStock(c echo.Context, q models.Quote, form views.LaunchForm, problems map[string]string) error {
	lp, err := h.launchPage(c, q, form, problems)
	if err != nil {
		return err
	}
	lp.Alternatives, err = h.alternatives(c, models.Cluster{Accelerator: q.Accelerator, Nodes: q.Nodes, GPUsPerNode: q.GPUsPerNode})
	if err != nil {
		return err
	}
	lp.OffersURL = "/offers?" + url.Values{"accelerator": {q.Accelerator}, "nodes": {strconv.Itoa(q.Nodes)}, "gpus_per_node": {strconv.Itoa(q.GPUsPerNode)}}.Encode()
	return render(c, http.StatusConflict, views.LaunchPageView(lp))
}
