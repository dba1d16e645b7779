package web

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// unsafeInName is what a screenshot's file name does not keep of a path.
var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// screenWidths are a phone and a desktop, in CSS pixels.
var screenWidths = []int64{390, 1440}

// Every page fits the screen, at phone width and on a desktop (O3,
// "Phones"): a customer who launched a cluster on the fake clock, who is
// also an operator, loads every page the product has; none may be wider
// than the viewport (scrollWidth > innerWidth means the page scrolls
// sideways). A screenshot of each page at each width is saved: under
// SCREENSHOTS_DIR when it is set, else in the test's artifact directory
// (kept by `go test -artifacts`).
func TestBrowserEveryPageFitsTheScreen(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 4*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	acc := app.signupAccount("ada.lovelace@analytical-engines.example.com", "Analytical Engines Research")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "phones-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.AddSSHKey(bg, acc.org.ID, acc.user.ID, "laptop", testSSHKey(t, "ada@laptop")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.store.CreateAPIKey(bg, acc.org.ID, acc.env.ID, acc.user.ID, "training pipeline"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.SetOperator(bg, acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	app.joinAccount(acc, "grace@analytical-engines.example.com", models.RoleMember)
	_, inviteToken, err := app.store.CreateInvite(bg, acc.org.ID, models.RoleOwner, acc.user.ID, "charles@analytical-engines.example.com", models.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	rec := app.login(acc).post("/quote-requests", validQuoteForm())
	quoteReq := location(rec)
	if !strings.HasPrefix(quoteReq, "/quote-requests/") {
		t.Fatalf("quote request: %d %q", rec.Code, quoteReq)
	}
	quoteReqID := quoteReq[strings.LastIndex(quoteReq, "/")+1:]

	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
		}
	}

	// Log in, then launch a cluster from the offers page, at phone width.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the offers page", `location.pathname === '/offers'`)
	offers := "/offers?accelerator=H100_80GB&nodes=2"
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+offers)); err != nil {
		t.Fatal(err)
	}
	launch, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]').getAttribute('href')`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+launch),
		chromedp.WaitVisible(`#launch-form`),
		chromedp.SetValue(`#name`, "llama-3-70b-instruct-finetune"),
		chromedp.SetValue(`#env`, "NCCL_DEBUG=INFO\nWANDB_PROJECT=llama-3-70b-instruct-finetune-long-context"),
		chromedp.SetValue(`#start_command`, "torchrun --nnodes 2 --nproc-per-node 8 train.py --config configs/llama3-70b.yaml"),
		chromedp.SetValue(`#ports`, "8888, 6006"),
		clickLive(`[data-testid=launch-submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the cluster page", `location.pathname.startsWith('/clusters/') && location.pathname !== '/clusters/new'`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	clusterID := loc[strings.LastIndex(loc, "/")+1:]
	for i := 0; i < 60 && j.cluster(acc.org.ID, clusterID).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
	}
	if st := j.cluster(acc.org.ID, clusterID).Status; st != models.StatusReady {
		t.Fatalf("the cluster is %s, want ready", st)
	}

	// A volume with a long name, in the cluster's location (V1–V3).
	vol, err := app.store.As(models.Actor{OrgID: acc.org.ID, EnvID: acc.env.ID, UserID: acc.user.ID, Role: models.RoleOwner, Name: acc.user.Email}).
		CreateVolume(bg, models.VolumeInput{Name: "llama-3-70b-instruct-checkpoints-long-context", Location: j.cluster(acc.org.ID, clusterID).Location, SizeGB: 20000})
	if err != nil {
		t.Fatal(err)
	}
	// The cloud bills the cluster above its launch cost (OP1, Q2): listed on /admin/prices.
	if cl := j.cluster(acc.org.ID, clusterID); true {
		if _, err := app.store.RecordBilledPrice(bg, cl, cl.UpstreamMachineHour+1_234_567); err != nil {
			t.Fatal(err)
		}
	}
	signedIn := []string{
		offers, launch, "/clusters/" + clusterID, "/clusters",
		"/volumes", offers + "&volume=" + vol.ID, launch + "&volume=" + vol.ID,
		"/billing", "/settings", "/settings/ssh-keys", "/settings/api-keys", "/settings/environments",
		"/settings/team", "/settings/audit",
		"/quote-requests", "/quote-requests/new", quoteReq,
		"/admin", "/admin/quote-requests", "/admin/quote-requests/" + quoteReqID + "/private-offer",
		"/admin/orgs/" + acc.org.ID + "/balance", "/admin/providers", "/admin/payments", "/admin/machines", "/admin/jobs", "/admin/audit", "/admin/leaks",
		"/admin/prices", "/dev/mailbox",
	}
	mails, err := views.RenderedMails(app.store.OutboxMails(bg, 1))
	if err != nil || len(mails) == 0 {
		t.Fatalf("no mail in the outbox to show (%v)", err)
	}
	signedIn = append(signedIn, "/dev/mailbox/"+mails[0].ID)
	for _, path := range signedIn {
		fitsTheScreen(t, ctx, srv.URL, path, "")
	}
	offersOnPhone(t, ctx, srv.URL+offers)
	keyColumnsOnPhone(t, ctx, srv.URL)

	// Signed out: the account pages and an invitation.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(srv.URL+"/clusters"),
		clickLive(`[data-testid=nav-menu] summary`),
		clickLive(`[data-testid=menu-logout]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("logged out", `!document.querySelector('form[action="/logout"]')`)
	for _, path := range []string{"/login", "/login?next=" + url.QueryEscape(launch), "/signup", "/forgot-password",
		"/invites/" + url.PathEscape(inviteToken), offers} {
		fitsTheScreen(t, ctx, srv.URL, path, "signed-out")
	}
}

// fitsTheScreen loads path at each of screenWidths, fails when the page is
// wider than the viewport (naming the widest elements), and saves a
// full-page screenshot of it.
func fitsTheScreen(t *testing.T, ctx context.Context, base, path, prefix string) {
	t.Helper()
	for _, w := range screenWidths {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(w, 900),
			chromedp.Navigate(base+path),
			chromedp.WaitReady(`main`),
		); err != nil {
			t.Fatalf("%s at %d px: %v", path, w, err)
		}
		sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`[window.innerWidth, document.documentElement.scrollWidth]`))
		if err != nil || len(sizes) != 2 {
			t.Fatalf("%s: measuring: %v", path, err)
		}
		inner, scroll := sizes[0], sizes[1]
		if inner != w {
			t.Fatalf("%s: the viewport is %d px wide, want %d", path, inner, w)
		}
		if scroll > inner {
			culprits, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('body *')]
				.filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
				.slice(-5).map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.') + ' → ' + Math.round(e.getBoundingClientRect().right) + ' px')
				.join('\n')`))
			t.Errorf("%s is %d px wide on a %d px screen; what sticks out:\n%s", path, scroll, inner, culprits)
		}
		// The header is one row: on a phone the sections fold into a menu.
		if h, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('header').getBoundingClientRect().height`)); err != nil || h > 72 {
			t.Errorf("%s at %d px: the header is %.0f px high (%v), want one row", path, w, h, err)
		}
		saveScreenshot(t, ctx, prefix+path, w)
	}
}

// saveScreenshot writes a full-page PNG named after the path and width.
func saveScreenshot(t *testing.T, ctx context.Context, path string, width int64) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", path, err)
	}
	dir := os.Getenv("SCREENSHOTS_DIR")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.Trim(unsafeInName.ReplaceAllString(path, "_"), "_")
	if len(name) > 80 {
		name = name[:80]
	}
	file := filepath.Join(dir, name+"-"+strconv.FormatInt(width, 10)+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// keyColumnsOnPhone checks that on a phone (390 px) every table's key
// columns are on screen, not cut off to the right (B3): the
// tables become cards below 640 px; at 1440 px they are tables with their
// header row.
func keyColumnsOnPhone(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	pages := []struct {
		path, table string
		keys        []string
	}{
		{"/billing", `[data-testid=ledger-row]`, []string{`[data-testid=ledger-row] [data-testid=ledger-amount]`,
			`[data-testid=ledger-carried] [data-testid=ledger-amount]`, `[data-testid=ledger-closing]`}},
		{"/billing", `[data-testid=budget-row]`, []string{`[data-testid=budget-row] [data-testid=budget-spend]`,
			`[data-testid=budget-row] [data-testid=budget-percent]`, `[data-testid=budget-row] [data-testid=budget-forecast]`,
			`[data-testid=run-out-row] [data-testid=run-out-at]`}},
		{"/clusters", `[data-testid=cluster-row]`, []string{`[data-testid=cluster-row] a.link`, `[data-testid=cluster-row] [data-testid=cluster-status] [data-testid=status-badge]`,
			`[data-testid=cluster-row] [data-testid=cluster-shape]`, `[data-testid=cluster-row] [data-testid=cluster-price]`}},
		{"/settings/audit", `[data-testid=audit-row]`, []string{`[data-testid=audit-row] [data-testid=audit-when]`,
			`[data-testid=audit-row] [data-testid=audit-who]`, `[data-testid=audit-row] [data-testid=audit-action]`}},
		{"/admin/audit", `[data-testid=admin-audit-row]`, []string{`[data-testid=admin-audit-row] [data-testid=admin-audit-when]`,
			`[data-testid=admin-audit-row] [data-testid=admin-audit-action]`}},
		{"/admin/quote-requests", `[data-testid=admin-quote-request-row]`, []string{`[data-testid=admin-quote-request-row] [data-testid=qr-request]`,
			`[data-testid=admin-quote-request-row] [data-testid=qr-budget]`, `[data-testid=admin-quote-request-row] [data-testid=qr-status] [data-testid=status-badge]`}},
	}
	// onScreen: the first match is shown, has a size, and lies within the
	// viewport's width (its text too: nothing cut off to the right).
	onScreen := func(sel string) string {
		return `(() => { const e = document.querySelector(` + jsString(sel) + `);
			if (!e || !e.checkVisibility()) return 'missing or hidden';
			const r = e.getBoundingClientRect();
			if (r.width <= 0 || r.height <= 0) return 'no size';
			if (r.left < 0 || r.right > window.innerWidth + 0.5) return 'off screen: ' + Math.round(r.left) + '–' + Math.round(r.right) + ' px';
			if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') return 'cut off';
			return ''; })()`
	}
	for _, p := range pages {
		for _, w := range []int64{390, 1440} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(base+p.path), chromedp.WaitReady(`main`)); err != nil {
				t.Fatal(err)
			}
			if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(p.table)+`).length`)); n == 0 {
				t.Fatalf("%s: no %s to look at", p.path, p.table)
			}
			head, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const h = document.querySelector(`+jsString(p.table)+`).closest('table').tHead; return !!h && h.checkVisibility(); })()`))
			if err != nil || head != (w >= 640) {
				t.Errorf("%s at %d px: the header row of %s shown = %v (%v); want a table from 640 px, cards below", p.path, w, p.table, head, err)
			}
			if w != 390 {
				continue
			}
			for _, sel := range p.keys {
				if why, err := chromedp.Run(ctx, chromedp.Evaluate[string](onScreen(sel))); err != nil || why != "" {
					t.Errorf("%s at 390 px: %s is not on screen: %s %v", p.path, sel, why, err)
				}
			}
			saveScreenshot(t, ctx, "cards"+p.path+"-"+strings.Trim(p.table, "[]"), w)
		}
	}
}

// offersOnPhone checks what a phone shows of the offers page: cards with the
// price and Launch in view, the filters folded until asked for; a desktop
// shows the table and the filters, no cards.
func offersOnPhone(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	visible := func(sel string) string {
		return `(() => { const e = document.querySelector(` + jsString(sel) + `);
			if (!e || !e.checkVisibility()) return false; const r = e.getBoundingClientRect();
			return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= window.innerWidth; })()`
	}
	check := func(width int64, want map[string]bool) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(url), chromedp.WaitReady(`main`)); err != nil {
			t.Fatal(err)
		}
		for sel, shown := range want {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](visible(sel)))
			if err != nil || got != shown {
				t.Errorf("offers at %d px: %s on screen = %v (%v), want %v", width, sel, got, err, shown)
			}
		}
	}
	card := `[data-card-offer-id="sim:h100.8x.ib"]`
	check(390, map[string]bool{
		card + ` [data-testid=card-launch-link]`:   true,
		card + ` [data-testid=card-cluster-price]`: true,
		`[data-testid=offer-row]`:                  false,
		`#offer-filters`:                           false,
		`[data-testid=filter-toggle]`:              true,
	})
	// The header's sections are behind Menu on a phone.
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](visible(`[data-testid=nav-menu] a[href="/billing"]`))); got {
		t.Error("the phone menu shows its sections before it is opened")
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=nav-menu] summary`)); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](visible(`[data-testid=nav-menu] a[href="/billing"]`))); err != nil || !got {
		t.Errorf("the phone menu did not open onto the sections (%v)", err)
	}
	saveScreenshot(t, ctx, "menu-open", 390)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('offer-results').click(), true)`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](visible(`[data-testid=nav-menu] a[href="/billing"]`))); got {
		t.Error("the phone menu stayed open after a click outside it")
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=filter-toggle]`)); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](visible(`#offer-filters`))); err != nil || !got {
		t.Errorf("the filters did not unfold on a phone (%v)", err)
	}
	saveScreenshot(t, ctx, "offers-filters-open", 390)
	check(1440, map[string]bool{
		`[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]`: true,
		`#offer-filters`:              true,
		`[data-testid=filter-toggle]`: false,
		`[data-testid=nav-menu]`:      false,
		card:                          false,
	})
}
