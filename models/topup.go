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

// Top-up statuses: pending until the payment is confirmed, then completed.
const (
	TopUpPending   = "pending"
	TopUpCompleted = "completed"
)

// TopUp is one request to add funds (B4). The ledger is credited once, with
// key "top-up:<id>", by a verified checkout.session.completed webhook, or at
// once in test mode; never by the redirect back from Checkout.
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
// (B4): the event's id, its type and when it arrived.
type ReceivedPaymentEvent struct {
	ID         string `gorm:"primaryKey"`
	Type       string
	ReceivedAt time.Time
}

// TableName keeps the table's name short.
func (ReceivedPaymentEvent) TableName() string { return "payment_events" }

// PaymentEvent is a verified payment webhook as models needs it.
type PaymentEvent struct {
	ID, Type         string
	OrgID, TopUpID   string
	SessionID        string
	Amount           Money // paid
	Paid             bool
	CheckoutComplete bool // a checkout.session.completed event

	// A payment_intent.* event: a top-up's payment (its saved card) or an
	// auto-recharge charge (ChargeID) succeeding or failing.
	PaymentIntent   bool
	ChargeID        string
	PaymentIntentID string
	CustomerID      string
	PaymentMethodID string
	FailureCode     string
	Message         string
}

func init() {
	register(Migration{ID: "0401_top_ups", Up: func(tx *gorm.DB) error {
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
	}})
}

// CreateTopUp records a pending top-up of at least $5 and at most the
// operator's maximum (B9), in whole cents.
func (s *Store) CreateTopUp(ctx context.Context, orgID string, amount Money, testMode bool, actor string) (TopUp, error) {
	if amount < MinTopUp {
		return TopUp{}, FieldErrors{"amount": "the smallest top-up is $5.00"}
	}
	if limit := s.TopUpLimit(); amount > limit {
		return TopUp{}, FieldErrors{"amount": "the largest top-up is " + USD(limit)}
	}
	if amount%10_000 != 0 {
		return TopUp{}, FieldErrors{"amount": "a top-up is in whole cents"}
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

// ApplyPaymentEvent is B4's webhook: a paid checkout.session.completed
// credits its top-up once; the event id is recorded in the same transaction,
// so a repeated delivery changes nothing, and the top-up's own key makes any
// other event for the same top-up change nothing either. Other events
// change nothing. It reports whether the ledger was credited.
func (s *Store) ApplyPaymentEvent(ctx context.Context, ev PaymentEvent) (bool, error) {
	if !ev.CheckoutComplete && !ev.PaymentIntent || ev.ID == "" {
		return false, nil
	}
	var credited bool
	err := s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Exec("INSERT INTO payment_events (id, type, received_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
			ev.ID, ev.Type, tx.Now())
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // seen before: nothing more to do
		}
		var err error
		if ev.PaymentIntent {
			credited, err = tx.applyPaymentIntent(ctx, ev)
			return err
		}
		if !ev.Paid || ev.Amount <= 0 {
			return nil
		}
		t, err := tx.TopUpForOrg(ctx, ev.OrgID, ev.TopUpID)
		if errors.Is(err, ErrNotFound) {
			return nil // not ours: recorded, nothing credited
		}
		if err != nil {
			return err
		}
		if t.TestMode {
			return nil
		}
		if err := tx.SaveCard(ctx, t.OrgID, ev.CustomerID, ""); err != nil {
			return err
		}
		credited, err = tx.creditTopUp(ctx, t, ev.Amount, "Top-up by card")
		return err
	})
	if err != nil {
		return false, fmt.Errorf("models: payment event %s: %w", ev.ID, err)
	}
	return credited, nil
}

// applyPaymentIntent handles a payment_intent.* event in the caller's
// transaction: an auto-recharge charge settles or fails (B4); a top-up's
// succeeded payment saves the card Checkout stored for off-session use
// (the checkout session itself names its PaymentIntent only by id).
func (s *Store) applyPaymentIntent(ctx context.Context, ev PaymentEvent) (bool, error) {
	if ev.ChargeID != "" {
		err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", ev.OrgID, ev.ChargeID).Take(&Charge{}).Error
		if err != nil {
			return false, ignoreNotFound(err) // not ours
		}
		if ev.Paid {
			return s.SettleCharge(ctx, ev.OrgID, ev.ChargeID, ev.PaymentIntentID)
		}
		if ev.FailureCode != "" {
			return false, s.FailCharge(ctx, ev.OrgID, ev.ChargeID, ev.PaymentIntentID, ev.FailureCode, ev.Message)
		}
		return false, nil
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
	return s.AddLedgerEntry(ctx, LedgerEntry{OrgID: t.OrgID, Kind: LedgerDeposit, Amount: amount,
		IdemKey: "top-up:" + t.ID, Description: desc, CreatedAt: now})
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
