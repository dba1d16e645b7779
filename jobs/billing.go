package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// Billing writes usage (B1, B2): each minute, every machine's closed hours
// and every terminated or stopped cluster's last partial hour (to the
// minute it ended, B6) become ledger entries.
// Entries are keyed by machine and period, so a rerun or a pass on another
// instance charges nothing twice; the scheduler's lease keeps it to one
// instance anyway.
type Billing struct {
	Store *models.Store
}

// Name implements Job.
func (*Billing) Name() string { return "billing" }

// Run implements Job.
func (j *Billing) Run(ctx context.Context) error {
	_, err := j.Store.MeterUsage(ctx)
	return err
}
