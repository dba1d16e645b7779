package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Terminate carries out terminate requests in any state (L7): every machine
// of the cluster is released together at its provider, then the cluster is
// marked terminated and billing ends. The web handlers wake it when a user
// asks to terminate; its schedule catches everything else (balance
// enforcement, a missed wake-up).
type Terminate struct {
	Store     *models.Store
	Providers providers.Registry
}

// Name implements Job.
func (j *Terminate) Name() string { return "terminate" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Terminate) Run(ctx context.Context) error {
	clusters, err := j.Store.ClustersToTerminate(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range clusters {
		if err := j.terminate(ctx, c); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (j *Terminate) terminate(ctx context.Context, c models.Cluster) error {
	if p, err := j.Providers.Get(c.Provider); err == nil {
		if err := p.TerminateGroup(ctx, c.GroupName()); err != nil {
			return fmt.Errorf("terminate: %w", err)
		}
	}
	_, err := j.Store.MarkTerminated(ctx, c.ID)
	return err
}
