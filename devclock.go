package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models"
)

// sharedClock keeps the development fake clock (CLUSTERDECK_FAKE_CLOCK=1)
// in the database, so a restart does not move time back and every
// instance on one database reads the same time (OP4). Each request, job
// tick and agent round first loads the stored time; a request that moved
// the clock (POST /dev/clock) stores it when it ends. Stored time only
// moves forward. The table is development-only, so it is created here on
// first use rather than by the product's migrations.
type sharedClock struct {
	fake *models.FakeClock
	db   *gorm.DB
}

// devClockRow is the one dev_clock row.
type devClockRow struct {
	ID  int       `gorm:"primaryKey"`
	Now time.Time `gorm:"not null"`
}

func (devClockRow) TableName() string { return "dev_clock" }

// openSharedClock creates dev_clock when missing and starts the clock at
// the stored time, or stores now when there is none.
func openSharedClock(ctx context.Context, db *gorm.DB, now time.Time) (*sharedClock, error) {
	m := db.WithContext(ctx).Migrator()
	if !m.HasTable(&devClockRow{}) {
		if err := m.CreateTable(&devClockRow{}); err != nil && !m.HasTable(&devClockRow{}) {
			return nil, fmt.Errorf("dev clock: %w", err)
		}
	}
	err := db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&devClockRow{ID: 1, Now: now.UTC()}).Error
	if err != nil {
		return nil, fmt.Errorf("dev clock: %w", err)
	}
	var row devClockRow
	if err := db.WithContext(ctx).First(&row, 1).Error; err != nil {
		return nil, fmt.Errorf("dev clock: load: %w", err)
	}
	return &sharedClock{fake: models.NewFakeClock(row.Now), db: db}, nil
}

// load moves the clock to the stored time.
func (c *sharedClock) load(ctx context.Context) error {
	var row devClockRow
	if err := c.db.WithContext(ctx).First(&row, 1).Error; err != nil {
		return fmt.Errorf("dev clock: load: %w", err)
	}
	if row.Now.After(c.fake.Now()) {
		c.fake.Set(row.Now)
	}
	return nil
}

// store saves the clock's time unless the stored one is already later.
func (c *sharedClock) store(ctx context.Context) error {
	now := c.fake.Now()
	err := c.db.WithContext(ctx).Model(&devClockRow{}).Where("id = 1 AND now < ?", now).Update("now", now).Error
	if err != nil {
		return fmt.Errorf("dev clock: store: %w", err)
	}
	return nil
}

// middleware loads the clock before each request and stores it after one
// that moved it.
func (c *sharedClock) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = c.load(r.Context())
		before := c.fake.Now()
		next.ServeHTTP(w, r)
		if c.fake.Now().After(before) {
			_ = c.store(context.WithoutCancel(r.Context()))
		}
	})
}

// devSessionKeyRow holds the generated development session keys of a
// PostgreSQL database, so every instance on it signs and reads the same
// cookies (OP4) without SESSION_AUTH_KEY and SESSION_ENC_KEY set.
type devSessionKeyRow struct {
	ID   int    `gorm:"primaryKey"`
	Auth string `gorm:"size:128;not null"`
	Enc  string `gorm:"size:64;not null"`
}

func (devSessionKeyRow) TableName() string { return "dev_session_keys" }

// loadDevSessionKeys fills the session keys left unset in development:
// from the database when it is PostgreSQL (shared by every instance), else
// from DataDir (SQLite serves one instance).
func (c *config) loadDevSessionKeys(ctx context.Context, db *gorm.DB) error {
	if c.SessionAuthKey != nil && c.SessionEncKey != nil {
		return nil
	}
	if c.DatabaseURL == "" {
		return c.devSessionKeys()
	}
	m := db.WithContext(ctx).Migrator()
	if !m.HasTable(&devSessionKeyRow{}) {
		if err := m.CreateTable(&devSessionKeyRow{}); err != nil && !m.HasTable(&devSessionKeyRow{}) {
			return err
		}
	}
	buf := make([]byte, 64+32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	row := devSessionKeyRow{ID: 1, Auth: hex.EncodeToString(buf[:64]), Enc: hex.EncodeToString(buf[64:])}
	if err := db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return err
	}
	if err := db.WithContext(ctx).First(&row, 1).Error; err != nil {
		return err
	}
	var err error
	if c.SessionAuthKey == nil {
		if c.SessionAuthKey, err = hexKey(row.Auth, 64); err != nil {
			return fmt.Errorf("dev_session_keys: %w", err)
		}
	}
	if c.SessionEncKey == nil {
		if c.SessionEncKey, err = hexKey(row.Enc, 32); err != nil {
			return fmt.Errorf("dev_session_keys: %w", err)
		}
	}
	return nil
}
