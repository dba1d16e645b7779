package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// API key tokens look like "cdk_" + 32 base32 characters (160 random bits).
// The first 12 characters ("cdk_" + 8) are the prefix shown in lists; only
// the SHA-256 of the whole token is stored (a slow hash adds nothing to a
// 160-bit random secret, and lookups stay one indexed query).
const (
	APIKeyScheme    = "cdk_"
	apiKeySecretLen = 32
	APIKeyLen       = len(APIKeyScheme) + apiKeySecretLen
	apiKeyPrefixLen = len(APIKeyScheme) + 8
)

// APIKey lets a program act on one environment of an organisation through
// the REST API and CLI, with the role of the member who created it.
type APIKey struct {
	ID         string `gorm:"primaryKey;size:32"`
	OrgID      string `gorm:"size:32;index"`
	EnvID      string `gorm:"column:env_id;size:32"`
	Name       string `gorm:"size:100"`
	Prefix     string `gorm:"size:16"`
	Hash       string `gorm:"size:64;uniqueIndex"`
	CreatedBy  string `gorm:"size:32"` // user id
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func up0105ApiKeys(tx *gorm.DB) error {
	type apiKey struct {
		ID         string `gorm:"primaryKey;size:32"`
		OrgID      string `gorm:"size:32;index:idx_api_keys_org_id"`
		EnvID      string `gorm:"column:env_id;size:32"`
		Name       string `gorm:"size:100"`
		Prefix     string `gorm:"size:16"`
		Hash       string `gorm:"size:64;uniqueIndex:idx_api_keys_hash"`
		CreatedBy  string `gorm:"size:32"`
		CreatedAt  time.Time
		LastUsedAt *time.Time
		RevokedAt  *time.Time
	}
	return tx.Table("api_keys").Migrator().CreateTable(&apiKey{})
}

// ErrBadAPIKey is a malformed, unknown or revoked API key.
var ErrBadAPIKey = errors.New("models: invalid API key")

// NewAPIKeyToken returns a fresh random token.
func NewAPIKeyToken() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("models: random api key: %v", err))
	}
	return APIKeyScheme + idEncoding.EncodeToString(b[:])
}

// ParseAPIKey checks a token's shape and returns its display prefix and the
// hash it is stored under. It never panics on any input.
func ParseAPIKey(token string) (prefix, hash string, err error) {
	if len(token) != APIKeyLen || !strings.HasPrefix(token, APIKeyScheme) {
		return "", "", ErrBadAPIKey
	}
	for _, c := range token[len(APIKeyScheme):] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", "", ErrBadAPIKey
		}
	}
	sum := sha256.Sum256([]byte(token))
	return token[:apiKeyPrefixLen], hex.EncodeToString(sum[:]), nil
}

// ParseBearer extracts the token from an Authorization header value
// ("Bearer cdk_…", scheme case-insensitive). ok is false when the header is
// not a bearer credential.
func ParseBearer(header string) (token string, ok bool) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(rest)
	return token, token != ""
}

// APIKeyRow is an API key for the keys page, with its environment's name
// and its creator's email.
type APIKeyRow struct {
	APIKey
	EnvName      string
	CreatorEmail string
}

// CreateAPIKey makes a key for an environment of the org and returns it with
// its token, which is never shown again.
func (s *Store) CreateAPIKey(ctx context.Context, orgID, envID, userID, name string) (APIKey, string, error) {
	token := NewAPIKeyToken()
	k, err := s.storeAPIKey(ctx, orgID, envID, userID, name, token)
	return k, token, err
}

// EnsureAPIKey stores a known token (the demo's) if it is not stored yet, or
// un-revokes it. It is idempotent.
func (s *Store) EnsureAPIKey(ctx context.Context, orgID, envID, userID, name, token string) (APIKey, error) {
	_, hash, err := ParseAPIKey(token)
	if err != nil {
		return APIKey{}, err
	}
	var k APIKey
	err = s.db.WithContext(ctx).Where("hash = ?", hash).Take(&k).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return s.storeAPIKey(ctx, orgID, envID, userID, name, token)
	}
	if err != nil {
		return APIKey{}, err
	}
	if k.OrgID != orgID {
		return APIKey{}, fmt.Errorf("models: api key belongs to another organisation: %w", ErrConflict)
	}
	if err := s.db.WithContext(ctx).Model(&APIKey{}).Where("id = ?", k.ID).
		Updates(map[string]any{"revoked_at": nil, "env_id": envID, "created_by": userID}).Error; err != nil {
		return APIKey{}, err
	}
	k.RevokedAt, k.EnvID, k.CreatedBy = nil, envID, userID
	return k, nil
}

func (s *Store) storeAPIKey(ctx context.Context, orgID, envID, userID, name, token string) (APIKey, error) {
	name = strings.TrimSpace(name)
	fe := FieldErrors{}
	if p := NameProblem(name, 100, "a name for the key, e.g. the machine or CI job using it"); p != "" {
		fe["name"] = p
	}
	if envID == "" {
		fe["environment"] = "Choose an environment."
	} else if _, err := s.EnvironmentForOrg(ctx, orgID, envID); errors.Is(err, ErrNotFound) {
		fe["environment"] = "Choose one of your environments."
	} else if err != nil {
		return APIKey{}, err
	}
	if len(fe) > 0 {
		return APIKey{}, fe
	}
	prefix, hash, err := ParseAPIKey(token)
	if err != nil {
		return APIKey{}, err
	}
	k := APIKey{ID: NewID("key"), OrgID: orgID, EnvID: envID, Name: name, Prefix: prefix, Hash: hash,
		CreatedBy: userID, CreatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Create(&k).Error; err != nil {
		return APIKey{}, fmt.Errorf("models: create api key: %w", err)
	}
	return k, nil
}

// APIKeys lists the org's keys, active ones first, newest first.
func (s *Store) APIKeys(ctx context.Context, orgID string) ([]APIKeyRow, error) {
	var out []APIKeyRow
	err := s.db.WithContext(ctx).Table("api_keys").
		Select("api_keys.*, environments.name AS env_name, users.email AS creator_email").
		Joins("LEFT JOIN environments ON environments.id = api_keys.env_id").
		Joins("LEFT JOIN users ON users.id = api_keys.created_by").
		Where("api_keys.org_id = ?", orgID).
		Order("CASE WHEN api_keys.revoked_at IS NULL THEN 0 ELSE 1 END, api_keys.created_at DESC, api_keys.id").
		Scan(&out).Error
	return out, err
}

// APIKeyForOrg loads one of the org's keys (ErrNotFound for another org's).
func (s *Store) APIKeyForOrg(ctx context.Context, orgID, id string) (APIKey, error) {
	var k APIKey
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Take(&k).Error
	return k, notFound(err, "api key "+id)
}

// RevokeAPIKey stops one of the org's keys from working. Revoking twice is
// ErrConflict.
func (s *Store) RevokeAPIKey(ctx context.Context, orgID, id string) (APIKey, error) {
	k, err := s.APIKeyForOrg(ctx, orgID, id)
	if err != nil {
		return APIKey{}, err
	}
	now := s.Now()
	res := s.db.WithContext(ctx).Model(&APIKey{}).Where("id = ? AND org_id = ? AND revoked_at IS NULL", id, orgID).
		Update("revoked_at", now)
	if res.Error != nil {
		return APIKey{}, res.Error
	}
	if res.RowsAffected == 0 {
		return APIKey{}, fmt.Errorf("models: api key %s already revoked: %w", id, ErrConflict)
	}
	k.RevokedAt = &now
	return k, nil
}

// APIKeyAuth is who an API request acts as.
type APIKeyAuth struct {
	Key  APIKey
	Org  Org
	Env  Environment
	Role Role // the creator's current role in the org
}

// lastUsedGranularity bounds how often a busy key's last-used time is written.
const lastUsedGranularity = time.Minute

// AuthenticateAPIKey resolves a bearer token to its org, environment and
// role. Malformed, unknown and revoked keys, and keys whose creator has left
// the organisation, are ErrBadAPIKey. It records the last-used time.
func (s *Store) AuthenticateAPIKey(ctx context.Context, token string) (APIKeyAuth, error) {
	_, hash, err := ParseAPIKey(token)
	if err != nil {
		return APIKeyAuth{}, ErrBadAPIKey
	}
	type row struct {
		APIKey
		Role Role
	}
	var rows []row
	err = s.db.WithContext(ctx).Table("api_keys").
		Select("api_keys.*, memberships.role").
		Joins("JOIN memberships ON memberships.org_id = api_keys.org_id AND memberships.user_id = api_keys.created_by").
		Where("api_keys.hash = ? AND api_keys.revoked_at IS NULL", hash).Limit(1).Scan(&rows).Error
	if err != nil {
		return APIKeyAuth{}, fmt.Errorf("models: api key: %w", err)
	}
	if len(rows) == 0 {
		return APIKeyAuth{}, ErrBadAPIKey
	}
	a := APIKeyAuth{Key: rows[0].APIKey, Role: rows[0].Role}
	if a.Org, err = s.OrgByID(ctx, a.Key.OrgID); err != nil {
		return APIKeyAuth{}, err
	}
	if a.Env, err = s.EnvironmentForOrg(ctx, a.Key.OrgID, a.Key.EnvID); err != nil {
		return APIKeyAuth{}, err
	}
	now := s.Now()
	if a.Key.LastUsedAt == nil || now.Sub(*a.Key.LastUsedAt) >= lastUsedGranularity {
		err := s.db.WithContext(ctx).Model(&APIKey{}).
			Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", a.Key.ID, now.Add(-lastUsedGranularity)).
			Update("last_used_at", now).Error
		if err != nil {
			return APIKeyAuth{}, fmt.Errorf("models: api key last used: %w", err)
		}
		a.Key.LastUsedAt = &now
	}
	return a, nil
}
