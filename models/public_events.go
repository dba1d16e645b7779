package models

import "strings"

// The public event vocabulary (X8, X16): the names webhooks, the event
// stream and the CLI give the state changes customers can subscribe to.
// Every cluster event row records its public type (cluster_events.type)
// when it has one; billing events have no cluster row and are named at the
// point they happen (top-up credited, auto-recharge failed, balance low,
// budget threshold reached).
const (
	TypeClusterProvisioning      = "cluster.provisioning"       // a launch was accepted; machines are being reserved
	TypeClusterInstalling        = "cluster.installing"         // every node reached every other; the software installs
	TypeClusterReady             = "cluster.ready"              // every node passed its checks; billing runs (L5)
	TypeClusterDegraded          = "cluster.degraded"           // a machine went down or the software failed (L6, R2)
	TypeClusterHealthy           = "cluster.healthy"            // every machine healthy again (R2)
	TypeClusterRecoveryExhausted = "cluster.recovery_exhausted" // every recovery attempt spent, still unhealthy (R5)
	TypeClusterStopped           = "cluster.stopped"            // stopped by the balance or a budget (B6)
	TypeClusterResumed           = "cluster.resumed"            // every machine back after a resume (B6)
	TypeClusterTerminated        = "cluster.terminated"         // every machine released after a terminate (L7)
	TypeClusterFailed            = "cluster.failed"             // never came up; nothing billed (L4)
	TypeNodeDown                 = "node.down"                  // one more machine down in a degraded cluster
	TypeNodeReplaced             = "node.replaced"              // a replacement machine joined in a down one's place (X5)
	TypeNodeJoined               = "node.joined"                // an added worker joined (L10)
	TypeNodeVerificationFailed   = "node.verification_failed"   // a machine failed verification before hand-over; the message names its machine id (X13)
	TypeClusterVerifying         = "cluster.verifying"          // every node up (and its software ready): verification before hand-over runs (X13)
	TypeRunStarted               = "run.started"                // a run's ranks started on its verified cluster (X17)
	TypeRunInterrupted           = "run.interrupted"            // a machine died, hung or erred (or a planned stop came): the ranks stopped (X17)
	TypeRunResumed               = "run.resumed"                // every rank restarted with the resume command (X17)
	TypeRunFinished              = "run.finished"               // the finish rule held; the machines are released (X17)
	TypeRunFailed                = "run.failed"                 // the run cannot go on (restart budget spent, launch failed); checkpoints kept (X17)
	TypeTopUpCredited            = "billing.topup_credited"     // a top-up was credited to the balance (B4)
	TypeAutoRechargeFailed       = "billing.auto_recharge_failed"
	TypeBalanceLow               = "billing.balance_low"      // the balance runs low or ran out (B6)
	TypeBudgetThreshold          = "billing.budget_threshold" // an environment's budget reached 50, 80 or 100 % (X6)
	TypeTest                     = "webhook.test"             // sent by "Send test event"; never subscribed to

	TypeReservationBooked     = "reservation.booked"      // a booking was accepted and its deposit taken (X18)
	TypeReservationChanged    = "reservation.changed"     // its start or term was changed within the change window
	TypeReservationCancelled  = "reservation.cancelled"   // cancelled before the start; the refund follows the terms
	TypeReservationLaunched   = "reservation.launched"    // its cluster was launched ahead of the start
	TypeReservationHandedOver = "reservation.handed_over" // the cluster is ready and the term bills; late hours credited
	TypeReservationEnding     = "reservation.ending"      // the term ends in a day, or in an hour
	TypeReservationEnded      = "reservation.ended"       // the term ended; the machines are released
	TypeReservationFailed     = "reservation.failed"      // the source could not deliver; the deposit refunded
)

// PublicEventTypes lists every public type, in the order pages show them.
var PublicEventTypes = []string{
	TypeClusterProvisioning, TypeClusterInstalling, TypeClusterReady, TypeClusterDegraded, TypeClusterHealthy,
	TypeClusterRecoveryExhausted, TypeClusterStopped, TypeClusterResumed, TypeClusterTerminated, TypeClusterFailed,
	TypeNodeDown, TypeNodeReplaced, TypeNodeJoined, TypeClusterVerifying, TypeNodeVerificationFailed,
	TypeRunStarted, TypeRunInterrupted, TypeRunResumed, TypeRunFinished, TypeRunFailed,
	TypeTopUpCredited, TypeAutoRechargeFailed, TypeBalanceLow, TypeBudgetThreshold,
	TypeReservationBooked, TypeReservationChanged, TypeReservationCancelled, TypeReservationLaunched,
	TypeReservationHandedOver, TypeReservationEnding, TypeReservationEnded, TypeReservationFailed,
}

// FeedEventTypes are the public types the event feed (GET /v1/events, its
// stream and the MCP tools) carries: every type but billing's and
// reservations', whose events have no cluster row (reservations keep their
// own trail, GET /v1/reservations/{id}). PublicEventTypes is the one list: the README, the
// OpenAPI document, the webhook page and the stream are held to it by a test.
var FeedEventTypes = func() []string {
	var out []string
	for _, t := range PublicEventTypes {
		if !strings.HasPrefix(t, "billing.") && !strings.HasPrefix(t, "reservation.") {
			out = append(out, t)
		}
	}
	return out
}()

// IsPublicEventType reports whether t is in PublicEventTypes.
func IsPublicEventType(t string) bool {
	for _, p := range PublicEventTypes {
		if p == t {
			return true
		}
	}
	return false
}

// PublicEventType is the public type of a cluster event, "" for events that
// are not public (node steps, requests, informational lines). Rows written
// since migration 0950 carry it; older rows are named from their kind and
// status.
func PublicEventType(e ClusterEvent) string {
	if e.Type != "" {
		if IsPublicEventType(e.Type) {
			return e.Type
		}
		return ""
	}
	if e.Kind != "status" {
		return ""
	}
	switch ClusterStatus(e.Status) {
	case StatusInstalling:
		return TypeClusterInstalling
	case StatusVerifying:
		return TypeClusterVerifying
	case StatusReady:
		return TypeClusterReady
	case StatusDegraded:
		return TypeClusterDegraded
	case StatusStopped:
		return TypeClusterStopped
	case StatusTerminated:
		return TypeClusterTerminated
	case StatusFailed:
		return TypeClusterFailed
	}
	return ""
}

// transitionTypes names the transitions that are public events.
var transitionTypes = map[Event]string{
	EventJoined:            TypeClusterReady,
	EventSoftwareReady:     TypeClusterReady,
	EventJoinedInstall:     TypeClusterInstalling,
	EventJoinedVerify:      TypeClusterVerifying,
	EventSoftwareVerify:    TypeClusterVerifying,
	EventVerified:          TypeClusterReady,
	EventVerifyFailed:      TypeClusterDegraded,
	EventRetryInstall:      TypeClusterInstalling,
	EventDegrade:           TypeClusterDegraded,
	EventMachineDown:       TypeClusterDegraded,
	EventHealthy:           TypeClusterHealthy,
	EventHealthyInstall:    TypeClusterHealthy,
	EventRecoveryExhausted: TypeClusterRecoveryExhausted,
	EventStopped:           TypeClusterStopped,
	EventResumed:           TypeClusterResumed,
	EventResumedDegraded:   TypeClusterResumed,
	EventResumedVerify:     TypeClusterResumed,
	EventTerminated:        TypeClusterTerminated,
	EventFail:              TypeClusterFailed,
}

// transitionType is ch's public type ("" = none).
func transitionType(ch change) string {
	if ch.typ != "" {
		return ch.typ
	}
	if ch.event == EventHealthNoted && ch.kind == "error" {
		return TypeNodeDown // a further machine down: the cluster was degraded already
	}
	return transitionTypes[ch.event]
}
