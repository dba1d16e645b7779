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
	settings     Settings      // fixed at construction (settings.go)
}

// NewStore wraps an opened, migrated database with default settings. A nil
// clock means real time.
func NewStore(db *gorm.DB, clock Clock) *Store { return NewStoreWith(db, clock, Settings{}) }

// NewStoreWith is NewStore with the given settings, fixed for the Store's
// life and every transaction's.
func NewStoreWith(db *gorm.DB, clock Clock, settings Settings) *Store {
	if clock == nil {
		clock = RealClock{}
	}
	return &Store{db: db, Clock: clock, catalogCache: newCatalogCache(db), settings: settings.fixed()}
}

// DB exposes the handle for the rare caller that needs it (health checks, tests).
func (s *Store) DB() *gorm.DB { return s.db }

// Now is the store's clock reading, in UTC.
func (s *Store) Now() time.Time { return s.Clock.Now().UTC() }

// Tx runs fn in one transaction on a Store bound to it.
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		inTx := *s // the same clock and settings, bound to the transaction
		inTx.db, inTx.catalogCache = tx, nil
		return fn(&inTx)
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
