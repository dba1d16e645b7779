package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// statusWords finds HTTP status words on a page: "409 Conflict", or a
// status's own text ("Payment Required") in what a person reads.
var statusWords = regexp.MustCompile(`\b[45]\d\d (Bad|Unauthorized|Payment|Forbidden|Not|Method|Conflict|Gone|Request|Unprocessable|Too|Internal|Service)\b|` +
	`\b(Bad Request|Payment Required|Not Found|Method Not Allowed|Conflict|Unprocessable Entity|Too Many Requests|Internal Server Error|Request Entity Too Large)\b`)

// shownStatusWords is what statusWords finds in the page's title and text.
func shownStatusWords(t testing.TB, rec *httptest.ResponseRecorder) []string {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	d.Find("script, style").Remove()
	return statusWords.FindAllString(d.Find("title").Text()+" "+d.Find("body").Text(), -1)
}

// from is a page's Referer header, as a browser sends it with a form.
func from(path string) []string { return []string{"Referer", "http://example.com" + path} }

// follow is where a 303 leads, fetched as the browser does.
func follow(t testing.TB, c *client, rec *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	if rec.Code != http.StatusSeeOther {
		return rec
	}
	return c.get(location(rec))
}

// stoppedOverBudget is acc's cluster stopped by its environment's budget:
// $59.91 spent in the month against a budget of $50 (B5).
func stoppedOverBudget(t *testing.T, app *testApp, acc account) models.Cluster {
	t.Helper()
	ctx := context.Background()
	cl := makeJoined(t, app, launchFor(t, app, acc, "over"), true)
	app.clock.Advance(90 * time.Minute)
	if _, err := app.store.MeterUsage(ctx); err != nil {
		t.Fatal(err)
	}
	now := app.clock.Now()
	if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusStopped,
		"stopped_at": now, "stopped_from": "ready", "stop_reason": "budget"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := app.db.Model(&models.ClusterNode{}).Where("cluster_id = ?", cl.ID).Update("status", models.NodeStopped).Error; err != nil {
		t.Fatal(err)
	}
	as := app.store.As(models.Actor{OrgID: acc.org.ID, Role: models.RoleOwner, Name: acc.user.Email})
	if _, err := as.SetBudget(ctx, acc.env.ID, 50*models.Micro); err != nil {
		t.Fatal(err)
	}
	got, err := app.store.ClusterByID(ctx, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// B5, A4: while the environment's budget is reached, a
// stopped cluster's Resume is disabled with the reason and a link to the
// budget with the amount needed typed in; a Resume sent anyway (a page
// left open) comes back to the cluster page with the refusal on top and
// that link, not a "409 Conflict" page left on …/resume; the link opens
// the billing page with the amount in the environment's budget field.
func TestResumeOverBudgetStaysOnClusterPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("budget@example.com", "Acme")
		browser := app.login(owner)
		cl := stoppedOverBudget(t, app, owner)
		need := budgetNeeded(59_910_000, cl.USDPerHour)
		if need != 100*models.Micro {
			t.Fatalf("needed budget %s, want $100.00 ($59.91 spent + %s for an hour, whole dollars)", models.USD(need), models.USD(cl.USDPerHour))
		}
		wantHref := "/billing?amount=100.00&budget=" + owner.env.ID + "#budget-" + owner.env.ID

		d := doc(t, browser.get("/clusters/"+cl.ID))
		btn := d.Find(`[data-testid=resume]`)
		if _, disabled := btn.Attr("disabled"); btn.Length() != 1 || !disabled || d.Find(`form[action$="/resume"]`).Length() != 0 {
			t.Fatalf("Resume while the budget is reached: %d buttons, disabled %v", btn.Length(), disabled)
		}
		why := d.Find(`[data-testid=resume-blocked]`)
		if !strings.Contains(why.Text(), "budget of environment default is reached: $59.91 of $50.00") {
			t.Errorf("the disabled Resume's reason: %q", why.Text())
		}
		if href, _ := why.Find(`[data-testid=resume-way]`).Attr("href"); href != wantHref {
			t.Errorf("way forward %q, want %q", href, wantHref)
		}
		if id, _ := btn.Attr("aria-describedby"); id != "resume-blocked" || why.AttrOr("id", "") != "resume-blocked" {
			t.Errorf("the disabled button is not described by its reason")
		}

		rec := browser.post("/clusters/"+cl.ID+"/resume", nil, from("/clusters/"+cl.ID)...)
		if rec.Code != http.StatusSeeOther || location(rec) != "/clusters/"+cl.ID {
			t.Fatalf("refused resume: %d to %q, want 303 to the cluster page", rec.Code, location(rec))
		}
		page := browser.get(location(rec))
		d = doc(t, page)
		flash := d.Find(`[data-testid=flash]`)
		if !strings.Contains(flash.Text(), "budget of environment default is reached") {
			t.Errorf("the refusal is not said on the cluster page: %q", flash.Text())
		}
		if href, _ := flash.Find(`[data-testid=flash-action]`).Attr("href"); href != wantHref {
			t.Errorf("flash link %q, want %q", href, wantHref)
		}
		if w := shownStatusWords(t, page); len(w) > 0 {
			t.Errorf("status words on the cluster page: %q", w)
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.ResumeRequestedAt != nil {
			t.Fatal("a refused resume was recorded")
		}

		d = doc(t, browser.get(strings.Split(wantHref, "#")[0])) // a browser sends no fragment
		if v, _ := d.Find(`#budget-amount-` + owner.env.ID).Attr("value"); v != "100.00" {
			t.Errorf("the budget field after the way forward: %q, want 100.00", v)
		}
	})
}

// B6, L2, A4: Resume without the balance a launch needs
// comes back to the cluster page with the shortfall and "Add $34.94"
// linking Add funds with the amount typed in.
func TestResumeShortOfBalanceLinksAddFunds(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("short@example.com", "Acme")
		browser := app.login(owner)
		cl := stoppedFor(t, app, owner, "train")
		bal, _ := app.store.Balance(ctx, owner.org.ID)
		if _, err := app.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: owner.org.ID, Kind: models.LedgerAdjustment,
			Amount: 5*models.Micro - bal, IdemKey: "spend-down", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		if d := doc(t, browser.get("/clusters/"+cl.ID)); d.Find(`form[action$="/resume"] [data-testid=resume]`).Length() != 1 {
			t.Fatal("Resume is not offered when only the balance is short (the refusal says how much to add)")
		}
		rec := browser.post("/clusters/"+cl.ID+"/resume", nil, from("/clusters/"+cl.ID)...)
		if rec.Code != http.StatusSeeOther || location(rec) != "/clusters/"+cl.ID {
			t.Fatalf("refused resume: %d to %q", rec.Code, location(rec))
		}
		d := doc(t, browser.get(location(rec)))
		flash := d.Find(`[data-testid=flash]`)
		a := flash.Find(`[data-testid=flash-action]`)
		if !strings.Contains(flash.Text(), "Resuming needs the balance a launch needs") || a.Text() != "Add $34.94" ||
			a.AttrOr("href", "") != "/billing?amount=34.94#add-funds" {
			t.Fatalf("flash %q, link %q → %q", flash.Text(), a.Text(), a.AttrOr("href", ""))
		}
		d = doc(t, browser.get(strings.Split(a.AttrOr("href", ""), "#")[0]))
		if v, _ := d.Find(`#amount`).Attr("value"); v != "34.94" {
			t.Errorf("Add funds after the way forward: %q, want 34.94", v)
		}
	})
}

// V2, A4: a negative (or unreadable) size for a new volume on
// the launch page keeps the launch page, priced without the volume, with
// the size as typed and the problem beside it.
func TestLaunchPageBadVolumeSizeInline(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("launch@example.com", "Acme")
		launchFor(t, app, owner, "seed") // deposit and the us-east offer
		browser := app.login(owner)
		for _, typed := range []string{"-5", "lots"} {
			rec := browser.get("/clusters/new?offer=sim:h100x8&nodes=2&persistent_gb="+url.QueryEscape(typed), from("/clusters/new?offer=sim:h100x8&nodes=2")...)
			if rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("%q: %d %s", typed, rec.Code, rec.Body.String())
			}
			d := doc(t, rec)
			if d.Find(`[data-testid=error-page]`).Length() != 0 || d.Find(`[data-testid=launch-storage]`).Length() != 1 {
				t.Fatalf("%q: not the launch page", typed)
			}
			if v, _ := d.Find(`#persistent_gb`).Attr("value"); v != typed {
				t.Errorf("%q: the size field holds %q", typed, v)
			}
			if p := d.Find(`[data-testid=storage-problem]`).Text(); !strings.Contains(p, "whole number of GB") {
				t.Errorf("%q: problem %q", typed, p)
			}
			if got := d.Find(`[data-testid=storage-current]`).Text(); !strings.Contains(got, "takes no persistent volume") {
				t.Errorf("%q: priced with %q", typed, got)
			}
			if w := shownStatusWords(t, rec); len(w) > 0 {
				t.Errorf("%q: status words %q", typed, w)
			}
		}
	})
}

// V3, B9, A4: a volume grow refused because a cluster
// mounted the volume meanwhile, or because the balance cannot take it,
// is said beside the size as typed on the volumes page (with "Add $…" for
// the balance), not on an error page.
func TestVolumeGrowRefusalsInline(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("grow@example.com", "Acme")
		cl := launchFor(t, app, owner, "mounter")
		browser := app.login(owner)
		as := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, UserID: owner.user.ID, Role: models.RoleOwner, Name: owner.user.Email})
		v, err := as.CreateVolume(ctx, models.VolumeInput{Name: "ckpt", Location: "us-east", SizeGB: 100})
		if err != nil {
			t.Fatal(err)
		}
		// a cluster mounts it after the page was shown (V3)
		app.db.Model(&models.Volume{}).Where("id = ?", v.ID).Update("cluster_id", cl.ID)
		rec := browser.post("/volumes/"+v.ID+"/grow", url.Values{"size_gb": {"250"}}, from("/volumes")...)
		d := doc(t, rec)
		if rec.Code != http.StatusConflict || d.Find(`[data-testid=error-page]`).Length() != 0 {
			t.Fatalf("grow while attached: %d, error page %d", rec.Code, d.Find(`[data-testid=error-page]`).Length())
		}
		if p := d.Find(`[data-testid=problem-size_gb]`).Text(); !strings.Contains(p, "mounter") {
			t.Errorf("grow while attached: problem %q", p)
		}
		if w := shownStatusWords(t, rec); len(w) > 0 {
			t.Errorf("status words %q", w)
		}

		app.db.Model(&models.Volume{}).Where("id = ?", v.ID).Update("cluster_id", "")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("status", models.StatusTerminated)
		bal, _ := app.store.Balance(ctx, owner.org.ID)
		if _, err := app.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: owner.org.ID, Kind: models.LedgerAdjustment,
			Amount: 5*models.Micro - bal, IdemKey: "spend-down", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		rec = browser.post("/volumes/"+v.ID+"/grow", url.Values{"size_gb": {"90000"}}, from("/volumes")...)
		d = doc(t, rec)
		if rec.Code != http.StatusPaymentRequired || d.Find(`[data-testid=error-page]`).Length() != 0 {
			t.Fatalf("grow past the balance: %d", rec.Code)
		}
		if v, _ := d.Find(`#grow-` + v.ID).Attr("value"); v != "90000" {
			t.Errorf("the grow field holds %q", v)
		}
		way := d.Find(`[data-testid=way-forward]`)
		if !strings.HasPrefix(way.Text(), "Add $") || !strings.HasPrefix(way.AttrOr("href", ""), "/billing?amount=") {
			t.Errorf("way forward %q → %q", way.Text(), way.AttrOr("href", ""))
		}
		if w := shownStatusWords(t, rec); len(w) > 0 {
			t.Errorf("status words %q", w)
		}
	})
}

// B5, A4: a budget refused on the billing page without htmx
// comes back with the amount as typed and the problem beside it.
func TestBudgetRefusalKeepsTyped(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("typed@example.com", "Acme")
		browser := app.login(owner)
		rec := browser.post("/billing/budgets/"+owner.env.ID, url.Values{"amount": {"-20"}}, from("/billing")...)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("refused budget: %d", rec.Code)
		}
		d := doc(t, rec)
		if v, _ := d.Find(`#budget-amount-` + owner.env.ID).Attr("value"); v != "-20" {
			t.Errorf("budget field %q, want -20 as typed", v)
		}
		if d.Find(`[data-testid=budget-problem]`).Length() != 1 {
			t.Error("no problem beside the budget")
		}
	})
}

// A4: an error page says what happened in words, never the
// HTTP status ("409 Conflict"), and "Back to…" goes where the person came
// from, or else to the page the address belongs to.
func TestErrorPageBackFollowsTheVisit(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("back@example.com", "Acme")
		cl := launchFor(t, app, owner, "origin")
		browser := app.login(owner)
		cases := []struct {
			path    string
			headers []string
			href    string
			label   string
		}{
			{"/clusters/new", from("/billing"), "/billing", "Back to billing"},
			{"/clusters/new?offer=sim:nope&nodes=2", from("/volumes"), "/volumes", "Back to volumes"},
			{"/clusters/new", nil, "/offers", "Back to offers"},
			{"/clusters/" + cl.ID + "/kubeconfig", nil, "/clusters/" + cl.ID, "Back to the cluster"},
			{"/clusters/cl_nope", from("/clusters"), "/clusters", "Back to your clusters"},
			{"/clusters/new", []string{"Referer", "https://elsewhere.example/billing"}, "/offers", "Back to offers"},
		}
		for _, tc := range cases {
			rec := browser.get(tc.path, tc.headers...)
			d := doc(t, rec)
			back := d.Find(`[data-testid=error-back]`)
			if d.Find(`[data-testid=error-page]`).Length() != 1 || back.AttrOr("href", "") != tc.href || back.Text() != tc.label {
				t.Errorf("%s from %v: %d, back %q → %q, want %q → %q", tc.path, tc.headers, rec.Code, back.Text(), back.AttrOr("href", ""), tc.label, tc.href)
			}
			if w := shownStatusWords(t, rec); len(w) > 0 {
				t.Errorf("%s: status words %q", tc.path, w)
			}
		}
	})
}

// A4: every refusal a customer page can meet — a cluster's
// actions in the wrong state, an attached volume's delete, forms with bad
// input, an expired form — keeps the person on the page they were on
// (inline, or back to it with the refusal on top), and no page they see
// shows HTTP status words.
func TestCustomerRefusalsStayInPlace(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("walk@example.com", "Acme")
		cl := launchFor(t, app, owner, "walker") // provisioning
		stopped := stoppedFor(t, app, owner, "paused")
		as := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, UserID: owner.user.ID, Role: models.RoleOwner, Name: owner.user.Email})
		v, err := as.CreateVolume(ctx, models.VolumeInput{Name: "ckpt", Location: "us-east", SizeGB: 100})
		if err != nil {
			t.Fatal(err)
		}
		app.db.Model(&models.Volume{}).Where("id = ?", v.ID).Update("cluster_id", cl.ID)
		bal, _ := app.store.Balance(ctx, owner.org.ID)
		if _, err := app.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: owner.org.ID, Kind: models.LedgerAdjustment,
			Amount: 5*models.Micro - bal, IdemKey: "spend-down", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		browser := app.login(owner)
		clusterPage, stoppedPage := "/clusters/"+cl.ID, "/clusters/"+stopped.ID
		cases := []struct {
			name, path string
			form       url.Values
			page       string // the page it was sent from, where the person must stay
		}{
			{"resume without balance", stoppedPage + "/resume", nil, stoppedPage},
			{"resume a starting cluster", clusterPage + "/resume", nil, clusterPage},
			{"retry install while starting", clusterPage + "/retry-install", nil, clusterPage},
			{"add a worker while starting", clusterPage + "/workers", nil, clusterPage},
			{"replace a machine while starting", clusterPage + "/nodes/1/replace", nil, clusterPage},
			{"recover while starting", clusterPage + "/recover", nil, clusterPage},
			{"delete an attached volume", "/volumes/" + v.ID + "/delete", nil, "/volumes"},
			{"grow to less", "/volumes/" + v.ID + "/grow", url.Values{"size_gb": {"-3"}}, "/volumes"},
			{"create a volume past the balance", "/volumes", url.Values{"name": {"big"}, "location": {"us-east"}, "size_gb": {"90000"}}, "/volumes"},
			{"top-up not an amount", "/billing/top-ups", url.Values{"amount": {"a lot"}}, "/billing"},
			{"budget not an amount", "/billing/budgets/" + owner.env.ID, url.Values{"amount": {"x"}}, "/billing"},
			{"expired form", stoppedPage + "/resume", url.Values{"_csrf": {"stale"}}, stoppedPage},
			{"another org's cluster", "/clusters/cl_nope/terminate", nil, "/clusters"},
		}
		for _, tc := range cases {
			rec := browser.post(tc.path, tc.form, from(tc.page)...)
			if rec.Code == http.StatusSeeOther && location(rec) != tc.page {
				t.Errorf("%s: sent to %q, not back to %s", tc.name, location(rec), tc.page)
				continue
			}
			if rec.Code < 300 {
				t.Errorf("%s: accepted (%d)", tc.name, rec.Code)
				continue
			}
			shown := follow(t, browser, rec)
			d := doc(t, shown)
			if d.Find(`[data-testid=error-page]`).Length() != 0 {
				t.Errorf("%s: an error page (%d)", tc.name, shown.Code)
			}
			if d.Find(`[data-testid=flash], .problem, [data-testid$=problem], [role=alert]`).Length() == 0 {
				t.Errorf("%s: the refusal is not said on the page", tc.name)
			}
			if w := shownStatusWords(t, shown); len(w) > 0 {
				t.Errorf("%s: status words %q", tc.name, w)
			}
		}
		for _, path := range []string{"/billing?month=banana", "/clusters/new?offer=sim:h100x8&nodes=2&persistent_gb=-1"} {
			rec := browser.get(path)
			if d := doc(t, rec); d.Find(`[data-testid=error-page]`).Length() != 0 {
				t.Errorf("%s: an error page", path)
			}
			if w := shownStatusWords(t, rec); len(w) > 0 {
				t.Errorf("%s: status words %q", path, w)
			}
		}
	})
}

// B5, B6: clusters the budget or the balance stopped are
// announced on every dashboard page of the organisation — one banner per
// cause, each cluster linked, with the way forward for owners and admins
// (members are told who can act) — until they are resumed.
func TestStopBannerOnDashboardPages(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("banner@example.com", "Acme")
		balanceStopped := stoppedFor(t, app, owner, "broke") // launched before the budget is reached
		budgetStopped := stoppedOverBudget(t, app, owner)
		browser := app.login(owner)
		for _, path := range []string{"/clusters", "/offers", "/volumes", "/billing", "/clusters/" + budgetStopped.ID} {
			d := doc(t, browser.get(path))
			budget, balance := d.Find(`[data-testid=stop-banner][data-reason=budget]`), d.Find(`[data-testid=stop-banner][data-reason=balance]`)
			if path == "/clusters/"+budgetStopped.ID {
				// B6: the cluster's own page says why it stopped once, in its
				// stop note; the banner names only the other causes' clusters.
				if budget.Length() != 0 || balance.Length() != 1 || d.Find(`[data-testid=stop-state]`).Length() != 1 {
					t.Fatalf("%s: %d budget banners, %d balance banners, %d stop notes; want 0, 1, 1", path, budget.Length(), balance.Length(),
						d.Find(`[data-testid=stop-state]`).Length())
				}
				continue
			}
			if budget.Length() != 1 || balance.Length() != 1 {
				t.Fatalf("%s: %d budget and %d balance banners", path, budget.Length(), balance.Length())
			}
			if !strings.Contains(budget.Text(), "1 cluster was stopped because the budget of its environment is reached") ||
				budget.Find(`a[href="/clusters/`+budgetStopped.ID+`"]`).Length() != 1 ||
				budget.Find(`[data-testid=stop-banner-action]`).AttrOr("href", "") != "/billing#budgets" {
				t.Errorf("%s: budget banner %q", path, budget.Text())
			}
			if !strings.Contains(balance.Text(), "stopped because the balance ran out") || balance.Find(`a[href="/clusters/`+balanceStopped.ID+`"]`).Length() != 1 ||
				balance.Find(`[data-testid=stop-banner-action]`).AttrOr("href", "") != "/billing#add-funds" {
				t.Errorf("%s: balance banner %q", path, balance.Text())
			}
		}

		member := app.signupAccount("member@example.com", "Solo")
		if err := app.db.Create(&models.Membership{OrgID: owner.org.ID, UserID: member.user.ID, Role: models.RoleMember, CreatedAt: app.clock.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		member.org = owner.org
		d := doc(t, app.login(member).get("/clusters"))
		if b := d.Find(`[data-testid=stop-banner]`); b.Length() != 2 || b.Find(`[data-testid=stop-banner-action]`).Length() != 0 ||
			!strings.Contains(b.Text(), "An owner or admin") {
			t.Errorf("member's banners: %d, %q", b.Length(), b.Text())
		}

		// Resumed: no longer announced.
		if _, err := app.store.Deposit(ctx, owner.org.ID, 500*models.Micro, "refill", "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: owner.user.Email}).SetBudget(ctx, owner.env.ID, 5000*models.Micro); err != nil {
			t.Fatal(err)
		}
		if rec := browser.post("/clusters/"+balanceStopped.ID+"/resume", nil, from("/clusters/"+balanceStopped.ID)...); rec.Code != http.StatusSeeOther {
			t.Fatalf("resume: %d", rec.Code)
		}
		d = doc(t, browser.get("/clusters"))
		if d.Find(`[data-testid=stop-banner][data-reason=balance]`).Length() != 0 || d.Find(`[data-testid=stop-banner][data-reason=budget]`).Length() != 1 {
			t.Errorf("after the resume: %q", d.Find(`[data-testid=stop-banner]`).Text())
		}
	})
}
