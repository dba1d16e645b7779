package views

// AdminLemonsPage is /admin/lemons (X2): machines
// quarantined as lemons with their history, and the time to repair.
type AdminLemonsPage struct {
	Meta    Meta
	Repair  RepairFigure
	Rows    []LemonRow
	Flashed string // the machine just released, for its confirmation line
}

// RepairFigure is the time to repair over the last 30 days: a machine
// declared down until its replacement joined.
type RepairFigure struct {
	Repairs              int
	Median, P90, Longest string // "12 min"; "" without a repair
}

// LemonRow is one quarantine.
type LemonRow struct {
	ID          string
	Provider    string
	Machine     string
	Quarantined string
	Reason      string
	Released    string // "" = still in quarantine
	ReleasedBy  string
	Faults      []FaultRow
}

// FaultRow is one fault of a quarantined machine.
type FaultRow struct {
	At, Cluster, Node, Kind, Detail, Repair string
}
