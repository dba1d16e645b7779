package views

import "strconv"

// QuoteRequestForm is the request-a-quote form as typed (RQ1). Field names
// match the form's input names and the keys of Problems.
type QuoteRequestForm struct {
	Accelerator  string
	Nodes        string
	GPUsPerNode  string
	Fabric       string
	Location     string
	StartDate    string
	Duration     string
	DurationUnit string // days or weeks
	Budget       string // dollars per hour, whole cluster
	ContactName  string
	ContactEmail string
	ContactPhone string
	Notes        string
}

// QuoteRequestNewPage is /quote-requests/new.
type QuoteRequestNewPage struct {
	Meta         Meta
	Form         QuoteRequestForm
	Problems     map[string]string
	Accelerators []string
	GPUCounts    []int
	Fabrics      []string
	MinDate      string // today, for the date input
	FromOffer    string // the shape the offers page linked from, when prefilled from it
	StartableIn  int    // locations where FromOffer can start now (0: it cannot)
	OffersURL    string // the picker for FromOffer, when it can start somewhere
	MaxNotes     int
}

// QuoteRequestView is one request as its customer sees it.
type QuoteRequestView struct {
	ID           string
	Created      string
	Updated      string
	Shape        string
	Fabric       string
	Location     string
	Start        string
	Duration     string
	Budget       string
	ContactName  string
	ContactEmail string
	ContactPhone string
	Notes        string
	Status       string
	StatusText   string // what the status means for the customer
}

// QuoteRequestsPage is /quote-requests: the org's requests, newest first.
type QuoteRequestsPage struct {
	Meta Meta
	Rows []QuoteRequestView
}

// QuoteRequestPage is /quote-requests/{id}.
type QuoteRequestPage struct {
	Meta   Meta
	R      QuoteRequestView
	Offers []QuoteRequestOffer // the private offers made for it (X9)
}

// QuoteRequestOffer is a private offer made for a request, as its customer
// sees it on the request's page.
type QuoteRequestOffer struct {
	ID, Shape, Where, Price, ValidThrough, LaunchURL string
	Live                                             bool
}

// AdminQuoteRequestsPage is the operators' inbox, /admin/quote-requests (RQ2).
type AdminQuoteRequestsPage struct {
	Meta    Meta
	Filters []StatusFilter
	Filter  string // "" = all
	Rows    []AdminQuoteRequestRow
}

// StatusFilter is one tab of the inbox's status filter.
type StatusFilter struct {
	Label, Href string
	Count       int
	Active      bool
}

// AdminQuoteRequestRow is one request in the inbox, with its status form.
type AdminQuoteRequestRow struct {
	R            QuoteRequestView
	OrgName      string
	OrgID        string
	Requester    string
	OperatorNote string
	Statuses     []string
	Problems     map[string]string
	Saved        bool // answered an htmx save: say so in the row
}

// fabricLabel names a requested fabric ("any" or an interconnect).
func fabricLabel(f string) string {
	if f == "any" || f == "" {
		return "Any"
	}
	return InterconnectLabel(f)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// plural is a count with its noun: "1 location", "3 locations".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
