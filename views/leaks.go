package views

// AdminLeaksPage is /admin/leaks: machines of ended clusters that a
// provider still had (X10).
type AdminLeaksPage struct {
	Meta Meta
	Rows []LeakRow
}

// LeakRow is one leaked machine.
type LeakRow struct {
	Cluster, Org, Provider, Machine, State string
	Found, Released                        string // Released "" = not yet
}
