package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// Runs drives every active run (X17) on top of its cluster: the ranks'
// first start (run.started), the finish rule (run.finished, the machines
// released), and surgical recovery. When the health job marks a machine of
// a running run's cluster down (its provider says so, its agent fell
// silent, or its GPU reported a fatal XID) or the GPU watch's stall names
// it, the run records the interruption (run.interrupted), the other ranks
// are told to stop, and that machine alone is replaced (X5: same rank,
// name, address and billing line; the healthy machines keep their disks
// and place). Once the replacement joined and the cluster is ready again,
// every rank restarts with the resume command (run.resumed). Each restart
// uses one of the run's restart budget; a spent budget fails the run
// (run.failed), which releases the machines and keeps the volume with its
// checkpoints. A rank exiting non-zero on a healthy cluster is an
// interruption too (restarted without a replacement).
type Runs struct {
	Store *models.Store
	Mail  *models.ClusterNotify // the degraded mail of a hang marked down; nil = none
	// BalanceGrace is the balance enforcement's grace (B6): a stop for the
	// balance comes this long after it ran out; 0 = models.DefaultBalanceGrace.
	BalanceGrace time.Duration
	// RankFailGrace is how long a rank's non-zero exit waits for the
	// health job to name a machine before it counts on its own; 0 = 2 min.
	RankFailGrace time.Duration
}

// Name implements Job.
func (j *Runs) Name() string { return "runs" }

// Run implements Job. One run's trouble does not stop the others.
func (j *Runs) Run(ctx context.Context) error {
	rs, err := j.Store.ActiveRuns(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rs {
		if err := j.advance(ctx, r); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("run %s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (j *Runs) advance(ctx context.Context, r models.Run) error {
	c, err := j.Store.ClusterByID(ctx, r.ClusterID)
	if err != nil {
		return err
	}
	switch {
	case c.Status.Failed():
		_, err = j.Store.MarkRunFailed(ctx, r, "Its cluster never came up: "+c.LastError+". Nothing was billed.")
		return err
	case c.Lifecycle().Ending():
		_, err = j.Store.MarkRunFailed(ctx, r, "Its cluster was terminated before the run finished.")
		return err
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	switch r.Status {
	case models.RunLaunching:
		return j.launching(ctx, r, c, nodes)
	case models.RunRunning:
		return j.running(ctx, r, c, nodes)
	case models.RunRecovering:
		return j.recovering(ctx, r, c, nodes)
	}
	return nil
}

// launching waits for every rank's first start on the handed-over cluster.
func (j *Runs) launching(ctx context.Context, r models.Run, c models.Cluster, nodes []models.ClusterNode) error {
	if !c.Status.Ready() {
		return nil
	}
	ranks, err := j.Store.RunRanks(ctx, r)
	if err != nil || len(ranks) < len(nodes) {
		return err
	}
	_, err = j.Store.MarkRunStarted(ctx, r)
	return err
}

// running watches for a planned stop, a machine down or hung, and the finish rule.
func (j *Runs) running(ctx context.Context, r models.Run, c models.Cluster, nodes []models.ClusterNode) error {
	if c.Lifecycle().StopInForceOrAsked() {
		// A planned stop (B5, B6): the ranks resume when the cluster runs again.
		_, err := j.Store.MarkRunInterrupted(ctx, r, models.Interruption{Cause: models.CausePlanned, Node: "every machine", Rank: -1,
			Message: "the cluster is stopped (" + c.StopReason + "): " + c.StopDetail, FailedAt: coalesce(c.StopRequestedAt, j.Store.Now()),
			Warned: r.WarnedAt != nil})
		return err
	}
	if r.WarnedAt == nil {
		at, err := j.Store.BalanceStopAt(ctx, r.OrgID, j.BalanceGrace)
		if err != nil {
			return err
		}
		if at != nil && !j.Store.Now().Before(at.Add(-models.WarnLead)) {
			_, err = j.Store.MarkRunWarned(ctx, r, "the balance ran out; the cluster stops at "+at.Format("15:04 UTC")+" unless it is topped up")
			return err
		}
		if at, err = j.Store.BudgetStopAt(ctx, c); err != nil {
			return err
		}
		if at != nil && !j.Store.Now().Before(at.Add(-models.WarnLead)) {
			_, err = j.Store.MarkRunWarned(ctx, r, "the environment's budget is reached; the cluster stops at "+at.Format("15:04 UTC")+" unless the budget is raised")
			return err
		}
	}
	if in, ok, err := j.trouble(ctx, c, nodes); err != nil || ok {
		if err != nil {
			return err
		}
		if r, err = j.Store.MarkRunInterrupted(ctx, r, in); err != nil {
			return err
		}
		if nodes, err = j.Store.NodesFor(ctx, c.ID); err != nil {
			return err
		}
		return j.recovering(ctx, r, c, nodes) // the replacement is asked for at once
	}
	ranks, err := j.Store.RunRanks(ctx, r)
	if err != nil {
		return err
	}
	done, failed := r.FinishHolds(ranks)
	if done {
		msg := "Every rank exited 0; its machines are released."
		if r.FinishRule == models.FinishRank0 {
			msg = "Rank 0 exited 0; its machines are released."
		}
		_, err = j.Store.MarkRunFinished(ctx, r, msg)
		return err
	}
	if failed == nil || failed.EndedAt == nil || j.Store.Now().Sub(*failed.EndedAt) < orDefault(j.RankFailGrace, 2*time.Minute) {
		return nil
	}
	for _, n := range nodes {
		if n.DownSince != nil {
			return nil // the health job is confirming a machine: it names the cause
		}
	}
	code := -1
	if failed.ExitCode != nil {
		code = *failed.ExitCode
	}
	_, err = j.Store.MarkRunInterrupted(ctx, r, models.Interruption{Cause: models.CauseRankFailed, Node: failed.Node, Rank: failed.Rank,
		Message: fmt.Sprintf("rank %d exited with code %d on a healthy cluster %s", failed.Rank, code, failed.Error), FailedAt: *failed.EndedAt})
	return err
}

func coalesce(t *time.Time, def time.Time) time.Time {
	if t != nil {
		return *t
	}
	return def
}

// trouble is the first machine that stops the ranks: one the health job
// marked down, or one a stall names (then marked down here, X15).
func (j *Runs) trouble(ctx context.Context, c models.Cluster, nodes []models.ClusterNode) (models.Interruption, bool, error) {
	for _, n := range nodes {
		if !n.Status.Down() {
			continue
		}
		cause := models.CauseMachineDead
		if n.HWFault != "" || strings.HasPrefix(n.Seen, "GPU hardware error") {
			cause = models.CauseFatalXID
		}
		failed := j.Store.Now()
		if n.DownSince != nil {
			failed = *n.DownSince
		}
		if n.HeartbeatAt != nil && n.HeartbeatAt.Before(failed) && cause == models.CauseMachineDead {
			failed = *n.HeartbeatAt // the last moment it was known well
		}
		return models.Interruption{Cause: cause, Node: n.Name, Rank: n.Rank, Message: n.Seen, FailedAt: failed}, true, nil
	}
	w, err := j.Store.GPUWatchFor(ctx, c.OrgID, c.ID)
	if err != nil || w.StallKey == "" || w.StallSince == nil || !strings.HasPrefix(w.StallKey, models.StallSplit+":") {
		return models.Interruption{}, false, err
	}
	named := strings.Split(strings.TrimPrefix(w.StallKey, models.StallSplit+":"), ",")
	var downs []models.DownMachine
	var first *models.ClusterNode
	for i, n := range nodes {
		for _, name := range named {
			if n.Name == name && !n.Status.Joining() {
				downs = append(downs, models.DownMachine{Rank: n.Rank, Name: n.Name, Seen: "hung: " + w.StallMessage, Evidence: models.EvidenceTenant})
				if first == nil {
					first = &nodes[i]
				}
			}
		}
	}
	if first == nil || len(downs) > len(nodes)/2 {
		return models.Interruption{}, false, nil // a stall naming most of the cluster is the job's, not a machine's
	}
	if _, err := j.Store.MarkMachinesDown(ctx, c, downs, j.Mail); err != nil {
		return models.Interruption{}, false, err
	}
	return models.Interruption{Cause: models.CauseHang, Node: first.Name, Rank: first.Rank, Message: w.StallMessage, FailedAt: *w.StallSince}, true, nil
}

// recovering replaces the machines that are down, then restarts the ranks.
func (j *Runs) recovering(ctx context.Context, r models.Run, c models.Cluster, nodes []models.ClusterNode) error {
	if r.Restarts >= r.RestartBudget {
		_, err := j.Store.MarkRunFailed(ctx, r, fmt.Sprintf("Its restart budget is spent (%d of %d restarts).", r.Restarts, r.RestartBudget))
		return err
	}
	actor := j.Store.As(models.Actor{OrgID: r.OrgID, EnvID: r.EnvID, Name: "run " + r.ID, Role: models.RoleOwner})
	busy := false
	for _, n := range nodes {
		switch {
		case n.Status.Joining():
			busy = true
		case n.Status.Unwell():
			busy = true
			v, err := j.Store.MayRepairAutomatically(ctx, c, n.Name)
			if err != nil {
				return err
			}
			if !v.Allowed {
				return nil // X14: too much of the cluster unhealthy at once; damping says so on the cluster
			}
			_, _, err = actor.ReplaceNode(ctx, c.ID, n.Rank)
			if errors.Is(err, models.ErrJoinInProgress) || errors.Is(err, models.ErrNotReplaceable) {
				return nil // one join at a time: the next pass replaces the next
			}
			if err != nil {
				return err
			}
			if err := j.Store.MarkRunReplacing(ctx, r, n.Rank); err != nil {
				return err
			}
			return nil
		default:
			if n.DownSince != nil {
				busy = true // the health job is still deciding about it
			}
		}
	}
	if busy || !c.Status.Ready() {
		return nil
	}
	_, err := j.Store.MarkRunResumed(ctx, r)
	return err
}
