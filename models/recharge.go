package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// AutoRecharge is an organisation's auto-recharge (B4): when the balance
// drops below Threshold, the charges job charges Amount to the saved
// default card. PausedBy names the failed charge that paused it: nothing is
// charged again until the owner saves another card or re-enables it.
type AutoRecharge struct {
	OrgID           string `gorm:"primaryKey"`
	Enabled         bool
	Threshold       Money
	Amount          Money
	CustomerID      string    // the org's Stripe customer
	PaymentMethodID string    // the default saved card
	PausedBy        string    // the failed charge's id, "" = not paused
	UpdatedAt       time.Time `gorm:"autoUpdateTime:false"` // the store clock, not GORM's
}

// HasCard is true once a card is saved for off-session charges.
func (a AutoRecharge) HasCard() bool { return a.CustomerID != "" && a.PaymentMethodID != "" }

// Charge statuses: pending from the moment the row is written (before
// Stripe is called) until the outcome is known.
const (
	ChargePending   = "pending"
	ChargeSucceeded = "succeeded"
	ChargeFailed    = "failed"
)

// Charge is one off-session auto-recharge (B4). The row is written first;
// its id is the Stripe idempotency key and its ledger entry's key
// ("charge:<id>"), so a retried call charges once and credits once.
type Charge struct {
	ID              string
	OrgID           string
	Amount          Money
	Status          string
	CustomerID      string
	PaymentMethodID string
	PaymentIntentID string
	FailureCode     string // card_declined, authentication_required, …
	Message         string
	CreatedAt       time.Time
	SettledAt       *time.Time
}

// IdempotencyKey is the key Stripe sees for this charge.
func (c Charge) IdempotencyKey() string { return "charge:" + c.ID }

// AuthenticationRequired is true when the bank wants the cardholder.
func (c Charge) AuthenticationRequired() bool { return c.FailureCode == "authentication_required" }

func up0410AutoRecharge(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"CREATE TABLE auto_recharges (org_id varchar(32) PRIMARY KEY, enabled boolean NOT NULL DEFAULT false, " +
			"threshold bigint NOT NULL DEFAULT 0, amount bigint NOT NULL DEFAULT 0, customer_id varchar(255) NOT NULL DEFAULT '', " +
			"payment_method_id varchar(255) NOT NULL DEFAULT '', paused_by varchar(32) NOT NULL DEFAULT '', updated_at " + ts + " NOT NULL)",
		"CREATE TABLE charges (id varchar(32) PRIMARY KEY, org_id varchar(32) NOT NULL, amount bigint NOT NULL, " +
			"status varchar(16) NOT NULL, customer_id varchar(255) NOT NULL, payment_method_id varchar(255) NOT NULL, " +
			"payment_intent_id varchar(255) NOT NULL DEFAULT '', failure_code varchar(64) NOT NULL DEFAULT '', " +
			"message varchar(500) NOT NULL DEFAULT '', created_at " + ts + " NOT NULL, settled_at " + ts + ")",
		"CREATE INDEX idx_charges_org ON charges (org_id)",
		// At most one charge in flight per organisation, whatever runs the job.
		"CREATE UNIQUE INDEX idx_charges_one_pending ON charges (org_id) WHERE status = 'pending'",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// AutoRechargeFor is the organisation's setting; the zero value (disabled,
// no card) when none is saved.
func (s *Store) AutoRechargeFor(ctx context.Context, orgID string) (AutoRecharge, error) {
	var a AutoRecharge
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return AutoRecharge{OrgID: orgID}, nil
	}
	return a, err
}

// SaveCard records the Stripe customer and, when known, the card a paid
// top-up saved for off-session use. A different card lifts a pause.
func (s *Store) SaveCard(ctx context.Context, orgID, customerID, paymentMethodID string) error {
	if orgID == "" || customerID == "" {
		return nil
	}
	return s.Tx(ctx, func(tx *Store) error {
		a, err := tx.AutoRechargeFor(ctx, orgID)
		if err != nil {
			return err
		}
		a.CustomerID = customerID
		if paymentMethodID != "" && paymentMethodID != a.PaymentMethodID {
			a.PaymentMethodID, a.PausedBy = paymentMethodID, ""
		}
		a.UpdatedAt = tx.Now()
		return tx.db.WithContext(ctx).Save(&a).Error
	})
}

// AutoRechargeProblems validates a setting: amount at least $5 in whole
// cents, a threshold of zero or more in whole cents.
func AutoRechargeProblems(threshold, amount Money) FieldErrors {
	fe := FieldErrors{}
	if amount < MinTopUp {
		fe["amount"] = "The smallest recharge is $5.00."
	} else if amount%10_000 != 0 {
		fe["amount"] = "Enter a recharge in whole cents, like 50 or 50.25."
	}
	if threshold < 0 || threshold%10_000 != 0 {
		fe["threshold"] = "Enter a threshold of zero or more, in whole cents."
	}
	if len(fe) == 0 {
		return nil
	}
	return fe
}

// SetAutoRecharge is an owner's or admin's change of the auto-recharge
// (B4). Enabling needs a saved card; saving it (even unchanged) lifts a
// pause left by a failed charge.
func (x Actions) SetAutoRecharge(ctx context.Context, enabled bool, threshold, amount Money) (AutoRecharge, error) {
	if !x.a.Role.CanManage() {
		return AutoRecharge{}, &ForbiddenError{Message: "Only owners and admins change auto-recharge."}
	}
	fe := AutoRechargeProblems(threshold, amount)
	if limit := x.s.TopUpLimit(); amount > limit || threshold > limit {
		if fe == nil {
			fe = FieldErrors{}
		}
		if amount > limit {
			fe["amount"] = "The largest recharge is " + USD(limit) + "." // B9
		}
		if threshold > limit {
			fe["threshold"] = "The threshold is at most " + USD(limit) + "."
		}
	}
	if fe != nil {
		return AutoRecharge{}, fe
	}
	var a AutoRecharge
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if a, err = tx.AutoRechargeFor(ctx, x.a.OrgID); err != nil {
			return nil, err
		}
		if enabled && !a.HasCard() {
			return nil, FieldErrors{"enabled": "Add funds by card once first: auto-recharge charges the card saved then."}
		}
		a.Enabled, a.Threshold, a.Amount, a.PausedBy, a.UpdatedAt = enabled, threshold, amount, "", tx.Now()
		if err := tx.db.WithContext(ctx).Save(&a).Error; err != nil {
			return nil, err
		}
		detail := "off"
		if enabled {
			detail = fmt.Sprintf("%s below %s", DecimalUSD(amount), DecimalUSD(threshold))
		}
		return x.audit("billing.auto_recharge", x.a.OrgID, detail), nil
	})
	return a, err
}

// ChargeProblem is the failed charge that paused the organisation's
// auto-recharge, or nil: the banner's one query.
func (s *Store) ChargeProblem(ctx context.Context, orgID string) (*Charge, error) {
	var c Charge
	err := s.db.WithContext(ctx).Joins("JOIN auto_recharges ON auto_recharges.paused_by = charges.id").
		Where("auto_recharges.org_id = ? AND charges.org_id = ?", orgID, orgID).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &c, err
}

// Charges lists an organisation's charges, newest first.
func (s *Store) Charges(ctx context.Context, orgID string) ([]Charge, error) {
	var cs []Charge
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id").Find(&cs).Error
	return cs, err
}
