package models

import (
	"time"

	"gorm.io/gorm"
)

// Role is a member's role in an organisation (A2).
type Role string

// Roles: owners and admins manage billing and the team; members deploy and
// manage clusters but see no billing or team settings.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// CanManage reports whether the role sees billing and team settings.
func (r Role) CanManage() bool { return r == RoleOwner || r == RoleAdmin }

// Default org quotas (A2), used when the operator has not set others.
const (
	DefaultMaxMachines = 64
	DefaultMaxGPUs     = 512
)

// Org is a customer organisation: everything a customer sees belongs to one.
type Org struct {
	ID          string `gorm:"primaryKey;size:32"`
	Name        string `gorm:"size:191"`
	MaxMachines int    // quota: machines in use at once
	MaxGPUs     int    `gorm:"column:max_gpus"` // quota: GPUs in use at once
	MaxVolumes  int    // quota: live volumes (0: the default, VolumeQuota)
	MaxVolumeGB int    `gorm:"column:max_volume_gb"` // quota: GB of live volumes together (0: the default)
	CreatedAt   time.Time
}

// User is a person who logs in. SessionVersion is bumped by log-out
// everywhere and password change, which revokes every older cookie.
type User struct {
	ID             string `gorm:"primaryKey;size:32"`
	Email          string `gorm:"size:254;uniqueIndex"` // stored lower-case
	Name           string `gorm:"size:191"`
	PasswordHash   string `gorm:"size:255"`
	SessionVersion int
	IsOperator     bool // site admin (`clusterdeck admin grant EMAIL`)
	CreatedAt      time.Time
}

// Membership puts a user in an organisation with a role.
type Membership struct {
	OrgID     string `gorm:"primaryKey;size:32"`
	UserID    string `gorm:"primaryKey;size:32;index"`
	Role      Role   `gorm:"size:16"`
	CreatedAt time.Time
}

// Environment is a project inside an organisation; every cluster, volume and
// budget belongs to one. Each org has a default environment.
type Environment struct {
	ID        string `gorm:"primaryKey;size:32"`
	OrgID     string `gorm:"size:32;index"`
	Name      string `gorm:"size:100"`
	IsDefault bool
	CreatedAt time.Time
}

// Frozen copies of the account tables as migration 0100 created them, so
// later fields on the live structs never rewrite that migration.
type (
	orgV0100 struct {
		ID          string `gorm:"primaryKey;size:32"`
		Name        string `gorm:"size:191"`
		MaxMachines int
		MaxGPUs     int `gorm:"column:max_gpus"`
		CreatedAt   time.Time
	}
	userV0100 struct {
		ID             string `gorm:"primaryKey;size:32"`
		Email          string `gorm:"size:254;uniqueIndex"`
		Name           string `gorm:"size:191"`
		PasswordHash   string `gorm:"size:255"`
		SessionVersion int
		IsOperator     bool
		CreatedAt      time.Time
	}
	membershipV0100 struct {
		OrgID     string `gorm:"primaryKey;size:32"`
		UserID    string `gorm:"primaryKey;size:32;index"`
		Role      string `gorm:"size:16"`
		CreatedAt time.Time
	}
	environmentV0100 struct {
		ID        string `gorm:"primaryKey;size:32"`
		OrgID     string `gorm:"size:32;index"`
		Name      string `gorm:"size:100"`
		IsDefault bool
		CreatedAt time.Time
	}
)

func (orgV0100) TableName() string         { return "orgs" }
func (userV0100) TableName() string        { return "users" }
func (membershipV0100) TableName() string  { return "memberships" }
func (environmentV0100) TableName() string { return "environments" }

func up0100Accounts(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&orgV0100{}, &userV0100{}, &membershipV0100{}, &environmentV0100{})
}

// Environment names are unique inside their organisation.
func up0101EnvironmentNames(tx *gorm.DB) error {
	return tx.Exec("CREATE UNIQUE INDEX idx_environments_org_name ON environments (org_id, name)").Error
}
