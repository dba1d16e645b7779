package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// PruneLoginThrottles forgets failed log-in counts whose window has passed,
// so the throttle table stays small.
type PruneLoginThrottles struct {
	Store *models.Store
}

// Name implements Job.
func (j *PruneLoginThrottles) Name() string { return "login-throttle-prune" }

// Run implements Job.
func (j *PruneLoginThrottles) Run(ctx context.Context) error {
	_, err := j.Store.PruneLoginThrottles(ctx)
	return err
}
