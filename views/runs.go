package views

// RunsPage is /runs (X17): the organisation's runs, plain data.
type RunsPage struct {
	Meta Meta
	Rows []RunRow
}

// RunRow is one run in the list and the head of its page.
type RunRow struct {
	ID, Name, Status, Message string
	ClusterID                 string
	Shape                     string // "8 × 8 H100 80GB"
	Price                     string // "$159.81/h (locked)"
	Restarts                  string // "1 of 5"
	ETTR                      string // "97.4 %"
	Created                   string
}

// RunPage is /runs/{id} (X17): the run, its bill and its interruptions.
type RunPage struct {
	Meta          Meta
	Run           RunRow
	Command       string
	ResumeCommand string
	CheckpointDir string
	FinishRule    string
	Paid          string // "3,840 machine-minutes"
	Productive    string
	Lost          string
	Interruptions []RunInterruptionRow
}

// RunInterruptionRow is one stop of the ranks.
type RunInterruptionRow struct {
	At, Node, Cause, Message string
	Detection, Resume, Lost  string
	Warned                   bool
}
