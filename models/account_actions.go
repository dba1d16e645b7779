package models

import (
	"context"
)

// ForbiddenError is an action the actor's role does not allow; Message says
// who may do it.
type ForbiddenError struct{ Message string }

func (e *ForbiddenError) Error() string { return "forbidden: " + e.Message }

// AddSSHKey adds one of the actor's own SSH keys (real OpenSSH public keys
// only), audited.
func (x Actions) AddSSHKey(ctx context.Context, name, publicKey string) (SSHKey, error) {
	var key SSHKey
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if key, err = tx.AddSSHKey(ctx, x.a.OrgID, x.a.UserID, name, publicKey); err != nil {
			return nil, err
		}
		return x.audit("ssh_key.add", key.Name, key.Fingerprint), nil
	})
	return key, err
}

// DeleteSSHKey deletes one of the actor's own SSH keys, audited.
func (x Actions) DeleteSSHKey(ctx context.Context, id string) (SSHKey, error) {
	var key SSHKey
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if key, err = tx.DeleteSSHKey(ctx, x.a.OrgID, x.a.UserID, id); err != nil {
			return nil, err
		}
		return x.audit("ssh_key.delete", key.Name, key.Fingerprint), nil
	})
	return key, err
}

// CreateAPIKey makes an API key for one of the organisation's environments
// and returns it with its token (shown once), audited.
func (x Actions) CreateAPIKey(ctx context.Context, envID, name string) (APIKey, string, error) {
	var key APIKey
	var token string
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if key, token, err = tx.CreateAPIKey(ctx, x.a.OrgID, envID, x.a.UserID, name); err != nil {
			return nil, err
		}
		return x.audit("api_key.create", key.Prefix, key.Name), nil
	})
	return key, token, err
}

// CanRevokeAPIKey reports whether a member with role may revoke k: owners
// and admins revoke any key, members the keys they created.
func CanRevokeAPIKey(role Role, userID string, k APIKey) bool {
	return role.CanManage() || userID != "" && k.CreatedBy == userID
}

// RevokeAPIKey stops one of the organisation's keys from working, audited.
func (x Actions) RevokeAPIKey(ctx context.Context, id string) (APIKey, error) {
	var k APIKey
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if k, err = tx.APIKeyForOrg(ctx, x.a.OrgID, id); err != nil {
			return nil, err
		}
		if !CanRevokeAPIKey(x.a.Role, x.a.UserID, k) {
			return nil, &ForbiddenError{Message: "Members can revoke only the keys they created. Ask an owner or admin."}
		}
		if k, err = tx.RevokeAPIKey(ctx, x.a.OrgID, k.ID); err != nil {
			return nil, err
		}
		return x.audit("api_key.revoke", k.Prefix, k.Name), nil
	})
	return k, err
}

// CreateEnvironment adds an environment to the organisation, audited.
func (x Actions) CreateEnvironment(ctx context.Context, name string) (Environment, error) {
	var env Environment
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if env, err = tx.CreateEnvironment(ctx, x.a.OrgID, name); err != nil {
			return nil, err
		}
		return x.audit("environment.create", env.Name, env.ID), nil
	})
	return env, err
}

// UpdateProfile changes the actor's display name.
func (x Actions) UpdateProfile(ctx context.Context, name string) error {
	return x.s.UpdateProfile(ctx, x.a.UserID, name)
}

// ChangePassword replaces the actor's password after checking the current
// one and logs out every other session, audited. It returns the user with
// the new session version.
func (x Actions) ChangePassword(ctx context.Context, current, next string) (User, error) {
	var u User
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if u, err = tx.ChangePassword(ctx, x.a.UserID, current, next); err != nil {
			return nil, err
		}
		return x.audit("user.password_change", u.Email, "other sessions logged out"), nil
	})
	return u, err
}

// RevokeSessions logs the actor out everywhere ("log out everywhere"),
// audited, and returns the new session version.
func (x Actions) RevokeSessions(ctx context.Context) (int, error) {
	var v int
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if v, err = tx.RevokeSessions(ctx, x.a.UserID); err != nil {
			return nil, err
		}
		return x.audit("user.sessions_revoke", x.a.Name, ""), nil
	})
	return v, err
}

// OrgQuota is an organisation's limits as the operator sets them (A2):
// machines and GPUs in use at once, live volumes and their GB together
// (0: the default).
type OrgQuota struct {
	MaxMachines, MaxGPUs, MaxVolumes, MaxVolumeGB int
}

// SetOrgQuota is an operator's change of an organisation's limits: audited
// in that organisation's log, with the operator as actor.
func (x Actions) SetOrgQuota(ctx context.Context, orgID string, q OrgQuota) (Org, error) {
	var org Org
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		before, err := tx.OrgByID(ctx, orgID)
		if err != nil {
			return nil, err
		}
		fe := QuotaProblems(q.MaxMachines, q.MaxGPUs)
		for k, v := range VolumeQuotaProblems(q.MaxVolumes, q.MaxVolumeGB) {
			fe[k] = v
		}
		if len(fe) > 0 {
			return nil, fe
		}
		if _, err = tx.SetOrgQuota(ctx, orgID, q.MaxMachines, q.MaxGPUs); err != nil {
			return nil, err
		}
		if org, err = tx.SetOrgVolumeQuota(ctx, orgID, q.MaxVolumes, q.MaxVolumeGB); err != nil {
			return nil, err
		}
		e := x.a.entry("org.quota_change", org.Name, quotaChange(before, org, tx))
		e.OrgID = org.ID
		return &e, nil
	})
	return org, err
}
