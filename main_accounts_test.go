package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"golang.org/x/crypto/bcrypt"
)

func init() { models.PasswordCost = bcrypt.MinCost }

// cliEnv is a development environment for run(): a temp DATA_DIR with
// SQLite, or a fresh PostgreSQL schema.
func cliEnv(t *testing.T, dialect string) map[string]string {
	t.Helper()
	env := map[string]string{"DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	if dialect == "postgres" {
		base := modelstest.PostgresURL(t)
		admin, err := models.Open(base, "")
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf("cli_%d", time.Now().UnixNano())
		if err := admin.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			admin.Exec("DROP SCHEMA " + schema + " CASCADE")
			if db, err := admin.DB(); err == nil {
				db.Close()
			}
		})
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		env["DATABASE_URL"] = u.String()
	}
	return env
}

func runCLI(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), err
}

var credLine = regexp.MustCompile(`(?m)^(email|password|api_key): (\S+)$`)

func creds(out string) map[string]string {
	m := map[string]string{}
	for _, g := range credLine.FindAllStringSubmatch(out, -1) {
		m[g[1]] = g[2]
	}
	return m
}

func TestDemoIsIdempotentAndWorks(t *testing.T) {
	for _, dialect := range modelstest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			env := cliEnv(t, dialect)
			out1, err := runCLI(t, env, "demo")
			if err != nil {
				t.Fatal(err)
			}
			c1 := creds(out1)
			if c1["email"] != demoEmail || len(c1["password"]) < models.MinPasswordLen || !strings.HasPrefix(c1["api_key"], "cdk_") {
				t.Fatalf("demo printed:\n%s", out1)
			}
			out2, err := runCLI(t, env, "demo")
			if err != nil {
				t.Fatal(err)
			}
			if c2 := creds(out2); c2["password"] != c1["password"] || c2["api_key"] != c1["api_key"] {
				t.Errorf("second run printed other credentials:\n%s\n%s", out1, out2)
			}

			db, err := models.Open(env["DATABASE_URL"], filepath.Join(env["DATA_DIR"], "clusterdeck.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer closeDB(db)
			store := models.NewStore(db, nil)
			ctx := context.Background()
			u, err := store.Authenticate(ctx, demoEmail, c1["password"])
			if err != nil {
				t.Fatalf("printed password does not log in: %v", err)
			}
			orgs, _ := store.OrgsForUser(ctx, u.ID)
			if len(orgs) != 1 || orgs[0].OrgName != demoOrgName || orgs[0].Role != models.RoleOwner {
				t.Errorf("orgs = %+v (idempotent: one demo org)", orgs)
			}
			auth, err := store.AuthenticateAPIKey(ctx, c1["api_key"])
			if err != nil || auth.Org.ID != orgs[0].OrgID || !auth.Env.IsDefault {
				t.Errorf("printed api key: %+v %v", auth, err)
			}
			if keys, _ := store.APIKeys(ctx, orgs[0].OrgID); len(keys) != 1 {
				t.Errorf("demo keys = %d, want 1 after two runs", len(keys))
			}
			// A changed password and a revoked key are repaired by the next run.
			store.SetPassword(ctx, u.ID, "someone changed it")
			store.RevokeAPIKey(ctx, orgs[0].OrgID, auth.Key.ID)
			if _, err := runCLI(t, env, "demo"); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Authenticate(ctx, demoEmail, c1["password"]); err != nil {
				t.Errorf("password not restored: %v", err)
			}
			if _, err := store.AuthenticateAPIKey(ctx, c1["api_key"]); err != nil {
				t.Errorf("api key not restored: %v", err)
			}
		})
	}
}

func TestDemoRefusesProduction(t *testing.T) {
	env := cliEnv(t, "sqlite")
	env["CLUSTERDECK_ENV"] = "production"
	env["SESSION_AUTH_KEY"] = strings.Repeat("ab", 32)
	env["SESSION_ENC_KEY"] = strings.Repeat("cd", 32)
	out, err := runCLI(t, env, "demo")
	if err == nil || !strings.Contains(err.Error(), "development only") || out != "" {
		t.Errorf("demo in production: %q, %v", out, err)
	}
}

func TestAdminGrant(t *testing.T) {
	for _, dialect := range modelstest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			env := cliEnv(t, dialect)
			if _, err := runCLI(t, env, "admin", "grant", "nobody@example.com"); err == nil || !strings.Contains(err.Error(), "sign up first") {
				t.Errorf("grant to an unknown email: %v", err)
			}
			if _, err := runCLI(t, env, "admin", "grant"); err == nil {
				t.Error("grant without an email accepted")
			}
			if _, err := runCLI(t, env, "demo"); err != nil {
				t.Fatal(err)
			}
			out, err := runCLI(t, env, "admin", "grant", "Demo@Clusterdeck.local")
			if err != nil || !strings.Contains(out, "is now an operator") {
				t.Fatalf("grant: %q %v", out, err)
			}
			db, _ := models.Open(env["DATABASE_URL"], filepath.Join(env["DATA_DIR"], "clusterdeck.db"))
			defer closeDB(db)
			u, _ := models.NewStore(db, nil).UserByEmail(context.Background(), demoEmail)
			if !u.IsOperator {
				t.Error("not an operator after grant")
			}
			if out, err := runCLI(t, env, "admin", "revoke", demoEmail); err != nil || !strings.Contains(out, "no longer") {
				t.Errorf("revoke: %q %v", out, err)
			}
		})
	}
}
