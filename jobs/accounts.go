package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// PruneLoginThrottles forgets failed log-in counts whose window has passed,
// logged-out sessions whose cookies have expired, long-expired unused
// quotes and password-reset links, and GPU points past their keep
// (models.PruneGPUPoints: minute points 48 h, hourly points 30 days), so
// these tables stay small.
type PruneLoginThrottles struct {
	Store *models.Store
}

// Name implements Job.
func (j *PruneLoginThrottles) Name() string { return "login-throttle-prune" }

// Run implements Job.
func (j *PruneLoginThrottles) Run(ctx context.Context) error {
	if _, err := j.Store.PruneLoginThrottles(ctx); err != nil {
		return err
	}
	if _, err := j.Store.PruneEndedSessions(ctx); err != nil {
		return err
	}
	if _, err := j.Store.PrunePasswordResets(ctx); err != nil {
		return err
	}
	if _, err := j.Store.PruneGPUPoints(ctx); err != nil {
		return err
	}
	_, err := j.Store.PruneQuotes(ctx)
	return err
}
