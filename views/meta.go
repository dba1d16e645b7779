// Package views holds the dashboard's templ components and their view
// models. Views receive plain data and render: they query nothing and decide
// nothing (permissions arrive as booleans).
package views

import (
	"fmt"
	"time"
)

// Meta is what every page's layout needs.
type Meta struct {
	Title     string
	CSRF      string // token for forms (hidden _csrf) and htmx (X-CSRF-Token header)
	Path      string // the current path, to mark the active nav item
	User      *UserNav
	Dev       bool // development mode: show the dev mailbox and clock links
	Flashes   []Flash
	RequestID string
	Assets    map[string]string // static asset name → versioned URL (nil: unversioned)
	// ChargeProblem is a failed auto-recharge, for owners and admins (B4).
	ChargeProblem *ChargeBanner
	// Stops announces clusters the budget or the balance stopped, for
	// every member of the organisation (B5, B6).
	Stops []StopBanner
	// PollEvery is how often a page with something under way (the
	// clusters list, a live cluster page) refreshes itself (0: DefaultPoll).
	PollEvery time.Duration
}

// DefaultPoll is how often a page with something under way refreshes itself
// unless the server is configured otherwise (web.Config.PagePoll).
const DefaultPoll = 3 * time.Second

// PollTrigger is the hx-trigger of a page that refreshes itself every
// PollEvery: "every 3s", or in milliseconds when not whole seconds
// ("every 400ms").
func (m Meta) PollTrigger() string {
	d := m.PollEvery
	if d <= 0 {
		d = DefaultPoll
	}
	if d%time.Second == 0 {
		return fmt.Sprintf("every %ds", d/time.Second)
	}
	return fmt.Sprintf("every %dms", max(d.Milliseconds(), 1))
}

// StopBanner is one cause's stopped clusters and the way forward.
type StopBanner struct {
	Reason   string // "budget" or "balance"
	Headline string
	Text     string
	Clusters []NavItem // each stopped cluster's page
	Href     string    // the way forward ("" for members, who cannot pay)
	Action   string
}

// Asset is the URL of a static asset ("css/app.css"): versioned by content
// hash, so browsers cache it for good.
func (m Meta) Asset(name string) string {
	if u, ok := m.Assets[name]; ok {
		return u
	}
	return "/static/" + name
}

// UserNav is the signed-in user as the navigation shows them.
type UserNav struct {
	Email      string
	OrgName    string
	CanBilling bool   // owner and admin
	Balance    string // the organisation's balance, for owners and admins
	Accruing   string // usage accruing, already off Balance; "" when none (B8)
	CanTeam    bool   // owner and admin
	IsOperator bool
}

// FlashKind picks a flash's colour.
type FlashKind string

// Flash kinds.
const (
	FlashInfo    FlashKind = "info"
	FlashSuccess FlashKind = "success"
	FlashError   FlashKind = "error"
)

// Flash is a one-line message at the top of the page, with the way
// forward as a link when there is one (A4: "Add $34.94").
type Flash struct {
	Kind    FlashKind
	Message string
	Href    string // where the way forward is; empty: no link
	Action  string // the link's words
}

// BackLink is an error page's way back: where the person came from.
type BackLink struct {
	Href, Label string
}

// NavItem is one link in the top bar.
type NavItem struct {
	Label, Href string
}

// Nav lists the top-bar links for the user (signed out: just offers).
func (m Meta) Nav() []NavItem {
	items := []NavItem{{"Offers", "/offers"}}
	if m.User == nil {
		return items
	}
	items = append(items, NavItem{"Clusters", "/clusters"}, NavItem{"Volumes", "/volumes"})
	if m.User.CanBilling {
		items = append(items, NavItem{"Billing", "/billing"})
	}
	items = append(items, NavItem{"Settings", "/settings"})
	if m.User.IsOperator {
		items = append(items, NavItem{"Admin", "/admin"})
	}
	return items
}

// Active reports whether href is the current section.
func (m Meta) Active(href string) bool {
	return m.Path == href || (len(m.Path) > len(href) && m.Path[:len(href)+1] == href+"/")
}

func flashClass(k FlashKind) string {
	switch k {
	case FlashSuccess:
		return "rounded-md bg-green-50 px-3 py-2 text-sm text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case FlashError:
		return "rounded-md bg-red-50 px-3 py-2 text-sm text-red-800 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-800"
	default:
		return "rounded-md bg-sky-50 px-3 py-2 text-sm text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	}
}

func navClass(active bool) string {
	if active {
		return "rounded-md bg-slate-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-slate-100 dark:text-slate-900"
	}
	return "rounded-md px-3 py-1.5 text-sm font-medium text-slate-600 hover:bg-slate-200 dark:text-slate-300 dark:hover:bg-slate-800"
}

// balanceTitle is the header balance's tooltip: the usage accruing beside
// the figure (B8).
func balanceTitle(u *UserNav) string {
	if u.Accruing == "" {
		return "Balance"
	}
	return "Balance " + u.Balance + " · " + u.Accruing + " accruing this hour (already taken off)"
}
