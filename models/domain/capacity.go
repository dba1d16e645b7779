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

// FabricText names the fabric for people.
func FabricText(f string) string {
	switch f {
	case "infiniband":
		return "InfiniBand"
	case "roce":
		return "RoCE"
	case "ethernet":
		return "Ethernet"
	}
	return "Any fabric"
}

// CapacityStatusText says what a status means for the customer.
func CapacityStatusText(st CapacityStatus) string {
	switch st {
	case CapacityNew:
		return "Your request is waiting for our sales team; they reply within one business day."
	case CapacityContacted:
		return "Our sales team has been in touch with your contact to work out the details."
	case CapacityQuoted:
		return "Your request is quoted: its private offer, at its locked price, is listed on this request's page (and marked as yours in the offers) as soon as it is made — launch it from there. Reply to our mail to change what you asked for."
	case CapacityWon:
		return "Your reserved capacity is agreed. Sales will confirm when the machines are ready for you."
	case CapacityLost:
		return "This request is closed. Send a new one whenever you need capacity again."
	}
	return "Its status changed to " + string(st) + "."
}
