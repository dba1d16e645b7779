package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Recovery is R3–R5: for a degraded cluster whose policy allows it (or
// whose owner asked "recover now"), it makes one attempt: every machine
// that is not running is restarted in place through its provider, one by
// one in rank order, each call finished before the next; healthy machines
// and the rate are untouched. A machine the provider cannot bring back is
// skipped and the attempt resolves on the rest. When the attempts are
// spent and the cluster is still unhealthy after the last cooldown:
// recovery_exhausted, one mail. The health job sees the machines return.
// Health damping (models.MayRepairAutomatically) holds automatic attempts
// while too many machines are unhealthy at once; a "recover now" is a
// person's choice and still runs.
type Recovery struct {
	Store     *models.Store
	Providers providers.Registry
	Mail      *models.ClusterNotify // the exhausted mail (E1); nil = none
}

// Name implements Job.
func (j *Recovery) Name() string { return "recovery" }

// Run implements Job.
func (j *Recovery) Run(ctx context.Context) error {
	cs, err := j.Store.ClustersInStatus(ctx, models.StatusDegraded)
	if err != nil {
		return err
	}
	now := j.Store.Now()
	var errs []error
	for _, c := range cs {
		var err error
		switch {
		case c.Lifecycle().StopAsked():
			// being stopped (B6): its machines go down on purpose
		case c.RecoveryDue(now):
			err = j.attemptUnlessDamped(ctx, c)
		case c.RecoverySpent(now) && c.DampedAt == nil:
			_, err = j.Store.MarkRecoveryExhausted(ctx, c, j.Mail)
		}
		if err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// attemptUnlessDamped makes an automatic attempt only when damping allows
// it (it records a pause or its end itself); a "recover now" always runs.
func (j *Recovery) attemptUnlessDamped(ctx context.Context, c models.Cluster) error {
	v, err := j.Store.MayRepairAutomatically(ctx, c)
	if err != nil {
		return err
	}
	if !v.Allowed && !c.Lifecycle().RecoverAsked() {
		return nil
	}
	return j.attempt(ctx, c)
}

// attempt claims one attempt, then restarts the machines that are down one by one.
func (j *Recovery) attempt(ctx context.Context, c models.Cluster) error {
	p, err := j.Providers.Get(c.Provider)
	if err != nil {
		return err
	}
	if c, err = j.Store.BeginRecoveryAttempt(ctx, c); err != nil {
		return err
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	var outcomes []models.MachineOutcome
	for _, n := range nodes {
		if !n.Status.Unwell() {
			continue
		}
		o := models.MachineOutcome{Node: n.Name, Outcome: models.OutcomeRestarted}
		switch err := p.RestartNode(ctx, c.GroupName(), n.ProviderNodeID); {
		case errors.Is(err, providers.ErrUnrecoverable), errors.Is(err, providers.ErrNotFound):
			o.Outcome, o.Message = models.OutcomeSkipped, "the provider cannot bring it back: "+providerMessage(err)
		case errors.Is(err, providers.ErrUnsupported):
			o.Outcome, o.Message = models.OutcomeSkipped, "the provider does not restart this machine on its own ("+
				providerMessage(err)+"); replace it where the provider allows, or terminate the cluster"
		case err != nil:
			o.Outcome, o.Message = models.OutcomeFailed, providerMessage(err)
		}
		outcomes = append(outcomes, o)
	}
	return j.Store.FinishRecoveryAttempt(ctx, c.ID, outcomes)
}
