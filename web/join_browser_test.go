package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/models"
)

// L10 in a real browser: on a ready cluster's page the customer clicks
// "Add worker", confirms a dialog that names the machine-hour price, and
// watches node-2 appear joining and turn ready in place while the test
// runs the jobs and the simulated machines' agents.
func TestBrowserAddWorker(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "join-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, Location: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: "grow", Software: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		app.clock.Advance(time.Minute)
		j.tick()
	}
	if got := j.cluster(acc.org.ID, cl.ID); got.Status != models.StatusReady {
		t.Fatalf("setup: %s", got.Status)
	}
	price := "$" + models.DecimalUSD(cl.MachineHour) + "/h"

	// wait polls until js holds; it survives navigations, which interrupt a
	// single chromedp.Poll.
	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
				t.Fatalf("waiting for %s: %v\n%s", what, err, body)
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("logged in", `location.pathname === '/offers'`)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+cl.ID), chromedp.WaitVisible(`[data-testid=add-worker]`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=add-worker]').innerText`)); !strings.Contains(got, price) {
		t.Errorf("Add worker button = %q, want the price %s", got, price)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=add-worker]`)); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`)
	if msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('confirm-title').textContent`)); !strings.Contains(msg, "Add node-2") || !strings.Contains(msg, price) {
		t.Errorf("confirmation = %q, want node-2 and %s", msg, price)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-node="node-2"]').length`)); n != 0 {
		t.Fatal("the worker was asked for before the confirmation")
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait("node-2 joining", `!!document.querySelector('[data-node="node-2"][data-status="joining"]') && !document.querySelector('[data-testid=add-worker]')`)
	journeyShot(t, ctx, "add-worker-1-joining")
	for range 12 {
		app.clock.Advance(time.Minute)
		j.tick()
	}
	wait("node-2 ready in place", `!!document.querySelector('[data-node="node-2"][data-status="ready"]') && !!document.querySelector('[data-testid=add-worker]')`)
	journeyShot(t, ctx, "add-worker-2-joined")
	if got := j.cluster(acc.org.ID, cl.ID); got.Nodes != 3 || got.Status != models.StatusReady {
		t.Errorf("after the join: %d machines, %s", got.Nodes, got.Status)
	}
	// Leave the page: its log stream would hold the test server open.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
}
