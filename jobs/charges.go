package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
)

// Charger charges a saved card off-session (B4); main adapts the Stripe
// provider to it. A decline is a result (Status failed), not an error; an
// error means the outcome is unknown and the same charge may be sent again,
// under the same idempotency key.
type Charger interface {
	ChargeOffSession(ctx context.Context, c models.Charge) (ChargeResult, error)
}

// ChargeResult is an off-session charge's outcome; Status is one of
// models.ChargeSucceeded, ChargePending (processing: the webhook settles it)
// or ChargeFailed.
type ChargeResult struct {
	PaymentIntentID string
	Status          string
	FailureCode     string // card_declined, authentication_required, …
	Message         string
}

// Charges is auto-recharge (B4): it writes the intended charge row of every
// organisation below its threshold first, then sends each unsent row to
// Stripe keyed by the row, and records the outcome. Success credits once
// (the row's ledger key, shared with the webhook); a decline or a bank
// asking for the cardholder pauses auto-recharge and mails once, and is not
// retried. The scheduler's lease keeps it to one instance; the row's key
// keeps even two at once to one charge.
type Charges struct {
	Store   *models.Store
	Charger Charger
}

// Name implements Job.
func (*Charges) Name() string { return "charges" }

// Run implements Job.
func (j *Charges) Run(ctx context.Context) error {
	if _, err := j.Store.PlanCharges(ctx); err != nil {
		return err
	}
	unsent, err := j.Store.UnsentCharges(ctx, 100)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range unsent {
		errs = append(errs, j.send(ctx, c))
	}
	return errors.Join(errs...)
}

func (j *Charges) send(ctx context.Context, c models.Charge) error {
	r, err := j.Charger.ChargeOffSession(ctx, c)
	if err != nil {
		return fmt.Errorf("charge %s: %w", c.ID, err) // unknown outcome: the next tick sends the same key again
	}
	switch r.Status {
	case models.ChargeSucceeded:
		_, err = j.Store.SettleCharge(ctx, c.OrgID, c.ID, r.PaymentIntentID)
	case models.ChargePending:
		err = j.Store.ChargeSent(ctx, c.ID, r.PaymentIntentID)
	default:
		code := r.FailureCode
		if code == "" {
			code = "charge_failed"
		}
		err = j.Store.FailCharge(ctx, c.OrgID, c.ID, r.PaymentIntentID, code, r.Message)
	}
	return err
}
