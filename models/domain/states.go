package domain

import (
	"fmt"
	"strings"
	"time"
)

// ClusterStatus is the cluster's lifecycle state (L8).
type ClusterStatus string

// Statuses (L8). The API may call ready "running".
const (
	StatusProvisioning ClusterStatus = "provisioning"
	StatusInstalling   ClusterStatus = "installing"
	StatusVerifying    ClusterStatus = "verifying" // burn-in before hand-over (X13)
	StatusReady        ClusterStatus = "ready"
	StatusDegraded     ClusterStatus = "degraded"
	StatusStopped      ClusterStatus = "stopped"
	StatusFailed       ClusterStatus = "failed"
	StatusTerminated   ClusterStatus = "terminated"
)

// Terminal reports whether nothing more happens to the cluster.
func (s ClusterStatus) Terminal() bool { return s == StatusFailed || s == StatusTerminated }

// Failed reports a cluster that never came up whole: released, nothing
// billed (L4).
func (s ClusterStatus) Failed() bool { return s == StatusFailed }

// Ready reports a cluster handed over and whole: its workload (a run's
// ranks) may start (L3, X17).
func (s ClusterStatus) Ready() bool { return s == StatusReady }

// LiveStatuses hold machines (quotas count them, L2).
var LiveStatuses = []ClusterStatus{StatusProvisioning, StatusInstalling, StatusVerifying, StatusReady, StatusDegraded}

// Provisioning steps every node goes through (L4, L11), in order.
const (
	StepRunning  = "running"  // (a) the machine is running
	StepAgent    = "agent"    // (b) the cluster agent checked in
	StepMesh     = "mesh"     // (c) the node reached every other node
	StepSoftware = "software" // the chosen software passed its check (S2)
)

// ProvisionSteps lists the steps whose deadlines fail a starting cluster.
var ProvisionSteps = []string{StepRunning, StepAgent, StepMesh}

// ProvisionCap is L4's limit: nothing waits past it, except kinds known to
// boot slowly, whose cap stretches to twice their boot time plus five minutes.
const ProvisionCap = 25 * time.Minute

// NodeStatus is one machine's state inside its cluster.
type NodeStatus string

// Node statuses. A node is provisioning until it joined, installing while
// its cluster's software installs, then ready; down when it left running
// after admission and restarting while recovery brings it back; it ends
// failed (the node that failed its cluster) or terminated with its
// cluster, or lost when it vanished at the provider first.
const (
	NodeProvisioning NodeStatus = "provisioning"
	NodeReady        NodeStatus = "ready"
	NodeFailed       NodeStatus = "failed"
	NodeTerminated   NodeStatus = "terminated"
	NodeLost         NodeStatus = "lost"
	NodeInstalling   NodeStatus = "installing" // up and joined; its software installs (L5)
	NodeDown         NodeStatus = "down"       // left running after admission (R2)
	NodeRestarting   NodeStatus = "restarting" // a recovery attempt restarted it (R3)
	NodeJoining      NodeStatus = "joining"    // an added worker or a replacement taking its steps (L10, X5)
	NodeStopped      NodeStatus = "stopped"    // stopped at the provider with its cluster (B6)
)

// LiveNodeStatuses are the nodes still taking steps.
var LiveNodeStatuses = []NodeStatus{NodeProvisioning, NodeInstalling, NodeReady, NodeJoining}

// Event is what moves a cluster (L8). Every change of a cluster's status,
// and every change that only the current status allows, names its event;
// ClusterTransitions says from which statuses it is legal and where it leads.
type Event string

// Events, in the order a cluster meets them.
const (
	EventPlaced             Event = "placed"              // every machine reserved at once (L3)
	EventJoined             Event = "joined"              // every node reached every other, no software (L5)
	EventJoinedInstall      Event = "joined_install"      // every node reached every other, software to install (L5, S1)
	EventSoftwareReady      Event = "software_ready"      // the software passed its check on every node (L5, S2)
	EventDegrade            Event = "degrade"             // the software failed or missed its window (L6)
	EventRetryInstall       Event = "retry_install"       // the customer retries a failed install (L6)
	EventFail               Event = "fail"                // a late step, a lost machine or a provider refusal (L4)
	EventReleased           Event = "released"            // the provider confirmed a failed cluster's machines released (L4)
	EventTerminateRequested Event = "terminate_requested" // the customer asks to terminate (L7)
	EventTerminated         Event = "terminated"          // every machine released after a terminate request (L7)

	EventMachineDown       Event = "machine_down"       // a machine left running after admission (R2)
	EventHealthNoted       Event = "health_noted"       // machines down or healthy again in a cluster that stays degraded (R2)
	EventHealthy           Event = "healthy"            // every machine healthy again (R2)
	EventHealthyInstall    Event = "healthy_install"    // every machine healthy again; the install goes on (R2, L6)
	EventRecoveryAttempt   Event = "recovery_attempt"   // one recovery attempt made (R3, R5)
	EventRecoveryExhausted Event = "recovery_exhausted" // every attempt spent, still unhealthy (R5)

	EventWorkerRequested  Event = "worker_requested"  // one more machine admitted for a ready cluster (L10)
	EventReplaceRequested Event = "replace_requested" // a new machine asked for in a down one's place (X5)
	EventNodeJoined       Event = "node_joined"       // the added or replacement machine joined (L10, X5)
	EventNodeJoinFailed   Event = "node_join_failed"  // it could not be placed or join: only it is released (L10, X5)

	EventStopRequested   Event = "stop_requested"   // the balance or a budget asks to stop (B5, B6)
	EventStopped         Event = "stopped"          // every machine stopped at the provider; compute billing ends (B6)
	EventMachinesStopped Event = "machines_stopped" // the machines a failed resume started are stopped again (B6)
	EventResumeRequested Event = "resume_requested" // the customer resumes a stopped cluster (B6)
	EventResumed         Event = "resumed"          // every machine joined again; billing restarts (B6)
	EventResumedDegraded Event = "resumed_degraded" // joined again, its software had not passed its check (B6, L6)
	EventResumeFailed    Event = "resume_failed"    // a machine did not come back in time; stopped again (B6, L4)

	EventJoinedVerify   Event = "joined_verify"   // every node reached every other, no software: verification runs (X13)
	EventSoftwareVerify Event = "software_verify" // the software passed its check: verification runs (X13)
	EventVerified       Event = "verified"        // every machine and the fabric passed verification: handed over (X13)
	EventVerifyFailed   Event = "verify_failed"   // swaps spent, the fabric failed as a whole, or out of time (X13)
	EventKeepUnverified Event = "keep_unverified" // the customer keeps a cluster that failed verification as it is (X13)
	EventResumedVerify  Event = "resumed_verify"  // joined again after a stop during verification: it verifies again (B6, X13)
)

// ClusterTransition is one legal move: an event in status From leads to To.
type ClusterTransition struct {
	From  ClusterStatus
	Event Event
	To    ClusterStatus
}

// ClusterTransitions is the cluster state machine: every legal (status,
// event) pair and the status it leads to. Anything not listed is refused
// with ErrConflict by the one compare-and-swap (Store.transition). An event
// either leads to one status from wherever it is legal or keeps the status
// it finds, so the swap is one UPDATE.
var ClusterTransitions = []ClusterTransition{
	{StatusProvisioning, EventPlaced, StatusProvisioning},
	{StatusProvisioning, EventJoined, StatusReady},
	{StatusProvisioning, EventJoinedInstall, StatusInstalling},
	{StatusProvisioning, EventFail, StatusFailed},
	{StatusInstalling, EventSoftwareReady, StatusReady},
	{StatusInstalling, EventDegrade, StatusDegraded},
	{StatusDegraded, EventRetryInstall, StatusInstalling},
	{StatusFailed, EventReleased, StatusFailed},

	{StatusProvisioning, EventJoinedVerify, StatusVerifying},
	{StatusInstalling, EventSoftwareVerify, StatusVerifying},
	{StatusVerifying, EventVerified, StatusReady},
	{StatusVerifying, EventVerifyFailed, StatusDegraded},
	{StatusDegraded, EventKeepUnverified, StatusReady},
	{StatusVerifying, EventReplaceRequested, StatusVerifying},
	{StatusVerifying, EventNodeJoined, StatusVerifying},
	{StatusVerifying, EventNodeJoinFailed, StatusVerifying},
	{StatusVerifying, EventTerminateRequested, StatusVerifying},
	{StatusVerifying, EventStopRequested, StatusVerifying},
	{StatusVerifying, EventStopped, StatusStopped},
	{StatusVerifying, EventTerminated, StatusTerminated},

	{StatusReady, EventMachineDown, StatusDegraded},
	{StatusInstalling, EventMachineDown, StatusDegraded},
	{StatusDegraded, EventHealthNoted, StatusDegraded},
	{StatusDegraded, EventHealthy, StatusReady},
	{StatusDegraded, EventHealthyInstall, StatusInstalling},
	{StatusDegraded, EventRecoveryAttempt, StatusDegraded},
	{StatusDegraded, EventRecoveryExhausted, StatusDegraded},

	{StatusReady, EventWorkerRequested, StatusReady},
	{StatusReady, EventReplaceRequested, StatusReady},
	{StatusDegraded, EventReplaceRequested, StatusDegraded},
	{StatusReady, EventNodeJoined, StatusReady},
	{StatusDegraded, EventNodeJoined, StatusDegraded},
	{StatusReady, EventNodeJoinFailed, StatusReady},
	{StatusDegraded, EventNodeJoinFailed, StatusDegraded},

	{StatusProvisioning, EventTerminateRequested, StatusProvisioning},
	{StatusInstalling, EventTerminateRequested, StatusInstalling},
	{StatusReady, EventTerminateRequested, StatusReady},
	{StatusDegraded, EventTerminateRequested, StatusDegraded},
	{StatusStopped, EventTerminateRequested, StatusStopped},

	{StatusProvisioning, EventStopRequested, StatusProvisioning},
	{StatusInstalling, EventStopRequested, StatusInstalling},
	{StatusReady, EventStopRequested, StatusReady},
	{StatusDegraded, EventStopRequested, StatusDegraded},
	{StatusInstalling, EventStopped, StatusStopped},
	{StatusReady, EventStopped, StatusStopped},
	{StatusDegraded, EventStopped, StatusStopped},
	{StatusStopped, EventMachinesStopped, StatusStopped},
	{StatusStopped, EventResumeRequested, StatusStopped},
	{StatusStopped, EventResumed, StatusReady},
	{StatusStopped, EventResumedDegraded, StatusDegraded},
	{StatusStopped, EventResumeFailed, StatusStopped},
	{StatusStopped, EventResumedVerify, StatusVerifying},

	{StatusProvisioning, EventTerminated, StatusTerminated},
	{StatusInstalling, EventTerminated, StatusTerminated},
	{StatusReady, EventTerminated, StatusTerminated},
	{StatusDegraded, EventTerminated, StatusTerminated},
	{StatusStopped, EventTerminated, StatusTerminated},
}

// ClusterStatuses lists every status (L8).
var ClusterStatuses = []ClusterStatus{StatusProvisioning, StatusInstalling, StatusVerifying, StatusReady, StatusDegraded,
	StatusStopped, StatusFailed, StatusTerminated}

// Events lists every event.
var Events = []Event{EventPlaced, EventJoined, EventJoinedInstall, EventSoftwareReady, EventDegrade,
	EventRetryInstall, EventFail, EventReleased, EventTerminateRequested, EventTerminated,
	EventMachineDown, EventHealthNoted, EventHealthy, EventHealthyInstall, EventRecoveryAttempt, EventRecoveryExhausted,
	EventWorkerRequested, EventReplaceRequested, EventNodeJoined, EventNodeJoinFailed,
	EventStopRequested, EventStopped, EventMachinesStopped, EventResumeRequested, EventResumed, EventResumedDegraded, EventResumeFailed,
	EventJoinedVerify, EventSoftwareVerify, EventVerified, EventVerifyFailed, EventKeepUnverified, EventResumedVerify}

// NextStatus is where ev leads from status from, and whether it is legal there.
func NextStatus(from ClusterStatus, ev Event) (ClusterStatus, bool) {
	for _, t := range ClusterTransitions {
		if t.From == from && t.Event == ev {
			return t.To, true
		}
	}
	return "", false
}

// EventMove is the statuses ev is legal from and the one it leads to; to
// is "" for an event that keeps whichever status the cluster has.
func EventMove(ev Event) (from []ClusterStatus, to ClusterStatus, err error) {
	keeps, moves := 0, map[ClusterStatus]bool{}
	for _, t := range ClusterTransitions {
		if t.Event != ev {
			continue
		}
		from = append(from, t.From)
		if t.To == t.From {
			keeps++
		} else {
			moves[t.To], to = true, t.To
		}
	}
	switch {
	case len(from) == 0:
		return nil, "", fmt.Errorf("domain: unknown event %q", ev)
	case keeps > 0 && len(moves) > 0, len(moves) > 1:
		return nil, "", fmt.Errorf("domain: event %s must lead to one status or keep the status", ev)
	}
	return from, to, nil
}

// StateDiagram renders the status changes of ClusterTransitions as a
// Mermaid state diagram (docs/architecture.md shows it; a test keeps them equal).
// Events that keep the status are left out: they change no arrow.
func StateDiagram() string {
	var b strings.Builder
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	b.WriteString("    [*] --> provisioning: launch\n")
	for _, t := range ClusterTransitions {
		if t.From != t.To {
			fmt.Fprintf(&b, "    %s --> %s: %s\n", t.From, t.To, t.Event)
		}
	}
	for _, s := range ClusterStatuses {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", s)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// Statuses a node is only shown with: the page derives them from the
// cluster's status, so they are never stored.
const (
	NodeReleased    NodeStatus = "released"    // released with its failed cluster, which it did not fail (L4)
	NodeTerminating NodeStatus = "terminating" // its cluster is being terminated (L7)
	NodeDegraded    NodeStatus = "degraded"    // up, but its cluster's software failed to get in place (L6)
	NodeVerifying   NodeStatus = "verifying"   // up, its GPUs and links being checked before hand-over (X13)
)

// StopReason says why a cluster is stopped (B5, B6).
type StopReason string

// Stop reasons.
const (
	StopByBalance StopReason = "balance" // the balance ran out and its grace passed (B6)
	StopByBudget  StopReason = "budget"  // the environment's monthly budget was reached (B5)
	// StopByCustomer is a stop a member asked for (Stop on the page, the
	// API, the CLI, MCP): it keeps the disks and the volume, ends compute
	// billing once every machine is stopped, and Resume starts it again.
	StopByCustomer StopReason = "customer"
	// StopByIdle is the stop of a cluster whose GPUs sat idle past its
	// opt-in idle rule and grace (X15).
	StopByIdle StopReason = "idle"
)
