package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// Reservations drives reserved capacity (X18): it launches each booking's
// cluster ahead of its start (boot time and verification lead), hands it
// over at the start (billing from the later of the start and ready, each
// started hour late credited one machine-hour per machine), relaunches a
// cluster that failed before the start (bounded), gives up a booking its
// source could not deliver (deposit refunded, the stated credit), warns a
// day and an hour before the term ends and releases the machines at the
// end. Time is the store's clock; every money entry is keyed, so a rerun
// or a second instance changes nothing.
type Reservations struct {
	Store *models.Store
	Mail  *models.ClusterNotify
}

// Name implements Job.
func (*Reservations) Name() string { return "reservations" }

// Run implements Job.
func (j *Reservations) Run(ctx context.Context) error {
	_, err := j.Store.AdvanceReservations(ctx, j.Mail)
	return err
}
