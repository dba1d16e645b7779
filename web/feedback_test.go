package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// confirmOf is the data-confirm question of the one form posting to action.
func confirmOf(t *testing.T, d *goquery.Document, action string) (question, label string) {
	t.Helper()
	f := d.Find(`form[action="` + action + `"]`)
	if f.Length() != 1 {
		t.Fatalf("forms posting to %s: %d, want 1", action, f.Length())
	}
	q, ok := f.Attr("data-confirm")
	if !ok || q == "" {
		t.Fatalf("the form posting to %s asks for no confirmation", action)
	}
	return q, f.AttrOr("data-confirm-label", "")
}

// Every destructive form asks first, naming what it destroys (O3):
// remove a member, cancel an invitation, revoke an API key, delete an SSH
// key, terminate a cluster. Without JavaScript the same form posts as it is.
func TestDestructiveFormsNameTheirObject(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("owner@example.com", "Acme Research")
		mate := app.joinAccount(owner, "mate@example.com", models.RoleMember)
		if _, _, err := app.store.CreateInvite(ctx, owner.org.ID, models.RoleOwner, owner.user.ID, "new@example.com", models.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		ssh, err := app.store.AddSSHKey(ctx, owner.org.ID, owner.user.ID, "work-laptop", testSSHKey(t, "o@laptop"))
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := app.store.CreateAPIKey(ctx, owner.org.ID, owner.env.ID, owner.user.ID, "ci-runner")
		if err != nil {
			t.Fatal(err)
		}
		cl := launchFor(t, app, owner, "llama-ft")
		c := app.login(owner)

		d := doc(t, c.get("/settings/team"))
		if q, _ := confirmOf(t, d, "/settings/team/members/"+mate.user.ID+"/remove"); !strings.Contains(q, "mate@example.com") || !strings.Contains(q, "Acme Research") {
			t.Errorf("remove member asks %q, want the member and the organisation named", q)
		}
		invites, err := app.store.PendingInvites(ctx, owner.org.ID)
		if err != nil || len(invites) != 1 {
			t.Fatalf("invites %v %v", invites, err)
		}
		if q, _ := confirmOf(t, d, "/settings/team/invites/"+invites[0].ID+"/revoke"); !strings.Contains(q, "new@example.com") {
			t.Errorf("cancel invite asks %q", q)
		}

		d = doc(t, c.get("/settings/api-keys"))
		if q, label := confirmOf(t, d, "/settings/api-keys/"+key.ID+"/revoke"); !strings.Contains(q, "ci-runner") || !strings.Contains(q, key.Prefix) || label != "Revoke key" {
			t.Errorf("revoke asks %q / %q, want the key's name and prefix", q, label)
		}
		d = doc(t, c.get("/settings/ssh-keys"))
		if q, _ := confirmOf(t, d, "/settings/ssh-keys/"+ssh.ID+"/delete"); !strings.Contains(q, "work-laptop") {
			t.Errorf("delete SSH key asks %q", q)
		}
		d = doc(t, c.get("/clusters/"+cl.ID))
		if q, _ := confirmOf(t, d, "/clusters/"+cl.ID+"/terminate"); !strings.Contains(q, "llama-ft") {
			t.Errorf("terminate asks %q", q)
		}
		if d.Find(`[hx-confirm]`).Length() != 0 {
			t.Error("a browser confirm() is still used beside the dialog")
		}
		// The layout carries the one dialog the script opens.
		if d.Find(`dialog#confirm-dialog [data-testid=confirm-ok]`).Length() != 1 {
			t.Error("the layout has no confirmation dialog")
		}

		// Without JavaScript the plain form still does its work.
		if rec := c.post("/settings/ssh-keys/"+ssh.ID+"/delete", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("plain delete: %d", rec.Code)
		}
		if keys, _ := app.store.SSHKeys(ctx, owner.org.ID, owner.user.ID); len(keys) != 0 {
			t.Errorf("the plain form did not delete the key: %v", keys)
		}
	})
}

// The team page offers no action that would fail (O3): the only owner
// can neither be removed nor have their role changed — not even by
// themselves — while with a second owner both may leave or be removed.
func TestTeamHidesActionsThatWouldFail(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme Research")
		admin := app.joinAccount(owner, "admin@example.com", models.RoleAdmin)
		c := app.login(owner)
		row := func(d *goquery.Document, acc account) *goquery.Selection {
			t.Helper()
			r := d.Find(`#member-` + acc.user.ID)
			if r.Length() != 1 {
				t.Fatalf("no row for %s", acc.user.Email)
			}
			return r
		}

		d := doc(t, c.get("/settings/team"))
		self := row(d, owner)
		if self.Find(`[data-testid=only-owner]`).Length() != 1 || self.Find(`form`).Length() != 0 {
			t.Errorf("the only owner's row offers actions: %q", self.Text())
		}
		// Proof the guard matches the rule it anticipates: the post fails.
		if rec := c.post("/settings/team/members/"+owner.user.ID+"/remove", nil); rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("removing the only owner: %d, want 422", rec.Code)
		}
		if row(d, admin).Find(`[data-testid=remove-member]`).Length() != 1 {
			t.Error("the admin's row offers no Remove")
		}
		// An admin sees the owner's row without actions (CanGrant), their own as Leave.
		d = doc(t, app.login(admin).get("/settings/team"))
		if r := row(d, owner); r.Find(`form`).Length() != 0 || r.Find(`[data-testid=only-owner]`).Length() != 0 {
			t.Error("an admin is offered actions on an owner, or told to make someone owner (which they cannot)")
		}
		if r := row(d, admin); r.Find(`[data-testid=leave]`).Length() != 1 || r.Find(`[data-testid=remove-member]`).Length() != 0 {
			t.Errorf("an admin's own row: %q", r.Text())
		}

		// A second owner: the first may now leave, and is asked "Leave …?".
		second := app.joinAccount(owner, "second@example.com", models.RoleOwner)
		d = doc(t, c.get("/settings/team"))
		if q, label := confirmOf(t, d, "/settings/team/members/"+owner.user.ID+"/remove"); !strings.HasPrefix(q, "Leave Acme Research") || label != "Leave" {
			t.Errorf("leaving asks %q / %q", q, label)
		}
		if row(d, second).Find(`[data-testid=remove-member]`).Length() != 1 || row(d, owner).Find(`[data-testid=only-owner]`).Length() != 0 {
			t.Error("with two owners the guard still shows")
		}
	})
}

// The launch page carries what the countdown needs — the lock's end and the
// server's now, from the injected clock — and a fresh-price link for the
// same offer and size, hidden while the lock holds and shown once it
// lapsed (L2).
func TestLaunchPageCountdownAndRequote(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme Research")
		launchFor(t, app, owner, "first")
		c := app.login(owner)
		rec := c.get("/clusters/new?offer=sim:h100x8&nodes=2")
		if rec.Code != http.StatusOK {
			t.Fatalf("launch page: %d", rec.Code)
		}
		d := doc(t, rec)
		exp := d.Find(`[data-testid=quote-expiry]`)
		now := app.clock.Now().UTC()
		if exp.AttrOr("data-now", "") != now.Format(time.RFC3339) || exp.AttrOr("data-expires", "") != now.Add(models.QuoteTTL).Format(time.RFC3339) {
			t.Errorf("countdown data: now %q expires %q", exp.AttrOr("data-now", ""), exp.AttrOr("data-expires", ""))
		}
		again := d.Find(`[data-testid=requote]`)
		if _, hidden := again.Attr("hidden"); !hidden || again.AttrOr("href", "") != "/clusters/new?offer=sim%3Ah100x8&nodes=2" ||
			again.AttrOr("hx-select-oob", "") != "#quote-id" {
			t.Errorf("requote link: %s", goquery.NewDocumentFromNode(again.Get(0)).Text())
		}
		quoteID := d.Find(`#quote-id`).AttrOr("value", "")
		if quoteID == "" || d.Find(`[data-testid=quote]`).AttrOr("data-quote-id", "") != quoteID {
			t.Fatalf("the form's quote %q and the panel's differ", quoteID)
		}

		// Past the lock, a form re-rendered with a problem says it lapsed
		// and shows the link.
		app.clock.Advance(models.QuoteTTL + time.Second)
		rec = c.post("/clusters", url.Values{"quote_id": {quoteID}, "form_token": {strings.Repeat("t", 20)},
			"name": {"late"}, "software": {"none"}, "ports": {"not-a-port"}})
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad ports: %d", rec.Code)
		}
		d = doc(t, rec)
		if !strings.Contains(d.Find(`[data-testid=quote-expiry]`).Text(), "lapsed") {
			t.Errorf("expiry reads %q after the lock", d.Find(`[data-testid=quote-expiry]`).Text())
		}
		if _, hidden := d.Find(`[data-testid=requote]`).Attr("hidden"); hidden {
			t.Error("the fresh-price link stays hidden after the lock lapsed")
		}
	})
}

// Signed out, Launch and Request a quote lead to a log-in that says what the
// visitor was about to do, in display names, and returns there afterwards;
// sign-up carries the same (A1).
func TestSignedOutIntentSurvivesLogin(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("ada@example.com", "Analytical Engines")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		cases := []struct{ start, intent string }{
			{"/clusters/new?offer=sim:h100x8&nodes=2", "Log in to launch 2 × 8 × H100 80GB in Loc us-east."},
			{"/quote-requests/new?accelerator=H100_80GB&gpus_per_node=8&nodes=16&location=us-east", "Log in to request a quote for 16 × 8 × H100 80GB."},
			{"/quote-requests/new", "Log in to request a quote for reserved capacity."},
			{"/quote-requests/new?accelerator=A100_80GB&nodes=4", "Log in to request a quote for 4 machines of A100 80GB."},
		}
		for _, tc := range cases {
			visitor := app.client()
			rec := visitor.get(tc.start)
			login := location(rec)
			if rec.Code != http.StatusSeeOther || !strings.HasPrefix(login, "/login?next=") {
				t.Fatalf("%s signed out: %d %q", tc.start, rec.Code, login)
			}
			d := doc(t, visitor.get(login))
			if got := strings.Join(strings.Fields(d.Find(`[data-testid=intent]`).Text()), " "); !strings.HasPrefix(got, tc.intent) {
				t.Errorf("%s: the log-in page says %q, want %q", tc.start, got, tc.intent)
			}
			signup := d.Find(`[data-testid=signup-link]`).AttrOr("href", "")
			if signup != "/signup?next="+url.QueryEscape(tc.start) {
				t.Errorf("%s: the sign-up link %q loses where the visitor was going", tc.start, signup)
			}
			if got := doc(t, visitor.get(signup)).Find(`[data-testid=intent]`).Text(); !strings.Contains(got, "Sign up to "+strings.TrimPrefix(tc.intent, "Log in to ")) {
				t.Errorf("%s: the sign-up page says %q", tc.start, got)
			}
			rec = visitor.post("/login", url.Values{"email": {owner.user.Email}, "password": {testPassword}, "next": {tc.start}})
			if rec.Code != http.StatusSeeOther || location(rec) != tc.start {
				t.Errorf("%s: after log-in %d → %q", tc.start, rec.Code, location(rec))
			}
			if rec := visitor.get(tc.start); rec.Code != http.StatusOK {
				t.Errorf("%s signed in: %d", tc.start, rec.Code)
			}
		}
		// The filters' Request a quote carries them along.
		d := doc(t, app.client().get("/offers?accelerator=H100_80GB&nodes=4&gpus_per_node=8&interconnect=infiniband"))
		if href := d.Find(`[data-testid=filters-request-quote]`).AttrOr("href", ""); href != "/quote-requests/new?accelerator=H100_80GB&gpus_per_node=8&interconnect=infiniband&nodes=4" {
			t.Errorf("the filters' Request a quote links to %q", href)
		}
		// Every size ("any", O3) is no size a quote can ask for: it is left
		// out, and the quote form starts from its own default.
		d = doc(t, app.client().get("/offers?accelerator=H100_80GB&nodes=4&gpus_per_node=any"))
		if href := d.Find(`[data-testid=filters-request-quote]`).AttrOr("href", ""); href != "/quote-requests/new?accelerator=H100_80GB&nodes=4" {
			t.Errorf("with any GPUs per machine, Request a quote links to %q", href)
		}
		// Without a choice the page picks the largest machine, and says so.
		d = doc(t, app.client().get("/offers?accelerator=H100_80GB&nodes=4"))
		if href := d.Find(`[data-testid=filters-request-quote]`).AttrOr("href", ""); href != "/quote-requests/new?accelerator=H100_80GB&gpus_per_node=8&nodes=4" {
			t.Errorf("with the default GPUs per machine, Request a quote links to %q", href)
		}
		// A plain log-in says nothing of the sort.
		if n := doc(t, app.client().get("/login")).Find(`[data-testid=intent]`).Length(); n != 0 {
			t.Error("a plain log-in page shows an intent")
		}
		// Without a key, the launch form's "Add an SSH key" goes to the keys
		// page, which comes back to the launch with the new key ticked.
		c := app.login(owner)
		d = doc(t, c.get("/clusters/new?offer=sim:h100x8&nodes=2"))
		href := d.Find(`[data-testid=add-ssh-key]`).AttrOr("href", "")
		if !strings.HasPrefix(href, "/settings/ssh-keys?next=") {
			t.Fatalf("Add an SSH key links to %q", href)
		}
		d = doc(t, c.get(href))
		next := d.Find(`#ssh-key-form input[name=next]`).AttrOr("value", "")
		if d.Find(`[data-testid=ssh-key-for-launch]`).Length() != 1 || !strings.HasPrefix(next, "/clusters/new?") {
			t.Fatalf("the keys page does not offer the way back (next %q)", next)
		}
		rec := c.post("/settings/ssh-keys", url.Values{"name": {"laptop"}, "public_key": {testSSHKey(t, "ada@laptop")}, "next": {next}})
		if rec.Code != http.StatusSeeOther || location(rec) != next {
			t.Fatalf("after adding: %d → %q, want back to %q", rec.Code, location(rec), next)
		}
		if n := doc(t, c.get(next)).Find(`input[name=ssh_key_ids]:checked`).Length(); n != 1 {
			t.Errorf("back on the launch page %d keys are ticked, want the new one", n)
		}
		// Only a launch page is a way back: anything else lands on the keys page.
		rec = c.post("/settings/ssh-keys", url.Values{"public_key": {testSSHKey(t, "ada@desk")}, "next": {"https://evil.example/"}})
		if location(rec) != "/settings/ssh-keys" {
			t.Errorf("an outside next led to %q", location(rec))
		}
	})
}

// Every page links the favicon, served like the other assets (versioned,
// immutable); row actions are quiet buttons, and the stylesheet draws
// selects like inputs (O3).
func TestFaviconQuietRowActionsAndSelects(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	owner := app.signupAccount("ada@example.com", "Analytical Engines")
	app.joinAccount(owner, "grace@example.com", models.RoleMember)
	c := app.login(owner)
	for _, path := range []string{"/offers", "/login"} {
		d := doc(t, app.get(path))
		href := d.Find(`link[rel=icon]`).AttrOr("href", "")
		if !strings.HasPrefix(href, "/static/img/favicon.svg?v=") {
			t.Fatalf("%s: favicon link %q", path, href)
		}
		rec := app.get(href)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" ||
			!strings.Contains(rec.Header().Get("Cache-Control"), "immutable") || !strings.Contains(rec.Body.String(), "<svg") {
			t.Errorf("favicon: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
		}
	}
	d := doc(t, c.get("/settings/team"))
	d.Find(`[data-testid=member-row] td:last-child button`).Each(func(_ int, b *goquery.Selection) {
		if cls := b.AttrOr("class", ""); !strings.HasPrefix(cls, "btn-quiet") {
			t.Errorf("row action %q has class %q, want a quiet button", strings.TrimSpace(b.Text()), cls)
		}
	})
	if d.Find(`[data-testid=member-row] td:last-child button`).Length() < 2 {
		t.Error("the team page has no row actions to check")
	}
	css := app.get(doc(t, app.get("/offers")).Find(`link[rel=stylesheet]`).AttrOr("href", "")).Body.String()
	for _, want := range []string{"select.input{", "appearance:none", ".btn-quiet{", ".btn-quiet-danger{"} {
		if !strings.Contains(css, want) {
			t.Errorf("the stylesheet lacks %q", want)
		}
	}
}
