package views

// The operator's pages beyond organisations and the inbox (OP2, X9).

// AdminNav is the admin area's tabs.
type AdminNav struct {
	Active string // orgs | quote-requests | providers | payments | machines | jobs | audit | leaks
}

// AdminProvidersPage is /admin/providers: each provider's catalog health and markup.
type AdminProvidersPage struct {
	Meta          Meta
	Rows          []AdminProviderRow
	DefaultMarkup string // "5%"
}

// AdminPaymentsPage is /admin/payments (B4, B9): how payments run, the
// webhook endpoint's API version, and the payment events that matched no
// top-up or charge of theirs.
type AdminPaymentsPage struct {
	Meta       Meta
	TestMode   bool     // no Stripe key: top-ups are credited at once
	TopUpsOff  bool     // INVOICE_ONLY, or production without Stripe: no self-service top-ups (B9)
	Pinned     string   // the API version stripe-go speaks
	Version    string   // the latest event's API version, "" before any
	VersionAt  string   // when it arrived
	Fields     []string // the only fields read from an event
	Mismatches []AdminMismatchRow
}

// VersionDiffers is true when the endpoint sends another API version.
func (p AdminPaymentsPage) VersionDiffers() bool { return p.Version != "" && p.Version != p.Pinned }

// AdminMismatchRow is one payment event that credited nothing.
type AdminMismatchRow struct {
	When, OrgID, OrgName, Target, Event, EventType, Object, Reason string
}

// AdminJobsPage is /admin/jobs: each job's schedule and last run, with "run now".
type AdminJobsPage struct {
	Meta Meta
	Rows []AdminJobRow
	Note string // why "run now" is unavailable, when it is
}

// AdminAuditPage is /admin/audit: every organisation's audit log.
type AdminAuditPage struct {
	Meta  Meta
	Org   string // filter: "" = every organisation
	Rows  []AdminAuditRow
	Older string // link to the next page, "" at the end
}

// AdminAuditRow is one audit entry with its organisation.
type AdminAuditRow struct {
	When, OrgID, OrgName, Actor, Action, Target, IP, Detail string
}

// AdminBalancePage is /admin/orgs/{id}/balance: the ledger and an adjustment form.
type AdminBalancePage struct {
	Meta     Meta
	OrgID    string
	OrgName  string
	Balance  string
	Entries  []AdminLedgerRow
	Amount   string
	Reason   string
	Token    string
	Problems map[string]string
	// TopUps are the organisation's credited top-ups, each with its
	// Reverse form (B9).
	TopUps []AdminTopUpRow
}

// AdminTopUpRow is one credited top-up and what reversing it would do.
type AdminTopUpRow struct {
	ID, When, Amount string
	Reversed         string // "$500.00 on 2026-12-03 10:00 UTC"; "" = not reversed
	// Confirm is the confirmation's detail: the ledger entry, and what a
	// negative balance then does to the organisation's clusters.
	Confirm  string
	Typed    string            // the amount as typed (a refused form)
	Reason   string            // the reason as typed
	Problems map[string]string // a refused form's problems
}

// AdminLedgerRow is one ledger entry.
type AdminLedgerRow struct {
	When, Kind, Status, Amount, Description string
}

// AdminPrivateOfferPage is /admin/quote-requests/{id}/private-offer (X9).
type AdminPrivateOfferPage struct {
	Meta     Meta
	R        QuoteRequestView
	OrgName  string
	Quoted   bool
	Offers   []CatalogChoice // the catalog's offers of the request's accelerator
	Made     []PrivateOfferRow
	Bookings []AdminBookingRow // X18: the reservations booked from this request's private offers
	Form     PrivateOfferForm
	Problems map[string]string
}

// AdminBookingRow is one booking on a request's trail (X18).
type AdminBookingRow struct {
	ID, Status, Shape, Start, Term, Total, Trail string
}

// CatalogChoice is one catalog offer an operator can make private.
type CatalogChoice struct {
	ID, Label string
}

// PrivateOfferForm is the private offer as typed.
type PrivateOfferForm struct {
	OfferID, Nodes, Price, ValidUntil string
	StartAt, TermDays                 string // X18: a dated offer, booked ahead; empty launches now
}

// PrivateOfferRow is a private offer as its organisation's picker (and the
// operators) show it.
type PrivateOfferRow struct {
	ID           string
	Shape        string
	Location     string
	Interconnect string
	Kind         string
	ClusterPrice string // "$73.60/h"
	MachinePrice string // "$18.40/h"
	ValidThrough string // "2026-12-05"
	LaunchURL    string
}

func adminTabLabel(tab string) string {
	switch tab {
	case "orgs":
		return "Organisations"
	case "quote-requests":
		return "Quote requests"
	case "providers":
		return "Providers"
	case "payments":
		return "Payments"
	case "machines":
		return "Machines"
	case "jobs":
		return "Jobs"
	case "leaks":
		return "Leaks"
	case "lemons":
		return "Lemons"
	case "prices":
		return "Prices"
	}
	return "Audit log"
}

// providerRegionsNote is the regions cell of a provider without a regions
// variable.
func providerRegionsNote(name string) string {
	switch name {
	case "ssh":
		return "its machines' locations"
	case "sim":
		return "SIM_CONFIG's"
	}
	return "—"
}

// providerKeyNote is the key cell of a provider without an account key.
func providerKeyNote(name string) string {
	if name == "ssh" {
		return "one per machine"
	}
	return "none needed"
}
