package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Keeping people in place (A4): a refusal is said on the page
// that caused it, with the way forward linked (Add funds with the
// shortfall, the environment's budget with the amount needed), never as a
// dead-end page that loses where the person was.

// flashSep separates a flash's message from its link in the session.
const flashSep = "\x1f"

// encodeFlash is f's message with its link, as h.flash stores it.
func encodeFlash(f views.Flash) string {
	if f.Href == "" {
		return f.Message
	}
	return f.Message + flashSep + f.Href + flashSep + f.Action
}

// decodeFlash reads what encodeFlash wrote.
func decodeFlash(kind views.FlashKind, s string) views.Flash {
	msg, rest, _ := strings.Cut(s, flashSep)
	href, action, _ := strings.Cut(rest, flashSep)
	return views.Flash{Kind: kind, Message: msg, Href: href, Action: action}
}

// refusalFlash is ae as a page says it: the message and its way forward.
// A message's closing "Add $34.94 at /billing." is the API's way forward;
// a page says it once, as the link.
func refusalFlash(ae *APIError) views.Flash {
	msg := ae.Message
	if i := strings.LastIndex(msg, " Add $"); ae.Href != "" && i > 0 && strings.HasSuffix(msg, " at "+topUpPath+".") {
		msg = msg[:i]
	}
	return views.Flash{Kind: views.FlashError, Message: msg, Href: ae.Href, Action: ae.Action}
}

// addFundsLink is the way forward of a balance refusal: the Add funds form
// with the shortfall typed in.
func addFundsLink(shortfall models.Money) (href, action string) {
	amount := models.DecimalUSD(roundUpCents(shortfall))
	return topUpPath + "?amount=" + url.QueryEscape(amount) + "#add-funds", "Add $" + amount
}

// roundUpCents rounds m up to a whole cent, so that adding it is enough.
func roundUpCents(m models.Money) models.Money {
	const cent = models.Micro / 100
	return (m + cent - 1) / cent * cent
}

// budgetNeeded is what the budget of a reached environment must at least
// be to run perHour for another hour: the spend so far plus that hour,
// rounded up to whole dollars (and above the spend when perHour is 0).
func budgetNeeded(spend, perHour models.Money) models.Money {
	n := (spend + perHour + models.Micro - 1) / models.Micro * models.Micro
	if n <= spend {
		n += models.Micro
	}
	return n
}

// budgetReached is B5's refusal (409 budget_reached) with the way forward:
// the environment's budget field on the billing page with the amount
// needed to run perHour another hour typed in.
func budgetReached(br *models.BudgetReachedError, perHour models.Money) *APIError {
	ae := &APIError{Status: http.StatusConflict, Code: "budget_reached", Message: br.Error()}
	if br.EnvID != "" {
		need := budgetNeeded(br.Spend, perHour)
		ae.Href = "/billing?" + url.Values{"budget": {br.EnvID}, "amount": {models.DecimalUSD(need)}}.Encode() + "#budget-" + br.EnvID
		ae.Action = "Raise the budget of " + br.Env + " to " + models.USD(need)
	}
	return ae
}

// cameFrom is the page of this site the request came from (its Referer),
// or "" when it came from elsewhere, from nowhere, or from itself.
func cameFrom(c echo.Context) string {
	ref := c.Request().Referer()
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Host != "" && u.Host != c.Request().Host) || !strings.HasPrefix(u.Path, "/") ||
		strings.HasPrefix(u.Path, "//") || strings.HasPrefix(u.Path, "/v1/") || strings.HasPrefix(u.Path, "/static/") {
		return ""
	}
	back := u.EscapedPath()
	if u.RawQuery != "" {
		back += "?" + u.RawQuery
	}
	if back == c.Request().URL.RequestURI() {
		return ""
	}
	return back
}

// keepInPlace reports whether a refused form goes back to the page it was
// sent from (with the refusal flashed) instead of an error page: any
// refusal (4xx but "log in") of a form sent from one of our pages.
func keepInPlace(c echo.Context, ae *APIError) bool {
	m := c.Request().Method
	return m != http.MethodGet && m != http.MethodHead && ae.Status >= 400 && ae.Status < 500 &&
		ae.Status != http.StatusUnauthorized && cameFrom(c) != ""
}

// backLink is an error page's way back: where the person came from, or
// else the page the failed URL belongs to.
func backLink(c echo.Context) views.BackLink {
	to := cameFrom(c)
	if to == "" {
		to = pageOf(c.Request().URL.Path)
	}
	return views.BackLink{Href: to, Label: "Back to " + pageLabel(to)}
}

// pageOf is the page a URL belongs to: a cluster's actions to the cluster,
// a volume's to the volumes, and so on; offers when nothing fits.
func pageOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "clusters":
		if len(parts) >= 2 && parts[1] != "new" {
			return "/clusters/" + url.PathEscape(parts[1])
		}
		if len(parts) == 1 {
			return "/clusters"
		}
	case "volumes", "billing", "quote-requests", "admin":
		return "/" + parts[0]
	case "settings":
		if len(parts) >= 2 {
			return "/settings/" + url.PathEscape(parts[1])
		}
		return "/settings"
	}
	return "/offers"
}

// pageLabel names the page at to for "Back to …".
func pageLabel(to string) string {
	path, _, _ := strings.Cut(to, "?")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "offers", "":
		return "offers"
	case "clusters":
		switch {
		case len(parts) == 1:
			return "your clusters"
		case parts[1] == "new":
			return "the launch page"
		}
		return "the cluster"
	case "volumes":
		return "volumes"
	case "billing":
		return "billing"
	case "settings":
		return "settings"
	case "quote-requests":
		switch {
		case len(parts) == 1:
			return "your quote requests"
		case parts[1] == "new":
			return "Request a quote"
		}
		return "the quote request"
	case "admin":
		return "the admin pages"
	case "login":
		return "log in"
	case "signup":
		return "sign up"
	}
	return "the previous page"
}
