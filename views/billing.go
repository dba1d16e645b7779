package views

import (
	"strconv"

	"github.com/a-h/templ"
)

// BillingPage is /billing (B1, B3, X11): the balance and what it lasts,
// spend this month and by day, add funds, usage per cluster and machine, and
// the month's transactions.
type BillingPage struct {
	Meta           Meta
	Balance        string
	BurnRate       string
	HoursRemaining string
	SpendThisMonth string
	TestMode       bool
	TopUpsOff      bool   // INVOICE_ONLY: no self-service top-ups (B9)
	MaxTopUp       string // the largest top-up, like "$50,000.00" (MAX_TOP_UP_USD, B9)
	Month          string // YYYY-MM shown
	MonthProblem   string // the ?month= asked for was not a month: said above the page
	PrevMonth      string
	NextMonth      string // "" for the current month
	Chart          SpendChart
	TopUp          TopUpForm
	Usage          []UsageLine
	Volumes        []VolumeLine // V3, X11: each volume on its own line
	Entries        []LedgerRow
	Accruing       string // usage of open periods, already off Balance; "" when none (B8)
	Carried        string // the balance carried into the month, rounded (B8)
	CarriedFrom    string // the month's first moment, as the rows' dates
	Closing        string // what the rows and Carried add up to: Balance in the current month
	Current        bool   // the month shown is the current one
	// AutoRecharge is the auto-recharge settings panel (B4), rendered in its
	// own section when set; nil leaves the section out.
	AutoRecharge templ.Component
	// Budgets is the budgets and forecast section (B5, X6); nil leaves it out.
	Budgets templ.Component
}

// TopUpForm is the "Add funds" form.
type TopUpForm struct {
	Amount   string
	Problems map[string]string
	Back     string // the page that sent the buyer here (a quote), returned to after a test-mode top-up
}

// LedgerRow is one transaction: the same cells as a row of its CSV.
type LedgerRow struct {
	At, Kind, Description, Status, Amount string
	Negative                              bool
	Counted                               bool // part of the balance (a pending top-up is not)
}

// UsageLine is "Cluster usage — NAME": one line per cluster that opens into
// its machines (B3).
type UsageLine struct {
	ClusterID, Name, Amount, Status string
	Href                            string // the page with this line open (no JS)
	FragmentURL                     string // its machines (htmx)
	Open                            bool
	Machines                        []MachineRow
}

// VolumeLine is "Volume — NAME" on the billing page.
type VolumeLine struct {
	ID, Name, Detail, Amount, Status string
	State                            string // attached to …, detached, deleted …
	ClusterID                        string
	Detached                         bool
}

// MachineRow is one machine under its cluster's line: the same cells as a
// row of the usage CSV after the cluster.
type MachineRow struct {
	Node, MachineHour, Hours, Amount, Status, Intervals string
	Minutes                                             int64 // billed whole minutes (the CSV's exact column)
}

// Cells is the row as the page and the CSV show it.
func (r MachineRow) Cells() []string {
	return []string{r.Node, r.MachineHour, r.Hours, r.Amount, r.Status, r.Intervals}
}

// SpendChart is the daily spend of the last 30 days as SVG bars.
type SpendChart struct {
	Bars          []ChartBar
	Max, Total    string
	First, Last   string // the first and last day's labels
	Width, Height int
}

// ChartBar is one day.
type ChartBar struct {
	X, Y, W, H int
	Label      string // "Nov 30: $12.34"
}

func itoa(n int) string { return strconv.Itoa(n) }

// LargeTopUp is the amount in dollars above which the top-up form asks for
// a confirmation before sending (B9).
const LargeTopUp = "1000"
