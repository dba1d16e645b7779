package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// B6 in a real browser: a cluster the balance stopped shows why, with
// Resume; clicking it the page says the machines are starting again, and
// once the stop job brought every machine back (the simulated machines'
// agents joining over HTTP) the page shows it ready again, in place.
func TestBrowserStopAndResume(t *testing.T) {
	t.Parallel() // see newBrowser
	began := time.Now()
	ctx := newBrowserFor(t, 2*time.Minute)
	j := newJourney(t)
	t.Cleanup(func() { // before the server closes: the page's polling would hold it open
		if t.Failed() {
			shot(t, ctx)
		}
		_ = chromedp.Cancel(ctx)
	})
	app, srv := j.app, j.srv
	bg := context.Background()
	stop := &jobs.Stop{Store: app.store, Providers: providers.Registry{"sim": j.cloud}}
	run := func(d time.Duration) {
		t.Helper()
		app.clock.Advance(d)
		j.tick()
		if err := stop.Run(bg); err != nil {
			t.Fatalf("stop: %v", err)
		}
		j.tick()
	}
	owner := app.signupAccount("owner@example.com", "Acme")
	if _, err := app.store.Deposit(bg, owner.org.ID, 500*models.Micro, "dep", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, owner.org.ID, owner.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, Location: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: owner.org.ID, EnvID: owner.env.ID, QuoteID: q.ID,
		Actor: owner.user.Email, Workload: models.Workload{Name: "paused-run", Software: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12 && j.cluster(owner.org.ID, cl.ID).Status != models.StatusReady; i++ {
		run(time.Minute)
	}
	if _, err := app.store.RequestStop(bg, owner.org.ID, cl.ID, models.StopByBalance, "The balance ran out."); err != nil {
		t.Fatal(err)
	}
	run(5 * time.Second)
	if got := j.cluster(owner.org.ID, cl.ID); got.Status != models.StatusStopped {
		t.Fatalf("not stopped: %s", got.Status)
	}

	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
				t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, body)
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#email`),
		chromedp.SetValue(`#email`, owner.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `!!document.querySelector('[data-testid=header-balance]')`)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+cl.ID)); err != nil {
		t.Fatal(err)
	}
	wait("the stop line", `(document.querySelector('[data-testid=stop-state]') || {innerText: ''}).innerText.includes('because the balance ran out')`)
	t.Logf("stopped page after %s", time.Since(began))
	journeyShot(t, ctx, "cluster-stopped")
	if err := chromedp.Do(ctx, clickLive(`[data-testid=resume]`)); err != nil {
		t.Fatal(err)
	}
	wait("the resume question", `document.getElementById('confirm-dialog').open`) // it starts billing (L7)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait("resuming", `(document.querySelector('[data-testid=stop-state]') || {innerText: ''}).innerText.startsWith('Resuming')`)
	if got := j.cluster(owner.org.ID, cl.ID); !got.Resuming() {
		t.Fatalf("the button did not resume: %s", got.Status)
	}
	for i := 0; i < 20 && j.cluster(owner.org.ID, cl.ID).Status != models.StatusReady; i++ {
		run(30 * time.Second)
	}
	t.Logf("resumed after %s", time.Since(began))
	if got := j.cluster(owner.org.ID, cl.ID); got.Status != models.StatusReady || got.BillFrom == nil {
		t.Fatalf("not running again: %s %q", got.Status, got.LastError)
	}
	wait("ready again, in place", `!document.querySelector('[data-testid=stop-state]') && !document.querySelector('[data-testid=resume]') && document.body.innerText.includes('(resumed)')`)
	if body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); !strings.Contains(body, "billing restarts now") {
		t.Errorf("no resumed event on the page:\n%s", body)
	}
	journeyShot(t, ctx, "cluster-resumed")
}
