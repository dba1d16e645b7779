package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// GPURollup turns the GPU minute points of the last complete hours into
// hourly points (X15), which are kept 30 days while the
// minute points go after 48 hours. Each run recomputes the last three
// complete hours, so a missed run or a late heartbeat is caught up.
type GPURollup struct{ Store *models.Store }

// Name implements Job.
func (j *GPURollup) Name() string { return "gpu-rollup" }

// Run implements Job.
func (j *GPURollup) Run(ctx context.Context) error {
	_, err := j.Store.RollupGPUHours(ctx, j.Store.Now())
	return err
}
