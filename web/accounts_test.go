package web

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/ssh"
)

func TestSignupFlow(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		c := app.client()
		rec := c.get("/signup")
		if rec.Code != http.StatusOK || doc(t, rec).Find(`#signup-form`).Length() != 1 {
			t.Fatalf("GET /signup: %d", rec.Code)
		}

		// Bad input: 422, field messages, what was typed kept (not the password), nothing created.
		rec = c.post("/signup", url.Values{"email": {"not-an-email"}, "name": {"Ada"}, "password": {"short"}, "org_name": {"Ada Labs"}})
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad signup: %d", rec.Code)
		}
		d := doc(t, rec)
		for _, f := range []string{"email", "password"} {
			if d.Find(`[data-testid=problem-`+f+`]`).Length() != 1 {
				t.Errorf("no problem shown for %s", f)
			}
		}
		if v, _ := d.Find(`#email`).Attr("value"); v != "not-an-email" {
			t.Errorf("email not kept: %q", v)
		}
		if v, _ := d.Find(`#org_name`).Attr("value"); v != "Ada Labs" {
			t.Errorf("org name not kept: %q", v)
		}
		if v, _ := d.Find(`#password`).Attr("value"); v != "" {
			t.Errorf("password echoed back: %q", v)
		}
		var users int64
		app.db.Model(&models.User{}).Count(&users)
		if users != 0 {
			t.Fatalf("bad signup created %d users", users)
		}

		// htmx gets just the form back.
		rec = c.post("/signup", url.Values{"email": {"x"}}, "HX-Request", "true")
		if rec.Code != http.StatusUnprocessableEntity || strings.Contains(strings.ToLower(rec.Body.String()), "<!doctype") ||
			doc(t, rec).Find(`#signup-form`).Length() != 1 {
			t.Errorf("htmx 422: %d %.100s", rec.Code, rec.Body)
		}

		rec = c.post("/signup", url.Values{"email": {"Ada@Example.com"}, "name": {"Ada"}, "password": {testPassword}, "org_name": {"Ada Labs"}})
		if rec.Code != http.StatusSeeOther || location(rec) != afterLogin {
			t.Fatalf("signup: %d → %q\n%s", rec.Code, location(rec), rec.Body)
		}
		if c.cookie(sessionCookie) == "" {
			t.Fatal("no session cookie after signup")
		}
		rec = c.get("/settings")
		if rec.Code != http.StatusOK {
			t.Fatalf("settings after signup: %d", rec.Code)
		}
		d = doc(t, rec)
		if got := d.Find(`[data-testid=profile-email]`).Text(); got != "ada@example.com" {
			t.Errorf("profile email = %q", got)
		}
		if !strings.Contains(d.Find(`[data-testid=flash]`).Text(), "Welcome") {
			t.Error("no welcome flash after signup")
		}
		u, _ := app.store.UserByEmail(context.Background(), "ada@example.com")
		orgs, _ := app.store.OrgsForUser(context.Background(), u.ID)
		if len(orgs) != 1 || orgs[0].OrgName != "Ada Labs" || orgs[0].Role != models.RoleOwner {
			t.Errorf("orgs = %+v", orgs)
		}
		if acts := app.auditActions(orgs[0].OrgID); !contains(acts, "user.signup") {
			t.Errorf("audit = %v", acts)
		}
		// The same email again is refused, kindly.
		c2 := app.client()
		rec = c2.post("/signup", url.Values{"email": {"ada@example.com"}, "name": {"Ada 2"}, "password": {testPassword}})
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid=problem-email]`).Length() != 1 {
			t.Errorf("duplicate signup: %d", rec.Code)
		}
	})
}

func TestLoginRotatesSessionAndCSRF(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.client()
		// An anonymous session exists before log-in (e.g. planted, or a flash).
		if rec := c.post("/logout", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("anonymous logout: %d", rec.Code)
		}
		before, csrfBefore := c.cookie(sessionCookie), c.cookie(csrfCookie)
		if before == "" || csrfBefore == "" {
			t.Fatal("no anonymous session or csrf cookie")
		}
		// Wrong password: 422 with a field message, nothing rotated.
		rec := c.post("/login", url.Values{"email": {"ada@example.com"}, "password": {"wrong password"}})
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid=problem-password]`).Length() != 1 {
			t.Fatalf("wrong password: %d", rec.Code)
		}
		if v, _ := doc(t, rec).Find(`#email`).Attr("value"); v != "ada@example.com" {
			t.Errorf("email not kept: %q", v)
		}
		rec = c.post("/login", url.Values{"email": {"ADA@example.com"}, "password": {testPassword}, "next": {"/settings/ssh-keys?x=1"}})
		if rec.Code != http.StatusSeeOther || location(rec) != "/settings/ssh-keys?x=1" {
			t.Fatalf("login: %d → %q", rec.Code, location(rec))
		}
		after, csrfAfter := c.cookie(sessionCookie), c.cookie(csrfCookie)
		if after == before {
			t.Error("session cookie did not change on log-in (fixation)")
		}
		if csrfAfter == csrfBefore {
			t.Error("CSRF cookie did not rotate on log-in")
		}
		// The pre-log-in cookie does not carry the log-in.
		old := app.client()
		old.jar[sessionCookie] = &http.Cookie{Name: sessionCookie, Value: before}
		if rec := old.get("/settings"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/login") {
			t.Errorf("pre-login cookie after login: %d %q", rec.Code, location(rec))
		}
		// The old CSRF token no longer passes.
		rec = c.post("/settings/profile", url.Values{"_csrf": {csrfBefore}, "name": {"Eve"}})
		if rec.Code != http.StatusForbidden {
			t.Errorf("old csrf token: %d, want 403", rec.Code)
		}
		// Cookie attributes: HttpOnly, SameSite=Lax, bounded MaxAge; not Secure on localhost http.
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"email": {"ada@example.com"},
			"password": {testPassword}, "_csrf": {c.token()}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(c.jar[csrfCookie])
		rec = app.do(req)
		var sess *http.Cookie
		for _, ck := range rec.Result().Cookies() {
			if ck.Name == sessionCookie {
				sess = ck
			}
		}
		if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteLaxMode || sess.MaxAge <= 0 || sess.MaxAge > 30*24*3600 || sess.Secure {
			t.Errorf("session cookie attributes: %+v", sess)
		}
		if n := len(rec.Header().Values("Set-Cookie")); n != 2 {
			t.Errorf("log-in sets %d cookies, want the session and the CSRF cookie once each: %v", n, rec.Header().Values("Set-Cookie"))
		}
		if acts := app.auditActions(acc.org.ID); !contains(acts, "user.login") || !contains(acts, "user.login_failed") {
			t.Errorf("audit = %v", acts)
		}
	})
}

func TestSecureCookiesOffLocalhost(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	app.signupAccount("ada@example.com", "Ada Labs")
	req := httptest.NewRequest(http.MethodGet, "https://deck.example.com/login", nil)
	rec := app.do(req)
	names := map[string]bool{}
	for _, ck := range rec.Result().Cookies() {
		names[ck.Name] = true
		if !ck.Secure {
			t.Errorf("cookie %s not Secure over https on a real host", ck.Name)
		}
	}
	// The log-in form sets its CSRF cookie: with no cookie at all the loop
	// above would pass without checking anything.
	if !names[csrfCookie] {
		t.Fatalf("the log-in page set no %s cookie (got %v): nothing was checked", csrfCookie, names)
	}
}

func TestLogoutAndRevokedSessions(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		laptop, phone := app.login(acc), app.login(acc)
		stolen := app.client()
		stolen.jar[sessionCookie] = phone.jar[sessionCookie]
		for _, c := range []*client{laptop, phone, stolen} {
			if rec := c.get("/settings"); rec.Code != http.StatusOK {
				t.Fatalf("signed in: %d", rec.Code)
			}
		}
		// Log out everywhere (from the laptop): other cookies die, the laptop stays in.
		if rec := laptop.post("/settings/sessions/revoke", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("revoke: %d", rec.Code)
		}
		if rec := laptop.get("/settings"); rec.Code != http.StatusOK {
			t.Errorf("the laptop was logged out too: %d", rec.Code)
		}
		for name, c := range map[string]*client{"phone": phone, "stolen copy": stolen} {
			rec := c.get("/settings")
			if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/login?next=") {
				t.Errorf("%s after log-out everywhere: %d %q", name, rec.Code, location(rec))
			}
		}
		if rec := phone.get("/settings", "HX-Request", "true"); rec.Code != http.StatusUnauthorized {
			t.Errorf("htmx with a revoked cookie: %d, want 401", rec.Code)
		}

		// Password change: the current browser stays in; other sessions die.
		tablet := app.login(acc)
		rec := laptop.post("/settings/password", url.Values{"current_password": {testPassword},
			"new_password": {"a new long password"}, "confirm_password": {"does not match"}})
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid=problem-confirm_password]`).Length() != 1 {
			t.Errorf("mismatched confirmation: %d", rec.Code)
		}
		rec = laptop.post("/settings/password", url.Values{"current_password": {"nope nope nope"},
			"new_password": {"a new long password"}, "confirm_password": {"a new long password"}})
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid=problem-current_password]`).Length() != 1 {
			t.Errorf("wrong current password: %d", rec.Code)
		}
		rec = laptop.post("/settings/password", url.Values{"current_password": {testPassword},
			"new_password": {"a new long password"}, "confirm_password": {"a new long password"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("password change: %d\n%s", rec.Code, rec.Body)
		}
		if rec := laptop.get("/settings"); rec.Code != http.StatusOK {
			t.Errorf("laptop after its own password change: %d", rec.Code)
		}
		if rec := tablet.get("/settings"); rec.Code != http.StatusSeeOther {
			t.Errorf("tablet after password change: %d", rec.Code)
		}

		// Plain log-out clears this browser's cookie.
		if rec := laptop.post("/logout", nil); rec.Code != http.StatusSeeOther || location(rec) != "/login" {
			t.Errorf("logout: %d %q", rec.Code, location(rec))
		}
		if rec := laptop.get("/settings"); rec.Code != http.StatusSeeOther {
			t.Errorf("after logout: %d", rec.Code)
		}
		acts := app.auditActions(acc.org.ID)
		for _, a := range []string{"user.sessions_revoke", "user.password_change", "user.logout"} {
			if !contains(acts, a) {
				t.Errorf("audit lacks %s: %v", a, acts)
			}
		}
	})
}

func TestSessionLifetimeIsBounded(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	c := app.login(app.signupAccount("ada@example.com", "Ada Labs"))
	app.clock.Advance(sessionMaxAge - time.Minute)
	if rec := c.get("/settings"); rec.Code != http.StatusOK {
		t.Fatalf("before expiry: %d", rec.Code)
	}
	app.clock.Advance(2 * time.Minute)
	if rec := c.get("/settings"); rec.Code != http.StatusSeeOther {
		t.Errorf("after %v: %d, want a redirect to log in", sessionMaxAge, rec.Code)
	}
}

func TestCSRFRefusals(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.login(acc)
		tok := c.token()
		wrong := "x" + tok[1:]
		if tok[0] == 'x' {
			wrong = "y" + tok[1:]
		}
		tests := []struct {
			name    string
			form    url.Values
			headers []string
			want    int
		}{
			{"no token", url.Values{"_csrf": {""}, "name": {"Eve"}}, nil, http.StatusForbidden},
			{"wrong token", url.Values{"_csrf": {wrong}, "name": {"Eve"}}, nil, http.StatusForbidden},
			{"cross-site fetch", url.Values{"_csrf": {tok}, "name": {"Eve"}}, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
			{"htmx header token", url.Values{"_csrf": {""}, "name": {"Ada H"}}, []string{"X-CSRF-Token", tok, "HX-Request", "true"}, http.StatusNoContent},
			{"form token", url.Values{"_csrf": {tok}, "name": {"Ada F"}}, nil, http.StatusSeeOther},
		}
		for _, tt := range tests {
			rec := c.post("/settings/profile", tt.form, tt.headers...)
			if rec.Code != tt.want {
				t.Errorf("%s: %d, want %d", tt.name, rec.Code, tt.want)
			}
		}
		u, _ := app.store.UserByID(context.Background(), acc.user.ID)
		if u.Name != "Ada F" {
			t.Errorf("name = %q", u.Name)
		}
		// Log-in and sign-up forms are guarded too.
		for _, path := range []string{"/login", "/signup", "/logout"} {
			if rec := app.client().post(path, url.Values{"_csrf": {""}}); rec.Code != http.StatusForbidden {
				t.Errorf("%s without a token: %d", path, rec.Code)
			}
		}
		// Every page's body carries the token for htmx, and forms the hidden field.
		d := doc(t, c.get("/settings"))
		if hx, _ := d.Find("body").Attr("hx-headers"); !strings.Contains(hx, c.token()) {
			t.Errorf("hx-headers = %q", hx)
		}
		d.Find("form[method=post]").Each(func(_ int, f *goquery.Selection) {
			if v, _ := f.Find(`input[name=_csrf]`).Attr("value"); v != c.token() {
				t.Errorf("form %s without the token", f.AttrOr("action", "?"))
			}
		})
	})
}

// The API accepts a dashboard session cookie, but unsafe methods must then
// repeat the CSRF token (the API is outside the form guard).
func TestAPISessionNeedsCSRFForUnsafeMethods(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	c := app.login(acc)
	// The app's session keys: the token is checked against the session.
	h := &handler{Deps: Deps{Store: app.store}, sessions: newSessionStore(Config{
		SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))})}
	e := echo.New()
	ok := func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }
	run := func(method string, headers ...string) int {
		req := httptest.NewRequest(method, "/v1/x", nil)
		for _, ck := range c.jar {
			req.AddCookie(ck)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		ctx := e.NewContext(req, rec)
		ctx.SetPath("/v1/x")
		u := acc.user
		ctx.Set(principalKey, &Principal{Org: acc.org, User: &u, Role: models.RoleOwner, Env: acc.env, Actor: u.Email})
		if err := h.requireAPI(ok)(ctx); err != nil {
			if ae, isAE := err.(*APIError); isAE {
				return ae.Status
			}
			return 500
		}
		return rec.Code
	}
	if got := run(http.MethodGet); got != http.StatusNoContent {
		t.Errorf("GET with session: %d", got)
	}
	if got := run(http.MethodPost); got != http.StatusForbidden {
		t.Errorf("POST with session, no token: %d", got)
	}
	if got := run(http.MethodPost, "X-CSRF-Token", c.token()); got != http.StatusNoContent {
		t.Errorf("POST with session and token: %d", got)
	}
	if got := run(http.MethodPost, "X-CSRF-Token", c.token(), "Sec-Fetch-Site", "cross-site"); got != http.StatusForbidden {
		t.Errorf("cross-site POST: %d", got)
	}
}

func TestLoginThrottling(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.client()
		bad := url.Values{"email": {"ada@example.com"}, "password": {"wrong password"}}
		for i := 0; i < models.AccountThrottle.SlowAfter; i++ {
			if rec := c.post("/login", bad); rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("failure %d: %d", i+1, rec.Code)
			}
		}
		// Slowed: even the right password is refused until the wait is over.
		good := url.Values{"email": {"ada@example.com"}, "password": {testPassword}}
		rec := c.post("/login", good)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("slowed: %d (Retry-After %q)", rec.Code, rec.Header().Get("Retry-After"))
		}
		msg := doc(t, rec).Find(`[data-testid=login-blocked]`).Text()
		if !strings.Contains(msg, "Wait 5 seconds") {
			t.Errorf("slow-down message = %q", msg)
		}
		// From another instance (same database) it holds too.
		other := newTestApp(t, app.db)
		other.clock.Set(app.clock.Now())
		if rec := other.client().post("/login", good); rec.Code != http.StatusTooManyRequests {
			t.Errorf("another instance let the log-in through: %d", rec.Code)
		}
		app.clock.Advance(models.AccountThrottle.BaseDelay)
		for i := models.AccountThrottle.SlowAfter; i < models.AccountThrottle.LockAfter; i++ {
			app.clock.Advance(90 * time.Second) // waits out each slow-down (at most 80 s), inside the window
			c.post("/login", bad)
		}
		rec = c.post("/login", good)
		msg = doc(t, rec).Find(`[data-testid=login-blocked]`).Text()
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(msg, "locked for 15 more minutes") {
			t.Errorf("locked: %d %q", rec.Code, msg)
		}
		app.clock.Advance(models.AccountThrottle.Lock)
		if rec := c.post("/login", good); rec.Code != http.StatusSeeOther {
			t.Errorf("after the lock: %d", rec.Code)
		}
		if acts := app.auditActions(acc.org.ID); !contains(acts, "user.login_failed") {
			t.Errorf("failed log-ins not audited: %v", acts)
		}

		// One address trying many accounts is throttled by address.
		attacker := app.client()
		attacker.ip = "203.0.113.66"
		for i := 0; i < models.AddressThrottle.SlowAfter; i++ {
			attacker.post("/login", url.Values{"email": {strings.Repeat("z", i+1) + "@example.com"}, "password": {"guess guess"}})
		}
		rec = attacker.post("/login", good)
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(doc(t, rec).Find(`[data-testid=login-blocked]`).Text(), "network address") {
			t.Errorf("address throttle: %d", rec.Code)
		}
		// Ada from her own address is not affected.
		if rec := app.client().post("/login", good); rec.Code != http.StatusSeeOther {
			t.Errorf("ada from another address: %d", rec.Code)
		}
	})
}

func TestOpenRedirectRefused(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	app.signupAccount("ada@example.com", "Ada Labs")
	for _, next := range []string{"//evil.example", "https://evil.example/x", "/\\evil.example", "javascript:alert(1)", "evil"} {
		rec := app.client().post("/login", url.Values{"email": {"ada@example.com"}, "password": {testPassword}, "next": {next}})
		if rec.Code != http.StatusSeeOther || location(rec) != afterLogin {
			t.Errorf("next=%q → %d %q, want %s", next, rec.Code, location(rec), afterLogin)
		}
	}
	// Signed-out page visits go to log in and come back.
	rec := app.client().get("/settings/api-keys?x=1")
	if rec.Code != http.StatusSeeOther || location(rec) != "/login?next=%2Fsettings%2Fapi-keys%3Fx%3D1" {
		t.Errorf("signed out: %d %q", rec.Code, location(rec))
	}
}

func TestRoleChecks(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		admin := app.joinAccount(owner, "admin@example.com", models.RoleAdmin)
		member := app.joinAccount(owner, "member@example.com", models.RoleMember)
		oc, ac, mc := app.login(owner), app.login(admin), app.login(member)

		pages := []struct {
			path       string
			memberCode int
		}{
			{"/settings", 200}, {"/settings/ssh-keys", 200}, {"/settings/api-keys", 200}, {"/settings/environments", 200},
			{"/settings/team", 403}, {"/settings/audit", 403},
		}
		for _, p := range pages {
			for name, c := range map[string]*client{"owner": oc, "admin": ac} {
				if rec := c.get(p.path); rec.Code != 200 {
					t.Errorf("%s GET %s: %d", name, p.path, rec.Code)
				}
			}
			rec := mc.get(p.path)
			if rec.Code != p.memberCode {
				t.Errorf("member GET %s: %d, want %d", p.path, rec.Code, p.memberCode)
			}
			if p.memberCode == 403 {
				d := doc(t, rec)
				if d.Find(`[data-testid=error-page]`).Length() != 1 || !strings.Contains(d.Text(), "Only owners and admins of Acme") {
					t.Errorf("member 403 page for %s is not clear: %s", p.path, d.Find("main").Text())
				}
			}
		}
		// Links: members see no Billing, Team or Audit links.
		d := doc(t, mc.get("/settings"))
		if d.Find(`nav[aria-label=Main] a[href="/billing"]`).Length() != 0 || d.Find(`[data-testid=settings-link-team]`).Length() != 0 ||
			d.Find(`[data-testid=settings-link-audit]`).Length() != 0 {
			t.Error("member sees billing or team links")
		}
		d = doc(t, ac.get("/settings"))
		if d.Find(`nav[aria-label=Main] a[href="/billing"]`).Length() != 1 || d.Find(`[data-testid=settings-link-team]`).Length() != 1 {
			t.Error("admin lacks billing or team links")
		}
		// Members cannot post team changes either.
		if rec := mc.post("/settings/team/invites", url.Values{"email": {"x@example.com"}, "role": {"member"}}); rec.Code != 403 {
			t.Errorf("member invites: %d", rec.Code)
		}
		if rec := mc.post("/settings/environments", url.Values{"name": {"prod"}}); rec.Code != 403 {
			t.Errorf("member creates an environment: %d", rec.Code)
		}

		// Admin: may invite admins and members, not owners; may not touch the owner.
		if rec := ac.post("/settings/team/invites", url.Values{"email": {"boss@example.com"}, "role": {"owner"}}); rec.Code != 422 {
			t.Errorf("admin invites an owner: %d", rec.Code)
		}
		rec := ac.post("/settings/team/members/"+owner.user.ID+"/role", url.Values{"role": {"member"}})
		if rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-role]`).Length() != 1 {
			t.Errorf("admin demotes the owner: %d", rec.Code)
		}
		if rec := ac.post("/settings/team/members/"+member.user.ID+"/role", url.Values{"role": {"admin"}}); rec.Code != 303 {
			t.Errorf("admin promotes a member: %d", rec.Code)
		}
		// Owner: the last owner cannot step down; can make another owner.
		if rec := oc.post("/settings/team/members/"+owner.user.ID+"/role", url.Values{"role": {"admin"}}); rec.Code != 422 {
			t.Errorf("last owner steps down: %d", rec.Code)
		}
		if rec := oc.post("/settings/team/members/"+admin.user.ID+"/role", url.Values{"role": {"owner"}}); rec.Code != 303 {
			t.Errorf("owner makes an owner: %d", rec.Code)
		}
		// The promoted member now sees team settings (roles are read per request).
		if rec := mc.get("/settings/team"); rec.Code != 200 {
			t.Errorf("promoted member GET /settings/team: %d", rec.Code)
		}
		// Remove a member: they fall back to their own organisation.
		if rec := oc.post("/settings/team/members/"+member.user.ID+"/remove", nil); rec.Code != 303 {
			t.Fatalf("remove: %d", rec.Code)
		}
		if d := doc(t, mc.get("/settings")); strings.Contains(d.Find("header").Text(), "Acme") {
			t.Error("removed member still works in Acme")
		}
		acts := app.auditActions(owner.org.ID)
		for _, a := range []string{"member.role_change", "member.remove", "member.join"} {
			if !contains(acts, a) {
				t.Errorf("audit lacks %s: %v", a, acts)
			}
		}
	})
}

func TestAPIKeysShownOnceAndBearer(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		member := app.joinAccount(owner, "member@example.com", models.RoleMember)
		oc, mc := app.login(owner), app.login(member)

		rec := oc.post("/settings/api-keys", url.Values{"name": {""}, "environment": {owner.env.ID}})
		if rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-name]`).Length() != 1 {
			t.Errorf("nameless key: %d", rec.Code)
		}
		rec = oc.post("/settings/api-keys", url.Values{"name": {"ci"}, "environment": {"env_not_ours"}})
		if rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-environment]`).Length() != 1 {
			t.Errorf("key for an unknown environment: %d", rec.Code)
		}
		rec = oc.post("/settings/api-keys", url.Values{"name": {"ci-runner"}, "environment": {owner.env.ID}})
		if rec.Code != 200 || !strings.Contains(rec.Header().Get("Cache-Control"), "no-store") {
			t.Fatalf("create: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
		}
		token := strings.TrimSpace(doc(t, rec).Find(`[data-testid=api-key-token]`).Text())
		if !strings.HasPrefix(token, "cdk_") || len(token) != models.APIKeyLen {
			t.Fatalf("token shown = %q", token)
		}
		// Never again: the list shows the prefix only.
		rec = oc.get("/settings/api-keys")
		if strings.Contains(rec.Body.String(), token) {
			t.Fatal("token shown a second time")
		}
		if got := doc(t, rec).Find(`[data-testid=api-key-prefix]`).First().Text(); got != token[:12]+"…" {
			t.Errorf("prefix = %q", got)
		}
		// htmx creation answers with the section only.
		rec = oc.post("/settings/api-keys", url.Values{"name": {"laptop"}, "environment": {owner.env.ID}}, "HX-Request", "true")
		if rec.Code != 200 || doc(t, rec).Find(`#api-keys [data-testid=api-key-token]`).Length() != 1 || strings.Contains(rec.Body.String(), "<!DOCTYPE") {
			t.Errorf("htmx create: %d", rec.Code)
		}

		// Bearer works on /v1, as the key's org and environment.
		rec = app.apiGet("/v1/me", token)
		var me api.Me
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &me) != nil || me.Org.ID != owner.org.ID ||
			me.Environment.ID != owner.env.ID || me.Actor != "api_key:"+token[:12] || me.Role != "owner" {
			t.Fatalf("/v1/me: %d %s", rec.Code, rec.Body)
		}
		if d := doc(t, oc.get("/settings/api-keys")); d.Find(`[data-testid=api-key-row]:contains("ci-runner") [data-testid=api-key-last-used]`).Text() == "never" {
			t.Error("last used not recorded")
		}
		for _, bad := range []string{"cdk_" + strings.Repeat("a", 32), token + "x", "not-a-key"} {
			rec := app.apiGet("/v1/me", bad)
			if rec.Code != 401 || !strings.Contains(rec.Body.String(), `"code":"invalid_api_key"`) {
				t.Errorf("bad key %q: %d %s", bad, rec.Code, rec.Body)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
		req.Header.Set("Authorization", "Basic "+token)
		if rec := app.do(req); rec.Code != 401 || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("non-bearer: %d", rec.Code)
		}
		if rec := app.apiGet("/v1/me", ""); rec.Code != 401 || !strings.Contains(rec.Body.String(), `"code":"unauthorized"`) {
			t.Errorf("no credentials: %d %s", rec.Code, rec.Body)
		}
		// The public offers API takes a key optionally, but refuses a bad one.
		if rec := app.apiGet("/v1/gpu/offers", ""); rec.Code != 200 {
			t.Errorf("offers without a key: %d", rec.Code)
		}
		if rec := app.apiGet("/v1/gpu/offers", token); rec.Code != 200 {
			t.Errorf("offers with a key: %d", rec.Code)
		}
		if rec := app.apiGet("/v1/gpu/offers", "cdk_bad"); rec.Code != 401 {
			t.Errorf("offers with a bad key: %d", rec.Code)
		}

		// A member cannot revoke the owner's key; the owner can.
		keys, _ := app.store.APIKeys(context.Background(), owner.org.ID)
		var keyID string
		for _, k := range keys {
			if k.Name == "ci-runner" {
				keyID = k.ID
			}
		}
		if rec := mc.post("/settings/api-keys/"+keyID+"/revoke", nil); rec.Code != 403 {
			t.Errorf("member revokes owner's key: %d", rec.Code)
		}
		if rec := oc.post("/settings/api-keys/"+keyID+"/revoke", nil); rec.Code != 303 {
			t.Errorf("owner revokes: %d", rec.Code)
		}
		if rec := app.apiGet("/v1/me", token); rec.Code != 401 {
			t.Errorf("revoked key still works: %d", rec.Code)
		}
		acts := app.auditActions(owner.org.ID)
		for _, a := range []string{"api_key.create", "api_key.revoke"} {
			if !contains(acts, a) {
				t.Errorf("audit lacks %s: %v", a, acts)
			}
		}
		// The API key's audit actor is the key, visible on the audit page.
		if d := doc(t, oc.get("/settings/audit")); d.Find(`[data-testid=audit-row][data-action="api_key.create"]`).Length() != 2 {
			t.Errorf("audit page rows: %d", d.Find(`[data-testid=audit-row]`).Length())
		}
	})
}

func TestSSHKeysPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.login(acc)
		if d := doc(t, c.get("/settings/ssh-keys")); d.Find(`[data-testid=empty]`).Length() != 1 {
			t.Error("no empty state")
		}
		rec := c.post("/settings/ssh-keys", url.Values{"name": {"laptop"}, "public_key": {"ssh-rsa not-a-key"}})
		if rec.Code != 422 {
			t.Fatalf("bad key: %d", rec.Code)
		}
		d := doc(t, rec)
		if d.Find(`[data-testid=problem-public_key]`).Length() != 1 || d.Find(`#public_key`).Text() != "ssh-rsa not-a-key" ||
			d.Find(`#name`).AttrOr("value", "") != "laptop" {
			t.Error("bad key: problem or typed input missing")
		}
		line := testSSHKey(t, "ada@laptop")
		if rec := c.post("/settings/ssh-keys", url.Values{"public_key": {line}}); rec.Code != 303 {
			t.Fatalf("add: %d %s", rec.Code, rec.Body)
		}
		d = doc(t, c.get("/settings/ssh-keys"))
		row := d.Find(`[data-testid=ssh-key-row]`)
		if row.Length() != 1 || !strings.HasPrefix(row.Find(`[data-testid=fingerprint]`).Text(), "SHA256:") ||
			!strings.Contains(row.Text(), "ada@laptop") {
			t.Errorf("row = %q", row.Text())
		}
		keys, _ := app.store.SSHKeys(context.Background(), acc.org.ID, acc.user.ID)
		if rec := c.post("/settings/ssh-keys/"+keys[0].ID+"/delete", nil); rec.Code != 303 {
			t.Errorf("delete: %d", rec.Code)
		}
		if acts := app.auditActions(acc.org.ID); !contains(acts, "ssh_key.add") || !contains(acts, "ssh_key.delete") {
			t.Errorf("audit = %v", acts)
		}
	})
}

func TestEnvironmentsPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		oc := app.login(owner)
		rec := oc.post("/settings/environments", url.Values{"name": {"Not Valid"}})
		if rec.Code != 422 || doc(t, rec).Find(`#name`).AttrOr("value", "") != "Not Valid" {
			t.Errorf("bad env name: %d", rec.Code)
		}
		if rec := oc.post("/settings/environments", url.Values{"name": {"staging"}}); rec.Code != 303 {
			t.Fatalf("create: %d", rec.Code)
		}
		envs, _ := app.store.Environments(context.Background(), owner.org.ID)
		var staging models.Environment
		for _, e := range envs {
			if e.Name == "staging" {
				staging = e
			}
		}
		if rec := oc.post("/environments/"+staging.ID+"/switch", nil); rec.Code != 303 {
			t.Fatalf("switch: %d", rec.Code)
		}
		d := doc(t, oc.get("/settings/environments"))
		if d.Find(`#env-`+staging.ID).AttrOr("data-current", "") != "true" {
			t.Error("staging is not current after switching")
		}
		// New API keys default to the current environment.
		if d := doc(t, oc.get("/settings/api-keys")); d.Find(`#environment option[selected]`).AttrOr("value", "") != staging.ID {
			t.Error("key form does not default to the current environment")
		}
	})
}

func TestInviteFlowThroughTheOutbox(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("owner@example.com", "Acme")
		oc := app.login(owner)
		rec := oc.post("/settings/team/invites", url.Values{"email": {"bad"}, "role": {"member"}})
		if rec.Code != 422 || doc(t, rec).Find(`#email`).AttrOr("value", "") != "bad" {
			t.Errorf("bad invite: %d", rec.Code)
		}
		if rec := oc.post("/settings/team/invites", url.Values{"email": {"New@Example.com"}, "role": {"admin"}}); rec.Code != 303 {
			t.Fatalf("invite: %d %s", rec.Code, rec.Body)
		}
		mails, _ := views.RenderedMails(app.store.OutboxMails(ctx, 10))
		if len(mails) != 1 || mails[0].To != "new@example.com" || !strings.Contains(mails[0].Subject, "Acme") {
			t.Fatalf("outbox = %+v", mails)
		}
		link := mails[0].Text[strings.Index(mails[0].Text, "http://127.0.0.1/invites/"):]
		link = strings.TrimSpace(strings.SplitN(link, "\n", 2)[0])
		path := strings.TrimPrefix(link, "http://127.0.0.1")

		// The dev mailbox lists it (to loopback clients only).
		if rec := oc.get("/dev/mailbox"); rec.Code != http.StatusForbidden {
			t.Errorf("dev mailbox from another machine: %d, want 403", rec.Code)
		}
		oc.ip = "127.0.0.1"
		d := doc(t, oc.get("http://localhost:8080/dev/mailbox"))
		if d.Find(`[data-testid=mail-row]`).Length() != 1 {
			t.Error("dev mailbox does not list the invite")
		}
		if rec := oc.get("http://localhost:8080/dev/mailbox/" + mails[0].ID); rec.Code != 200 || !strings.Contains(rec.Body.String(), path) {
			t.Errorf("dev mail page: %d", rec.Code)
		}

		// Signed out, the link offers to sign up; signing up joins Acme as admin.
		visitor := app.client()
		rec = visitor.get(path)
		if rec.Code != 200 || doc(t, rec).Find(`[data-testid=invite-signup]`).Length() != 1 {
			t.Fatalf("invite page: %d", rec.Code)
		}
		signup := doc(t, rec).Find(`[data-testid=invite-signup]`).AttrOr("href", "")
		d = doc(t, visitor.get(signup))
		if d.Find(`#email`).AttrOr("value", "") != "new@example.com" || d.Find(`#org_name`).Length() != 0 {
			t.Error("invite signup form is not prefilled")
		}
		token := strings.TrimPrefix(path, "/invites/")
		rec = visitor.post("/signup", url.Values{"email": {"other@example.com"}, "name": {"New"}, "password": {testPassword}, "invite": {token}})
		if rec.Code != 422 {
			t.Errorf("invite used by another email: %d", rec.Code)
		}
		rec = visitor.post("/signup", url.Values{"email": {"new@example.com"}, "name": {"New"}, "password": {testPassword}, "invite": {token}})
		if rec.Code != 303 {
			t.Fatalf("signup with invite: %d %s", rec.Code, rec.Body)
		}
		u, _ := app.store.UserByEmail(ctx, "new@example.com")
		if m, err := app.store.Member(ctx, owner.org.ID, u.ID); err != nil || m.Role != models.RoleAdmin {
			t.Errorf("membership = %+v %v", m, err)
		}
		if orgs, _ := app.store.OrgsForUser(ctx, u.ID); len(orgs) != 1 {
			t.Errorf("invited user got %d orgs, want only Acme", len(orgs))
		}
		// Used links are gone.
		if rec := visitor.get(path); rec.Code != 404 {
			t.Errorf("used invite: %d", rec.Code)
		}
		// An existing user accepts while signed in, only with the invited address.
		existing := app.signupAccount("old@example.com", "Old Co")
		oc.post("/settings/team/invites", url.Values{"email": {"old@example.com"}, "role": {"member"}})
		mails, _ = views.RenderedMails(app.store.OutboxMails(ctx, 10))
		var tok2 string
		for _, m := range mails {
			if m.To == "old@example.com" {
				i := strings.Index(m.Text, "/invites/")
				tok2 = strings.TrimSpace(strings.SplitN(m.Text[i+len("/invites/"):], "\n", 2)[0])
			}
		}
		wrong := app.login(app.signupAccount("wrong@example.com", "Wrong Co"))
		if rec := wrong.get("/invites/" + tok2); doc(t, rec).Find(`[data-testid=invite-problem]`).Length() != 1 {
			t.Error("wrong user is not told the invite is for someone else")
		}
		if rec := wrong.post("/invites/"+tok2+"/accept", nil); rec.Code != 403 {
			t.Errorf("wrong user accepts: %d", rec.Code)
		}
		ec := app.login(existing)
		if rec := ec.post("/invites/"+tok2+"/accept", nil); rec.Code != 303 {
			t.Fatalf("accept: %d", rec.Code)
		}
		if d := doc(t, ec.get("/settings")); !strings.Contains(d.Find("header").Text(), "Acme") {
			t.Error("after accepting, the session does not work in Acme")
		}
		acts := app.auditActions(owner.org.ID)
		if !contains(acts, "member.invite") || !contains(acts, "member.join") {
			t.Errorf("audit = %v", acts)
		}
	})
}

func TestAdminArea(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		op := app.signupAccount("op@example.com", "Ops")
		cust := app.signupAccount("cust@example.com", "Customer Co")
		cc := app.login(cust)
		rec := cc.get("/admin")
		if rec.Code != 403 || !strings.Contains(doc(t, rec).Text(), "operators") {
			t.Errorf("customer GET /admin: %d", rec.Code)
		}
		if d := doc(t, cc.get("/settings")); d.Find(`nav[aria-label=Main] a[href="/admin"]`).Length() != 0 {
			t.Error("customer sees the admin link")
		}
		if rec := app.client().get("/admin"); rec.Code != 303 {
			t.Errorf("signed out GET /admin: %d", rec.Code)
		}
		if _, err := app.store.SetOperator(ctx, "op@example.com", true); err != nil {
			t.Fatal(err)
		}
		oc := app.login(op)
		d := doc(t, oc.get("/admin"))
		if d.Find(`[data-testid=admin-org-row]`).Length() != 2 || d.Find(`nav[aria-label=Main] a[href="/admin"]`).Length() != 1 {
			t.Errorf("admin page rows = %d", d.Find(`[data-testid=admin-org-row]`).Length())
		}
		rec = oc.post("/admin/orgs/"+cust.org.ID+"/quota", url.Values{"max_machines": {"lots"}, "max_gpus": {"-1"}}, "HX-Request", "true")
		if rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-max_machines]`).Length() != 1 || doc(t, rec).Find(`input[name=max_machines]`).AttrOr("value", "") != "lots" {
			t.Errorf("bad quota: %d %s", rec.Code, rec.Body)
		}
		if rec := oc.post("/admin/orgs/"+cust.org.ID+"/quota", url.Values{"max_machines": {"16"}, "max_gpus": {"128"}, "max_volumes": {"0"}, "max_volume_gb": {"0"}}); rec.Code != 303 {
			t.Fatalf("quota: %d", rec.Code)
		}
		org, _ := app.store.OrgByID(ctx, cust.org.ID)
		if org.MaxMachines != 16 || org.MaxGPUs != 128 {
			t.Errorf("quota = %d/%d", org.MaxMachines, org.MaxGPUs)
		}
		if acts := app.auditActions(cust.org.ID); !contains(acts, "org.quota_change") {
			t.Errorf("quota change not in the customer's audit log: %v", acts)
		}
		if rec := oc.post("/admin/orgs/org_nope/quota", url.Values{"max_machines": {"1"}, "max_gpus": {"1"}, "max_volumes": {"1"}, "max_volume_gb": {"1"}}); rec.Code != 404 {
			t.Errorf("unknown org: %d", rec.Code)
		}
	})
}

func TestDevMailboxOnlyInDevelopment(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	local := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/dev/mailbox", nil)
	local.RemoteAddr = "127.0.0.1:5555"
	if rec := app.do(local); rec.Code != 200 {
		t.Errorf("development, from loopback: %d", rec.Code)
	}
	if rec := app.get("/dev/mailbox"); rec.Code != http.StatusForbidden {
		t.Errorf("development, from another machine: %d, want 403", rec.Code)
	}
	prod := New(Deps{Config: Config{Production: true, BaseURL: "https://deck.example"}, Store: app.store,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: fstest.MapFS{}})
	for _, path := range []string{"/dev/mailbox", "/dev/mailbox/mail_x"} {
		rec := httptest.NewRecorder()
		prod.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 404 {
			t.Errorf("production %s: %d", path, rec.Code)
		}
	}
}

func testSSHKey(t testing.TB, comment string) string {
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

// The audit log and the throttle see the client's address: the TCP peer,
// or X-Forwarded-For only when it comes from a trusted proxy.
func TestClientAddressBehindProxies(t *testing.T) {
	base := newTestApp(t, openSQLite(t))
	acc := base.signupAccount("ada@example.com", "Ada Labs")
	_, trusted, _ := net.ParseCIDR("10.0.0.0/8")
	tests := []struct {
		name    string
		proxies []*net.IPNet
		peer    string
		want    string
	}{
		{"no proxy configured: spoofed header ignored", nil, "198.51.100.20", "198.51.100.20"},
		{"trusted proxy: forwarded client", []*net.IPNet{trusted}, "10.1.2.3", "203.0.113.9"},
		{"untrusted peer: header ignored", []*net.IPNet{trusted}, "198.51.100.21", "198.51.100.21"},
	}
	for _, tt := range tests {
		e := New(Deps{Config: Config{BaseURL: "http://127.0.0.1", TrustedProxies: tt.proxies,
			SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
			Store: base.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: fstest.MapFS{}})
		app := &testApp{t: t, e: e, store: base.store, clock: base.clock, db: base.db}
		c := app.client()
		c.ip = tt.peer
		c.token()
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"email": {"ada@example.com"},
			"password": {testPassword}, "_csrf": {c.token()}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		if rec := c.do(req); rec.Code != http.StatusSeeOther {
			t.Fatalf("%s: login %d", tt.name, rec.Code)
		}
		recs, _, _ := base.store.AuditRecords(context.Background(), acc.org.ID, 0, 1)
		if recs[0].Action != "user.login" || recs[0].IP != tt.want {
			t.Errorf("%s: audit %s from %q, want %q", tt.name, recs[0].Action, recs[0].IP, tt.want)
		}
	}
}
