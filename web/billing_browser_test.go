package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// The billing journey (B2) in a real browser: a new account (not the
// demo) signs up, adds funds in test mode, launches, and after the fake
// clock moves and the billing job runs sees the balance fall and opens its
// cluster's usage line into a row per machine (B1, B3, B7).
func TestBrowserBillingNewAccount(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for { // a navigation interrupts one Poll: poll again
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
				t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, body)
			}
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`) || {innerText: ''}).innerText.trim()`))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}

	// Sign up: a new organisation with no money.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/signup"),
		chromedp.WaitVisible(`#signup-form`),
		chromedp.SetValue(`#name`, "Grace"),
		chromedp.SetValue(`#email`, "grace@example.com"),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.SetValue(`#org_name`, "Grace Compute"),
		clickLive(`#signup-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `!!document.querySelector('[data-testid=header-balance]')`)
	if got := text(`[data-testid=header-balance]`); !strings.Contains(got, "$0.00") {
		t.Errorf("a new organisation's header balance %q", got)
	}
	u, err := app.store.UserByEmail(bg, "grace@example.com")
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := app.store.OrgsForUser(bg, u.ID)
	if err != nil || len(orgs) != 1 {
		t.Fatalf("orgs %v %v", orgs, err)
	}
	orgID := orgs[0].OrgID
	if _, err := app.store.AddSSHKey(bg, orgID, u.ID, "laptop", testSSHKey(t, "grace@laptop")); err != nil {
		t.Fatal(err)
	}

	// Add funds in test mode: credited at once, and labelled.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/billing"),
		chromedp.WaitVisible(`[data-testid=top-up-form]`),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(`[data-testid=test-mode]`), "Test mode") {
		t.Error("test mode is not labelled")
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(`#amount`, "1000"), clickLive(`[data-testid=add-funds]`)); err != nil {
		t.Fatal(err)
	}
	wait("the credited balance", `document.querySelector('[data-testid=balance]').innerText === '$1,000.00'`)

	// Launch 2 machines and run the jobs until the cluster is ready.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/offers?accelerator=H100_80GB&nodes=2"),
		chromedp.WaitVisible(`[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]`),
		clickLive(`[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the launch page", `!!document.querySelector('#launch-form')`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#name`, "paid-run"),
		clickLive(`#launch-form input[name=software][value=slurm]`),
		clickLive(`[data-testid=launch-submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the cluster page", `!!document.querySelector('[data-testid=cluster-name]')`)
	clusters, err := app.store.ClustersForOrg(bg, orgID)
	if err != nil || len(clusters) != 1 {
		t.Fatalf("clusters %v %v", clusters, err)
	}
	id := clusters[0].ID
	for i := 0; i < 60 && j.cluster(orgID, id).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
	}
	if st := j.cluster(orgID, id).Status; st != models.StatusReady {
		t.Fatalf("cluster %s, want ready", st)
	}

	// 90 minutes on, the billing job runs: the balance falls.
	app.clock.Advance(90 * time.Minute)
	if _, err := app.store.MeterUsage(bg); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"billing-1440", 1440, 1000}, {"billing-390", 390, 844}} {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(w.width, w.height),
			chromedp.Navigate(srv.URL+"/billing"),
			chromedp.WaitVisible(`[data-testid=usage-line-toggle]`),
		); err != nil {
			t.Fatal(err)
		}
		if got := text(`[data-testid=balance]`); got == "$1,000.00" || !strings.HasPrefix(got, "$9") {
			t.Errorf("balance after 90 minutes %q, want it below $1,000.00", got)
		}
		if got := text(`[data-testid=usage-line]`); !strings.Contains(got, "Cluster usage — paid-run") {
			t.Errorf("usage line %q", got)
		}
		// B3: the line shows it opens (a chevron, aria-expanded) and closes again.
		wait("a closed usage line with its chevron", `(() => { const a = document.querySelector('[data-testid=usage-line-toggle]');
			const c = document.querySelector('[data-testid=usage-line-chevron]').getBoundingClientRect();
			return a.getAttribute('aria-expanded') === 'false' && c.width > 0 && c.height > 0 })()`)
		if err := chromedp.Do(ctx, clickLive(`[data-testid=usage-line-toggle]`)); err != nil {
			t.Fatal(err)
		}
		wait("the per-machine rows", `document.querySelectorAll('[data-testid=machine-row]').length === 2 && location.search === ''`)
		wait("the line marked open, its chevron turned", `document.querySelector('[data-testid=usage-line-toggle]').getAttribute('aria-expanded') === 'true' &&
			getComputedStyle(document.querySelector('[data-testid=usage-line-chevron]')).transform !== 'none'`)
		if got := text(`[data-testid=machine-row]`); !strings.Contains(got, "node-0") || !strings.Contains(got, "running") {
			t.Errorf("machine row %q", got)
		}
		journeyShot(t, ctx, w.name)
		if err := chromedp.Do(ctx, clickLive(`[data-testid=usage-line-toggle]`)); err != nil {
			t.Fatal(err)
		}
		wait("the line closed again", `document.querySelectorAll('[data-testid=machine-row]').length === 0 &&
			document.querySelector('[data-testid=usage-line-toggle]').getAttribute('aria-expanded') === 'false'`)
	}
}
