package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Stop carries out stops and resumes (B6). A cluster with a stop request
// has every machine stopped at its provider; once all are, it is stopped
// and compute billing ends at that moment. A stop requested while the
// cluster still provisions waits until every machine joined. A resume
// starts every machine again and follows each through the launch's steps
// against the same deadlines (L4), all or nothing: when every machine
// joined again the cluster runs and billing restarts; when one cannot come
// back in time the resume fails, the cluster stays stopped with lastError
// and its machines are stopped again. Terminate wins over both.
type Stop struct {
	Store     *models.Store
	Providers providers.Registry
	Mail      *models.ClusterNotify // the "running again" mail (E1); nil = none
}

// Name implements Job.
func (j *Stop) Name() string { return "stop" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Stop) Run(ctx context.Context) error {
	var errs []error
	collect := func(c models.Cluster, err error) {
		if err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	resuming, err := j.Store.ClustersToResume(ctx)
	if err != nil {
		return err
	}
	for _, c := range resuming {
		collect(c, j.resume(ctx, c))
	}
	stopping, err := j.Store.ClustersToStop(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, c := range stopping {
		collect(c, j.stop(ctx, c))
	}
	return errors.Join(errs...)
}

// stop stops every running machine of c and, once none is left running,
// records the cluster stopped (or, after a failed resume, its machines
// stopped again).
func (j *Stop) stop(ctx context.Context, c models.Cluster) error {
	p, err := j.Providers.Get(c.Provider)
	if err != nil {
		return err // a disabled provider: nothing can be stopped; the request waits
	}
	g, err := p.DescribeGroup(ctx, c.GroupName())
	switch {
	case errors.Is(err, providers.ErrNotFound):
		// nothing left to stop at the provider
	case err != nil:
		return fmt.Errorf("describe: %w", err)
	default:
		done := true
		notRunning := map[string]bool{} // machines the provider says are not running
		for _, n := range g.Nodes {
			switch n.State {
			case providers.NodeRunning:
				done = false
				err := p.StopNode(ctx, c.GroupName(), n.ID)
				switch {
				case errors.Is(err, providers.ErrUnsupported):
					return j.terminateInstead(ctx, c)
				case errors.Is(err, providers.ErrValidation):
					notRunning[n.ID] = true
				case err != nil && !errors.Is(err, providers.ErrNotFound):
					return fmt.Errorf("stop %s: %w", n.ID, err)
				}
			case providers.NodeRestarting:
				done = false // not stoppable yet: the next tick stops it
			}
		}
		if !done {
			if g, err = p.DescribeGroup(ctx, c.GroupName()); err != nil {
				return fmt.Errorf("describe: %w", err)
			}
			for _, n := range g.Nodes {
				if n.State == providers.NodeRunning && notRunning[n.ID] {
					// "Not running" for a machine that runs: the provider
					// refuses to stop it, and the stop would wait for ever
					// while it bills. It is released instead, as where
					// stopping is unsupported.
					return j.terminateInstead(ctx, c)
				}
				if n.State == providers.NodeRunning || n.State == providers.NodeRestarting {
					return nil // not yet: the next tick looks again
				}
			}
		}
	}
	if c.Lifecycle().Stopped() {
		_, err = j.Store.MarkMachinesStopped(ctx, c.ID)
	} else {
		_, err = j.Store.MarkStopped(ctx, c.ID)
	}
	return err
}

// resume moves one resuming cluster as far as it can go this tick: it
// starts the machines that are stopped, records each one running, fails
// the resume on a machine that cannot come back or a missed deadline, and
// marks the cluster running again when every machine joined.
func (j *Stop) resume(ctx context.Context, c models.Cluster) error {
	p, err := j.Providers.Get(c.Provider)
	if err != nil {
		return j.failResume(ctx, c, models.ProviderRejected(models.RejectedValidation), "", models.StepRunning,
			"The provider of this cluster is no longer enabled.")
	}
	g, err := p.DescribeGroup(ctx, c.GroupName())
	switch {
	case errors.Is(err, providers.ErrNotFound):
		return j.failResume(ctx, c, models.NodeLostAt(models.StepRunning), "", models.StepRunning, "The provider no longer knows these machines.")
	case err != nil:
		_, derr := j.checkDeadlines(ctx, c)
		return errors.Join(fmt.Errorf("describe: %w", err), derr)
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	byIndex := map[int]providers.Node{}
	for _, pn := range g.Nodes {
		byIndex[pn.Index] = pn
	}
	for _, n := range nodes {
		if !n.Status.Placing() {
			continue
		}
		pn, ok := byIndex[n.Rank]
		switch {
		case !ok || pn.State == providers.NodeTerminated || pn.State == providers.NodeFailed ||
			(pn.State == providers.NodeStopped && n.RunningAt != nil):
			msg := fmt.Sprintf("%s stopped or vanished at the provider while waiting for step %q.", n.Name, n.Step)
			if pn.Message != "" {
				msg += " Provider: " + pn.Message
			}
			return j.failResume(ctx, c, models.NodeLostAt(n.Step), n.Name, n.Step, msg)
		case pn.State == providers.NodeStopped:
			switch err := p.RestartNode(ctx, c.GroupName(), pn.ID); {
			case errors.Is(err, providers.ErrUnrecoverable), errors.Is(err, providers.ErrNotFound):
				return j.failResume(ctx, c, models.NodeLostAt(models.StepRunning), n.Name, models.StepRunning,
					n.Name+" cannot be started again: "+providerMessage(err))
			case err != nil:
				// transient: the next tick tries again, until the running step's deadline
				if merr := j.Store.NodeMessage(ctx, c.ID, n.Rank, "start failed: "+providerMessage(err)); merr != nil {
					return merr
				}
			}
		case pn.State == providers.NodeRunning && n.RunningAt == nil:
			if _, err := j.Store.MarkNodeStep(ctx, c.ID, n.Rank, models.StepRunning, n.Name+" is running again."); err != nil {
				return err
			}
		}
	}
	if failed, err := j.checkDeadlines(ctx, c); failed || err != nil {
		return err
	}
	nodes, err = j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Status.Placing() && n.MeshAt == nil {
			return nil
		}
	}
	_, err = j.Store.MarkResumed(ctx, c, j.Mail)
	return err
}

// checkDeadlines fails the resume when any machine is late for its step,
// against the launch's deadlines counted from the resume (L4).
func (j *Stop) checkDeadlines(ctx context.Context, c models.Cluster) (bool, error) {
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return false, err
	}
	now := j.Store.Now()
	for _, n := range nodes {
		if !n.Status.Placing() || n.Step == "done" {
			continue
		}
		if deadline := c.StepDeadline(n.Step); now.After(deadline) {
			msg := fmt.Sprintf("%s missed the %s step's deadline (%s after the resume).", n.Name, n.Step,
				deadline.Sub(*c.ResumeStartedAt).Round(1e9))
			if n.Message != "" {
				msg += " " + n.Message
			}
			return true, j.failResume(ctx, c, models.StepTimeout(n.Step), n.Name, n.Step, msg)
		}
	}
	return false, nil
}

// failResume records the failed resume and stops again, at once, every
// machine it started (the next ticks finish what cannot be stopped yet).
func (j *Stop) failResume(ctx context.Context, c models.Cluster, lastError models.LastError, node, step, msg string) error {
	failed, err := j.Store.FailResume(ctx, c.ID, lastError, node, step, msg)
	if err != nil {
		return err
	}
	return j.stop(ctx, failed)
}

// terminateInstead ends a cluster whose provider cannot stop machines (B6):
// left running they would cost the operator while the customer is no longer
// billed, and a stop is only asked for when the balance or a budget ran out
// after its warnings. The ordinary terminate releases every machine.
//
// A customer's own stop is never turned into a terminate: the request is
// dropped with an event saying nothing was stopped (the page refuses Stop
// ahead where the provider says it cannot stop; this covers a group the
// provider manages whole, known only once asked).
func (j *Stop) terminateInstead(ctx context.Context, c models.Cluster) error {
	if c.Lifecycle().CustomerStopPending() {
		return j.Store.CancelCustomerStop(ctx, c, c.Provider+" refused to stop these machines.")
	}
	_, err := j.Store.RequestTerminate(ctx, c.OrgID, c.ID,
		fmt.Sprintf("the %s stop: %s cannot stop machines, so they are released instead", c.StopReason, c.Provider))
	return err
}
