// Package modelstest opens migrated test databases: a fresh SQLite file per
// test, and, when TEST_DATABASE_URL is set, a PostgreSQL database per test.
// Each is a copy of a template migrated once per test binary (a SQLite file
// copied; PostgreSQL's CREATE DATABASE … TEMPLATE), so a test pays for a
// copy, not for every migration; a PostgreSQL database a test has finished
// with is emptied back to the template in the background and handed to a
// later test (pgpool.go). Under CI=true a missing TEST_DATABASE_URL or an
// unreachable PostgreSQL fails the test instead of skipping it.
package modelstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"gorm.io/gorm"
)

// Dialects are the databases a test runs on.
var Dialects = []string{"sqlite", "postgres"}

// Every test that opens a database hashes passwords at bcrypt's lowest cost:
// the default cost is there to slow down an attacker, and under the race
// detector it made each sign-up of a test take a good part of a second.
// (4 is bcrypt.MinCost; this package imports no third party but gorm.)
func init() { models.PasswordCost = 4 }

var seq atomic.Int64

// Each runs fn once per database: "sqlite" always, "postgres" when
// TEST_DATABASE_URL is set (required under CI=true). The two runs share no
// state (each has its own database), so they run in parallel with each other
// (t.Parallel): Go runs them once the calling test function returns, and the
// calling test ends when both have. Each must therefore be the last thing its
// caller does. A test whose fn shares something outside the database between
// the two runs (a network, a port, a process) uses EachInTurn.
func Each(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, d))
		})
	}
}

// EachInTurn is Each with the runs one after the other, for a test whose two
// runs share something outside the database.
func EachInTurn(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
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
	switch dialect {
	case "sqlite":
		return openSQLite(t)
	case "postgres":
		return openPostgres(t)
	}
	t.Fatalf("modelstest: unknown dialect %q", dialect)
	return nil
}

// sqliteTemplate is a SQLite file migrated once per test binary.
var sqliteTemplate struct {
	once sync.Once
	path string
	err  error
}

func templateSQLite() (string, error) {
	sqliteTemplate.once.Do(func() {
		dir, err := os.MkdirTemp("", "clusterdeck-modelstest-")
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		path := filepath.Join(dir, "template.db")
		db, err := models.Open("", path)
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		defer func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		}()
		if _, err := models.Migrate(context.Background(), db); err != nil {
			sqliteTemplate.err = fmt.Errorf("migrate: %w", err)
			return
		}
		// Everything into the main file, so copying it alone copies the database.
		if err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
			sqliteTemplate.err = err
			return
		}
		sqliteTemplate.path = path
	})
	return sqliteTemplate.path, sqliteTemplate.err
}

func openSQLite(t testing.TB) *gorm.DB {
	t.Helper()
	tmpl, err := templateSQLite()
	if err != nil {
		t.Fatalf("modelstest: sqlite template: %v", err)
	}
	path := filepath.Join(t.TempDir(), "test.db")
	if err := copyFile(tmpl, path); err != nil {
		t.Fatalf("modelstest: copy the sqlite template: %v", err)
	}
	db, err := models.Open("", path)
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

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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

// pgTemplate is a PostgreSQL database migrated once per test binary, the
// template of every test's database.
var pgTemplate struct {
	once  sync.Once
	name  string
	shape pgShape // what a recycled database must hold again (pgpool.go)
	admin *gorm.DB
	err   error
}

// templatePrefix names the template databases; the process id follows, so
// that templates left by test binaries that have ended can be dropped.
const templatePrefix = "cdtmpl_"

func templatePostgres(base string) (string, error) {
	pgTemplate.once.Do(func() {
		admin, err := models.Open(base, "")
		if err != nil {
			pgTemplate.err = err
			return
		}
		pgTemplate.admin = admin // kept for the binary's life: every test's copy and drop
		go dropStale(admin)
		name := fmt.Sprintf("%s%d_%d", templatePrefix, os.Getpid(), time.Now().UnixNano())
		if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
			pgTemplate.err = fmt.Errorf("create the template database (is PostgreSQL running?): %w", err)
			return
		}
		db, err := models.Open(withDatabase(base, name, ""), "")
		if err != nil {
			pgTemplate.err = err
			return
		}
		_, err = models.Migrate(context.Background(), db)
		if err == nil {
			pgTemplate.shape, err = readShape(db)
		}
		closeDB(db) // no session may stay on a template while it is copied
		if err != nil {
			pgTemplate.err = fmt.Errorf("migrate the template: %w", err)
			return
		}
		pgTemplate.name = name
	})
	return pgTemplate.name, pgTemplate.err
}

// dropStale drops the template and test databases of test binaries that
// are no longer running (the pool's emptied databases outlive their binary).
func dropStale(admin *gorm.DB) {
	var names []string
	admin.Raw("SELECT datname FROM pg_database WHERE datname LIKE ? OR datname LIKE ?", templatePrefix+"%", testPrefix+"%").Scan(&names)
	for _, n := range names {
		rest, _ := strings.CutPrefix(n, templatePrefix)
		rest, _ = strings.CutPrefix(rest, testPrefix)
		pid, _, _ := strings.Cut(rest, "_")
		if p, err := strconv.Atoi(pid); err == nil && !alive(p) {
			admin.Exec("DROP DATABASE IF EXISTS " + n + " WITH (FORCE)")
		}
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var dbSeq atomic.Int64

// testPrefix names the tests' databases; the process id follows.
const testPrefix = "cdt_"

func openPostgres(t testing.TB) *gorm.DB {
	t.Helper()
	base := PostgresURL(t)
	tmpl, err := templatePostgres(base)
	if err != nil {
		t.Fatalf("modelstest: postgres template: %v", err)
	}
	admin := pgTemplate.admin
	name, ok := takeFree()
	if !ok {
		if name, err = copyTemplate(admin, tmpl); err != nil {
			t.Fatalf("modelstest: copy the template database: %v", err)
		}
	}
	// Emptied in the background for the next test, or dropped (pgpool.go).
	t.Cleanup(func() { go recycle(base, name, pgTemplate.shape, admin) })
	db, err := models.Open(withDatabase(base, name, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB(db) }) // before the database is recycled (cleanups run last first)
	return db
}

// copyTemplate creates a new database from the template.
func copyTemplate(admin *gorm.DB, tmpl string) (string, error) {
	name := fmt.Sprintf("%s%d_%d_%d", testPrefix, os.Getpid(), time.Now().UnixNano(), dbSeq.Add(1))
	return name, admin.Exec("CREATE DATABASE " + name + " TEMPLATE " + tmpl + " STRATEGY WAL_LOG").Error
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
}

// withDatabase is base with its database (and, when set, its search_path) replaced.
func withDatabase(base, name, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	if schema != "" {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
	}
	return u.String()
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
	var where struct{ Database, Schema string }
	if err := db.Raw("SELECT current_database() AS database, current_schema() AS schema").Scan(&where).Error; err != nil {
		t.Fatal(err)
	}
	second, err := models.Open(withDatabase(PostgresURL(t), where.Database, where.Schema), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB(second) })
	return second
}
