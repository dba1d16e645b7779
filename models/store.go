// Package models holds Clusterdeck's state and rules: GORM models, the
// append-only migrations, queries (every one scoped to its organisation where
// it has one), pricing, and the state machines. It imports nothing else of
// the module, makes no HTTP or provider calls, and logs nothing.
package models

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Sentinel errors. Web maps them onto statuses in one place.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Store is the one entry point to the database.
type Store struct {
	db           *gorm.DB
	Clock        Clock
	catalogCache *catalogCache // the picker's catalog snapshot (catalog.go); nil inside a transaction
	// DefaultMarkup is the markup of providers the operator has not set one
	// for (DEFAULT_MARKUP_PERCENT; see pricing.go).
	DefaultMarkup MarkupBP
	// EnvMarkups are the markups the environment sets (<P>_MARKUP_PERCENT),
	// by provider: they win over the operator's setting, which the
	// providers page then cannot change. Set once at start-up.
	EnvMarkups map[string]MarkupBP
	// MachineKeySecret seals the private keys pasted for SSH machines
	// (sshmachine.go): 32 bytes from the configuration, never stored.
	MachineKeySecret []byte
	// BalanceGrace is how long an exhausted balance runs before its
	// clusters are stopped (BALANCE_GRACE; 0: DefaultBalanceGrace), for the
	// pages' "runs until" (B6). The balance job gets it too.
	BalanceGrace time.Duration
	// Limits bound the amounts of top-ups, auto-recharges and operator
	// adjustments (B9; limits.go). Set once at start-up.
	Limits MoneyLimits
	// DefaultMaxVolumes and DefaultMaxVolumeGB are the volume quota of an
	// organisation the operator has not set one for (DEFAULT_MAX_VOLUMES,
	// DEFAULT_MAX_VOLUME_GB; 0: DefaultMaxVolumes, DefaultMaxVolumeGB).
	DefaultMaxVolumes, DefaultMaxVolumeGB int
	// WebhookAllowLoopback lets webhook endpoints use plain http to this
	// machine (development and tests; never in production, X8).
	WebhookAllowLoopback bool
	// WebhookClusterView renders a cluster as the API shows it, for the
	// data of its webhook events; web sets it (models cannot import the
	// API's types). Nil: a short summary of the cluster row.
	WebhookClusterView func(ctx context.Context, tx *Store, c Cluster) (any, error)
	// MaxUnhealthyPercent is health damping's share (damping.go;
	// HEALTH_MAX_UNHEALTHY_PERCENT); 0 = DefaultMaxUnhealthyPercent.
	MaxUnhealthyPercent int
	// StopRefusals says, per provider name, why its machines can never be
	// stopped and started again (the customer's Stop is refused there);
	// a provider not named can stop them. Set at start-up from the
	// providers that say so.
	StopRefusals map[string]string
}

// NewStore wraps an opened, migrated database. A nil clock means real time.
func NewStore(db *gorm.DB, clock Clock) *Store {
	if clock == nil {
		clock = RealClock{}
	}
	return &Store{db: db, Clock: clock, catalogCache: newCatalogCache(db)}
}

// DB exposes the handle for the rare caller that needs it (health checks, tests).
func (s *Store) DB() *gorm.DB { return s.db }

// Now is the store's clock reading, in UTC.
func (s *Store) Now() time.Time { return s.Clock.Now().UTC() }

// Tx runs fn in one transaction on a Store bound to it.
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(&Store{db: tx, Clock: s.Clock, DefaultMarkup: s.DefaultMarkup, EnvMarkups: s.EnvMarkups, MachineKeySecret: s.MachineKeySecret,
			Limits: s.Limits, BalanceGrace: s.BalanceGrace, DefaultMaxVolumes: s.DefaultMaxVolumes, DefaultMaxVolumeGB: s.DefaultMaxVolumeGB,
			WebhookAllowLoopback: s.WebhookAllowLoopback, WebhookClusterView: s.WebhookClusterView,
			MaxUnhealthyPercent: s.MaxUnhealthyPercent, StopRefusals: s.StopRefusals})
	})
}

// Ping checks that the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// IsPostgres reports the dialect; a few queries differ (locks).
func (s *Store) IsPostgres() bool { return s.db.Dialector.Name() == "postgres" }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random, unguessable id with a readable prefix ("cl_…").
func NewID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("models: random id: %v", err))
	}
	return prefix + "_" + idEncoding.EncodeToString(b[:])
}

// notFound turns gorm's record-not-found into ErrNotFound with context.
func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("models: %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("models: %s: %w", what, err)
	}
	return nil
}

// FieldErrors are validation problems keyed by field name (form or JSON).
// An empty map means valid. It is an error so domain functions can return it.
type FieldErrors map[string]string

func (f FieldErrors) Error() string {
	parts := make([]string, 0, len(f))
	for k, v := range f {
		parts = append(parts, k+": "+v)
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Err returns nil when there are no problems, so callers can `return fe.Err()`.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return f
}
