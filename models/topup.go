package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// MinTopUp is B4's smallest top-up.
const MinTopUp Money = 5 * Micro

// Top-up statuses: pending until the payment is confirmed, then completed;
// failed when a delayed payment method (bank debit) did not pay.
const (
	TopUpPending   = "pending"
	TopUpCompleted = "completed"
	TopUpFailed    = "failed"
)

// TopUp is one request to add funds (B4). The ledger is credited once, with
// key "top-up:<id>", by a verified paid checkout.session.completed or
// checkout.session.async_payment_succeeded webhook whose session, currency
// and amount are the top-up's (B9), or at once in test mode; never by the
// redirect back from Checkout.
type TopUp struct {
	ID          string
	OrgID       string
	Amount      Money
	Status      string
	TestMode    bool
	SessionID   string // the Checkout Session
	CreatedBy   string
	CreatedAt   time.Time
	CompletedAt *time.Time
}

// ReceivedPaymentEvent is the row that makes a webhook delivery count once
// (B4): the event's id, its type, when it arrived and the endpoint's API
// version.
type ReceivedPaymentEvent struct {
	ID         string `gorm:"primaryKey"`
	Type       string
	ReceivedAt time.Time
	APIVersion string
}

// TableName keeps the table's name short.
func (ReceivedPaymentEvent) TableName() string { return "payment_events" }

// PaymentEvent is a verified payment webhook as models needs it.
type PaymentEvent struct {
	ID, Type         string
	OrgID, TopUpID   string
	SessionID        string
	Amount           Money  // paid
	Currency         string // of Amount, lower case
	Paid             bool
	APIVersion       string
	CheckoutComplete bool // checkout.session.completed or …async_payment_succeeded
	CheckoutFailed   bool // checkout.session.async_payment_failed

	// A payment_intent.* event: a top-up's payment (its saved card) or an
	// auto-recharge charge (ChargeID) succeeding (Paid), failing (Failed),
	// wanting the cardholder (ActionRequired) or processing (none of them).
	PaymentIntent   bool
	Failed          bool
	ActionRequired  bool
	ChargeID        string
	PaymentIntentID string
	CustomerID      string
	PaymentMethodID string
	FailureCode     string
	Message         string
}

func up0401TopUps(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"CREATE TABLE top_ups (id varchar(32) PRIMARY KEY, org_id varchar(32) NOT NULL, amount bigint NOT NULL, " +
			"status varchar(16) NOT NULL, test_mode boolean NOT NULL DEFAULT false, session_id varchar(255) NOT NULL DEFAULT '', " +
			"created_by varchar(191) NOT NULL DEFAULT '', created_at " + ts + " NOT NULL, completed_at " + ts + ")",
		"CREATE INDEX idx_top_ups_org ON top_ups (org_id)",
		"CREATE TABLE payment_events (id varchar(255) PRIMARY KEY, type varchar(64) NOT NULL, received_at " + ts + " NOT NULL)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// CreateTopUp records a pending top-up of at least $5 and at most the
// operator's maximum (B9), in whole cents.
func (s *Store) CreateTopUp(ctx context.Context, orgID string, amount Money, testMode bool, actor string) (TopUp, error) {
	if amount < MinTopUp {
		return TopUp{}, FieldErrors{"amount": "The smallest top-up is $5.00."}
	}
	if limit := s.TopUpLimit(); amount > limit {
		return TopUp{}, FieldErrors{"amount": "The largest top-up is " + USD(limit) + "."}
	}
	if amount%10_000 != 0 {
		return TopUp{}, FieldErrors{"amount": "Enter a top-up in whole cents, like 50 or 50.25."}
	}
	t := TopUp{ID: NewID("tu"), OrgID: orgID, Amount: amount, Status: TopUpPending, TestMode: testMode,
		CreatedBy: actor, CreatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Create(&t).Error; err != nil {
		return TopUp{}, fmt.Errorf("models: create top-up: %w", err)
	}
	return t, nil
}

// TopUpForOrg loads a top-up through its organisation.
func (s *Store) TopUpForOrg(ctx context.Context, orgID, id string) (TopUp, error) {
	var t TopUp
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&t).Error
	return t, notFound(err, "top-up "+id)
}

// AttachCheckout records the Checkout Session that pays a top-up.
func (s *Store) AttachCheckout(ctx context.Context, orgID, id, sessionID string) error {
	res := s.db.WithContext(ctx).Model(&TopUp{}).Where("org_id = ? AND id = ? AND status = ?", orgID, id, TopUpPending).
		Update("session_id", sessionID)
	if res.Error == nil && res.RowsAffected != 1 {
		return fmt.Errorf("models: top-up %s is not pending: %w", id, ErrConflict)
	}
	return res.Error
}

// CompleteTestTopUp credits a test-mode top-up at once (B7). Repeating it
// credits nothing more.
func (s *Store) CompleteTestTopUp(ctx context.Context, orgID, id string) (bool, error) {
	var credited bool
	err := s.Tx(ctx, func(tx *Store) error {
		t, err := tx.TopUpForOrg(ctx, orgID, id)
		if err != nil {
			return err
		}
		if !t.TestMode {
			return errors.New("models: only a test-mode top-up is credited without a payment")
		}
		credited, err = tx.creditTopUp(ctx, t, t.Amount, "Top-up (test mode: no money moved)")
		return err
	})
	return credited, err
}

// ApplyPaymentEvent is B4's webhook. The event id is recorded first, in
// the same transaction as its effect, so a repeated delivery changes
// nothing. A paid checkout session credits its top-up once, exactly the
// top-up's recorded amount, and only when the session, currency and amount
// are the top-up's (B9); a completed session still unpaid (a delayed
// method) waits for async_payment_succeeded, and async_payment_failed marks
// the top-up failed. payment_intent.* events settle or fail auto-recharge
// charges. An event naming a top-up or charge it does not match is recorded
// as a PaymentMismatch and credits nothing. It reports whether the ledger
// was credited.
func (s *Store) ApplyPaymentEvent(ctx context.Context, ev PaymentEvent) (bool, error) {
	if !ev.CheckoutComplete && !ev.CheckoutFailed && !ev.PaymentIntent || ev.ID == "" {
		return false, nil
	}
	var credited bool
	err := s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Exec("INSERT INTO payment_events (id, type, received_at, api_version) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
			ev.ID, ev.Type, tx.Now(), truncateRunes(ev.APIVersion, 64))
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // seen before: nothing more to do
		}
		var err error
		if ev.PaymentIntent {
			credited, err = tx.applyPaymentIntent(ctx, ev)
		} else {
			credited, err = tx.applyCheckout(ctx, ev)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("models: payment event %s: %w", ev.ID, err)
	}
	return credited, nil
}

// applyCheckout handles a checkout.session.* event in the caller's
// transaction.
func (s *Store) applyCheckout(ctx context.Context, ev PaymentEvent) (bool, error) {
	if ev.CheckoutComplete && !ev.Paid || ev.TopUpID == "" {
		return false, nil // unpaid yet (async_payment_* follows), or not a top-up
	}
	t, err := s.TopUpForOrg(ctx, ev.OrgID, ev.TopUpID)
	if errors.Is(err, ErrNotFound) {
		return false, s.recordMismatch(ctx, ev, "names top-up "+ev.TopUpID+", which organisation "+ev.OrgID+" does not have")
	}
	if err != nil {
		return false, err
	}
	reason := ""
	switch {
	case t.TestMode:
		reason = "names a test-mode top-up, which takes no payment"
	case t.SessionID == "" || ev.SessionID != t.SessionID:
		reason = "session " + ev.SessionID + " is not the top-up's (" + t.SessionID + ")"
	case ev.CheckoutComplete:
		reason = amountProblem(ev, t.Amount, "top-up")
	}
	if reason != "" {
		return false, s.recordMismatch(ctx, ev, reason)
	}
	if ev.CheckoutFailed {
		return false, s.db.WithContext(ctx).Model(&TopUp{}).Where("id = ? AND status = ?", t.ID, TopUpPending).
			Updates(map[string]any{"status": TopUpFailed, "completed_at": s.Now()}).Error
	}
	if err := s.SaveCard(ctx, t.OrgID, ev.CustomerID, ""); err != nil {
		return false, err
	}
	return s.creditTopUp(ctx, t, t.Amount, "Top-up by card")
}

// applyPaymentIntent handles a payment_intent.* event in the caller's
// transaction: an auto-recharge charge settles, fails or is processing
// (B4: a later success wins over a failure and credits once; nothing moves
// a charge that succeeded); a top-up's succeeded payment saves the card
// Checkout stored for off-session use (the checkout session itself names
// its PaymentIntent only by id).
func (s *Store) applyPaymentIntent(ctx context.Context, ev PaymentEvent) (bool, error) {
	if ev.ChargeID != "" {
		var c Charge
		err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", ev.OrgID, ev.ChargeID).Take(&c).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return false, s.recordMismatch(ctx, ev, "names charge "+ev.ChargeID+", which organisation "+ev.OrgID+" does not have")
		}
		if err != nil {
			return false, err
		}
		if c.PaymentIntentID != "" && ev.PaymentIntentID != c.PaymentIntentID {
			return false, s.recordMismatch(ctx, ev, "payment intent "+ev.PaymentIntentID+" is not the charge's ("+c.PaymentIntentID+")")
		}
		switch {
		case ev.Paid:
			if reason := amountProblem(ev, c.Amount, "charge"); reason != "" {
				return false, s.recordMismatch(ctx, ev, reason)
			}
			return s.SettleCharge(ctx, c.OrgID, c.ID, ev.PaymentIntentID)
		case ev.Failed:
			code := ev.FailureCode
			if code == "" {
				code = "payment_failed"
			}
			return false, s.FailCharge(ctx, c.OrgID, c.ID, ev.PaymentIntentID, code, ev.Message)
		case ev.ActionRequired:
			// Off-session, the bank wants the cardholder: as the charge's
			// own answer would have said (jobs/charges.go).
			return false, s.FailCharge(ctx, c.OrgID, c.ID, ev.PaymentIntentID, "authentication_required", ev.Message)
		}
		return false, s.ChargeSent(ctx, c.ID, ev.PaymentIntentID) // processing: the outcome follows
	}
	if !ev.Paid || ev.TopUpID == "" {
		return false, nil
	}
	t, err := s.TopUpForOrg(ctx, ev.OrgID, ev.TopUpID)
	if err != nil || t.TestMode {
		return false, ignoreNotFound(err)
	}
	return false, s.SaveCard(ctx, t.OrgID, ev.CustomerID, ev.PaymentMethodID)
}

func ignoreNotFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// creditTopUp moves a pending top-up to completed and deposits amount under
// the top-up's key, in the caller's transaction.
func (s *Store) creditTopUp(ctx context.Context, t TopUp, amount Money, desc string) (bool, error) {
	now := s.Now()
	res := s.db.WithContext(ctx).Model(&TopUp{}).Where("id = ? AND status = ?", t.ID, TopUpPending).
		Updates(map[string]any{"status": TopUpCompleted, "completed_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	ok, err := s.AddLedgerEntry(ctx, LedgerEntry{OrgID: t.OrgID, Kind: LedgerDeposit, Amount: amount,
		IdemKey: "top-up:" + t.ID, Description: desc, CreatedAt: now})
	if err != nil || !ok {
		return ok, err
	}
	return true, s.queueOrgWebhooks(ctx, t.OrgID, "", TypeTopUpCredited, t.ID, map[string]any{
		"topUp": map[string]any{"id": t.ID, "amount": DecimalUSD(amount), "description": desc}}) // X8
}

// RequestTopUp is the actor's request to add funds (B4): the pending
// top-up and its audit entry commit together. In test mode (B7) the
// balance is credited in the same transaction, and the top-up returns
// completed.
func (x Actions) RequestTopUp(ctx context.Context, amount Money, testMode bool) (TopUp, error) {
	var t TopUp
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if t, err = tx.CreateTopUp(ctx, x.a.OrgID, amount, testMode, x.a.Name); err != nil {
			return nil, err
		}
		if testMode {
			if _, err = tx.creditTopUp(ctx, t, t.Amount, "Top-up (test mode: no money moved)"); err != nil {
				return nil, err
			}
			t.Status = TopUpCompleted
		}
		return x.audit("billing.top_up", t.ID, DecimalUSD(t.Amount)), nil
	})
	return t, err
}
