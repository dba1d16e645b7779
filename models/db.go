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
//
// Transactions begin IMMEDIATE: each takes the write lock up front, so two
// processes on one file (two instances, or a tool beside the server) queue
// on busy_timeout instead of one failing with SQLITE_BUSY_SNAPSHOT when a
// transaction that read first tries to write. There is deliberately no
// _time_format parameter: the driver stops reading the DSN's parameters
// after it (so _txlock was silently ignored), and its default write format
// is the same "sqlite" one anyway.
func SQLiteDSN(path string) string {
	params := []string{
		"_pragma=busy_timeout(10000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(NORMAL)",
		"_txlock=immediate",
	}
	return "file:" + path + "?" + strings.Join(params, "&")
}
