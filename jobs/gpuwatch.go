package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
)

// GPUWatch reads every live cluster's GPU telemetry once a minute (X15,
// X15): the stall rule names the machines that stand apart
// once a stall held for the cluster's set time (once per episode), and the
// opt-in idle rule mails the owners, then stops or terminates the cluster
// through the domain's own stop and terminate (their events, their
// billing rules) after the grace. One cluster's error does not stop the
// others.
type GPUWatch struct {
	Store *models.Store
	Mail  *models.ClusterNotify // the stall and idle mails (E1); nil = events only
}

// Name implements Job.
func (*GPUWatch) Name() string { return "gpu-watch" }

// Run implements Job.
func (j *GPUWatch) Run(ctx context.Context) error {
	cs, err := j.Store.ClustersToWatch(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, wc := range cs {
		if err := j.watch(ctx, wc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", wc.Cluster.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (j *GPUWatch) watch(ctx context.Context, wc models.WatchedCluster) error {
	p := wc.Watch.Policy()
	if p.StallOff && !p.IdleOn {
		return nil
	}
	// The clocks run only since the hand-over: nothing the machines did
	// while provisioning, installing, verifying or stopped counts (X15).
	from := wc.Cluster.WatchFrom()
	hour, err := j.Store.GPUMinutesByID(ctx, wc.Cluster.ID, models.GPUWindowHour)
	if err != nil {
		return err
	}
	now := j.Store.Now()
	if !p.StallOff {
		var found *models.StallFinding
		if f, ok := models.DetectStall(hour.Since(from).Nodes, now, p.StallRule()); ok {
			found = &f
		}
		if err := j.Store.NoteStall(ctx, j.Mail, wc, found); err != nil {
			return err
		}
	}
	if !p.IdleOn {
		return nil
	}
	day, err := j.Store.GPUMinutesByID(ctx, wc.Cluster.ID, models.GPUWindowDay)
	if err != nil {
		return err
	}
	since, idle := models.ClusterIdleSince(hour, day, now, float64(p.IdleBelowPct))
	if idle && since.Before(from) {
		since = from // idle before the hand-over does not count
	}
	_, err = j.Store.NoteIdle(ctx, j.Mail, wc, since, idle, day.From)
	return err
}
