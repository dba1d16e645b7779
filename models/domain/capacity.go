package domain

// CapacityStatus is where sales is with a request (RQ2).
type CapacityStatus string

// Capacity request statuses. Operators may set any of them at any time: the
// inbox is a tracker, not a state machine.
const (
	CapacityNew       CapacityStatus = "new"
	CapacityContacted CapacityStatus = "contacted"
	CapacityQuoted    CapacityStatus = "quoted"
	CapacityWon       CapacityStatus = "won"
	CapacityLost      CapacityStatus = "lost"
)

// CapacityStatuses lists the statuses in their natural order.
var CapacityStatuses = []CapacityStatus{CapacityNew, CapacityContacted, CapacityQuoted, CapacityWon, CapacityLost}

// WaitingForPeers starts a node's message while the peers it needs have
// not joined the private network yet: the page shows it as a wait.
const WaitingForPeers = "Waiting for "
