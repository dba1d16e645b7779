package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Open connects to PostgreSQL when url is set ("postgres://…"), otherwise to
// the SQLite file at sqlitePath (pure Go, WAL, busy timeout, immediate
// transactions so read-then-write never fails with a stale snapshot).
func Open(url, sqlitePath string) (*gorm.DB, error) {
	cfg := &gorm.Config{
		Logger:         logger.Discard,
		TranslateError: true,
		NowFunc:        func() time.Time { return time.Now().UTC() },
	}
	if url != "" {
		db, err := gorm.Open(postgres.Open(url), cfg)
		if err != nil {
			return nil, fmt.Errorf("models: open postgres: %w", err)
		}
		sqlDB, _ := db.DB()
		sqlDB.SetMaxOpenConns(20)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		return db, nil
	}
	if dir := filepath.Dir(sqlitePath); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("models: sqlite dir: %w", err)
		}
	}
	db, err := gorm.Open(sqlite.Open(SQLiteDSN(sqlitePath)), cfg)
	if err != nil {
		return nil, fmt.Errorf("models: open sqlite: %w", err)
	}
	sqlDB, _ := db.DB()
	// One connection: SQLite has one writer anyway, and a single connection
	// keeps immediate transactions from queueing on busy_timeout.
	sqlDB.SetMaxOpenConns(1)
	return db, nil
}

// SQLiteDSN is the connection string for a SQLite file with our pragmas.
func SQLiteDSN(path string) string {
	params := []string{
		"_pragma=busy_timeout(10000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(NORMAL)",
		"_txlock=immediate",
		"_time_format=sqlite",
	}
	return "file:" + path + "?" + strings.Join(params, "&")
}
