// Package modelstest opens migrated test databases: a fresh SQLite file per
// test, and, when TEST_DATABASE_URL is set, a fresh PostgreSQL schema per
// test. Under CI=true a missing TEST_DATABASE_URL or an unreachable
// PostgreSQL fails the test instead of skipping it.
package modelstest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"gorm.io/gorm"
)

// Dialects are the databases a test runs on.
var Dialects = []string{"sqlite", "postgres"}

var seq atomic.Int64

// Each runs fn once per database: "sqlite" always, "postgres" when
// TEST_DATABASE_URL is set (required under CI=true).
func Each(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// Open returns a migrated database of the given dialect, removed at cleanup.
func Open(t testing.TB, dialect string) *gorm.DB {
	t.Helper()
	var db *gorm.DB
	switch dialect {
	case "sqlite":
		db = openSQLite(t)
	case "postgres":
		db = openPostgres(t)
	default:
		t.Fatalf("modelstest: unknown dialect %q", dialect)
	}
	if _, err := models.Migrate(context.Background(), db); err != nil {
		t.Fatalf("modelstest: migrate %s: %v", dialect, err)
	}
	return db
}

func openSQLite(t testing.TB) *gorm.DB {
	db, err := models.Open("", filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

// PostgresURL returns TEST_DATABASE_URL, skipping the test loudly when it is
// unset outside CI and failing it under CI=true.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("TEST_DATABASE_URL is not set: under CI=true PostgreSQL tests must run")
		}
		t.Skip("SKIPPING PostgreSQL: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run it")
	}
	return u
}

func openPostgres(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := models.Open(PostgresSchemaURL(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the schema is dropped (cleanups run last first)
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

// PostgresSchemaURL creates an empty schema in the TEST_DATABASE_URL
// database and returns a URL whose search_path is that schema, for a test
// that runs its own server process; the schema is dropped at cleanup. Like
// PostgresURL it skips outside CI when TEST_DATABASE_URL is unset.
func PostgresSchemaURL(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	admin, err := models.Open(base, "")
	if err != nil {
		t.Fatalf("modelstest: postgres at TEST_DATABASE_URL: %v", err)
	}
	schema := fmt.Sprintf("t_%d_%d", time.Now().UnixNano(), seq.Add(1))
	if err := admin.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("modelstest: create schema (is PostgreSQL running?): %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		if sqlDB, err := admin.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return withSearchPath(t, base, schema)
}

func withSearchPath(t testing.TB, base, schema string) string {
	u, err := url.Parse(base)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("modelstest: TEST_DATABASE_URL must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// SecondInstance opens another connection pool on db's database, as a second
// instance of the server would (OP4: several instances share one PostgreSQL).
// SQLite serves one instance, so there it returns db itself.
func SecondInstance(t testing.TB, db *gorm.DB) *gorm.DB {
	t.Helper()
	if db.Dialector.Name() != "postgres" {
		return db
	}
	var schema string
	if err := db.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		t.Fatal(err)
	}
	second, err := models.Open(withSearchPath(t, PostgresURL(t), schema), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := second.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return second
}
