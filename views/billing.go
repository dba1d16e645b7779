package views

// BillingPage is /billing: balance, burn rate, hours remaining and the
// ledger's transactions (B1).
type BillingPage struct {
	Meta           Meta
	Balance        string
	BurnRate       string
	HoursRemaining string
	TestMode       bool
	Entries        []LedgerRow
	AutoRecharge   AutoRechargeForm
}

// LedgerRow is one transaction.
type LedgerRow struct {
	At, Kind, Description, Status, Amount string
	Negative                              bool
}
