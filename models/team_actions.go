package models

import (
	"context"
)

// InviteInput is an invitation to the actor's organisation. BaseURL is
// where the product answers; the mail's link is built on it.
type InviteInput struct {
	Email   string
	Role    Role
	BaseURL string
}

// Invite invites someone into the actor's organisation: the invitation,
// its mail (through the outbox) and the audit entry commit together.
func (x Actions) Invite(ctx context.Context, in InviteInput) (Invite, error) {
	var inv Invite
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		org, err := tx.OrgByID(ctx, x.a.OrgID)
		if err != nil {
			return nil, err
		}
		var token string
		if inv, token, err = tx.CreateInvite(ctx, x.a.OrgID, x.a.Role, x.a.UserID, in.Email, in.Role); err != nil {
			return nil, err
		}
		if err := tx.Notify(ctx, "invite:"+inv.ID, inv.Email, InviteMail{Inviter: x.a.Name, OrgName: org.Name, Role: string(inv.Role),
			ExpiresAt: inv.ExpiresAt.UTC(), Link: in.BaseURL + "/invites/" + token}); err != nil {
			return nil, err
		}
		return x.audit("member.invite", inv.Email, "role "+string(inv.Role)), nil
	})
	return inv, err
}

// RevokeInvite cancels one of the organisation's pending invitations.
func (x Actions) RevokeInvite(ctx context.Context, id string) (Invite, error) {
	var inv Invite
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if inv, err = tx.RevokeInvite(ctx, x.a.OrgID, id); err != nil {
			return nil, err
		}
		return x.audit("member.invite_revoke", inv.Email, ""), nil
	})
	return inv, err
}

// ChangeRole gives a member another role. The organisation is locked and
// the actor's own role read again under the lock, so two owners demoting
// each other at once never leave it without an owner.
func (x Actions) ChangeRole(ctx context.Context, userID string, role Role) (Member, error) {
	var m Member
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		actor, err := tx.lockTeam(ctx, x.a)
		if err != nil {
			return nil, err
		}
		before, err := tx.Member(ctx, x.a.OrgID, userID)
		if err != nil {
			return nil, err
		}
		if m, err = tx.ChangeRole(ctx, x.a.OrgID, actor, before.UserID, role); err != nil {
			return nil, err
		}
		return x.audit("member.role_change", m.Email, string(before.Role)+" → "+string(m.Role)), nil
	})
	return m, err
}

// RemoveMember takes a member out of the organisation (their API keys there
// revoked, their SSH keys there deleted), under the organisation's lock:
// the organisation always keeps an owner.
func (x Actions) RemoveMember(ctx context.Context, userID string) (Member, error) {
	var m Member
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		actor, err := tx.lockTeam(ctx, x.a)
		if err != nil {
			return nil, err
		}
		if m, err = tx.RemoveMember(ctx, x.a.OrgID, actor, userID); err != nil {
			return nil, err
		}
		return x.audit("member.remove", m.Email, "was "+string(m.Role)), nil
	})
	return m, err
}

// lockTeam locks the actor's organisation for a change to its members and
// returns the actor's role as it stands under the lock (another owner may
// have changed it since the request began).
func (s *Store) lockTeam(ctx context.Context, a Actor) (Role, error) {
	if err := s.lockOrg(ctx, a.OrgID); err != nil {
		return "", err
	}
	me, err := s.Member(ctx, a.OrgID, a.UserID)
	if err != nil {
		return "", err
	}
	return me.Role, nil
}
