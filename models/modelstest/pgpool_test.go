package modelstest

import (
	"context"
	"reflect"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"gorm.io/gorm"
)

// The pool hands a test a database another test wrote into: these prove it
// comes back as the template, and that a database which cannot be shown to
// be the template is never handed out.

// freshCopy returns a new copy of the template and the URL to open it.
func freshCopy(t *testing.T) (base, name string) {
	t.Helper()
	base = PostgresURL(t)
	tmpl, err := templatePostgres(base)
	if err != nil {
		t.Fatal(err)
	}
	name, err = copyTemplate(pgTemplate.admin, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgTemplate.admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	return base, name
}

func openNamed(t *testing.T, base, name string) *gorm.DB {
	t.Helper()
	db, err := models.Open(withDatabase(base, name, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestRecycledDatabaseIsTheTemplateAgain(t *testing.T) {
	base, name := freshCopy(t)
	db := openNamed(t, base, name)
	st := models.NewStore(db, models.RealClock{})
	// Rows across tables joined by foreign keys, a seeded table changed and
	// grown, a migration row added, and sequences moved.
	for _, email := range []string{"a@example.com", "b@example.com"} {
		if _, _, err := st.Signup(context.Background(), models.SignupInput{Email: email, Name: "A", Password: "correct horse battery", OrgName: "Org"}, "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		"UPDATE catalog_versions SET version = version + 41",
		"INSERT INTO catalog_versions (id, version) VALUES (2, 7)",
		"INSERT INTO schema_migrations (id) VALUES ('9999_not_a_migration')",
	} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	before, err := readShape(db)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(before.seeds, pgTemplate.shape.seeds) || sameInt(before.sequences["public.audit_log_seq_seq"], pgTemplate.shape.sequences["public.audit_log_seq_seq"]) {
		t.Fatal("setup: the writes changed neither rows nor sequences")
	}
	closeDB(db)

	if err := empty(base, name, pgTemplate.shape); err != nil {
		t.Fatalf("a database only written into was not emptied: %v", err)
	}
	db = openNamed(t, base, name)
	defer closeDB(db)
	after, err := readShape(db)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, pgTemplate.shape) {
		t.Fatalf("recycled database differs from the template:\nseeds %v\nwant  %v\nsequences %v\nwant      %v",
			after.seeds, pgTemplate.shape.seeds, after.sequences, pgTemplate.shape.sequences)
	}
	// The next audit entry is numbered as on a fresh copy.
	var seq int64
	if err := db.Raw("SELECT nextval('audit_log_seq_seq')").Scan(&seq).Error; err != nil || seq != 1 {
		t.Fatalf("audit sequence after recycling: %d, %v; want 1", seq, err)
	}
}

func TestChangedSchemaIsDroppedNotReused(t *testing.T) {
	for name, change := range map[string]string{
		"table added":    "CREATE TABLE extra (a int)",
		"column added":   "ALTER TABLE catalog_versions ADD COLUMN note text",
		"index dropped":  "DROP INDEX IF EXISTS " + someIndex(t),
		"default change": "ALTER TABLE catalog_versions ALTER COLUMN version SET DEFAULT 3",
		"function added": "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
		"schema added":   "CREATE SCHEMA other",
	} {
		t.Run(name, func(t *testing.T) {
			base, db := freshCopy(t)
			conn := openNamed(t, base, db)
			if err := conn.Exec(change).Error; err != nil {
				t.Fatal(err)
			}
			closeDB(conn)
			if err := empty(base, db, pgTemplate.shape); err == nil {
				t.Fatalf("%s: the database would be handed to the next test", change)
			}
		})
	}
}

// someIndex names one of the template's secondary indexes.
func someIndex(t *testing.T) string {
	t.Helper()
	base := PostgresURL(t)
	tmpl, err := templatePostgres(base)
	if err != nil {
		t.Fatal(err)
	}
	db := openNamed(t, base, tmpl)
	defer closeDB(db)
	var name string
	if err := db.Raw(`SELECT format('%I', indexname) FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%pkey' ORDER BY 1 LIMIT 1`).Scan(&name).Error; err != nil || name == "" {
		t.Fatalf("no index in the template: %v", err)
	}
	return name
}

func TestOpenSessionIsDroppedNotReused(t *testing.T) {
	base, name := freshCopy(t)
	left := openNamed(t, base, name) // a server the test forgot to stop
	defer closeDB(left)
	if err := left.Exec("SELECT 1").Error; err != nil {
		t.Fatal(err)
	}
	was := sessionWait
	sessionWait = 0
	defer func() { sessionWait = was }()
	if err := empty(base, name, pgTemplate.shape); err == nil {
		t.Fatal("a database with a session still on it would be handed to the next test")
	}
}
