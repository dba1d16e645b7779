package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// PaymentCurrency is the one currency top-ups and charges are made in.
const PaymentCurrency = "usd"

// PaymentMismatch is a verified payment event that named one of our
// top-ups or charges but did not match it (B9): another session or
// payment intent, currency or amount. It credited nothing; the operator's
// payments page lists it with its reason.
type PaymentMismatch struct {
	ID        string
	EventID   string
	EventType string
	OrgID     string
	TopUpID   string
	ChargeID  string
	ObjectID  string // the session or payment intent the event is about
	Amount    Money  // as reported, in micro-units of Currency
	Currency  string // as reported
	Reason    string
	CreatedAt time.Time
}

// PaymentMismatchRow is a mismatch with its organisation's name (operators).
type PaymentMismatchRow struct {
	PaymentMismatch
	OrgName string
}

// WebhookVersion is the API version of the latest payment event received.
type WebhookVersion struct {
	APIVersion string
	ReceivedAt time.Time
}

func up0910PaymentMismatches(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"CREATE TABLE payment_mismatches (id varchar(32) PRIMARY KEY, event_id varchar(255) NOT NULL, " +
			"event_type varchar(64) NOT NULL, org_id varchar(32) NOT NULL DEFAULT '', top_up_id varchar(64) NOT NULL DEFAULT '', " +
			"charge_id varchar(64) NOT NULL DEFAULT '', object_id varchar(255) NOT NULL DEFAULT '', amount bigint NOT NULL DEFAULT 0, " +
			"currency varchar(16) NOT NULL DEFAULT '', reason varchar(500) NOT NULL, created_at " + ts + " NOT NULL)",
		"CREATE INDEX idx_payment_mismatches_created ON payment_mismatches (created_at)",
		// The endpoint's API version, per event: the operator's page
		// says when it is not the one stripe-go speaks.
		"ALTER TABLE payment_events ADD COLUMN api_version varchar(64) NOT NULL DEFAULT ''",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// recordMismatch writes ev's mismatch in the caller's transaction.
func (s *Store) recordMismatch(ctx context.Context, ev PaymentEvent, reason string) error {
	m := PaymentMismatch{ID: NewID("pm"), EventID: ev.ID, EventType: truncateRunes(ev.Type, 64), OrgID: truncateRunes(ev.OrgID, 32),
		TopUpID: truncateRunes(ev.TopUpID, 64), ChargeID: truncateRunes(ev.ChargeID, 64), ObjectID: truncateRunes(ev.SessionID, 255),
		Amount: ev.Amount, Currency: truncateRunes(ev.Currency, 16), Reason: truncateRunes(reason, 500), CreatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return fmt.Errorf("models: record payment mismatch of %s: %w", ev.ID, err)
	}
	return nil
}

// amountProblem says why a paid amount is not the recorded one, "" when it
// is: the currency first (an amount in another currency means nothing in
// dollars), then the amount.
func amountProblem(ev PaymentEvent, recorded Money, what string) string {
	if ev.Currency != PaymentCurrency {
		cur := strings.ToUpper(ev.Currency)
		if cur == "" {
			cur = "no currency"
		}
		return fmt.Sprintf("paid in %s, not USD: the %s is %s", cur, what, USD(recorded))
	}
	if ev.Amount != recorded {
		return fmt.Sprintf("paid %s, but the %s is %s", USD(ev.Amount), what, USD(recorded))
	}
	return ""
}

// PaymentMismatches lists the newest mismatches of every organisation
// (operators), at most limit.
func (s *Store) PaymentMismatches(ctx context.Context, limit int) ([]PaymentMismatchRow, error) {
	var out []PaymentMismatchRow
	err := s.db.WithContext(ctx).Table("payment_mismatches").Select("payment_mismatches.*, orgs.name AS org_name").
		Joins("LEFT JOIN orgs ON orgs.id = payment_mismatches.org_id").
		Order("payment_mismatches.created_at DESC, payment_mismatches.id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: payment mismatches: %w", err)
	}
	return out, nil
}

// LatestWebhookVersion is the API version of the newest payment event
// received, the zero value before any.
func (s *Store) LatestWebhookVersion(ctx context.Context) (WebhookVersion, error) {
	var v []WebhookVersion
	err := s.db.WithContext(ctx).Table("payment_events").Select("api_version, received_at").
		Order("received_at DESC, id").Limit(1).Scan(&v).Error
	if err != nil || len(v) == 0 {
		return WebhookVersion{}, err
	}
	return v[0], nil
}
