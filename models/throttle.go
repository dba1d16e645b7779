package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// LoginThrottle counts recent failed log-ins for one key ("account:<email>"
// or "ip:<address>"). It lives in the database, so every instance sees the
// same counts (OP4).
type LoginThrottle struct {
	Key           string `gorm:"primaryKey;size:320"`
	Failures      int
	LastFailureAt time.Time
	BlockedUntil  time.Time
}

func up0103LoginThrottles(tx *gorm.DB) error {
	type throttle struct {
		Key           string `gorm:"primaryKey;size:320"`
		Failures      int
		LastFailureAt time.Time
		BlockedUntil  time.Time
	}
	return tx.Table("login_throttles").Migrator().CreateTable(&throttle{})
}

// ThrottlePolicy says how failures for one kind of key are slowed, then
// refused. Failures older than Window (after the last one) are forgotten.
type ThrottlePolicy struct {
	SlowAfter int           // from this many failures, each further try waits
	BaseDelay time.Duration // the first wait; it doubles with every failure
	LockAfter int           // from this many failures, log-in is refused for Lock
	Lock      time.Duration
	Window    time.Duration
}

// Log-in throttling policies: an account is slowed after 5 failures and
// locked for 15 minutes after 10; an address (possibly shared by many people)
// after 20 and 50.
var (
	AccountThrottle = ThrottlePolicy{SlowAfter: 5, BaseDelay: 5 * time.Second, LockAfter: 10, Lock: 15 * time.Minute, Window: time.Hour}
	AddressThrottle = ThrottlePolicy{SlowAfter: 20, BaseDelay: 2 * time.Second, LockAfter: 50, Lock: 15 * time.Minute, Window: time.Hour}
)

// blockFor is how long to refuse after the n-th consecutive failure.
func (p ThrottlePolicy) blockFor(n int) time.Duration {
	switch {
	case n >= p.LockAfter:
		return p.Lock
	case n >= p.SlowAfter:
		d := p.BaseDelay << min(n-p.SlowAfter, 10)
		return min(d, p.Lock)
	}
	return 0
}

// LoginBlock is a refusal: wait until Until. Locked is the long refusal
// (too many failures), as opposed to a short slow-down.
type LoginBlock struct {
	Until  time.Time
	Locked bool
	ByIP   bool
}

// Wait is how long from now until log-in is allowed again.
func (b LoginBlock) Wait(now time.Time) time.Duration { return b.Until.Sub(now) }

func accountKey(email string) string { return "account:" + NormalizeEmail(email) }
func addressKey(ip string) string    { return "ip:" + ip }

// ReserveLoginAttempt counts a log-in attempt for email from ip before its
// password is checked, or refuses it (a non-nil block) without counting.
// The keys' rows are locked in one transaction (in a fixed order, so
// concurrent attempts queue instead of deadlocking), so whatever the
// concurrency at most AccountThrottle.SlowAfter checks run at once and at
// most LockAfter per lock period: each attempt is counted as a failure and
// sets the wait it would cause. A good password then calls
// ClearLoginFailures, which forgets the account's count (A1).
func (s *Store) ReserveLoginAttempt(ctx context.Context, email, ip string) (*LoginBlock, error) {
	keys := []throttleKey{{accountKey(email), AccountThrottle, false}}
	if ip != "" {
		keys = append(keys, throttleKey{addressKey(ip), AddressThrottle, true})
	}
	return s.reserve(ctx, keys)
}

// ReserveSignup counts a sign-up attempt from ip, or refuses it: sign-up is
// throttled per address like log-in (SignupThrottle).
func (s *Store) ReserveSignup(ctx context.Context, ip string) (*LoginBlock, error) {
	return s.reserve(ctx, []throttleKey{{"signup:" + ip, SignupThrottle, true}})
}

// SignupThrottle counts every sign-up attempt of an address: slowed after 10
// an hour (5 s, doubling), refused for an hour after 30.
var SignupThrottle = ThrottlePolicy{SlowAfter: 10, BaseDelay: 5 * time.Second, LockAfter: 30, Lock: time.Hour, Window: time.Hour}

type throttleKey struct {
	key    string
	policy ThrottlePolicy
	byIP   bool
}

var errThrottled = errors.New("models: throttled")

func (s *Store) reserve(ctx context.Context, keys []throttleKey) (*LoginBlock, error) {
	now := s.Now()
	var block *LoginBlock
	err := s.Tx(ctx, func(tx *Store) error {
		rows := make([]LoginThrottle, len(keys))
		for i, k := range keys { // "account:…" < "ip:…": one lock order
			if err := tx.db.Exec(`INSERT INTO login_throttles (key, failures, last_failure_at, blocked_until)
				VALUES (?, 0, ?, ?) ON CONFLICT (key) DO NOTHING`, k.key, time.Time{}, time.Time{}).Error; err != nil {
				return fmt.Errorf("models: login throttle: %w", err)
			}
			q := tx.db
			if tx.IsPostgres() {
				q = q.Clauses(clause.Locking{Strength: "UPDATE"})
			}
			if err := q.Where("key = ?", k.key).Take(&rows[i]).Error; err != nil {
				return fmt.Errorf("models: login throttle: %w", err)
			}
			if r := rows[i]; r.BlockedUntil.After(now) {
				b := &LoginBlock{Until: r.BlockedUntil, Locked: r.Failures >= k.policy.LockAfter, ByIP: k.byIP}
				if block == nil || b.Until.After(block.Until) {
					block = b
				}
			}
		}
		if block != nil {
			return errThrottled // counts nothing
		}
		for i, k := range keys {
			n := rows[i].Failures + 1
			if rows[i].LastFailureAt.Before(now.Add(-k.policy.Window)) {
				n = 1
			}
			if err := tx.db.Model(&LoginThrottle{}).Where("key = ?", k.key).Updates(map[string]any{
				"failures": n, "last_failure_at": now, "blocked_until": now.Add(k.policy.blockFor(n))}).Error; err != nil {
				return fmt.Errorf("models: login throttle: %w", err)
			}
		}
		return nil
	})
	if errors.Is(err, errThrottled) {
		return block, nil
	}
	return nil, err
}

// ClearLoginFailures forgets the account's failures after a good log-in.
// The address's count is kept: one working account must not reset an
// attacker's address.
func (s *Store) ClearLoginFailures(ctx context.Context, email string) error {
	return s.db.WithContext(ctx).Where("key = ?", accountKey(email)).Delete(&LoginThrottle{}).Error
}

// ReleaseLoginAttempt is a good log-in after ReserveLoginAttempt: the
// account's count is forgotten and the attempt no longer counts against the
// address.
func (s *Store) ReleaseLoginAttempt(ctx context.Context, email, ip string) error {
	if err := s.ClearLoginFailures(ctx, email); err != nil {
		return err
	}
	return s.db.WithContext(ctx).Model(&LoginThrottle{}).Where("key = ? AND failures > 0", addressKey(ip)).
		Update("failures", gorm.Expr("failures - 1")).Error
}

// PruneLoginThrottles deletes counts whose window has passed.
func (s *Store) PruneLoginThrottles(ctx context.Context) (int64, error) {
	cutoff := s.Now().Add(-max(AccountThrottle.Window, AddressThrottle.Window))
	res := s.db.WithContext(ctx).Where("last_failure_at < ? AND blocked_until < ?", cutoff, s.Now()).Delete(&LoginThrottle{})
	return res.RowsAffected, res.Error
}
