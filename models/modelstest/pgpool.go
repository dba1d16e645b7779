package modelstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"gorm.io/gorm"
)

// A PostgreSQL database a test has finished with is emptied and handed to
// the next test instead of being dropped: CREATE DATABASE … TEMPLATE copies
// every one of the schema's ~475 relations and cost about 0.4 s of the
// server's time per test, while emptying the few tables a test wrote costs a
// few milliseconds. The emptying runs in the background after the test, so
// no test waits for it.
//
// A database goes back to the pool only when it is provably the template
// again: no session is left on it, its schema's fingerprint (every relation,
// column, default, constraint, index, function and trigger) equals the
// template's, every table holds exactly the template's rows, and every
// sequence stands where the template's stood. Anything else (a test that
// altered the schema, a server it started that still holds a connection, a
// role that may not switch off foreign keys) drops the database as before.

// pgShape is what the template holds, read once per test binary.
type pgShape struct {
	fingerprint string
	tables      []string          // every table, schema-qualified and quoted
	seeds       map[string]string // table → its rows as JSON, for tables that have rows
	sequences   map[string]*int64 // sequence → its last value (nil: never used)
}

// fingerprintSQL names every object a test could add, drop or change.
const fingerprintSQL = `
SELECT md5(coalesce(string_agg(x, E'\n' ORDER BY x), '')) FROM (
	SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || coalesce((
		SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull ||
			' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum)
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') AS x
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
	UNION ALL
	SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
	WHERE connamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
	UNION ALL
	SELECT 'idx ' || indexrelid::regclass::text || ' ' || pg_get_indexdef(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
	UNION ALL
	SELECT 'fn ' || p.oid::regprocedure::text || ' ' || md5(coalesce(p.prosrc, '')) FROM pg_proc p
	WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
	UNION ALL
	SELECT 'trg ' || tgrelid::regclass::text || ' ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
	UNION ALL
	SELECT 'ns ' || nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\_temp%' AND nspname NOT LIKE 'pg\_toast\_temp%'
	UNION ALL
	SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
	UNION ALL
	SELECT 'set ' || array_to_string(setconfig, ',') FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
) objects`

// readShape reads what db holds now, in the terms the pool compares.
func readShape(db *gorm.DB) (pgShape, error) {
	s := pgShape{seeds: map[string]string{}, sequences: map[string]*int64{}}
	if err := db.Raw(fingerprintSQL).Scan(&s.fingerprint).Error; err != nil {
		return s, fmt.Errorf("fingerprint: %w", err)
	}
	if err := db.Raw(`SELECT format('%I.%I', schemaname, tablename) FROM pg_tables
		WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`).Scan(&s.tables).Error; err != nil {
		return s, fmt.Errorf("tables: %w", err)
	}
	full, err := nonEmpty(db, s.tables)
	if err != nil {
		return s, err
	}
	for _, t := range full {
		var rows string
		if err := db.Raw("SELECT json_agg(t)::text FROM " + t + " t").Scan(&rows).Error; err != nil {
			return s, fmt.Errorf("rows of %s: %w", t, err)
		}
		s.seeds[t] = rows
	}
	seqs, err := readSequences(db)
	s.sequences = seqs
	return s, err
}

// nonEmpty returns the tables that hold at least one row, in one statement.
func nonEmpty(db *gorm.DB, tables []string) ([]string, error) {
	if len(tables) == 0 {
		return nil, nil
	}
	parts := make([]string, len(tables))
	for i, t := range tables {
		parts[i] = fmt.Sprintf("SELECT %s::text AS t WHERE EXISTS (SELECT 1 FROM %s)", quoteLiteral(t), t)
	}
	var full []string
	if err := db.Raw(strings.Join(parts, " UNION ALL ")).Scan(&full).Error; err != nil {
		return nil, fmt.Errorf("non-empty tables: %w", err)
	}
	return full, nil
}

func readSequences(db *gorm.DB) (map[string]*int64, error) {
	var rows []struct {
		Name string
		Last *int64
	}
	// pg_sequences shows last_value NULL for a sequence never used.
	if err := db.Raw(`SELECT format('%I.%I', schemaname, sequencename) AS name, last_value AS last FROM pg_sequences`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sequences: %w", err)
	}
	out := make(map[string]*int64, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Last
	}
	return out, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// pgPool holds this test binary's emptied databases.
var pgPool struct {
	mu   sync.Mutex
	free []string
}

func takeFree() (string, bool) {
	pgPool.mu.Lock()
	defer pgPool.mu.Unlock()
	if n := len(pgPool.free); n > 0 {
		name := pgPool.free[n-1]
		pgPool.free = pgPool.free[:n-1]
		return name, true
	}
	return "", false
}

func putFree(name string) {
	pgPool.mu.Lock()
	defer pgPool.mu.Unlock()
	pgPool.free = append(pgPool.free, name)
}

// recycle empties the database a test has finished with and puts it in the
// pool, or drops it when it cannot be shown to equal the template.
func recycle(base, name string, shape pgShape, admin *gorm.DB) {
	if err := empty(base, name, shape); err != nil {
		admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		return
	}
	putFree(name)
}

// sessionWait bounds the wait for the test's own sessions to end.
var sessionWait = 2 * time.Second

func empty(base, name string, shape pgShape) error {
	db, err := models.Open(withDatabase(base, name, ""), "")
	if err != nil {
		return err
	}
	defer closeDB(db)
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(1)
	// The test's connections are closed; their server processes end a moment
	// later. A session still there after that belongs to something the test
	// left running, which must not meet the next test's rows.
	for waited := time.Duration(0); ; waited += 50 * time.Millisecond {
		var others int64
		if err := db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others).Error; err != nil {
			return err
		}
		if others == 0 {
			break
		}
		if waited >= sessionWait {
			return errors.New("a session is still open")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var fp string
	if err := db.Raw(fingerprintSQL).Scan(&fp).Error; err != nil {
		return err
	}
	if fp != shape.fingerprint {
		return errors.New("the schema changed")
	}
	full, err := nonEmpty(db, shape.tables)
	if err != nil {
		return err
	}
	seqs, err := readSequences(db)
	if err != nil {
		return err
	}
	return db.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
		// Rows go in any order with foreign keys' triggers off (superuser);
		// a role that may not do this drops the database instead.
		if err := tx.Exec("SET LOCAL session_replication_role = replica").Error; err != nil {
			return err
		}
		for _, t := range full {
			if err := tx.Exec("DELETE FROM " + t).Error; err != nil {
				return err
			}
		}
		for t, rows := range shape.seeds {
			if err := tx.Exec("DELETE FROM " + t).Error; err != nil {
				return err
			}
			if err := tx.Exec("INSERT INTO "+t+" SELECT * FROM json_populate_recordset(NULL::"+t+", ?::json)", rows).Error; err != nil {
				return err
			}
		}
		for seq, now := range seqs { // a sequence added changed the fingerprint above
			was := shape.sequences[seq]
			if sameInt(now, was) {
				continue
			}
			q := "ALTER SEQUENCE " + seq + " RESTART" // never used in the template
			if was != nil {
				q = fmt.Sprintf("SELECT setval(%s::regclass, %d, true)", quoteLiteral(seq), *was)
			}
			if err := tx.Exec(q).Error; err != nil {
				return err
			}
		}

		return nil
	})
}

func sameInt(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
