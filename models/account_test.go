package models_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"
)

func init() { models.PasswordCost = bcrypt.MinCost }

// acctStore is a store with a fake clock on a fresh database.
func acctStore(t *testing.T, db *gorm.DB) (*models.Store, *models.FakeClock) {
	t.Helper()
	clock := models.NewFakeClock(t0)
	return models.NewStore(db, clock), clock
}

func acctSignup(t *testing.T, s *models.Store, email, org string) (models.User, models.Org) {
	t.Helper()
	u, o, err := s.Signup(context.Background(), models.SignupInput{Email: email, Name: "N " + email,
		Password: "correct horse battery", OrgName: org}, "192.0.2.1")
	if err != nil {
		t.Fatalf("signup %s: %v", email, err)
	}
	return u, o
}

func ed25519Line(t testing.TB, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk))) + " " + comment
}

func fieldErr(err error, field string) bool {
	var fe models.FieldErrors
	return errors.As(err, &fe) && fe[field] != ""
}

func TestSignupCreatesOwnedOrgWithDefaultEnvironment(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		u, org, err := s.Signup(ctx, models.SignupInput{Email: "  Ada@Example.COM ", Name: "Ada",
			Password: "correct horse battery", MaxMachines: 10, MaxGPUs: 80}, "192.0.2.7")
		if err != nil {
			t.Fatal(err)
		}
		if u.Email != "ada@example.com" || u.PasswordHash == "" || u.PasswordHash == "correct horse battery" {
			t.Errorf("user = %+v", u)
		}
		if !strings.HasPrefix(u.PasswordHash, "$2") {
			t.Errorf("password not bcrypt-hashed: %q", u.PasswordHash)
		}
		if org.Name != "Ada's organisation" || org.MaxMachines != 10 || org.MaxGPUs != 80 {
			t.Errorf("org = %+v", org)
		}
		m, err := s.Member(ctx, org.ID, u.ID)
		if err != nil || m.Role != models.RoleOwner {
			t.Errorf("membership = %+v, %v", m, err)
		}
		env, err := s.DefaultEnvironment(ctx, org.ID)
		if err != nil || env.Name != "default" || !env.IsDefault {
			t.Errorf("default env = %+v, %v", env, err)
		}
		recs, _, err := s.AuditRecords(ctx, org.ID, 0, 10)
		if err != nil || len(recs) != 1 || recs[0].Action != "user.signup" || recs[0].IP != "192.0.2.7" {
			t.Errorf("audit = %+v, %v", recs, err)
		}

		// Quotas default when the operator set none.
		_, org2 := acctSignup(t, s, "bob@example.com", "Bob Co")
		if org2.MaxMachines != models.DefaultMaxMachines || org2.MaxGPUs != models.DefaultMaxGPUs {
			t.Errorf("default quotas = %d/%d", org2.MaxMachines, org2.MaxGPUs)
		}

		// Same email (any case) again: a field error, nothing created.
		_, _, err = s.Signup(ctx, models.SignupInput{Email: "ADA@example.com", Name: "Ada 2", Password: "another long password"}, "")
		if !fieldErr(err, "email") {
			t.Errorf("duplicate signup err = %v", err)
		}
		var users int64
		db.Model(&models.User{}).Count(&users)
		if users != 2 {
			t.Errorf("users = %d, want 2", users)
		}
	})
}

func TestSignupValidation(t *testing.T) {
	tests := []struct {
		name  string
		in    models.SignupInput
		field string
	}{
		{"empty email", models.SignupInput{Name: "A", Password: "plum river 0427"}, "email"},
		{"bad email", models.SignupInput{Email: "not-an-email", Name: "A", Password: "plum river 0427"}, "email"},
		{"display name email", models.SignupInput{Email: "A <a@b.c>", Name: "A", Password: "plum river 0427"}, "email"},
		{"short password", models.SignupInput{Email: "a@b.c", Name: "A", Password: "short"}, "password"},
		{"password too long for bcrypt", models.SignupInput{Email: "a@b.c", Name: "A", Password: strings.Repeat("x", 73)}, "password"},
		{"password is email", models.SignupInput{Email: "abcdefghij@b.c", Name: "A", Password: "ABCDEFGHIJ@b.c"}, "password"},
		{"no name", models.SignupInput{Email: "a@b.c", Password: "plum river 0427"}, "name"},
		{"control chars in name", models.SignupInput{Email: "a@b.c", Name: "A\x00B", Password: "plum river 0427"}, "name"},
		{"org name too long", models.SignupInput{Email: "a@b.c", Name: "A", Password: "plum river 0427", OrgName: strings.Repeat("o", 101)}, "org_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Normalize()
			if fe := in.Validate(); fe[tt.field] == "" {
				t.Errorf("problems = %v, want one on %s", fe, tt.field)
			}
		})
	}
	ok := models.SignupInput{Email: "a@b.c", Name: "A", Password: "plum river 0427"}
	if fe := ok.Validate(); len(fe) != 0 {
		t.Errorf("valid input has problems: %v", fe)
	}
}

func TestAuthenticateAndSessionVersion(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		u, org := acctSignup(t, s, "ada@example.com", "Ada Co")

		if _, err := s.Authenticate(ctx, "ADA@example.com", "correct horse battery"); err != nil {
			t.Errorf("good password: %v", err)
		}
		for _, tc := range [][2]string{{"ada@example.com", "wrong password!"}, {"nobody@example.com", "correct horse battery"}} {
			if _, err := s.Authenticate(ctx, tc[0], tc[1]); !errors.Is(err, models.ErrBadCredentials) {
				t.Errorf("Authenticate(%q) = %v, want ErrBadCredentials", tc[0], err)
			}
		}

		sc, err := s.LoadSession(ctx, u.ID, u.SessionVersion, org.ID, "")
		if err != nil || sc.Org.ID != org.ID || sc.Role != models.RoleOwner || !sc.Env.IsDefault {
			t.Fatalf("LoadSession = %+v, %v", sc, err)
		}
		// Password change: the old password and old cookies stop working.
		_, err = s.ChangePassword(ctx, u.ID, "wrong current pw", "a brand new password")
		if !fieldErr(err, "current_password") {
			t.Errorf("wrong current password: %v", err)
		}
		u2, err := s.ChangePassword(ctx, u.ID, "correct horse battery", "a brand new password")
		if err != nil {
			t.Fatal(err)
		}
		if u2.SessionVersion != u.SessionVersion+1 {
			t.Errorf("session version %d → %d", u.SessionVersion, u2.SessionVersion)
		}
		if _, err := s.LoadSession(ctx, u.ID, u.SessionVersion, org.ID, ""); !errors.Is(err, models.ErrSessionRevoked) {
			t.Errorf("old version after password change: %v", err)
		}
		if _, err := s.Authenticate(ctx, "ada@example.com", "correct horse battery"); err == nil {
			t.Error("old password still works")
		}
		// Log out everywhere.
		v, err := s.RevokeSessions(ctx, u.ID)
		if err != nil || v != u2.SessionVersion+1 {
			t.Errorf("RevokeSessions = %d, %v", v, err)
		}
		if _, err := s.LoadSession(ctx, u.ID, u2.SessionVersion, org.ID, ""); !errors.Is(err, models.ErrSessionRevoked) {
			t.Errorf("revoked version still loads: %v", err)
		}
		// A session for an org the user is not in falls back to their own.
		_, other := acctSignup(t, s, "eve@example.com", "Eve Co")
		sc, err = s.LoadSession(ctx, u.ID, v, other.ID, "")
		if err != nil || sc.Org.ID != org.ID {
			t.Errorf("foreign org in cookie: %+v, %v", sc.Org, err)
		}
		// And an environment of another org falls back to the default.
		otherEnv, _ := s.DefaultEnvironment(ctx, other.ID)
		sc, err = s.LoadSession(ctx, u.ID, v, org.ID, otherEnv.ID)
		if err != nil || sc.Env.OrgID != org.ID {
			t.Errorf("foreign env in cookie: %+v, %v", sc.Env, err)
		}
	})
}

func TestEnvironmentsScopedToOrg(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		_, a := acctSignup(t, s, "a@example.com", "A")
		_, b := acctSignup(t, s, "b@example.com", "B")
		prod, err := s.CreateEnvironment(ctx, a.ID, "prod")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateEnvironment(ctx, a.ID, "prod"); !fieldErr(err, "name") {
			t.Errorf("duplicate name: %v", err)
		}
		if _, err := s.CreateEnvironment(ctx, b.ID, "prod"); err != nil {
			t.Errorf("same name in another org: %v", err)
		}
		if _, err := s.CreateEnvironment(ctx, a.ID, "Bad Name"); !fieldErr(err, "name") {
			t.Errorf("bad name: %v", err)
		}
		if _, err := s.EnvironmentForOrg(ctx, b.ID, prod.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org's environment: %v, want ErrNotFound", err)
		}
		envs, _ := s.Environments(ctx, a.ID)
		if len(envs) != 2 || !envs[0].IsDefault {
			t.Errorf("envs = %+v", envs)
		}
	})
}

func TestRolesAndMembers(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, clock := acctStore(t, db)
		owner, org := acctSignup(t, s, "owner@example.com", "Org")

		// Invite an admin and a member; they sign up through the link.
		inv, token, err := s.CreateInvite(ctx, org.ID, models.RoleOwner, owner.ID, "Admin@Example.com", models.RoleAdmin)
		if err != nil || inv.Email != "admin@example.com" {
			t.Fatalf("invite: %+v %v", inv, err)
		}
		admin, joined, err := s.Signup(ctx, models.SignupInput{Email: "admin@example.com", Name: "Adm",
			Password: "admin password 1", InviteToken: token}, "")
		if err != nil || joined.ID != org.ID {
			t.Fatalf("signup with invite: %v %v", joined.ID, err)
		}
		if _, _, err := s.InviteByToken(ctx, token); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("used invite still pending: %v", err)
		}
		// An admin cannot invite an owner.
		if _, _, err := s.CreateInvite(ctx, org.ID, models.RoleAdmin, admin.ID, "x@example.com", models.RoleOwner); !fieldErr(err, "role") {
			t.Errorf("admin invites owner: %v", err)
		}
		// Inviting a member twice replaces the first link.
		_, tok1, _ := s.CreateInvite(ctx, org.ID, models.RoleAdmin, admin.ID, "mem@example.com", models.RoleMember)
		_, tok2, _ := s.CreateInvite(ctx, org.ID, models.RoleAdmin, admin.ID, "mem@example.com", models.RoleMember)
		if _, _, err := s.InviteByToken(ctx, tok1); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("replaced invite still works: %v", err)
		}
		mem, _ := acctSignup(t, s, "mem@example.com", "Mem's own")
		if _, err := s.AcceptInvite(ctx, tok2, owner, ""); !errors.Is(err, models.ErrInviteEmail) {
			t.Errorf("accept by another email: %v", err)
		}
		if _, err := s.AcceptInvite(ctx, tok2, mem, "192.0.2.9"); err != nil {
			t.Fatal(err)
		}
		if m, _ := s.Member(ctx, org.ID, mem.ID); m.Role != models.RoleMember {
			t.Errorf("member role = %q", m.Role)
		}
		// Inviting an existing member is refused.
		if _, _, err := s.CreateInvite(ctx, org.ID, models.RoleOwner, owner.ID, "mem@example.com", models.RoleMember); !fieldErr(err, "email") {
			t.Errorf("invite existing member: %v", err)
		}
		// Expired links do not work.
		_, tok3, _ := s.CreateInvite(ctx, org.ID, models.RoleOwner, owner.ID, "late@example.com", models.RoleMember)
		clock.Advance(models.InviteTTL + time.Minute)
		if _, _, err := s.InviteByToken(ctx, tok3); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("expired invite: %v", err)
		}

		tests := []struct {
			name   string
			actor  models.Role
			target string
			role   models.Role
			ok     bool
		}{
			{"admin cannot demote the owner", models.RoleAdmin, owner.ID, models.RoleMember, false},
			{"admin cannot make an owner", models.RoleAdmin, mem.ID, models.RoleOwner, false},
			{"admin promotes a member to admin", models.RoleAdmin, mem.ID, models.RoleAdmin, true},
			{"member cannot change roles", models.RoleMember, admin.ID, models.RoleMember, false},
			{"last owner cannot step down", models.RoleOwner, owner.ID, models.RoleAdmin, false},
			{"owner makes a second owner", models.RoleOwner, admin.ID, models.RoleOwner, true},
			{"now the first owner can step down", models.RoleOwner, owner.ID, models.RoleAdmin, true},
			{"bogus role", models.RoleOwner, mem.ID, models.Role("god"), false},
		}
		for _, tt := range tests {
			_, err := s.ChangeRole(ctx, org.ID, tt.actor, tt.target, tt.role)
			if (err == nil) != tt.ok {
				t.Errorf("%s: err = %v", tt.name, err)
			}
		}
		// Another org's member is not found.
		_, other := acctSignup(t, s, "other@example.com", "Other")
		if _, err := s.ChangeRole(ctx, other.ID, models.RoleOwner, mem.ID, models.RoleAdmin); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("cross-org role change: %v", err)
		}

		// Removing a member revokes the keys they made there.
		env, _ := s.DefaultEnvironment(ctx, org.ID)
		_, tok, err := s.CreateAPIKey(ctx, org.ID, env.ID, mem.ID, "ci")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddSSHKey(ctx, org.ID, mem.ID, "", ed25519Line(t, "mem@laptop")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RemoveMember(ctx, org.ID, models.RoleAdmin, mem.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AuthenticateAPIKey(ctx, tok); !errors.Is(err, models.ErrBadAPIKey) {
			t.Errorf("removed member's key still works: %v", err)
		}
		if keys, _ := s.SSHKeys(ctx, org.ID, mem.ID); len(keys) != 0 {
			t.Errorf("removed member's ssh keys remain: %d", len(keys))
		}
		if _, err := s.RemoveMember(ctx, org.ID, models.RoleAdmin, admin.ID); !fieldErr(err, "member") {
			t.Errorf("admin removes an owner: %v", err)
		}
	})
}

// TestLoginThrottle walks the throttle's whole policy through
// ReserveLoginAttempt, the one call the log-in handler makes (A1): slowed
// after SlowAfter attempts with doubling waits, locked after LockAfter, the
// lock ends on time, the account is the key whatever the address, a good
// log-in forgets the account's count, old attempts fall out of the window,
// and many accounts from one address throttle the address.
func TestLoginThrottle(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, clock := acctStore(t, db)
		const email, ip = "ada@example.com", "198.51.100.4"
		reserve := func(email, ip string) *models.LoginBlock {
			t.Helper()
			b, err := s.ReserveLoginAttempt(ctx, email, ip)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		pass := func(n int) {
			t.Helper()
			for i := range n {
				if b := reserve(email, ip); b != nil {
					t.Fatalf("attempt %d of %d refused: %+v", i+1, n, b)
				}
			}
		}
		pass(models.AccountThrottle.SlowAfter)
		// Another address is slowed too: the account is the key.
		if b := reserve(email, "203.0.113.8"); b == nil || b.ByIP {
			t.Fatalf("account throttle did not follow the account: %+v", b)
		}
		// Each further attempt waits twice as long, until the lock.
		want := models.AccountThrottle.BaseDelay
		for n := models.AccountThrottle.SlowAfter; n < models.AccountThrottle.LockAfter; n++ {
			b := reserve(email, ip)
			if b == nil || b.Locked || b.Wait(clock.Now()) != want {
				t.Fatalf("after %d attempts: %+v, want a %v wait", n, b, want)
			}
			clock.Advance(b.Wait(clock.Now()))
			pass(1)
			want *= 2
		}
		b := reserve(email, ip)
		if b == nil || !b.Locked || b.Wait(clock.Now()) != models.AccountThrottle.Lock {
			t.Fatalf("after LockAfter attempts: %+v, want a %v lock", b, models.AccountThrottle.Lock)
		}
		clock.Advance(models.AccountThrottle.Lock)
		pass(1) // the lock ended; the count did not: the next attempt locks again
		if b := reserve(email, ip); b == nil || !b.Locked {
			t.Fatalf("count forgotten by the lock's end: %+v", b)
		}
		clock.Advance(models.AccountThrottle.Lock)
		// A good log-in clears the account, not the address.
		if err := s.ClearLoginFailures(ctx, email); err != nil {
			t.Fatal(err)
		}
		pass(models.AccountThrottle.SlowAfter)
		// Attempts older than the window are forgotten.
		clock.Advance(models.AccountThrottle.Window + time.Second)
		pass(models.AccountThrottle.SlowAfter)
		// Many accounts from one address: the address is throttled.
		for i := range models.AddressThrottle.SlowAfter {
			if b := reserve(strings.Repeat("x", i+1)+"@example.com", "192.0.2.200"); b != nil {
				t.Fatalf("account %d from one address refused: %+v", i+1, b)
			}
		}
		if b := reserve("fresh@example.com", "192.0.2.200"); b == nil || !b.ByIP {
			t.Errorf("address not throttled: %+v", b)
		}
	})
}

func TestSSHKeys(t *testing.T) {
	rsaSmall, _ := rsa.GenerateKey(rand.Reader, 1024)
	rsaSmallPK, _ := ssh.NewPublicKey(&rsaSmall.PublicKey)
	good := ed25519Line(t, "ada@laptop")
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"ed25519 with comment", good, true},
		{"surrounding whitespace", "  " + good + "\n", true},
		{"empty", "", false},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", false},
		{"two keys", good + "\n" + good, false},
		{"options prefix", `command="rm -rf /" ` + good, false},
		{"garbage base64", "ssh-ed25519 AAAAnotbase64!!! x", false},
		{"type mismatch", strings.Replace(good, "ssh-ed25519", "ssh-rsa", 1), false},
		{"dsa", "ssh-dss AAAAB3NzaC1kc3MAAACBAP", false},
		{"small rsa", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(rsaSmallPK))), false},
		{"not a key", "hello world", false},
	}
	for _, tt := range tests {
		k, err := models.ParseSSHPublicKey(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
		if tt.ok && (!strings.HasPrefix(k.Fingerprint, "SHA256:") || k.Comment != "ada@laptop") {
			t.Errorf("%s: parsed = %+v", tt.name, k)
		}
	}

	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		a, orgA := acctSignup(t, s, "a@example.com", "A")
		b, orgB := acctSignup(t, s, "b@example.com", "B")
		k, err := s.AddSSHKey(ctx, orgA.ID, a.ID, "", good)
		if err != nil || k.Name != "ada@laptop" || !strings.HasPrefix(k.Fingerprint, "SHA256:") {
			t.Fatalf("add: %+v %v", k, err)
		}
		if _, err := s.AddSSHKey(ctx, orgA.ID, a.ID, "again", good); !fieldErr(err, "public_key") {
			t.Errorf("duplicate key: %v", err)
		}
		if _, err := s.AddSSHKey(ctx, orgA.ID, a.ID, "x", "ssh-ed25519 nope"); !fieldErr(err, "public_key") {
			t.Errorf("bad key: %v", err)
		}
		kb, _ := s.AddSSHKey(ctx, orgB.ID, b.ID, "b", ed25519Line(t, "b"))
		got, err := s.SSHKeysForUser(ctx, orgA.ID, a.ID, []string{k.ID})
		if err != nil || len(got) != 1 {
			t.Errorf("own keys: %v %v", got, err)
		}
		for _, ids := range [][]string{{kb.ID}, {k.ID, kb.ID}, {"ssh_nothing"}} {
			if _, err := s.SSHKeysForUser(ctx, orgA.ID, a.ID, ids); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("SSHKeysForUser(%v) = %v, want ErrNotFound", ids, err)
			}
		}
		if _, err := s.DeleteSSHKey(ctx, orgA.ID, a.ID, kb.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("delete another's key: %v", err)
		}
		if _, err := s.DeleteSSHKey(ctx, orgA.ID, a.ID, k.ID); err != nil {
			t.Errorf("delete own key: %v", err)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, clock := acctStore(t, db)
		a, orgA := acctSignup(t, s, "a@example.com", "A")
		_, orgB := acctSignup(t, s, "b@example.com", "B")
		envA, _ := s.DefaultEnvironment(ctx, orgA.ID)
		envB, _ := s.DefaultEnvironment(ctx, orgB.ID)

		if _, _, err := s.CreateAPIKey(ctx, orgA.ID, envB.ID, a.ID, "ci"); !fieldErr(err, "environment") {
			t.Errorf("key for another org's env: %v", err)
		}
		k, token, err := s.CreateAPIKey(ctx, orgA.ID, envA.ID, a.ID, "ci")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(token, "cdk_") || len(token) != models.APIKeyLen || !strings.HasPrefix(token, k.Prefix) {
			t.Errorf("token %q prefix %q", token, k.Prefix)
		}
		var stored models.APIKey
		db.Where("id = ?", k.ID).Take(&stored)
		if strings.Contains(stored.Hash, token) || stored.Hash == "" {
			t.Error("token stored in clear")
		}
		auth, err := s.AuthenticateAPIKey(ctx, token)
		if err != nil || auth.Org.ID != orgA.ID || auth.Env.ID != envA.ID || auth.Role != models.RoleOwner {
			t.Fatalf("auth = %+v, %v", auth, err)
		}
		if auth.Key.LastUsedAt == nil || !auth.Key.LastUsedAt.Equal(clock.Now()) {
			t.Errorf("last used = %v", auth.Key.LastUsedAt)
		}
		for _, bad := range []string{"", "cdk_", token + "x", strings.ToUpper(token), "cdk_" + strings.Repeat("a", 32)} {
			if _, err := s.AuthenticateAPIKey(ctx, bad); !errors.Is(err, models.ErrBadAPIKey) {
				t.Errorf("AuthenticateAPIKey(%q) = %v", bad, err)
			}
		}
		if _, err := s.RevokeAPIKey(ctx, orgB.ID, k.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("revoke from another org: %v", err)
		}
		if _, err := s.RevokeAPIKey(ctx, orgA.ID, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RevokeAPIKey(ctx, orgA.ID, k.ID); !errors.Is(err, models.ErrConflict) {
			t.Errorf("double revoke: %v", err)
		}
		if _, err := s.AuthenticateAPIKey(ctx, token); !errors.Is(err, models.ErrBadAPIKey) {
			t.Errorf("revoked key works: %v", err)
		}
		rows, _ := s.APIKeys(ctx, orgA.ID)
		if len(rows) != 1 || rows[0].EnvName != "default" || rows[0].CreatorEmail != "a@example.com" || rows[0].RevokedAt == nil {
			t.Errorf("rows = %+v", rows)
		}
		// EnsureAPIKey is idempotent and un-revokes.
		fixed := "cdk_" + strings.Repeat("b", 32)
		k1, err := s.EnsureAPIKey(ctx, orgA.ID, envA.ID, a.ID, "demo", fixed)
		if err != nil {
			t.Fatal(err)
		}
		s.RevokeAPIKey(ctx, orgA.ID, k1.ID)
		k2, err := s.EnsureAPIKey(ctx, orgA.ID, envA.ID, a.ID, "demo", fixed)
		if err != nil || k2.ID != k1.ID {
			t.Errorf("ensure again: %v %v", k2.ID, err)
		}
		if _, err := s.AuthenticateAPIKey(ctx, fixed); err != nil {
			t.Errorf("ensured key: %v", err)
		}
	})
}

func TestAuditLogInsideTx(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		_, org := acctSignup(t, s, "a@example.com", "A")
		boom := errors.New("boom")
		err := s.Tx(ctx, func(tx *models.Store) error {
			if err := tx.AuditLog(ctx, models.AuditEntry{OrgID: org.ID, Action: "cluster.launch", Actor: "a@example.com"}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if err := s.AuditLog(ctx, models.AuditEntry{OrgID: org.ID, Action: "api_key.create", Target: "key_x"}); err != nil {
			t.Fatal(err)
		}
		if err := s.AuditLog(ctx, models.AuditEntry{Action: "x"}); err == nil {
			t.Error("entry without org accepted")
		}
		recs, more, _ := s.AuditRecords(ctx, org.ID, 0, 10)
		if len(recs) != 2 || more || recs[0].Action != "api_key.create" || recs[0].Actor != "system" {
			t.Errorf("records = %+v (the rolled-back entry must be absent)", recs)
		}
		older, _, _ := s.AuditRecords(ctx, org.ID, recs[0].Seq, 10)
		if len(older) != 1 || older[0].Action != "user.signup" {
			t.Errorf("page before %d = %+v", recs[0].Seq, older)
		}
	})
}

func TestMailOutbox(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, clock := acctStore(t, db)
		m := models.Mail{Key: "cluster-ready:cl_1", To: "a@example.com", Subject: "Ready", Text: "Your cluster is ready."}
		for i := 0; i < 2; i++ {
			if err := s.EnqueueMail(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		// Inside a transaction that rolls back, nothing is queued.
		_ = s.Tx(ctx, func(tx *models.Store) error {
			_ = tx.EnqueueMail(ctx, models.Mail{Key: "rolled-back", To: "a@example.com", Subject: "x", Text: "x"})
			return errors.New("abort")
		})
		for _, bad := range []models.Mail{
			{To: "a@example.com", Subject: "s", Text: "t"},
			{Key: "k", To: "not an address", Subject: "s", Text: "t"},
			{Key: "k", To: "a@example.com", Subject: "s\r\nBcc: x@evil", Text: "t"},
		} {
			if err := s.EnqueueMail(ctx, bad); err == nil {
				t.Errorf("bad mail accepted: %+v", bad)
			}
		}
		all, _ := views.RenderedMails(s.OutboxMails(ctx, 10))
		if len(all) != 1 {
			t.Fatalf("outbox has %d mails, want 1", len(all))
		}

		got, err := s.ClaimMails(ctx, "w1", 10, models.MailClaimTTL)
		if err != nil || len(got) != 1 || got[0].Attempts != 1 {
			t.Fatalf("claim = %+v, %v", got, err)
		}
		// Claimed: a second worker sees nothing until the claim expires.
		if again, _ := s.ClaimMails(ctx, "w2", 10, models.MailClaimTTL); len(again) != 0 {
			t.Errorf("claimed twice: %d", len(again))
		}
		// The first worker "crashed" mid-send: after the claim expires, w2 retries.
		clock.Advance(models.MailClaimTTL + time.Second)
		retry, _ := s.ClaimMails(ctx, "w2", 10, models.MailClaimTTL)
		if len(retry) != 1 || retry[0].Attempts != 2 {
			t.Fatalf("retry after expired claim = %+v", retry)
		}
		// The stale claim can no longer mark it.
		if err := s.MarkMailSent(ctx, got[0], "smtp"); !errors.Is(err, models.ErrConflict) {
			t.Errorf("stale claim marked sent: %v", err)
		}
		if err := s.MarkMailFailed(ctx, retry[0], errors.New("421 try later")); err != nil {
			t.Fatal(err)
		}
		if due, _ := s.ClaimMails(ctx, "w2", 10, models.MailClaimTTL); len(due) != 0 {
			t.Error("failed mail retried before its backoff")
		}
		clock.Advance(time.Hour)
		due, _ := s.ClaimMails(ctx, "w3", 10, models.MailClaimTTL)
		if len(due) != 1 {
			t.Fatalf("not retried after backoff")
		}
		if err := s.MarkMailSent(ctx, due[0], "smtp"); err != nil {
			t.Fatal(err)
		}
		one, _ := s.OutboxMailByID(ctx, due[0].ID)
		if one.Status() != "sent" || one.Transport != "smtp" || one.SentAt == nil {
			t.Errorf("after send: %+v", one)
		}
		clock.Advance(24 * time.Hour)
		if again, _ := s.ClaimMails(ctx, "w4", 10, models.MailClaimTTL); len(again) != 0 {
			t.Error("sent mail claimed again")
		}

		// Give up after MaxMailAttempts.
		s.EnqueueMail(ctx, models.Mail{Key: "doomed", To: "b@example.com", Subject: "s", Text: "t"})
		for i := 0; i < models.MaxMailAttempts; i++ {
			c, _ := s.ClaimMails(ctx, "w", 10, models.MailClaimTTL)
			if len(c) != 1 {
				t.Fatalf("attempt %d: claimed %d", i+1, len(c))
			}
			s.MarkMailFailed(ctx, c[0], errors.New("550 no such user"))
			clock.Advance(2 * time.Hour)
		}
		all, _ = views.RenderedMails(s.OutboxMails(ctx, 10))
		if all[0].Key != "doomed" || all[0].Status() != "failed" {
			t.Errorf("after %d failures: %+v", models.MaxMailAttempts, all[0])
		}
	})
}

// Every migrated table has a column for every field of its live model.
func TestAccountSchemaMatchesModels(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, m := range []any{&models.Org{}, &models.User{}, &models.Membership{}, &models.Environment{},
			&models.Invite{}, &models.LoginThrottle{}, &models.SSHKey{}, &models.APIKey{}, &models.AuditRecord{}, &models.OutboxMail{}} {
			stmt := &gorm.Statement{DB: db}
			if err := stmt.Parse(m); err != nil {
				t.Fatal(err)
			}
			for _, f := range stmt.Schema.Fields {
				if f.DBName != "" && !db.Migrator().HasColumn(m, f.DBName) {
					t.Errorf("%s.%s: no column %q", stmt.Schema.Table, f.Name, f.DBName)
				}
			}
		}
	})
}

// Concurrent claimers (several instances' mail jobs) never get the same mail.
func TestMailClaimsAreExclusive(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := acctStore(t, db)
		for i := 0; i < 40; i++ {
			if err := s.EnqueueMail(ctx, models.Mail{Key: fmt.Sprintf("k%02d", i), To: "a@example.com", Subject: "s", Text: "t"}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				got, err := s.ClaimMails(ctx, fmt.Sprintf("w%d", w), 5, models.MailClaimTTL)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range got {
					seen[m.Key]++
				}
				mu.Unlock()
			}(w)
		}
		wg.Wait()
		for k, n := range seen {
			if n > 1 {
				t.Errorf("mail %s claimed %d times", k, n)
			}
		}
		if len(seen) != 40 {
			t.Errorf("claimed %d distinct mails, want 40", len(seen))
		}
	})
}
