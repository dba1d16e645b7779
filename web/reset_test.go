package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

var resetLinkRE = regexp.MustCompile(`http://127\.0\.0\.1(/reset-password/[A-Za-z0-9]+)`)

// mailedResetPath opens the dev mailbox as a developer would (from
// loopback), finds the newest reset mail to `to` and returns its link's path.
func mailedResetPath(t *testing.T, app *testApp, to string) string {
	t.Helper()
	dev := app.client()
	dev.ip = "127.0.0.1"
	d := doc(t, dev.get("http://localhost:8080/dev/mailbox"))
	var id string
	d.Find(`[data-testid=mail-row]`).EachWithBreak(func(_ int, row *goquery.Selection) bool {
		if strings.Contains(row.Text(), to) && strings.Contains(row.Text(), "Reset your Clusterdeck password") {
			id = strings.TrimPrefix(row.Find(`a[href^="/dev/mailbox/"]`).AttrOr("href", ""), "/dev/mailbox/")
			return id == "" // the newest comes first
		}
		return true
	})
	if id == "" {
		t.Fatalf("no reset mail to %s in the dev mailbox:\n%s", to, d.Text())
	}
	rec := dev.get("http://localhost:8080/dev/mailbox/" + id)
	m := resetLinkRE.FindStringSubmatch(rec.Body.String())
	if rec.Code != 200 || m == nil {
		t.Fatalf("dev mail %s: %d, no reset link", id, rec.Code)
	}
	return m[1]
}

// Password reset by mail (A1): the link goes out through the
// outbox (read here in the dev mailbox); only its hash is stored; it works
// once, for an hour, and only the newest; using it sets the password, logs
// out every session and mails a notice; asking is throttled like log-in,
// answers the same for unknown addresses, and everything is audited in each
// of the user's organisations.
func TestPasswordResetThroughTheMailbox(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("ada@example.com", "Analytical Engines")
		other := app.signupAccount("grace@example.com", "Grace Compute")
		// ada is in two organisations.
		_, invite, err := app.store.CreateInvite(ctx, other.org.ID, models.RoleOwner, other.user.ID, "ada@example.com", models.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.AcceptInvite(ctx, invite, owner.user, ""); err != nil {
			t.Fatal(err)
		}
		signedIn := app.login(owner)
		visitor := app.client()
		resetMails := func() int {
			t.Helper()
			mails, err := views.RenderedMails(app.store.OutboxMails(ctx, 100))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range mails {
				if strings.HasPrefix(m.Subject, "Reset your Clusterdeck password") {
					n++
				}
			}
			return n
		}

		// The log-in form links here, carrying the address typed.
		if href := doc(t, visitor.get("/login")).Find(`[data-testid=forgot-password]`).AttrOr("href", ""); href != "/forgot-password" {
			t.Errorf("log-in page links to %q", href)
		}
		if rec := visitor.post("/forgot-password", url.Values{"email": {"not an address"}}); rec.Code != http.StatusUnprocessableEntity ||
			doc(t, rec).Find(`[data-testid=problem-email]`).Length() != 1 {
			t.Errorf("bad address: %d", rec.Code)
		}
		// An unknown address gets the same answer and no mail.
		rec := visitor.post("/forgot-password", url.Values{"email": {"nobody@example.com"}})
		unknownText := doc(t, rec).Find(`[data-testid=reset-sent]`).Text()
		if rec.Code != 200 || unknownText == "" || resetMails() != 0 {
			t.Fatalf("unknown address: %d %q, %d mails", rec.Code, unknownText, resetMails())
		}
		rec = visitor.post("/forgot-password", url.Values{"email": {"Ada@Example.com"}})
		knownText := doc(t, rec).Find(`[data-testid=reset-sent]`).Text()
		if rec.Code != 200 || strings.ReplaceAll(knownText, "ada@example.com", "X") != strings.ReplaceAll(unknownText, "nobody@example.com", "X") {
			t.Errorf("known address answered differently: %d %q vs %q", rec.Code, knownText, unknownText)
		}
		if resetMails() != 1 {
			t.Fatalf("%d reset mails, want 1", resetMails())
		}
		path := mailedResetPath(t, app, "ada@example.com")
		token := strings.TrimPrefix(path, "/reset-password/")

		// Only the hash is stored.
		var rows []models.PasswordReset
		if err := app.db.Find(&rows).Error; err != nil || len(rows) != 1 {
			t.Fatalf("reset rows %v %v", rows, err)
		}
		sum := sha256.Sum256([]byte(token))
		if rows[0].TokenHash != hex.EncodeToString(sum[:]) || strings.Contains(rows[0].TokenHash, token) {
			t.Error("the stored token is not its SHA-256")
		}

		// The form names the account; mismatched or weak passwords change
		// nothing and leave the link usable.
		d := doc(t, visitor.get(path))
		if d.Find(`[data-testid=reset-email]`).Text() != "ada@example.com" {
			t.Fatalf("reset form: %s", d.Text())
		}
		if rec := visitor.post(path, url.Values{"new_password": {"a brand new password"}, "confirm_password": {"something else"}}); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("mismatch: %d", rec.Code)
		}
		if rec := visitor.post(path, url.Values{"new_password": {"short"}, "confirm_password": {"short"}}); rec.Code != http.StatusUnprocessableEntity ||
			doc(t, rec).Find(`[data-testid=problem-new_password]`).Length() != 1 {
			t.Errorf("weak password: %d", rec.Code)
		}
		rec = visitor.post(path, url.Values{"new_password": {"a brand new password"}, "confirm_password": {"a brand new password"}})
		if rec.Code != http.StatusSeeOther || location(rec) != "/login" {
			t.Fatalf("reset: %d %q\n%s", rec.Code, location(rec), rec.Body)
		}
		// Every session is over; only the new password works.
		if rec := signedIn.get("/settings"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/login") {
			t.Errorf("the old session still works after the reset: %d", rec.Code)
		}
		if _, err := app.store.Authenticate(ctx, "ada@example.com", testPassword); err == nil {
			t.Error("the old password still works")
		}
		if _, err := app.store.Authenticate(ctx, "ada@example.com", "a brand new password"); err != nil {
			t.Errorf("the new password does not work: %v", err)
		}
		// Single use.
		if rec := visitor.get(path); rec.Code != http.StatusNotFound || doc(t, rec).Find(`[data-testid=reset-gone]`).Length() != 1 {
			t.Errorf("used link: %d", rec.Code)
		}
		if rec := visitor.post(path, url.Values{"new_password": {"yet another password"}, "confirm_password": {"yet another password"}}); rec.Code != http.StatusNotFound {
			t.Errorf("used link posted again: %d", rec.Code)
		}
		mails, _ := views.RenderedMails(app.store.OutboxMails(ctx, 100))
		notice := false
		for _, m := range mails {
			notice = notice || (m.To == "ada@example.com" && strings.Contains(m.Subject, "password was changed"))
		}
		if !notice {
			t.Error("no notice mailed after the change")
		}
		for _, org := range []string{owner.org.ID, other.org.ID} {
			acts := app.auditActions(org)
			if !contains(acts, "user.password_reset_request") || !contains(acts, "user.password_reset") {
				t.Errorf("audit of %s = %v", org, acts)
			}
		}

		// Only the newest link works, and none after an hour. (An hour on
		// also forgets the throttle counts of the requests above.)
		app.clock.Advance(2 * time.Hour)
		visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}})
		older := mailedResetPath(t, app, "ada@example.com")
		app.clock.Advance(time.Second)
		visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}})
		newest := mailedResetPath(t, app, "ada@example.com")
		if older == newest {
			t.Fatal("the second request mailed the same link")
		}
		if rec := visitor.get(older); rec.Code != http.StatusNotFound {
			t.Errorf("an older link still works: %d", rec.Code)
		}
		if rec := visitor.get(newest); rec.Code != http.StatusOK {
			t.Errorf("the newest link: %d", rec.Code)
		}
		app.clock.Advance(models.PasswordResetTTL)
		if rec := visitor.get(newest); rec.Code != http.StatusNotFound {
			t.Errorf("an expired link: %d", rec.Code)
		}
	})
}

// Asking for links is throttled per address like log-in (A1): after
// ResetAccountThrottle.SlowAfter requests the next is refused with 429 and
// Retry-After, mails nothing, and names no account.
func TestPasswordResetThrottled(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.signupAccount("ada@example.com", "Analytical Engines")
		visitor := app.client()
		for i := 0; i < models.ResetAccountThrottle.SlowAfter; i++ {
			if rec := visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}}); rec.Code != 200 {
				t.Fatalf("request %d: %d", i+1, rec.Code)
			}
		}
		mails, _ := views.RenderedMails(app.store.OutboxMails(context.Background(), 100))
		before := len(mails)
		rec := visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}})
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
			doc(t, rec).Find(`[data-testid=reset-blocked]`).Length() != 1 {
			t.Fatalf("request past the limit: %d (Retry-After %q)", rec.Code, rec.Header().Get("Retry-After"))
		}
		if mails, _ = views.RenderedMails(app.store.OutboxMails(context.Background(), 100)); len(mails) != before {
			t.Error("a throttled request mailed a link")
		}
		// Unknown addresses are throttled the same way (no probing for accounts).
		for i := 0; i < models.ResetAccountThrottle.SlowAfter; i++ {
			visitor.post("/forgot-password", url.Values{"email": {"nobody@example.com"}})
		}
		if rec := visitor.post("/forgot-password", url.Values{"email": {"nobody@example.com"}}); rec.Code != http.StatusTooManyRequests {
			t.Errorf("an unknown address past the limit: %d", rec.Code)
		}
		// The wait passes on the injected clock.
		app.clock.Advance(models.ResetAccountThrottle.BaseDelay + time.Second)
		if rec := visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}}); rec.Code != 200 {
			t.Errorf("after the wait: %d", rec.Code)
		}
	})
}

// A1, A2: a reset ends sessions but not API keys, so the
// form offers to revoke every key the user created, and the notice lists
// the keys left working (names and prefixes, never a secret). Unticked,
// the keys keep working (/v1 and /mcp) and are listed; ticked, they answer
// 401 everywhere, each revoke is audited, and another member's key stays.
func TestPasswordResetOffersToRevokeAPIKeys(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		ada := app.signupAccount("ada@example.com", "Analytical Engines")
		grace := app.joinAccount(ada, "grace@example.com", models.RoleMember)
		adaKey, adaTok, err := app.store.CreateAPIKey(ctx, ada.org.ID, ada.env.ID, ada.user.ID, "ci-runner")
		if err != nil {
			t.Fatal(err)
		}
		graceTok := apiKeyFor(t, app, grace)
		visitor := app.client()
		works := func(tok string) (api, mcp int) {
			t.Helper()
			api = app.apiGet("/v1/gpu/clusters", tok).Code
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			return api, app.do(req).Code
		}
		notice := func() string {
			t.Helper()
			mails, err := views.RenderedMails(app.store.OutboxMails(ctx, 100))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range mails { // newest first
				if m.To == "ada@example.com" && strings.Contains(m.Subject, "password was changed") {
					return m.Text
				}
			}
			return ""
		}
		reset := func(form url.Values) {
			t.Helper()
			visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}})
			path := mailedResetPath(t, app, "ada@example.com")
			box := doc(t, visitor.get(path)).Find(`input[type=checkbox][name=revoke_api_keys][data-testid=reset-revoke-keys]`)
			if box.Length() != 1 || box.AttrOr("checked", "none") != "none" {
				t.Fatalf("the reset form has no unticked box to revoke API keys")
			}
			form.Set("new_password", "a brand new password "+strings.Repeat("x", len(form)))
			form.Set("confirm_password", form.Get("new_password"))
			if rec := visitor.post(path, form); rec.Code != http.StatusSeeOther {
				t.Fatalf("reset: %d\n%s", rec.Code, rec.Body)
			}
		}

		reset(url.Values{})
		if api, mcp := works(adaTok); api != http.StatusOK || mcp != http.StatusOK {
			t.Fatalf("without the box ada's key stops working: /v1 %d, /mcp %d", api, mcp)
		}
		text := notice()
		if !strings.Contains(text, "ci-runner ("+adaKey.Prefix) || !strings.Contains(text, "Analytical Engines") || strings.Contains(text, adaTok) {
			t.Errorf("the notice does not list the live key (name, prefix, never the secret):\n%s", text)
		}
		if strings.Contains(text, "grace") {
			t.Errorf("the notice lists another member's key:\n%s", text)
		}

		app.clock.Advance(2 * time.Hour) // past the reset throttle
		// A mismatch keeps the box as ticked.
		visitor.post("/forgot-password", url.Values{"email": {"ada@example.com"}})
		path := mailedResetPath(t, app, "ada@example.com")
		rec := visitor.post(path, url.Values{"new_password": {"one password here"}, "confirm_password": {"another one here"}, "revoke_api_keys": {"1"}})
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`input[name=revoke_api_keys][checked]`).Length() != 1 {
			t.Errorf("a refused form loses the ticked box: %d", rec.Code)
		}
		if api, _ := works(adaTok); api != http.StatusOK {
			t.Errorf("a refused reset revoked the key: %d", api)
		}
		app.clock.Advance(time.Second) // the next link is the newest
		reset(url.Values{"revoke_api_keys": {"1"}})
		if api, mcp := works(adaTok); api != http.StatusUnauthorized || mcp != http.StatusUnauthorized {
			t.Errorf("with the box ada's key still works: /v1 %d, /mcp %d", api, mcp)
		}
		if api, mcp := works(graceTok); api != http.StatusOK || mcp != http.StatusOK {
			t.Errorf("another member's key was revoked: /v1 %d, /mcp %d", api, mcp)
		}
		if text := notice(); !strings.Contains(text, "was revoked") || strings.Contains(text, "ci-runner") {
			t.Errorf("the notice after revoking:\n%s", text)
		}
		if acts := app.auditActions(ada.org.ID); !contains(acts, "api_key.revoke") {
			t.Errorf("the revoke is not audited: %v", acts)
		}
	})
}
