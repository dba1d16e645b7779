package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// InviteTTL is how long an invitation link works.
const InviteTTL = 7 * 24 * time.Hour

// Invite asks someone, by email, to join an organisation with a role. The
// link carries a random token; only its SHA-256 is stored.
type Invite struct {
	ID         string `gorm:"primaryKey;size:32"`
	OrgID      string `gorm:"size:32;index"`
	Email      string `gorm:"size:254"`
	Role       Role   `gorm:"size:16"`
	TokenHash  string `gorm:"size:64;uniqueIndex"`
	InvitedBy  string `gorm:"size:32"` // user id
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
}

func up0102Invites(tx *gorm.DB) error {
	type invite struct {
		ID         string `gorm:"primaryKey;size:32"`
		OrgID      string `gorm:"size:32;index:idx_invites_org_id"`
		Email      string `gorm:"size:254"`
		Role       string `gorm:"size:16"`
		TokenHash  string `gorm:"size:64;uniqueIndex:idx_invites_token_hash"`
		InvitedBy  string `gorm:"size:32"`
		CreatedAt  time.Time
		ExpiresAt  time.Time
		AcceptedAt *time.Time
		RevokedAt  *time.Time
	}
	return tx.Table("invites").Migrator().CreateTable(&invite{})
}

// Pending reports whether the invite can still be accepted at now.
func (i Invite) Pending(now time.Time) bool {
	return i.AcceptedAt == nil && i.RevokedAt == nil && now.Before(i.ExpiresAt)
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateInvite invites email into the org with role, replacing an earlier
// pending invite for the same address. It returns the invite and the secret
// token for the link (shown only in the mail). actor is the inviter's role.
func (s *Store) CreateInvite(ctx context.Context, orgID string, actor Role, invitedBy, email string, role Role) (Invite, string, error) {
	email = NormalizeEmail(email)
	fe := FieldErrors{}
	if p := EmailProblem(email); p != "" {
		fe["email"] = p
	}
	if !ValidRole(role) {
		fe["role"] = "Choose owner, admin or member."
	} else if !actor.CanGrant(role) {
		fe["role"] = "Only owners can invite an owner."
	}
	if len(fe) > 0 {
		return Invite{}, "", fe
	}
	token := strings.TrimPrefix(NewID("x"), "x_") + strings.TrimPrefix(NewID("x"), "x_")
	now := s.Now()
	inv := Invite{ID: NewID("inv"), OrgID: orgID, Email: email, Role: role, TokenHash: hashToken(token),
		InvitedBy: invitedBy, CreatedAt: now, ExpiresAt: now.Add(InviteTTL)}
	err := s.Tx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.db.Table("memberships").Joins("JOIN users ON users.id = memberships.user_id").
			Where("memberships.org_id = ? AND users.email = ?", orgID, email).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return FieldErrors{"email": "That person is already a member."}
		}
		if err := tx.db.Model(&Invite{}).
			Where("org_id = ? AND email = ? AND accepted_at IS NULL AND revoked_at IS NULL", orgID, email).
			Update("revoked_at", now).Error; err != nil {
			return err
		}
		return tx.db.Create(&inv).Error
	})
	if err != nil {
		return Invite{}, "", err
	}
	return inv, token, nil
}

// PendingInvites lists the org's invitations that can still be accepted.
func (s *Store) PendingInvites(ctx context.Context, orgID string) ([]Invite, error) {
	var out []Invite
	err := s.db.WithContext(ctx).
		Where("org_id = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?", orgID, s.Now()).
		Order("created_at DESC, id").Find(&out).Error
	return out, err
}

// RevokeInvite cancels one of the org's pending invitations.
func (s *Store) RevokeInvite(ctx context.Context, orgID, id string) (Invite, error) {
	var inv Invite
	if err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Take(&inv).Error; err != nil {
		return Invite{}, notFound(err, "invite "+id)
	}
	now := s.Now()
	res := s.db.WithContext(ctx).Model(&Invite{}).
		Where("id = ? AND org_id = ? AND accepted_at IS NULL AND revoked_at IS NULL", id, orgID).
		Update("revoked_at", now)
	if res.Error != nil {
		return Invite{}, res.Error
	}
	if res.RowsAffected == 0 {
		return Invite{}, fmt.Errorf("models: invite %s is no longer pending: %w", id, ErrConflict)
	}
	inv.RevokedAt = &now
	return inv, nil
}

// InviteByToken finds a pending invitation from its link's token, with its
// organisation's name. Unknown, used, revoked and expired links are ErrNotFound.
func (s *Store) InviteByToken(ctx context.Context, token string) (Invite, Org, error) {
	if token == "" || len(token) > 128 {
		return Invite{}, Org{}, fmt.Errorf("models: invite: %w", ErrNotFound)
	}
	var inv Invite
	err := s.db.WithContext(ctx).Where("token_hash = ?", hashToken(token)).Take(&inv).Error
	if err != nil {
		return Invite{}, Org{}, notFound(err, "invite")
	}
	if !inv.Pending(s.Now()) {
		return Invite{}, Org{}, fmt.Errorf("models: invite no longer pending: %w", ErrNotFound)
	}
	org, err := s.OrgByID(ctx, inv.OrgID)
	return inv, org, err
}

// ErrInviteEmail means the invitation was sent to another address than the
// signed-in user's.
var ErrInviteEmail = errors.New("models: invitation is for another email address")

// AcceptInvite adds the user to the inviting organisation with the invited
// role and writes the audit entry.
func (s *Store) AcceptInvite(ctx context.Context, token string, u User, ip string) (Invite, error) {
	var inv Invite
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if inv, err = tx.acceptInvite(ctx, token, u); err != nil {
			return err
		}
		return tx.AuditLog(ctx, AuditEntry{OrgID: inv.OrgID, UserID: u.ID, Actor: u.Email,
			Action: "member.join", Target: u.Email, IP: ip, Detail: "role " + string(inv.Role)})
	})
	return inv, err
}

func (s *Store) acceptInvite(ctx context.Context, token string, u User) (Invite, error) {
	inv, _, err := s.InviteByToken(ctx, token)
	if err != nil {
		return Invite{}, err
	}
	if inv.Email != u.Email {
		return Invite{}, ErrInviteEmail
	}
	now := s.Now()
	res := s.db.WithContext(ctx).Model(&Invite{}).Where("id = ? AND accepted_at IS NULL AND revoked_at IS NULL", inv.ID).
		Update("accepted_at", now)
	if res.Error != nil {
		return Invite{}, res.Error
	}
	if res.RowsAffected == 0 {
		return Invite{}, fmt.Errorf("models: invite %s: %w", inv.ID, ErrConflict)
	}
	var n int64
	if err := s.db.WithContext(ctx).Model(&Membership{}).Where("org_id = ? AND user_id = ?", inv.OrgID, u.ID).Count(&n).Error; err != nil {
		return Invite{}, err
	}
	if n == 0 {
		m := Membership{OrgID: inv.OrgID, UserID: u.ID, Role: inv.Role, CreatedAt: now}
		if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
			return Invite{}, fmt.Errorf("models: join org: %w", err)
		}
	}
	inv.AcceptedAt = &now
	return inv, nil
}
