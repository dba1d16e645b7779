package models

import (
	"errors"
	"fmt"
	"math/big"

	"gorm.io/gorm"
)

// Money limits (B9): every amount a customer or an operator can put into a
// ledger is bounded, so no organisation's sums come near int64's limits.
const (
	// DefaultMaxTopUp bounds one top-up and one auto-recharge amount
	// (MAX_TOP_UP_USD).
	DefaultMaxTopUp Money = 50_000 * Micro
	// StripeMaxAmount is the largest amount Stripe's Checkout and
	// PaymentIntents accept in US dollars: no top-up limit may exceed it.
	StripeMaxAmount Money = 999_999_990_000
	// DefaultMaxAdjustment bounds one operator adjustment of a balance
	// (MAX_ADJUSTMENT_USD): a typo guard.
	DefaultMaxAdjustment Money = 1_000_000 * Micro
	// MaxAdjustmentLimit is the largest MAX_ADJUSTMENT_USD accepted.
	MaxAdjustmentLimit Money = 1_000_000_000 * Micro
)

// MoneyLimits are the operator's bounds on amounts (B9); zero fields mean
// the defaults.
type MoneyLimits struct {
	MaxTopUp      Money // one top-up and one auto-recharge amount
	MaxAdjustment Money // one operator adjustment, either sign
}

// TopUpLimit is the largest top-up (and auto-recharge amount) accepted.
func (s *Store) TopUpLimit() Money {
	if s.settings.Limits.MaxTopUp > 0 {
		return s.settings.Limits.MaxTopUp
	}
	return DefaultMaxTopUp
}

// AdjustmentLimit is the largest operator adjustment accepted, either sign.
func (s *Store) AdjustmentLimit() Money {
	if s.settings.Limits.MaxAdjustment > 0 {
		return s.settings.Limits.MaxAdjustment
	}
	return DefaultMaxAdjustment
}

// ErrSumOutOfRange is a sum of amounts beyond what Money holds: the one
// query that met it fails; nothing else does.
var ErrSumOutOfRange = errors.New("models: sum of amounts out of range")

// moneySumColumns sums the Money column col as whole dollars and
// micro-dollar remainders apart (SQL truncates both toward zero, so their
// total is exact): neither SQLite's integer SUM, which fails on overflow,
// nor a PostgreSQL numeric scanned into int64 can then fail for any ledger
// of bounded amounts. Select it, then scan into a moneySum.
func moneySumColumns(col string) string {
	return fmt.Sprintf("COALESCE(SUM(%[1]s / 1000000), 0) AS whole, COALESCE(SUM(%[1]s %% 1000000), 0) AS frac", col)
}

// moneySumSQL is the same sum as one SQL expression, for comparisons inside
// a query: SQLite turns an overflowing product or sum of integers into a
// real, PostgreSQL's SUM of bigint is numeric, so it never fails either.
func moneySumSQL(col string) string {
	return fmt.Sprintf("(COALESCE(SUM(%[1]s / 1000000), 0) * 1000000 + COALESCE(SUM(%[1]s %% 1000000), 0))", col)
}

// moneySum is a sum scanned from moneySumColumns.
type moneySum struct {
	Whole int64 // dollars
	Frac  int64 // micro-dollars
}

// Money is the exact total, or ErrSumOutOfRange.
func (m moneySum) Money() (Money, error) {
	t := new(big.Int).Mul(big.NewInt(m.Whole), big.NewInt(int64(Micro)))
	t.Add(t, big.NewInt(m.Frac))
	if !t.IsInt64() {
		return 0, ErrSumOutOfRange
	}
	return Money(t.Int64()), nil
}

// USD is the total in dollars, for gauges: it never fails.
func (m moneySum) USD() float64 { return float64(m.Whole) + float64(m.Frac)/float64(Micro) }

// sumMoney is the exact sum of col over q's rows (B9).
func sumMoney(q *gorm.DB, col string) (Money, error) {
	var m moneySum
	if err := q.Select(moneySumColumns(col)).Scan(&m).Error; err != nil {
		return 0, err
	}
	return m.Money()
}
