package models

import (
	"context"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Migration is one append-only schema step. IDs are "NNNN_snake_description";
// each step declares its own struct copies, so later model changes never
// rewrite history (never pass a live model to a migration). Never edit or
// reorder a migration that has shipped: add one. TestMigrationsCoverModels
// checks that migrating an empty database gives every model field its column.
type Migration struct {
	ID string
	Up func(tx *gorm.DB) error
}

var migrations []Migration

// register adds a migration; each migration file calls it from init so that
// areas of the schema live beside their models.
func register(m Migration) { migrations = append(migrations, m) }

// Migrations returns every migration in order.
func Migrations() []Migration {
	out := append([]Migration(nil), migrations...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

type schemaMigration struct {
	ID        string `gorm:"primaryKey;size:128"`
	AppliedAt time.Time
}

func (schemaMigration) TableName() string { return "schema_migrations" }

// migrationLockKey is the PostgreSQL advisory lock that serialises start-up
// migrations across instances (OP4).
const migrationLockKey = 7_404_031_001

// Migrate applies every pending migration in one transaction. On PostgreSQL
// the transaction holds an advisory lock, so instances starting together
// migrate once; SQLite's immediate transactions serialise writers already.
// It returns the ids it applied.
func Migrate(ctx context.Context, db *gorm.DB) ([]string, error) {
	var applied []string
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockKey).Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		if err := tx.AutoMigrate(&schemaMigration{}); err != nil {
			return fmt.Errorf("schema_migrations: %w", err)
		}
		var done []string
		if err := tx.Model(&schemaMigration{}).Pluck("id", &done).Error; err != nil {
			return err
		}
		have := make(map[string]bool, len(done))
		for _, id := range done {
			have[id] = true
		}
		for _, m := range Migrations() {
			if have[m.ID] {
				continue
			}
			if err := m.Up(tx); err != nil {
				return fmt.Errorf("migration %s: %w", m.ID, err)
			}
			if err := tx.Create(&schemaMigration{ID: m.ID, AppliedAt: time.Now().UTC()}).Error; err != nil {
				return err
			}
			applied = append(applied, m.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("models: migrate: %w", err)
	}
	return applied, nil
}
