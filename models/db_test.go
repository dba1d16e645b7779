package models_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite" // the raw driver, for a second process's view

	"github.com/clusterdeck/clusterdeck/models"
)

// Two processes on one SQLite file (two instances, or a tool beside the
// server, R5): a transaction opened through Open takes the write lock when
// it begins, so a writer elsewhere waits for it instead of the transaction
// failing later with SQLITE_BUSY_SNAPSHOT when it writes after reading.
// Opened DEFERRED (as when the driver ignored _txlock), the other writer
// would get in at once and this test fails.
func TestSQLiteTransactionsBeginImmediate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clusterdeck.db")
	db, err := models.Open("", path)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := db.Exec("CREATE TABLE t (a INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	// The other process: no busy timeout, so a held lock answers at once.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("INSERT INTO t VALUES (0)"); err != nil {
		t.Fatalf("the other writer cannot write with no transaction open: %v", err)
	}

	tx := db.Begin() // no statement yet
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	_, err = other.Exec("INSERT INTO t VALUES (1)")
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("another writer got in while a transaction was open (%v): transactions do not begin IMMEDIATE", err)
	}
	// Read, then write, inside the transaction: it owns the lock, so the
	// write cannot meet a stale snapshot.
	var n int64
	if err := tx.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec("INSERT INTO t VALUES (2)").Error; err != nil {
		t.Fatalf("write after read in the transaction: %v", err)
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec("INSERT INTO t VALUES (3)"); err != nil {
		t.Fatalf("after the commit the other writer still cannot write: %v", err)
	}
	// Times still read back as they were written (the driver's default
	// format is the sqlite one the DSN used to name).
	at := time.Date(2026, 12, 2, 1, 2, 3, 456000000, time.UTC)
	if err := db.Exec("CREATE TABLE ts (at DATETIME)").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.WithContext(context.Background()).Exec("INSERT INTO ts VALUES (?)", at).Error; err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := other.QueryRow("SELECT CAST(at AS TEXT) FROM ts").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != "2026-12-02 01:02:03.456+00:00" {
		t.Errorf("stored time = %q, want the sqlite format", raw)
	}
}
