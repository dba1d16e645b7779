package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// ValidRole reports whether r is one of the three roles.
func ValidRole(r Role) bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

// CanGrant reports whether a member with role r may give (or take away)
// role target: owners manage everyone; admins manage admins and members
// but never owners.
func (r Role) CanGrant(target Role) bool {
	switch r {
	case RoleOwner:
		return true
	case RoleAdmin:
		return target == RoleAdmin || target == RoleMember
	}
	return false
}

// OrgByID loads an organisation.
func (s *Store) OrgByID(ctx context.Context, id string) (Org, error) {
	var o Org
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&o).Error
	return o, notFound(err, "org "+id)
}

// OrgSummary is one organisation for the operator's list.
type OrgSummary struct {
	Org
	Members int
}

// Orgs lists every organisation with its member count (operator pages only).
func (s *Store) Orgs(ctx context.Context) ([]OrgSummary, error) {
	var out []OrgSummary
	err := s.db.WithContext(ctx).Table("orgs").
		Select("orgs.*, (SELECT COUNT(*) FROM memberships WHERE memberships.org_id = orgs.id) AS members").
		Order("orgs.created_at, orgs.id").Scan(&out).Error
	return out, err
}

// QuotaProblems validates operator quotas.
func QuotaProblems(maxMachines, maxGPUs int) FieldErrors {
	fe := FieldErrors{}
	if maxMachines < 0 || maxMachines > 100_000 {
		fe["max_machines"] = "Enter a whole number from 0 to 100000."
	}
	if maxGPUs < 0 || maxGPUs > 1_000_000 {
		fe["max_gpus"] = "Enter a whole number from 0 to 1000000."
	}
	return fe
}

// SetOrgQuota sets the org's limits on machines and GPUs in use at once.
// Launches check them (403 quota_exceeded).
func (s *Store) SetOrgQuota(ctx context.Context, orgID string, maxMachines, maxGPUs int) (Org, error) {
	if fe := QuotaProblems(maxMachines, maxGPUs); len(fe) > 0 {
		return Org{}, fe
	}
	res := s.db.WithContext(ctx).Model(&Org{}).Where("id = ?", orgID).
		Updates(map[string]any{"max_machines": maxMachines, "max_gpus": maxGPUs})
	if res.Error != nil {
		return Org{}, fmt.Errorf("models: set quota: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return Org{}, fmt.Errorf("models: set quota %s: %w", orgID, ErrNotFound)
	}
	return s.OrgByID(ctx, orgID)
}

// Member is a membership with its user, for the team page.
type Member struct {
	UserID    string
	Email     string
	Name      string
	Role      Role
	CreatedAt time.Time
}

// Members lists an organisation's members, owners first.
func (s *Store) Members(ctx context.Context, orgID string) ([]Member, error) {
	var out []Member
	err := s.db.WithContext(ctx).Table("memberships").
		Select("memberships.user_id, users.email, users.name, memberships.role, memberships.created_at").
		Joins("JOIN users ON users.id = memberships.user_id").
		Where("memberships.org_id = ?", orgID).
		Order("CASE memberships.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, users.email").
		Scan(&out).Error
	return out, err
}

// Member loads one member of the organisation (ErrNotFound for anyone else).
func (s *Store) Member(ctx context.Context, orgID, userID string) (Member, error) {
	var out []Member
	err := s.db.WithContext(ctx).Table("memberships").
		Select("memberships.user_id, users.email, users.name, memberships.role, memberships.created_at").
		Joins("JOIN users ON users.id = memberships.user_id").
		Where("memberships.org_id = ? AND memberships.user_id = ?", orgID, userID).
		Limit(1).Scan(&out).Error
	if err != nil {
		return Member{}, fmt.Errorf("models: member: %w", err)
	}
	if len(out) == 0 {
		return Member{}, fmt.Errorf("models: member %s: %w", userID, ErrNotFound)
	}
	return out[0], nil
}

// UserOrg is one organisation the user belongs to.
type UserOrg struct {
	OrgID   string
	OrgName string
	Role    Role
}

// OrgsForUser lists the user's organisations, oldest membership first.
func (s *Store) OrgsForUser(ctx context.Context, userID string) ([]UserOrg, error) {
	var out []UserOrg
	err := s.db.WithContext(ctx).Table("memberships").
		Select("memberships.org_id, orgs.name AS org_name, memberships.role").
		Joins("JOIN orgs ON orgs.id = memberships.org_id").
		Where("memberships.user_id = ?", userID).
		Order("memberships.created_at, memberships.org_id").Scan(&out).Error
	return out, err
}

// ChangeRole gives a member a new role. actor is the role of who asks: an
// admin cannot touch owners or make one. The last owner cannot step down.
func (s *Store) ChangeRole(ctx context.Context, orgID string, actor Role, userID string, role Role) (Member, error) {
	if !ValidRole(role) {
		return Member{}, FieldErrors{"role": "Choose owner, admin or member."}
	}
	var m Member
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if m, err = tx.Member(ctx, orgID, userID); err != nil {
			return err
		}
		if !actor.CanGrant(m.Role) || !actor.CanGrant(role) {
			return FieldErrors{"role": "Only owners can change an owner's role or make someone an owner."}
		}
		if err := tx.db.Model(&Membership{}).Where("org_id = ? AND user_id = ?", orgID, userID).
			Update("role", role).Error; err != nil {
			return err
		}
		if err := tx.ensureOwner(ctx, orgID); err != nil {
			return err
		}
		m.Role = role
		return nil
	})
	return m, err
}

// RemoveMember takes a member out of the organisation and revokes the API
// keys they created there and their SSH keys in it.
func (s *Store) RemoveMember(ctx context.Context, orgID string, actor Role, userID string) (Member, error) {
	var m Member
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if m, err = tx.Member(ctx, orgID, userID); err != nil {
			return err
		}
		if !actor.CanGrant(m.Role) {
			return FieldErrors{"member": "Only owners can remove an owner."}
		}
		if err := tx.db.Where("org_id = ? AND user_id = ?", orgID, userID).Delete(&Membership{}).Error; err != nil {
			return err
		}
		if err := tx.ensureOwner(ctx, orgID); err != nil {
			return err
		}
		now := tx.Now()
		if err := tx.db.Model(&APIKey{}).Where("org_id = ? AND created_by = ? AND revoked_at IS NULL", orgID, userID).
			Update("revoked_at", now).Error; err != nil {
			return err
		}
		return tx.db.Where("org_id = ? AND user_id = ?", orgID, userID).Delete(&SSHKey{}).Error
	})
	return m, err
}

// ensureOwner refuses a change that leaves the organisation without an owner.
func (s *Store) ensureOwner(ctx context.Context, orgID string) error {
	var owners int64
	if err := s.db.WithContext(ctx).Model(&Membership{}).Where("org_id = ? AND role = ?", orgID, RoleOwner).
		Count(&owners).Error; err != nil {
		return err
	}
	if owners == 0 {
		return FieldErrors{"role": "An organisation needs at least one owner: make someone else owner first."}
	}
	return nil
}

// DefaultEnvironment is the org's default environment.
func (s *Store) DefaultEnvironment(ctx context.Context, orgID string) (Environment, error) {
	var e Environment
	err := s.db.WithContext(ctx).Where("org_id = ? AND is_default = ?", orgID, true).
		Order("created_at, id").Take(&e).Error
	return e, notFound(err, "default environment of "+orgID)
}

// EnvironmentForOrg loads an environment through its organisation: another
// org's id is ErrNotFound, as if it did not exist.
func (s *Store) EnvironmentForOrg(ctx context.Context, orgID, envID string) (Environment, error) {
	var e Environment
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", envID, orgID).Take(&e).Error
	return e, notFound(err, "environment "+envID)
}

// Environments lists the org's environments, the default first.
func (s *Store) Environments(ctx context.Context, orgID string) ([]Environment, error) {
	var out []Environment
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).
		Order("is_default DESC, name, id").Find(&out).Error
	return out, err
}

// EnvironmentNameProblem validates an environment name: short, lower-case
// letters, digits and dashes (it shows up in URLs and the CLI).
func EnvironmentNameProblem(name string) string {
	if name == "" {
		return "Enter a name."
	}
	if len(name) > 40 {
		return "Use at most 40 characters."
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0
		if !ok {
			return "Use lower-case letters, digits and dashes, starting with a letter or digit."
		}
	}
	return ""
}

// CreateEnvironment adds an environment to the organisation.
// MaxEnvironments bounds an organisation's environments (A4): each has
// its own keys, webhooks and quotas, so they cannot multiply per-environment
// limits without bound.
const MaxEnvironments = 10

func (s *Store) CreateEnvironment(ctx context.Context, orgID, name string) (Environment, error) {
	name = strings.TrimSpace(name)
	if p := EnvironmentNameProblem(name); p != "" {
		return Environment{}, FieldErrors{"name": p}
	}
	env := Environment{ID: NewID("env"), OrgID: orgID, Name: name, CreatedAt: s.Now()}
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.lockOrg(ctx, orgID); err != nil { // the count below holds under concurrent creates
			return err
		}
		var n, all int64
		if err := tx.db.Model(&Environment{}).Where("org_id = ? AND name = ?", orgID, name).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return FieldErrors{"name": "This organisation already has an environment with that name."}
		}
		if err := tx.db.Model(&Environment{}).Where("org_id = ?", orgID).Count(&all).Error; err != nil {
			return err
		}
		if all >= MaxEnvironments {
			return FieldErrors{"name": fmt.Sprintf("An organisation has at most %d environments; delete one first.", MaxEnvironments)}
		}
		err := tx.db.Create(&env).Error
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return FieldErrors{"name": "This organisation already has an environment with that name."}
		}
		return err
	})
	return env, err
}

// SessionContext is who a signed-in request acts as.
type SessionContext struct {
	User User
	Org  Org
	Role Role
	Env  Environment
}

// ErrSessionRevoked means the cookie's session version is stale (log-out
// everywhere, password change) or its user is gone.
var ErrSessionRevoked = errors.New("models: session revoked")

// LoadSession resolves a session cookie's user, organisation and
// environment. version must match the user's current session version. If
// the user is no longer in orgID (or it is empty) their first organisation
// is used; if envID is not in that org, its default environment.
func (s *Store) LoadSession(ctx context.Context, userID string, version int, orgID, envID string) (SessionContext, error) {
	var sc SessionContext
	u, err := s.UserByID(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return sc, ErrSessionRevoked
	}
	if err != nil {
		return sc, err
	}
	if u.SessionVersion != version {
		return sc, ErrSessionRevoked
	}
	sc.User = u
	type row struct {
		Org
		Role Role
	}
	var rows []row
	member := func(orgID string) *gorm.DB {
		q := s.db.WithContext(ctx).Table("memberships").
			Select("orgs.*, memberships.role").
			Joins("JOIN orgs ON orgs.id = memberships.org_id").
			Where("memberships.user_id = ?", userID)
		if orgID != "" {
			q = q.Where("memberships.org_id = ?", orgID)
		}
		return q.Order("memberships.created_at, memberships.org_id").Limit(1)
	}
	if orgID != "" {
		if err := member(orgID).Scan(&rows).Error; err != nil {
			return sc, fmt.Errorf("models: session org: %w", err)
		}
	}
	if len(rows) == 0 {
		if err := member("").Scan(&rows).Error; err != nil {
			return sc, fmt.Errorf("models: session org: %w", err)
		}
	}
	if len(rows) == 0 {
		return sc, fmt.Errorf("models: user %s has no organisation: %w", userID, ErrSessionRevoked)
	}
	sc.Org, sc.Role = rows[0].Org, rows[0].Role
	if envID != "" && sc.Org.ID == orgID {
		sc.Env, err = s.EnvironmentForOrg(ctx, sc.Org.ID, envID)
		if err == nil {
			return sc, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return sc, err
		}
	}
	sc.Env, err = s.DefaultEnvironment(ctx, sc.Org.ID)
	return sc, err
}

// EnsureOrg gives a user who belongs to no organisation (the last one
// removed them) a fresh one they own, so they can always log in.
func (s *Store) EnsureOrg(ctx context.Context, u User, maxMachines, maxGPUs int) error {
	return s.Tx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.db.Model(&Membership{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		name := u.Name
		if name == "" {
			name = u.Email
		}
		_, err := tx.createOrg(ctx, truncateRunes(name+"'s organisation", 100), u.ID, maxMachines, maxGPUs)
		return err
	})
}
