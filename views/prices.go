package views

// AdminPricesPage is /admin/prices: clusters whose provider bills more
// than the cluster cost when it was launched (OP1, Q2).
type AdminPricesPage struct {
	Meta Meta
	Rows []PriceRow
}

// PriceRow is one such cluster; the prices are per machine-hour in dollars.
type PriceRow struct {
	Cluster, Org, OrgName, Provider, Offer, Status string
	Since                                          string
	Launch, Billed, Customer                       string
	Live                                           bool // not ended: still billing
}
