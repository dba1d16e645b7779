package web

import (
	"context"
	"strconv"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// stopBanners announce, on every dashboard page of the organisation, the
// clusters the budget or the balance stopped and nobody resumed since
// (B5, B6): one banner per cause, each cluster linked,
// with the way forward for those who can pay. A cluster's own page says
// why it stopped itself, so on that page (path) the banner leaves it out
// rather than saying it twice.
func (h *handler) stopBanners(ctx context.Context, orgID string, canBilling bool, path string) ([]views.StopBanner, error) {
	cs, err := h.Store.EnforcedStops(ctx, orgID)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	var out []views.StopBanner
	for _, reason := range []models.StopReason{models.StopByBudget, models.StopByBalance} {
		var b views.StopBanner
		for _, c := range cs {
			if c.StopReason != string(reason) || path == "/clusters/"+c.ID {
				continue
			}
			b.Clusters = append(b.Clusters, views.NavItem{Label: c.Name, Href: "/clusters/" + c.ID})
			at := c.StoppedAt
			if at == nil {
				at = c.StopRequestedAt
			}
			if at != nil && (b.Headline == "" || at.UTC().Format("2006-01-02 15:04 UTC") > b.Headline) {
				b.Headline = at.UTC().Format("2006-01-02 15:04 UTC") // the latest stop, replaced below
			}
		}
		if len(b.Clusters) == 0 {
			continue
		}
		n := strconv.Itoa(len(b.Clusters)) + " clusters were"
		if len(b.Clusters) == 1 {
			n = "1 cluster was"
		}
		when := b.Headline
		b.Reason = string(reason)
		switch reason {
		case models.StopByBudget:
			b.Headline = n + " stopped because the budget of its environment is reached (" + when + ")"
			b.Text = "Compute billing ended; nothing is deleted and volumes keep billing. Raise the budget, then resume each from its page."
			b.Href, b.Action = "/billing#budgets", "Raise the budget"
		case models.StopByBalance:
			b.Headline = n + " stopped because the balance ran out (" + when + ")"
			b.Text = "Compute billing ended; nothing is deleted and volumes keep billing. Add funds, then resume each from its page; unpaid, they are terminated after the second grace period."
			b.Href, b.Action = topUpPath+"#add-funds", "Add funds"
		}
		if len(b.Clusters) > 1 && reason == models.StopByBudget {
			b.Headline = n + " stopped because the budget of their environment is reached (" + when + ")"
		}
		if !canBilling {
			b.Text += " An owner or admin of the organisation can do it."
			b.Href, b.Action = "", ""
		}
		out = append(out, b)
	}
	return out, nil
}
