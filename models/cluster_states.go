package models

import "github.com/clusterdeck/clusterdeck/models/domain"

// ---- what may happen now (L6, L7, R3, R5, B6) ----
//
// Each "can X now" and "is anything under way" is decided once, in
// domain.Lifecycle: the use case that guards the action and the page that
// offers its button ask the same method, so they cannot disagree. The
// methods below are the store's Cluster handing the question on.

// Lifecycle is the part of c every "can X now" decision reads.
func (c Cluster) Lifecycle() domain.Lifecycle {
	return domain.Lifecycle{Status: c.Status, Nodes: c.Nodes, LastError: c.LastError, ReadyAt: c.ReadyAt,
		TerminateRequestedAt: c.TerminateRequestedAt, StopRequestedAt: c.StopRequestedAt,
		ResumeRequestedAt: c.ResumeRequestedAt, RecoverRequestedAt: c.RecoverRequestedAt,
		EpisodeStartedAt: c.EpisodeStartedAt, StopReason: StopReason(c.StopReason),
		StoppedFrom: ClusterStatus(c.StoppedFrom), StoppedAt: c.StoppedAt, UnbilledAt: c.UnbilledAt}
}

// Terminating reports a terminate request not yet carried out (L7).
func (c Cluster) Terminating() bool { return c.Lifecycle().Terminating() }

// Ending reports a cluster that ended or is being terminated (L7): nothing
// but the release may happen to it any more.
func (c Cluster) Ending() bool { return c.Lifecycle().Ending() }

// CanTerminate reports whether a terminate request would be new (L7):
// not ended and not already asked for.
func (c Cluster) CanTerminate() bool { return c.Lifecycle().CanTerminate() }

// Connectable reports whether the cluster's machines are up to be reached
// (L9): ready, installing or degraded, and not being terminated.
func (c Cluster) Connectable() bool { return c.Lifecycle().Connectable() }

// CanRetryInstall reports whether "retry install" applies (L6): degraded
// by its software, not being terminated.
func (c Cluster) CanRetryInstall() bool { return c.Lifecycle().CanRetryInstall() }

// CanRecoverNow reports whether "recover now" applies (R5): degraded with
// a machine down, not being terminated.
func (c Cluster) CanRecoverNow() bool { return c.Lifecycle().CanRecoverNow() }

// CanSetRecovery reports whether the recovery policy may change (R3): not
// ended and not being terminated.
func (c Cluster) CanSetRecovery() bool { return c.Lifecycle().CanSetRecovery() }

// CanResume reports whether the resume button applies (B6); see Resumable.
func (c Cluster) CanResume() bool { return c.Lifecycle().CanResume() }

// UnderWay reports whether anything is changing on its own, so a page
// showing the cluster keeps polling: it starts or installs (L4, L5), or a
// terminate, stop or resume is being carried out (L7, B6), including the
// stop of the machines a failed resume started.
func (c Cluster) UnderWay() bool { return c.Lifecycle().UnderWay() }

// eventMove is the statuses ev is legal from and the one it leads to; to
// is "" for an event that keeps whichever status the cluster has.
func eventMove(ev Event) (from []ClusterStatus, to ClusterStatus, err error) {
	return domain.EventMove(ev)
}
