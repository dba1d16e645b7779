package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// migrateStop adds stop and resume to clusters (the frozen history of
// 0700, in plain SQL).
func migrateStop(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"ALTER TABLE clusters ADD COLUMN stop_requested_at " + ts,
		"ALTER TABLE clusters ADD COLUMN stop_reason varchar(16) NOT NULL DEFAULT ''",
		"ALTER TABLE clusters ADD COLUMN stop_detail varchar(255) NOT NULL DEFAULT ''",
		"ALTER TABLE clusters ADD COLUMN stopped_from varchar(16) NOT NULL DEFAULT ''",
		"ALTER TABLE clusters ADD COLUMN stopped_at " + ts,
		"ALTER TABLE clusters ADD COLUMN bill_from " + ts,
		"ALTER TABLE clusters ADD COLUMN resume_requested_at " + ts,
		"ALTER TABLE clusters ADD COLUMN resume_started_at " + ts,
		"ALTER TABLE clusters ADD COLUMN resumes bigint NOT NULL DEFAULT 0",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// Stopping reports a stop requested and not yet carried out (the status
// stays until every machine is stopped at the provider).
func (c Cluster) Stopping() bool { return c.Lifecycle().Stopping() }

// Resuming reports a stopped cluster whose machines are starting again.
func (c Cluster) Resuming() bool { return c.Lifecycle().Resuming() }

// Starting reports a cluster whose machines take the launch steps (L4):
// provisioning, or resuming from a stop with the same steps and deadlines.
func (c Cluster) Starting() bool { return c.Lifecycle().Starting() }

// Resumable reports whether the resume button applies: stopped, nothing
// under way.
func (c Cluster) Resumable() bool { return c.Lifecycle().Resumable() }

// billAnchor is the start of the cluster's current billed run: readyAt, or
// the moment every machine joined again after the last resume (B2).
func (c billedCluster) billAnchor() time.Time {
	if c.BillFrom != nil && c.BillFrom.After(c.ReadyAt) {
		return *c.BillFrom
	}
	return c.ReadyAt
}

// billEnd is where the current run's billing ends: the verification hold
// (X13), the stop or the release, the earliest set; nil while it runs.
func (c billedCluster) billEnd() *time.Time {
	return earliest(c.UnbilledAt, c.StoppedAt, c.ReleasedAt)
}

// RequestStop records that a live cluster must be stopped (B6): event + state, idempotent
// (a cluster already stopping/stopped is left as is, no error). The stop job performs it.
// A cluster still provisioning keeps its request and is stopped once every
// machine joined; a stopped cluster being resumed has its resume cancelled
// (its machines are stopped again). A cluster that ended or is being
// terminated is left as is.
func (s *Store) RequestStop(ctx context.Context, orgID, clusterID string, reason StopReason, detail string) (Cluster, error) {
	if reason != StopByBalance && reason != StopByBudget && reason != StopByIdle && reason != StopByCustomer {
		return Cluster{}, FieldErrors{"reason": fmt.Sprintf("Stop reason %q is neither balance, budget, idle nor customer.", reason)}
	}
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if c, err = tx.ClusterForOrg(ctx, orgID, clusterID); err != nil {
			return err
		}
		switch {
		case c.Status.Terminal(), c.TerminateRequestedAt != nil, c.StopRequestedAt != nil:
			return nil
		case c.Resuming():
			c, err = tx.failResume(ctx, c.ID, ResumeCancelled(reason), "", "",
				fmt.Sprintf("Resume cancelled: stop requested (%s). %s", reason, detail), reason, detail)
			return err
		case c.Status == StatusStopped:
			return nil
		}
		msg := fmt.Sprintf("Stop requested (%s): %s Every machine will be stopped at the provider; compute billing ends when they are.",
			reason, strings.TrimSpace(detail))
		moved, err := tx.transition(ctx, clusterID, change{event: EventStopRequested,
			guard: "stop_requested_at IS NULL AND terminate_requested_at IS NULL", kind: "request", msg: msg,
			set: map[string]any{"stop_requested_at": tx.Now(), "stop_reason": string(reason), "stop_detail": truncate(detail, 255)}})
		if errors.Is(err, ErrConflict) {
			c, err = tx.ClusterForOrg(ctx, orgID, clusterID) // stopped, requested or ended meanwhile
			return err
		}
		c = moved
		return err
	})
	return c, err
}

// ClustersToStop lists clusters whose machines the stop job must stop: a
// stop requested on a live cluster past provisioning, or a stopped cluster
// whose failed resume left machines to stop again. A cluster with a
// machine joining waits until the join job released it (L10, X5): the stop
// then stops the machines that were there.
func (s *Store) ClustersToStop(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("stop_requested_at IS NOT NULL AND terminate_requested_at IS NULL AND status IN ?",
		[]ClusterStatus{StatusInstalling, StatusVerifying, StatusReady, StatusDegraded, StatusStopped}).
		Where("NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.cluster_id = clusters.id AND n.join_kind <> '')").
		Order("stop_requested_at, id").Find(&out).Error
	return out, err
}

// ClustersToResume lists stopped clusters whose resume is under way.
func (s *Store) ClustersToResume(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("status = ? AND resume_requested_at IS NOT NULL AND terminate_requested_at IS NULL",
		StatusStopped).Order("resume_requested_at, id").Find(&out).Error
	return out, err
}

// stoppableNodes are the node statuses a stop stops (ended ones stay as they ended).
var stoppableNodes = []NodeStatus{NodeProvisioning, NodeInstalling, NodeReady, NodeDown, NodeRestarting}

// MarkStopped records that every machine of a cluster with a stop request
// is stopped at the provider (B6): status stopped, compute billing ends at
// this moment (stoppedAt), every machine stopped, the health episode closed
// with it. The status it left is kept for the resume.
func (s *Store) MarkStopped(ctx context.Context, id string) (Cluster, error) {
	now := s.Now()
	c, err := s.ClusterByID(ctx, id)
	if err != nil {
		return c, err
	}
	return s.transition(ctx, id, change{event: EventStopped,
		guard: "stop_requested_at IS NOT NULL AND terminate_requested_at IS NULL",
		set: map[string]any{"stopped_at": now, "stop_requested_at": nil, "stopped_from": gorm.Expr("status"),
			"recover_requested_at": nil, "recovery_next_at": nil},
		msg: fmt.Sprintf("Every machine is stopped at the provider (%s); compute billing ended.", stopWhy(c)),
		nodes: func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeStopped, "down_since": nil, "down_passes": 0, "seen": ""},
				"status IN ?", stoppableNodes)
		}})
}

func stopWhy(c Cluster) string {
	why := "by " + c.StopReason
	if c.StopReason == "" {
		why = "stop requested"
	}
	if c.StopDetail != "" {
		why += ": " + c.StopDetail
	}
	return why
}

// MarkMachinesStopped records that the machines a failed resume had
// started are stopped again.
func (s *Store) MarkMachinesStopped(ctx context.Context, id string) (Cluster, error) {
	return s.transition(ctx, id, change{event: EventMachinesStopped, kind: "info",
		guard: "stop_requested_at IS NOT NULL AND resume_requested_at IS NULL",
		set:   map[string]any{"stop_requested_at": nil},
		msg:   "Every machine is stopped again at the provider."})
}

// RequestResume starts a stopped cluster again (B6): refused with an
// *InsufficientBalanceError when the balance does not pass launch admission
// (L2), with a *QuotaError when the organisation's quotas cannot hold its
// machines again, with a *BudgetReachedError while its environment's
// budget for the month is reached (B5), and with ErrConflict unless the cluster is stopped with
// nothing under way. Every machine then takes the launch steps again
// against their deadlines, counted from now; the stop job starts them.
// Repeating it while the resume is under way changes nothing.
func (s *Store) RequestResume(ctx context.Context, orgID, id, actor string) (Cluster, error) {
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.lockOrg(ctx, orgID); err != nil {
			return err
		}
		var err error
		if c, err = tx.ClusterForOrg(ctx, orgID, id); err != nil {
			return err
		}
		switch {
		case c.Resuming():
			return nil
		case c.Status != StatusStopped || c.TerminateRequestedAt != nil:
			return fmt.Errorf("models: only a stopped cluster can be resumed; %s is %s: %w", c.Name, c.Status, ErrConflict)
		case c.StopRequestedAt != nil:
			return fmt.Errorf("models: %s's machines are still being stopped; resume once they are: %w", c.Name, ErrConflict)
		}
		if err := tx.budgetReachedFor(ctx, c); err != nil {
			return err // B5: the budget would stop it again; a raise lifts it
		}
		org, err := tx.orgQuota(ctx, orgID)
		if err != nil {
			return err
		}
		machines, gpus, err := tx.UsageInUse(ctx, orgID)
		if err != nil {
			return err
		}
		if machines+c.Nodes > org.MaxMachines {
			return &QuotaError{Resource: "machines", Limit: org.MaxMachines, InUse: machines, Requested: c.Nodes}
		}
		if gpus+c.Nodes*c.GPUsPerNode > org.MaxGPUs {
			return &QuotaError{Resource: "gpus", Limit: org.MaxGPUs, InUse: gpus, Requested: c.Nodes * c.GPUsPerNode}
		}
		a, err := tx.AdmissionFor(ctx, orgID, c.USDPerHour)
		if err != nil {
			return err
		}
		if a.Shortfall() > 0 {
			return &InsufficientBalanceError{a}
		}
		now := tx.Now()
		c, err = tx.transition(ctx, id, change{event: EventResumeRequested, kind: "request",
			guard: "resume_requested_at IS NULL AND stop_requested_at IS NULL AND terminate_requested_at IS NULL",
			set:   map[string]any{"resume_requested_at": now, "resume_started_at": now},
			msg: fmt.Sprintf("Resume requested by %s: every machine starts again with the launch's step deadlines; "+
				"billing restarts when all of them have joined.", actor),
			nodes: func(tx *Store) error {
				return tx.nodeRows(ctx, id, map[string]any{"status": NodeProvisioning, "step": StepRunning,
					"running_at": nil, "agent_at": nil, "mesh_at": nil, "heartbeat_at": nil, "message": "",
					"down_since": nil, "down_passes": 0, "seen": ""}, "status = ?", NodeStopped)
			}})
		return err
	})
	return c, err
}

// resumesToReady reports whether a resumed cluster is ready again: its
// software was ready when it stopped (a health episode then does not
// matter: every machine joined again). Otherwise the stop interrupted or
// followed a software failure and it comes back degraded.
func resumesToReady(c Cluster) bool {
	switch ClusterStatus(c.StoppedFrom) {
	case StatusReady:
		return true
	case StatusDegraded:
		return c.DegradedFrom == string(StatusReady)
	}
	return false
}

// MarkResumed is the end of a resume (B6): every machine joined again.
// The stopped span's usage is written first, then billing restarts now for
// every machine (billFrom); the cluster is ready again, or degraded when
// its software had not passed its check before the stop. The health
// episode is closed and the mail says it runs again.
func (s *Store) MarkResumed(ctx context.Context, c Cluster, n *ClusterNotify) (Cluster, error) {
	var out Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		if _, err := tx.MeterCluster(ctx, c.ID); err != nil {
			return err
		}
		now := tx.Now()
		set := map[string]any{"resume_requested_at": nil, "stopped_at": nil, "bill_from": now, "stop_reason": "",
			"stop_detail": "", "resumes": c.Resumes + 1, "episode_started_at": nil, "recovery_attempts": 0,
			"recovery_next_at": nil, "recover_requested_at": nil, "degraded_from": ""}
		ev, msg := EventResumed, "Every machine is up and reached every other again; billing restarts now for all of them."
		step := "done"
		switch {
		case ClusterStatus(c.StoppedFrom) == StatusVerifying:
			// Stopped mid-verification: it verifies again from the start
			// before hand-over, still unbilled (X13).
			ev, n, step = EventResumedVerify, nil, StepVerify
			msg = "Every machine is up and reached every other again. The stop interrupted verification: it runs again from the start before hand-over; verification is not billed, billing restarts at hand-over."
			set["unbilled_at"], set["last_error"] = now, ""
		case resumesToReady(c):
			set["last_error"] = ""
		default:
			ev = EventResumedDegraded
			msg += " The software had not passed its check before the stop: retry the install."
			if ClusterStatus(c.StoppedFrom) != StatusDegraded || c.DegradedFrom != "" {
				set["last_error"] = InstallInterrupted().String()
			}
		}
		var err error
		out, err = tx.transition(ctx, c.ID, change{event: ev, set: set, msg: msg, notify: n, topic: "resumed", try: c.Resumes + 1,
			guard: "resume_requested_at IS NOT NULL AND terminate_requested_at IS NULL",
			nodes: func(tx *Store) error {
				// Every machine is back and billed from now, a slot left
				// unbilled by a failed replacement (X5) too.
				if err := tx.db.WithContext(ctx).Model(&BillingGap{}).Where("cluster_id = ? AND ended_at IS NULL", c.ID).
					Update("ended_at", now).Error; err != nil {
					return err
				}
				if ev == EventResumedVerify {
					if err := tx.restartVerification(ctx, c); err != nil {
						return err
					}
				}
				return tx.nodeRows(ctx, c.ID, map[string]any{"status": NodeReady, "step": step}, "status = ?", NodeProvisioning)
			}})
		return err
	})
	return out, err
}

// FailResume ends a resume that could not bring every machine back in
// time (all or nothing, as L4): the cluster stays stopped with lastError
// "resume_failed:<L4 code>", an event naming the node and the step, every
// machine stopped again (the stop job stops those that started), nothing
// billed for the attempt.
func (s *Store) FailResume(ctx context.Context, id string, lastError LastError, node, step, msg string) (Cluster, error) {
	return s.failResume(ctx, id, ResumeFailed(lastError), node, step, msg, "", "")
}

func (s *Store) failResume(ctx context.Context, id string, lastError LastError, node, step, msg string, reason StopReason, detail string) (Cluster, error) {
	set := map[string]any{"resume_requested_at": nil, "stop_requested_at": s.Now(),
		"last_error": truncate(lastError.String(), 255)}
	if reason != "" {
		set["stop_reason"], set["stop_detail"] = string(reason), truncate(detail, 255)
	}
	return s.transition(ctx, id, change{event: EventResumeFailed, kind: "error", node: node, step: step, msg: msg,
		guard: "resume_requested_at IS NOT NULL", set: set,
		nodes: func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeStopped}, "status IN ?", stoppableNodes)
		}})
}

// MeterCluster writes one cluster's closed usage now (the billing pass's
// arithmetic for one cluster): a resume closes the stopped run's last
// period before billing restarts.
func (s *Store) MeterCluster(ctx context.Context, id string) (int64, error) {
	var page []billedCluster
	err := s.db.WithContext(ctx).Table("clusters AS c").Select(meterColumns).
		Joins("LEFT JOIN usage_marks m ON m.cluster_id = c.id").
		Where("c.id = ? AND c.ready_at IS NOT NULL", id).Scan(&page).Error
	if err != nil || len(page) == 0 {
		return 0, err
	}
	return s.meterPage(ctx, page, s.Now())
}

// NodeMessage notes on a starting node what holds it up (shown on the
// cluster page and added to a missed deadline's event).
func (s *Store) NodeMessage(ctx context.Context, clusterID string, rank int, msg string) error {
	return s.nodeRows(ctx, clusterID, map[string]any{"message": truncate(msg, 1000)}, "rank = ?", rank)
}

// EnforcedStops lists the organisation's clusters that the budget or the
// balance stopped (or is stopping) and that nobody has resumed or
// terminated since, oldest stop first: the dashboard's banner announces
// them (B5, B6).
func (s *Store) EnforcedStops(ctx context.Context, orgID string) ([]Cluster, error) {
	var cs []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND stop_reason IN ? AND terminate_requested_at IS NULL AND resume_requested_at IS NULL AND "+
		"(status = ? OR (status IN ? AND stop_requested_at IS NOT NULL))",
		orgID, []string{string(StopByBudget), string(StopByBalance)}, StatusStopped, LiveStatuses).
		Order("stop_requested_at, id").Limit(50).Find(&cs).Error
	if err != nil {
		return nil, fmt.Errorf("models: enforced stops of %s: %w", orgID, err)
	}
	return cs, nil
}

// StopRefusal is why the machines of a cluster on this provider can never
// be stopped and started again ("" = they can): the provider's own
// sentence, set at start-up from the provider registry (Settings.StopRefusals).
func (s *Store) StopRefusal(provider string) string { return s.settings.StopRefusals[provider] }

// StopUnsupportedError refuses a customer's stop on a provider that cannot
// stop machines (the API's 409 stop_unsupported): terminate is the way to
// end billing there.
type StopUnsupportedError struct {
	Provider, Reason string
}

func (e *StopUnsupportedError) Error() string {
	return "models: " + e.Provider + " cannot stop machines: " + e.Reason
}

// Stoppable reports whether the customer's Stop applies: ready or degraded
// (handed over), nothing stopping, resuming or ending. A cluster still
// starting is terminated instead, or stopped once it is ready.
func (c Cluster) Stoppable() bool { return c.Lifecycle().Stoppable() }

// RequestCustomerStop is the customer's stop (B6's machinery with reason
// customer): refused with a *StopUnsupportedError where the provider
// cannot stop machines, with ErrConflict unless the cluster is ready or
// degraded with nothing under way; asked again while it stops, it changes
// nothing. The stop job stops every machine; compute billing ends when all
// are stopped; disks and the volume are kept.
func (s *Store) RequestCustomerStop(ctx context.Context, orgID, id, actor string) (Cluster, error) {
	c, err := s.ClusterForOrg(ctx, orgID, id)
	if err != nil {
		return c, err
	}
	if why := s.StopRefusal(c.Provider); why != "" {
		return c, &StopUnsupportedError{Provider: c.Provider, Reason: why}
	}
	if c.Stopping() && StopReason(c.StopReason) == StopByCustomer {
		return c, nil
	}
	if !c.Stoppable() {
		return c, fmt.Errorf("models: only a ready or degraded cluster can be stopped; %s is %s: %w", c.Name, c.Status, ErrConflict)
	}
	return s.RequestStop(ctx, orgID, id, StopByCustomer, "requested by "+actor+".")
}

// CancelCustomerStop ends a customer's stop that the provider refused when
// asked (a group it manages whole, e.g. an Instant Cluster): the cluster
// runs on and bills as before, and the event says so. Unlike an enforced
// stop it is never turned into a terminate: the customer asked to keep
// the machines.
func (s *Store) CancelCustomerStop(ctx context.Context, c Cluster, why string) error {
	return s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&Cluster{}).
			Where("id = ? AND stop_requested_at IS NOT NULL AND stop_reason = ? AND status IN ? AND terminate_requested_at IS NULL",
				c.ID, string(StopByCustomer), []ClusterStatus{StatusReady, StatusDegraded}).
			Updates(map[string]any{"stop_requested_at": nil, "stop_reason": "", "stop_detail": "", "updated_at": tx.Now()})
		if res.Error != nil || res.RowsAffected != 1 {
			return res.Error
		}
		return tx.addEvent(ctx, c, c.Status, "error", "", "stop",
			"Stop not carried out: "+why+" Nothing was stopped; the cluster runs and bills as before. Terminate it to end billing.")
	})
}
