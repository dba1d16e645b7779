package models

import (
	"context"
	"fmt"
	"strings"
)

// orgBalanceSQL is the completed balance of auto_recharges a's organisation,
// summed so that one organisation's ledger never fails the query for the
// others (B9).
var orgBalanceSQL = "(SELECT " + moneySumSQL("l.amount") + " FROM ledger_entries l WHERE l.org_id = a.org_id AND l.status = ?)"

// PlanCharges writes the intended charge row (B4) of every organisation
// whose enabled, unpaused auto-recharge has a card and a balance below its
// threshold, before anything is sent to Stripe. An organisation with a
// charge still pending gets none: the partial unique index keeps that true
// even for two jobs at once. It returns how many rows it wrote.
func (s *Store) PlanCharges(ctx context.Context) (int, error) {
	var due []AutoRecharge
	err := s.db.WithContext(ctx).Raw(`SELECT a.* FROM auto_recharges a
		WHERE a.enabled AND a.paused_by = '' AND a.customer_id <> '' AND a.payment_method_id <> ''
		AND a.threshold > `+orgBalanceSQL+`
		AND NOT EXISTS (SELECT 1 FROM charges c WHERE c.org_id = a.org_id AND c.status = ?)`,
		EntryCompleted, ChargePending).Scan(&due).Error
	if err != nil {
		return 0, fmt.Errorf("models: due auto-recharges: %w", err)
	}
	n := 0
	for _, a := range due {
		c := Charge{ID: NewID("ch"), OrgID: a.OrgID, Amount: a.Amount, Status: ChargePending,
			CustomerID: a.CustomerID, PaymentMethodID: a.PaymentMethodID, CreatedAt: s.Now()}
		// The insert checks again, in the one statement that writes: a
		// charge another job settled since the look-up above has credited
		// the balance and is no longer pending, and must not be paid twice.
		res := s.db.WithContext(ctx).Exec(`INSERT INTO charges (id, org_id, amount, status, customer_id, payment_method_id, created_at)
			SELECT ?, ?, ?, ?, ?, ?, ? FROM auto_recharges a
			WHERE a.org_id = ? AND a.enabled AND a.paused_by = ''
			AND a.threshold > `+orgBalanceSQL+`
			AND NOT EXISTS (SELECT 1 FROM charges c WHERE c.org_id = a.org_id AND c.status = ?)
			ON CONFLICT DO NOTHING`,
			c.ID, c.OrgID, c.Amount, c.Status, c.CustomerID, c.PaymentMethodID, c.CreatedAt,
			a.OrgID, EntryCompleted, ChargePending)
		if res.Error != nil {
			return n, fmt.Errorf("models: plan charge for %s: %w", a.OrgID, res.Error)
		}
		n += int(res.RowsAffected)
	}
	return n, nil
}

// UnsentCharges are the pending charges whose PaymentIntent is not known
// yet: written but not (or not surely) sent. Sending again is safe: the
// idempotency key is the row's.
func (s *Store) UnsentCharges(ctx context.Context, limit int) ([]Charge, error) {
	var cs []Charge
	err := s.db.WithContext(ctx).Where("status = ? AND payment_intent_id = ''", ChargePending).
		Order("created_at, id").Limit(limit).Find(&cs).Error
	return cs, err
}

// ChargeSent records the PaymentIntent of a charge still processing: the
// webhook settles it.
func (s *Store) ChargeSent(ctx context.Context, id, paymentIntentID string) error {
	if paymentIntentID == "" {
		return nil
	}
	return s.db.WithContext(ctx).Model(&Charge{}).Where("id = ? AND status = ?", id, ChargePending).
		Update("payment_intent_id", paymentIntentID).Error
}

// SettleCharge credits a succeeded charge once (B4): the PaymentIntent's
// result and the payment_intent.succeeded webhook both land here, and only
// the first moves the row to succeeded and writes the ledger entry keyed
// "charge:<id>". A charge recorded failed may still succeed (Stripe lets a
// PaymentIntent that failed be paid after all, and events arrive in any
// order): the later success wins, credits once and lifts the pause that
// failure left. It reports whether this call credited.
func (s *Store) SettleCharge(ctx context.Context, orgID, id, paymentIntentID string) (bool, error) {
	var credited bool
	err := s.Tx(ctx, func(tx *Store) error {
		var c Charge
		if err := tx.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&c).Error; err != nil {
			return notFound(err, "charge "+id)
		}
		now := tx.Now()
		res := tx.db.WithContext(ctx).Model(&Charge{}).Where("id = ? AND status IN ?", id, []string{ChargePending, ChargeFailed}).
			Updates(map[string]any{"status": ChargeSucceeded, "payment_intent_id": paymentIntentID, "settled_at": now,
				"failure_code": "", "message": ""})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if c.Status == ChargeFailed {
			err := tx.db.WithContext(ctx).Model(&AutoRecharge{}).Where("org_id = ? AND paused_by = ?", orgID, id).
				Update("paused_by", "").Error
			if err != nil {
				return err
			}
		}
		var err error
		credited, err = tx.AddLedgerEntry(ctx, LedgerEntry{OrgID: c.OrgID, Kind: LedgerAutoRecharge, Amount: c.Amount,
			IdemKey: c.IdempotencyKey(), Description: "Auto-recharge by card", CreatedAt: now})
		return err
	})
	return credited, err
}

// FailCharge records a declined or authentication-required charge (B4):
// the row says why, auto-recharge pauses on it (no blind retry) and the
// owners and admins get one mail, all in one transaction. A charge already
// settled is left as it is.
func (s *Store) FailCharge(ctx context.Context, orgID, id, paymentIntentID, code, message string) error {
	return s.Tx(ctx, func(tx *Store) error {
		var c Charge
		if err := tx.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&c).Error; err != nil {
			return notFound(err, "charge "+id)
		}
		res := tx.db.WithContext(ctx).Model(&Charge{}).Where("id = ? AND status = ?", id, ChargePending).
			Updates(map[string]any{"status": ChargeFailed, "payment_intent_id": paymentIntentID, "failure_code": code,
				"message": truncateRunes(message, 500), "settled_at": tx.Now()})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if err := tx.db.WithContext(ctx).Model(&AutoRecharge{}).Where("org_id = ?", orgID).
			Update("paused_by", id).Error; err != nil {
			return err
		}
		c.FailureCode, c.Message = code, message
		if err := tx.queueOrgWebhooks(ctx, orgID, "", TypeAutoRechargeFailed, c.ID, map[string]any{ // X8
			"charge": map[string]any{"id": c.ID, "amount": DecimalUSD(c.Amount), "failureCode": code, "message": message,
				"authenticationRequired": c.AuthenticationRequired()}}); err != nil {
			return err
		}
		return tx.mailChargeFailed(ctx, c)
	})
}

func (s *Store) mailChargeFailed(ctx context.Context, c Charge) error {
	members, err := s.Members(ctx, c.OrgID)
	if err != nil {
		return err
	}
	mail := ChargeFailedMail{ChargeID: c.ID, Amount: c.Amount, FailureCode: c.FailureCode, AuthenticationRequired: c.AuthenticationRequired()}
	for _, m := range members {
		if !m.Role.CanManage() {
			continue
		}
		if err := s.Notify(ctx, "charge-failed:"+c.ID+":"+strings.ToLower(m.Email), m.Email, mail); err != nil {
			return err
		}
	}
	return nil
}
