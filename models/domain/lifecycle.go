package domain

import "time"

// Lifecycle is the part of a cluster that every "can X now" and "is
// anything under way" reads: its status and the requests and marks that
// change what may happen to it. The store's Cluster hands it out
// (Cluster.Lifecycle); the use case that guards an action and the page
// that offers its button ask the same method here, so they cannot
// disagree (L6, L7, L10, R3, R5, B6, X5, X13, X15).
type Lifecycle struct {
	Status               ClusterStatus
	Nodes                int
	LastError            string
	ReadyAt              *time.Time // billing started: the machines were handed over once (L5)
	TerminateRequestedAt *time.Time
	StopRequestedAt      *time.Time
	ResumeRequestedAt    *time.Time
	RecoverRequestedAt   *time.Time
	EpisodeStartedAt     *time.Time // an unhealthy episode is open (R2)
	StopReason           StopReason
	StoppedFrom          ClusterStatus
	StoppedAt            *time.Time
	UnbilledAt           *time.Time // billing held by verification (X13)
}

// Problem is the cluster's lastError as a value.
func (c Lifecycle) Problem() LastError { return ParseLastError(c.LastError) }

// Terminating reports a terminate request not yet carried out (L7).
func (c Lifecycle) Terminating() bool { return c.TerminateRequestedAt != nil && !c.Status.Terminal() }

// Ending reports a cluster that ended or is being terminated (L7): nothing
// but the release may happen to it any more.
func (c Lifecycle) Ending() bool { return c.Status.Terminal() || c.TerminateRequestedAt != nil }

// TerminateAsked reports a terminate request, carried out or not (L7).
func (c Lifecycle) TerminateAsked() bool { return c.TerminateRequestedAt != nil }

// CanTerminate reports whether a terminate request would be new (L7):
// not ended and not already asked for.
func (c Lifecycle) CanTerminate() bool { return !c.Ending() }

// Connectable reports whether the cluster's machines are up to be reached
// (L9): ready, installing or degraded, and not being terminated.
func (c Lifecycle) Connectable() bool {
	switch c.Status {
	case StatusReady, StatusInstalling, StatusVerifying, StatusDegraded:
		return c.TerminateRequestedAt == nil
	}
	return false
}

// CanRetryInstall reports whether "retry install" applies (L6): degraded
// by its software, not being terminated.
func (c Lifecycle) CanRetryInstall() bool {
	return c.Status == StatusDegraded && SoftwareFailure(c.LastError) && c.TerminateRequestedAt == nil
}

// CanRecoverNow reports whether "recover now" applies (R5): degraded with
// a machine down, not being terminated.
func (c Lifecycle) CanRecoverNow() bool {
	return c.Status == StatusDegraded && c.EpisodeStartedAt != nil && c.TerminateRequestedAt == nil
}

// RecoverAsked reports a "recover now" waiting for the recovery job (R5).
func (c Lifecycle) RecoverAsked() bool { return c.RecoverRequestedAt != nil }

// CanSetRecovery reports whether the recovery policy may change (R3): not
// ended and not being terminated.
func (c Lifecycle) CanSetRecovery() bool { return !c.Ending() }

// CanResume reports whether the resume button applies (B6); see Resumable.
func (c Lifecycle) CanResume() bool { return c.Resumable() }

// UnderWay reports whether anything is changing on its own, so a page
// showing the cluster keeps polling: it starts or installs (L4, L5), or a
// terminate, stop or resume is being carried out (L7, B6), including the
// stop of the machines a failed resume started.
func (c Lifecycle) UnderWay() bool {
	if c.Status.Terminal() {
		return false
	}
	return c.Status == StatusProvisioning || c.Status == StatusInstalling || c.Status == StatusVerifying ||
		c.TerminateRequestedAt != nil || c.StopRequestedAt != nil || c.Resuming()
}

// StopAsked reports a stop to carry out, or machines a failed resume
// started to stop again (B5, B6): whatever the status, a stop is pending.
func (c Lifecycle) StopAsked() bool { return c.StopRequestedAt != nil }

// Stopping reports a stop requested and not yet carried out (the status
// stays until every machine is stopped at the provider).
func (c Lifecycle) Stopping() bool { return c.StopRequestedAt != nil && c.Status != StatusStopped }

// Stopped reports a cluster stopped at the provider (B6): its disks and
// volume kept, compute billing ended.
func (c Lifecycle) Stopped() bool { return c.Status == StatusStopped }

// RestoppingAfterFailedResume reports a stopped cluster whose machines a
// failed resume started and which are being stopped again (B6).
func (c Lifecycle) RestoppingAfterFailedResume() bool {
	return c.Status == StatusStopped && c.StopRequestedAt != nil
}

// StoppedAtProvider reports a stop in force with its moment known: compute
// billing ended then (B6).
func (c Lifecycle) StoppedAtProvider() bool { return c.Status == StatusStopped && c.StoppedAt != nil }

// StopInForceOrAsked reports a cluster stopped or with a stop pending: its
// stop reason and moment are part of what it says (B5, B6).
func (c Lifecycle) StopInForceOrAsked() bool {
	return c.Status == StatusStopped || c.StopRequestedAt != nil
}

// Resuming reports a stopped cluster whose machines are starting again.
func (c Lifecycle) Resuming() bool { return c.Status == StatusStopped && c.ResumeRequestedAt != nil }

// Starting reports a cluster whose machines take the launch steps (L4):
// provisioning, or resuming from a stop with the same steps and deadlines.
func (c Lifecycle) Starting() bool { return c.Status == StatusProvisioning || c.Resuming() }

// Resumable reports whether the resume button applies: stopped, nothing
// under way.
func (c Lifecycle) Resumable() bool {
	return c.Status == StatusStopped && c.ResumeRequestedAt == nil && c.StopRequestedAt == nil && c.TerminateRequestedAt == nil
}

// Stoppable reports whether the customer's Stop applies: ready or degraded
// (handed over), nothing stopping, resuming or ending. A cluster still
// starting is terminated instead, or stopped once it is ready.
func (c Lifecycle) Stoppable() bool {
	return (c.Status == StatusReady || c.Status == StatusDegraded) && c.StopRequestedAt == nil &&
		c.TerminateRequestedAt == nil && c.ResumeRequestedAt == nil
}

// CustomerStopPending reports the customer's own stop not yet carried out
// (B6's machinery with reason customer, L7).
func (c Lifecycle) CustomerStopPending() bool {
	return c.StopReason == StopByCustomer && c.Status != StatusStopped
}

// GPUsAtWork reports whether the cluster's machines may be running GPUs:
// not stopped and not ended (X15). A node's own status says the rest
// (NodeStatus.GPUsRunning).
func (c Lifecycle) GPUsAtWork() bool { return c.Status != StatusStopped && !c.Status.Terminal() }

// Verifying reports a cluster in burn-in before hand-over (X13).
func (c Lifecycle) Verifying() bool { return c.Status == StatusVerifying }

// VerifyingOrStoppedVerifying reports a cluster verifying, or stopped in
// the middle of it (it verifies again on resume, X13, B6).
func (c Lifecycle) VerifyingOrStoppedVerifying() bool {
	return c.Status == StatusVerifying || c.StoppedFrom == StatusVerifying
}

// CanVerifyAgain reports whether "run verification again" applies: ready,
// not being terminated or stopped (X13).
func (c Lifecycle) CanVerifyAgain() bool {
	return c.Status == StatusReady && c.TerminateRequestedAt == nil && c.StopRequestedAt == nil
}

// VerifyAgainOffered is CanVerifyAgain with the last run's state: never
// while a run is still going (X13).
func (c Lifecycle) VerifyAgainOffered(lastRun string) bool {
	return c.CanVerifyAgain() && lastRun != VerifyRunning
}

// CanKeepUnverified reports whether "keep it as it is" applies: degraded
// by a failed verification, not being terminated (X13).
func (c Lifecycle) CanKeepUnverified() bool {
	return c.Status == StatusDegraded && ParseLastError(c.LastError).Kind == KindVerifyFailed && c.TerminateRequestedAt == nil
}

// MaySwapDuringVerify reports whether verification may swap a machine in
// this state: verifying, nothing terminating or stopping it (X13).
func (c Lifecycle) MaySwapDuringVerify() bool {
	return c.Status == StatusVerifying && c.TerminateRequestedAt == nil && c.StopRequestedAt == nil
}

// BillingHeld reports whether verification holds the cluster's billing (X13).
func (c Lifecycle) BillingHeld() bool { return c.UnbilledAt != nil }

// InstallUnderWay reports software installing on a cluster nobody is
// terminating (L5, L6).
func (c Lifecycle) InstallUnderWay() bool {
	return c.Status == StatusInstalling && c.TerminateRequestedAt == nil
}

// EverReady reports a cluster handed over at least once: billing started (L5).
func (c Lifecycle) EverReady() bool { return c.ReadyAt != nil }

// OnceUp reports a cluster handed over at least once and not ended: the
// panels about running machines (recovery, GPU telemetry) apply (R3, X15).
func (c Lifecycle) OnceUp() bool { return !c.Status.Terminal() && c.ReadyAt != nil }

// ProblemShown reports whether the cluster's lastError is shown as its
// problem (L4, L6, R5, B6): a failed or degraded cluster's, or a stopped
// one's whose resume failed or was cancelled.
func (c Lifecycle) ProblemShown() bool {
	le := c.Problem()
	switch {
	case le.Kind == "":
		return false
	case c.Status == StatusStopped && (le.Kind == KindResumeFailed || le.Kind == KindResumeCancelled):
		return true
	}
	return c.Status == StatusFailed || c.Status == StatusDegraded
}

// ---- joins (L10, X5) ----

// Joinable reports whether a machine may join at all: not ended, not
// being terminated, no stop pending (B6: a stop under way is not undone
// by a new machine).
func (c Lifecycle) Joinable() bool { return !c.Ending() && c.StopRequestedAt == nil }

// AcceptsWorker reports whether the status lets a worker be added (L10):
// ready only.
func (c Lifecycle) AcceptsWorker() bool { return c.Status == StatusReady }

// AcceptsReplacement reports whether the status lets a down machine be
// replaced (X5): ready or degraded.
func (c Lifecycle) AcceptsReplacement() bool {
	return c.Status == StatusReady || c.Status == StatusDegraded
}

// JoinsOffered reports whether the cluster page shows the add-worker and
// replace panel (L10, X5): handed over once, joinable, not stopped.
func (c Lifecycle) JoinsOffered() bool {
	return c.Joinable() && c.ReadyAt != nil && c.Status != StatusStopped
}

// CanAddWorker reports whether "Add worker" applies, nothing joining yet
// (L10): the panel is shown, the status accepts a worker and the cluster
// is below MaxNodes.
func (c Lifecycle) CanAddWorker() bool {
	return c.JoinsOffered() && c.AcceptsWorker() && c.Nodes < MaxNodes
}

// CanReplace reports whether "Replace" applies to a machine in status n,
// nothing joining yet (X5).
func (c Lifecycle) CanReplace(n NodeStatus) bool {
	return c.JoinsOffered() && c.AcceptsReplacement() && n.Replaceable()
}

// ---- the GPU watch (X15) ----

// Watchable reports whether the GPU-watch panel and its settings apply:
// handed over once, not ended, not being terminated (X15).
func (c Lifecycle) Watchable() bool { return !c.Ending() && c.ReadyAt != nil }

// ---- nodes ----

// Replaceable reports whether a machine in this status may be replaced
// (X5): down (it left running after admission).
func (s NodeStatus) Replaceable() bool { return s == NodeDown }

// Down reports a machine that left running after admission (R2).
func (s NodeStatus) Down() bool { return s == NodeDown }

// Unwell reports a machine down or being restarted by recovery (R2, R3).
func (s NodeStatus) Unwell() bool { return s == NodeDown || s == NodeRestarting }

// Joining reports an added worker or a replacement taking its own steps (L10, X5).
func (s NodeStatus) Joining() bool { return s == NodeJoining }

// StepFailed reports a machine that failed its step: it failed its cluster
// or vanished at the provider (L4).
func (s NodeStatus) StepFailed() bool { return s == NodeFailed || s == NodeLost }

// TakingSteps reports a machine on its launch or join steps (L4, L10, X5).
func (s NodeStatus) TakingSteps() bool { return s == NodeProvisioning || s == NodeJoining }

// Installing reports a machine whose software installs (L5).
func (s NodeStatus) Installing() bool { return s == NodeInstalling }

// SoftwareFailed reports a machine up whose software failed (L6).
func (s NodeStatus) SoftwareFailed() bool { return s == NodeDegraded }

// Gone reports a machine that failed its cluster, vanished or ended.
func (s NodeStatus) Gone() bool { return s == NodeFailed || s == NodeLost || s == NodeTerminated }

// Placing reports a machine still taking the launch's steps (L4).
func (s NodeStatus) Placing() bool { return s == NodeProvisioning }

// GPUsRunning reports whether a node in status s has GPUs at work now
// (up and not stopped, down, restarting or released); the others' last
// figures are shown as last seen, never as now.
func (s NodeStatus) GPUsRunning() bool {
	switch s {
	case NodeProvisioning, NodeInstalling, NodeReady, NodeJoining:
		return true
	}
	return false
}

// SoftwareFailure reports whether lastError is a software failure that
// RetryInstall can act on (L6), as opposed to a lost node (R2).
func SoftwareFailure(lastError string) bool {
	switch ParseLastError(lastError).Kind {
	case KindInstallFailed, KindCheckFailed, KindInstallInterrupted: // interrupted: a stop cut the install off (B6)
		return true
	}
	return false
}

// Verification run states (X13).
const (
	VerifyRunning = "running"
	VerifyPassed  = "passed"
	VerifyFailed  = "failed"
)
