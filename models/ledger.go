package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Ledger entry kinds (B1).
const (
	LedgerDeposit      = "deposit"
	LedgerUsage        = "usage"
	LedgerAutoRecharge = "auto_recharge"
	LedgerRefund       = "refund"
	LedgerAdjustment   = "adjustment"
)

// Ledger entry statuses (B1). Only completed entries count toward the balance.
const (
	EntryCompleted = "completed"
	EntryPending   = "pending"
	EntryFailed    = "failed"
)

// LedgerEntry is one append-only movement of an organisation's prepaid
// balance. Amount is signed micro-dollars (deposits positive, usage
// negative). IdemKey is unique, so a retried job or webhook never moves money
// twice (B1).
type LedgerEntry struct {
	ID          string `gorm:"primaryKey;size:32"`
	OrgID       string `gorm:"size:32;index"`
	Kind        string `gorm:"size:32"`
	Status      string `gorm:"size:16"`
	Amount      Money
	IdemKey     string `gorm:"size:191;uniqueIndex"`
	Description string `gorm:"size:255"`
	ClusterID   string `gorm:"size:32;index"`
	CreatedAt   time.Time
}

// Frozen copies of the tables as migration 0200 created them (see Migration:
// later model changes never rewrite history).
type (
	ledgerEntryV0200 struct {
		ID          string `gorm:"primaryKey;size:32"`
		OrgID       string `gorm:"size:32;index"`
		Kind        string `gorm:"size:32"`
		Status      string `gorm:"size:16"`
		Amount      int64
		IdemKey     string `gorm:"size:191;uniqueIndex"`
		Description string `gorm:"size:255"`
		ClusterID   string `gorm:"size:32;index"`
		CreatedAt   time.Time
	}
)

func (ledgerEntryV0200) TableName() string { return "ledger_entries" }

func up0200Ledger(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&ledgerEntryV0200{})
}

// AddLedgerEntry appends e unless an entry with its IdemKey exists. It reports
// whether it wrote one, so callers know a retry changed nothing.
func (s *Store) AddLedgerEntry(ctx context.Context, e LedgerEntry) (bool, error) {
	if e.IdemKey == "" || e.OrgID == "" {
		return false, errors.New("models: ledger entry needs an org and an idempotency key")
	}
	if e.ID == "" {
		e.ID = NewID("le")
	}
	if e.Status == "" {
		e.Status = EntryCompleted
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.Now()
	}
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "idem_key"}}, DoNothing: true}).Create(&e)
	if res.Error != nil {
		return false, fmt.Errorf("models: ledger %s: %w", e.IdemKey, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Deposit credits an organisation (test-mode top-ups, the demo, refunds).
func (s *Store) Deposit(ctx context.Context, orgID string, amount Money, key, description string) (bool, error) {
	if amount <= 0 {
		return false, FieldErrors{"amount": "Enter a deposit of more than $0.00."}
	}
	return s.AddLedgerEntry(ctx, LedgerEntry{OrgID: orgID, Kind: LedgerDeposit, Amount: amount, IdemKey: key, Description: description})
}

// Balance is the sum of an organisation's completed ledger entries, summed
// so that it cannot overflow (B9): a total beyond Money fails this
// organisation's query only.
func (s *Store) Balance(ctx context.Context, orgID string) (Money, error) {
	sum, err := sumMoney(s.db.WithContext(ctx).Model(&LedgerEntry{}).
		Where("org_id = ? AND status = ?", orgID, EntryCompleted), "amount")
	if err != nil {
		return 0, fmt.Errorf("models: balance %s: %w", orgID, err)
	}
	return sum, nil
}

// LedgerEntries lists an organisation's entries, newest first.
func (s *Store) LedgerEntries(ctx context.Context, orgID string, limit int) ([]LedgerEntry, error) {
	var out []LedgerEntry
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// MinLaunchBalance is the floor of L2: a launch needs at least one hour of the
// whole cluster and never less than $10.
const MinLaunchBalance Money = 10 * Micro

// RequiredBalance is what L2 asks the balance to cover for a cluster at usdPerHour.
func RequiredBalance(usdPerHour Money) Money { return max(usdPerHour, MinLaunchBalance) }

// BurnRate is what an organisation's running clusters and volumes cost per
// hour at their locked rates: every machine of a cluster billed since readyAt
// and not yet ended, and every volume not deleted, attached or not (B1, V3).
// A cluster's volume bills as a volume, so it is counted once.
func (s *Store) BurnRate(ctx context.Context, orgID string) (Money, error) {
	var machines, volumes Money
	err := s.db.WithContext(ctx).Model(&Cluster{}).
		Where("org_id = ? AND ready_at IS NOT NULL AND unbilled_at IS NULL AND status IN ?", orgID, // held by verification: unbilled (X13)
			[]ClusterStatus{StatusInstalling, StatusVerifying, StatusReady, StatusDegraded}).
		Select("COALESCE(SUM(machine_hour * nodes), 0)").Scan(&machines).Error
	if err != nil {
		return 0, err
	}
	volumes, err = s.volumeBurn(ctx, orgID)
	return machines + volumes, err
}
