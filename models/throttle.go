package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
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

func init() {
	register(Migration{ID: "0103_login_throttles", Up: func(tx *gorm.DB) error {
		type throttle struct {
			Key           string `gorm:"primaryKey;size:320"`
			Failures      int
			LastFailureAt time.Time
			BlockedUntil  time.Time
		}
		return tx.Table("login_throttles").Migrator().CreateTable(&throttle{})
	}})
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

// LoginBlocked reports whether a log-in for email from ip must be refused
// now (before the password is even checked). nil means go ahead.
func (s *Store) LoginBlocked(ctx context.Context, email, ip string) (*LoginBlock, error) {
	now := s.Now()
	var rows []LoginThrottle
	keys := []string{accountKey(email)}
	if ip != "" {
		keys = append(keys, addressKey(ip))
	}
	if err := s.db.WithContext(ctx).Where("key IN ?", keys).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("models: login throttle: %w", err)
	}
	var block *LoginBlock
	for _, r := range rows {
		if !r.BlockedUntil.After(now) {
			continue
		}
		p, byIP := AccountThrottle, r.Key != keys[0]
		if byIP {
			p = AddressThrottle
		}
		b := &LoginBlock{Until: r.BlockedUntil, Locked: r.Failures >= p.LockAfter, ByIP: byIP}
		if block == nil || b.Until.After(block.Until) {
			block = b
		}
	}
	return block, nil
}

// RecordLoginFailure counts a failed log-in against the account and the
// address, atomically (an upsert), and sets how long each is now blocked.
func (s *Store) RecordLoginFailure(ctx context.Context, email, ip string) error {
	if err := s.recordFailure(ctx, accountKey(email), AccountThrottle); err != nil {
		return err
	}
	if ip == "" {
		return nil
	}
	return s.recordFailure(ctx, addressKey(ip), AddressThrottle)
}

func (s *Store) recordFailure(ctx context.Context, key string, p ThrottlePolicy) error {
	now := s.Now()
	return s.Tx(ctx, func(tx *Store) error {
		// One statement increments, or restarts the count when the last
		// failure is older than the window; concurrent failures on several
		// instances all count.
		err := tx.db.Exec(`INSERT INTO login_throttles (key, failures, last_failure_at, blocked_until) VALUES (?, 1, ?, ?)
			ON CONFLICT (key) DO UPDATE SET
			  failures = CASE WHEN login_throttles.last_failure_at < ? THEN 1 ELSE login_throttles.failures + 1 END,
			  last_failure_at = excluded.last_failure_at`,
			key, now, now.Add(p.blockFor(1)), now.Add(-p.Window)).Error
		if err != nil {
			return fmt.Errorf("models: record login failure: %w", err)
		}
		var row LoginThrottle
		if err := tx.db.Where("key = ?", key).Take(&row).Error; err != nil {
			return err
		}
		return tx.db.Model(&LoginThrottle{}).Where("key = ?", key).
			Update("blocked_until", now.Add(p.blockFor(row.Failures))).Error
	})
}

// ClearLoginFailures forgets the account's failures after a good log-in.
// The address's count is kept: one working account must not reset an
// attacker's address.
func (s *Store) ClearLoginFailures(ctx context.Context, email string) error {
	return s.db.WithContext(ctx).Where("key = ?", accountKey(email)).Delete(&LoginThrottle{}).Error
}

// PruneLoginThrottles deletes counts whose window has passed.
func (s *Store) PruneLoginThrottles(ctx context.Context) (int64, error) {
	cutoff := s.Now().Add(-max(AccountThrottle.Window, AddressThrottle.Window))
	res := s.db.WithContext(ctx).Where("last_failure_at < ? AND blocked_until < ?", cutoff, s.Now()).Delete(&LoginThrottle{})
	return res.RowsAffected, res.Error
}
