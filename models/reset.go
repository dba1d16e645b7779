package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// PasswordResetTTL is how long a password-reset link works.
const PasswordResetTTL = time.Hour

// PasswordReset is one "forgot your password" link (A1). Like an
// invitation, the link carries a random token and only its SHA-256 is
// stored; it works once, until ExpiresAt, and only the newest link of a user
// works (asking again retires the older ones).
type PasswordReset struct {
	ID        string `gorm:"primaryKey;size:32"`
	UserID    string `gorm:"size:32;index"`
	TokenHash string `gorm:"size:64;uniqueIndex"`
	IP        string `gorm:"column:ip;size:64"` // who asked
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time // used, or retired by a newer link or a reset
}

func up0780PasswordResets(tx *gorm.DB) error {
	type passwordReset struct {
		ID        string `gorm:"primaryKey;size:32"`
		UserID    string `gorm:"size:32;index:idx_password_resets_user_id"`
		TokenHash string `gorm:"size:64;uniqueIndex:idx_password_resets_token_hash"`
		IP        string `gorm:"column:ip;size:64"`
		CreatedAt time.Time
		ExpiresAt time.Time
		UsedAt    *time.Time
	}
	return tx.Table("password_resets").Migrator().CreateTable(&passwordReset{})
}

// Throttles for asking for reset links (A1: throttled like log-in,
// in the same table, so across instances): one address is slowed after 3
// requests an hour and refused for an hour after 6; a network address after
// 10 and 30. Every request counts, whether the account exists or not.
var (
	ResetAccountThrottle = ThrottlePolicy{SlowAfter: 3, BaseDelay: time.Minute, LockAfter: 6, Lock: time.Hour, Window: time.Hour}
	ResetAddressThrottle = ThrottlePolicy{SlowAfter: 10, BaseDelay: 10 * time.Second, LockAfter: 30, Lock: time.Hour, Window: time.Hour}
)

// ReservePasswordReset counts a reset request for email from ip, or refuses
// it (a non-nil block) without counting.
func (s *Store) ReservePasswordReset(ctx context.Context, email, ip string) (*LoginBlock, error) {
	keys := []throttleKey{{"reset:" + NormalizeEmail(email), ResetAccountThrottle, false}}
	if ip != "" {
		keys = append(keys, throttleKey{"reset-ip:" + ip, ResetAddressThrottle, true})
	}
	return s.reserve(ctx, keys)
}

// RequestPasswordReset mails a reset link to email if an account has that
// address, and does nothing otherwise (the caller answers the same either
// way, so the form tells nobody who has an account). The link, the mail
// (through the outbox) and the audit entries commit together; older unused
// links of the user stop working.
func (s *Store) RequestPasswordReset(ctx context.Context, email, ip, baseURL string) error {
	u, err := s.UserByEmail(ctx, email)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	token := strings.TrimPrefix(NewID("x"), "x_") + strings.TrimPrefix(NewID("x"), "x_")
	now := s.Now()
	r := PasswordReset{ID: NewID("pwr"), UserID: u.ID, TokenHash: hashToken(token), IP: truncateRunes(ip, 64),
		CreatedAt: now, ExpiresAt: now.Add(PasswordResetTTL)}
	return s.Tx(ctx, func(tx *Store) error {
		if err := tx.retireResets(ctx, u.ID, now); err != nil {
			return err
		}
		if err := tx.db.WithContext(ctx).Create(&r).Error; err != nil {
			return fmt.Errorf("models: password reset: %w", err)
		}
		if err := tx.Notify(ctx, "password-reset:"+r.ID, u.Email, PasswordResetMail{Name: u.Name, ExpiresAt: r.ExpiresAt.UTC(), Link: baseURL + "/reset-password/" + token}); err != nil {
			return err
		}
		return tx.auditUser(ctx, u, AuditEntry{Action: "user.password_reset_request", Target: u.Email, IP: ip,
			Detail: "link mailed, valid until " + r.ExpiresAt.UTC().Format("15:04 MST")})
	})
}

// retireResets ends every unused link of the user.
func (s *Store) retireResets(ctx context.Context, userID string, now time.Time) error {
	return s.db.WithContext(ctx).Model(&PasswordReset{}).Where("user_id = ? AND used_at IS NULL", userID).
		Update("used_at", now).Error
}

// PasswordResetByToken finds a usable reset link and its user. Unknown,
// used, retired and expired links are ErrNotFound.
func (s *Store) PasswordResetByToken(ctx context.Context, token string) (PasswordReset, User, error) {
	if token == "" || len(token) > 128 {
		return PasswordReset{}, User{}, fmt.Errorf("models: password reset: %w", ErrNotFound)
	}
	var r PasswordReset
	if err := s.db.WithContext(ctx).Where("token_hash = ?", hashToken(token)).Take(&r).Error; err != nil {
		return PasswordReset{}, User{}, notFound(err, "password reset")
	}
	if r.UsedAt != nil || !s.Now().Before(r.ExpiresAt) {
		return PasswordReset{}, User{}, fmt.Errorf("models: password reset used or expired: %w", ErrNotFound)
	}
	u, err := s.UserByID(ctx, r.UserID)
	return r, u, err
}

// ResetPassword sets a new password through a reset link: the link is
// spent (once: the compare-and-swap on used_at lets one of two concurrent
// uses through), every session of the user is logged out, the account's
// log-in failures are forgotten, with revokeKeys every API key the user
// created is revoked (in every organisation), and a notice listing the
// user's API keys still live is mailed, audited in each of the user's
// organisations (A1: a reset alone leaves keys working). A bad
// password is a FieldErrors and spends nothing.
func (s *Store) ResetPassword(ctx context.Context, token, password, ip string, revokeKeys bool) (User, error) {
	var u User
	err := s.Tx(ctx, func(tx *Store) error {
		r, user, err := tx.PasswordResetByToken(ctx, token)
		if err != nil {
			return err
		}
		if p := PasswordProblem(password, user.Email); p != "" {
			return FieldErrors{"new_password": p}
		}
		now := tx.Now()
		res := tx.db.WithContext(ctx).Model(&PasswordReset{}).Where("id = ? AND used_at IS NULL", r.ID).Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("models: password reset %s already used: %w", r.ID, ErrNotFound)
		}
		if err := tx.retireResets(ctx, user.ID, now); err != nil {
			return err
		}
		if u, err = tx.SetPassword(ctx, user.ID, password); err != nil {
			return err
		}
		if err := tx.ClearLoginFailures(ctx, user.Email); err != nil {
			return err
		}
		keys, err := tx.liveKeysOf(ctx, u.ID)
		if err != nil {
			return err
		}
		detail := "through a mailed link; every session logged out"
		if revokeKeys {
			if err := tx.revokeKeysOf(ctx, u, keys, ip, now); err != nil {
				return err
			}
			detail += fmt.Sprintf(", and the %d API keys they created revoked", len(keys))
			keys = nil
		}
		if err := tx.Notify(ctx, "password-changed:"+r.ID, u.Email, passwordChangedMail(u, ip, revokeKeys, keys)); err != nil {
			return err
		}
		return tx.auditUser(ctx, u, AuditEntry{Action: "user.password_reset", Target: u.Email, IP: ip, Detail: detail})
	})
	return u, err
}

// PrunePasswordResets deletes reset links that expired more than a day ago
// (used or not), so the table stays small; the login-throttle-prune job
// runs it hourly.
func (s *Store) PrunePasswordResets(ctx context.Context) (int64, error) {
	res := s.db.WithContext(ctx).Where("expires_at < ?", s.Now().Add(-24*time.Hour)).Delete(&PasswordReset{})
	return res.RowsAffected, res.Error
}

// auditUser records e, done by u, in each of u's organisations' logs (a
// user's own account events belong to no one organisation).
func (s *Store) auditUser(ctx context.Context, u User, e AuditEntry) error {
	orgs, err := s.OrgsForUser(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, o := range orgs {
		e.OrgID, e.UserID, e.Actor = o.OrgID, u.ID, u.Email
		if err := s.AuditLog(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// liveKey is an API key a user created, with where it acts, for the notice
// after a reset.
type liveKey struct {
	APIKey
	OrgName, EnvName string
}

// liveKeysOf lists the API keys userID created that still work, in every
// organisation, oldest first.
func (s *Store) liveKeysOf(ctx context.Context, userID string) ([]liveKey, error) {
	var out []liveKey
	err := s.db.WithContext(ctx).Table("api_keys").
		Select("api_keys.*, orgs.name AS org_name, environments.name AS env_name").
		Joins("JOIN orgs ON orgs.id = api_keys.org_id").
		Joins("LEFT JOIN environments ON environments.id = api_keys.env_id").
		Where("api_keys.created_by = ? AND api_keys.revoked_at IS NULL", userID).
		Order("api_keys.created_at, api_keys.id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: api keys of %s: %w", userID, err)
	}
	return out, nil
}

// revokeKeysOf revokes keys (u's live keys) at a reset, each audited in its
// organisation as u's revoke.
func (s *Store) revokeKeysOf(ctx context.Context, u User, keys []liveKey, ip string, now time.Time) error {
	for _, k := range keys {
		res := s.db.WithContext(ctx).Model(&APIKey{}).Where("id = ? AND revoked_at IS NULL", k.ID).Update("revoked_at", now)
		if res.Error != nil {
			return fmt.Errorf("models: revoke api key %s: %w", k.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			continue
		}
		if err := s.AuditLog(ctx, AuditEntry{OrgID: k.OrgID, UserID: u.ID, Actor: u.Email, Action: "api_key.revoke",
			Target: k.Prefix, IP: ip, Detail: k.Name + ", with the password reset"}); err != nil {
			return err
		}
	}
	return nil
}

// passwordChangedMail is the notice after a reset: what ended, and the API
// keys that still work (name, prefix and where; never a secret), since a
// reset alone does not end them.
func passwordChangedMail(u User, ip string, revoked bool, live []liveKey) PasswordChangedMail {
	m := PasswordChangedMail{Name: u.Name, IP: ip, Revoked: revoked}
	for _, k := range live {
		m.Keys = append(m.Keys, MailAPIKeys{Name: k.Name, Prefix: k.Prefix, OrgName: k.OrgName, EnvName: k.EnvName})
	}
	return m
}
