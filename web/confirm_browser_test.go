package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// A confirmed action is always sent (L7, L10, X5, B6):
// the cluster page re-renders its live region every 3 s, replacing the
// forms under an open confirmation dialog. For each action of the page —
// add worker, replace a machine, resume, terminate — the test opens it,
// waits for two real polls to replace the live region (the form the
// dialog was opened for is gone from the page), then confirms, and the
// action reaches the server. When the action is no longer on the page (the
// cluster was terminated meanwhile), nothing is sent and the dialog says
// so instead of closing silently.
func TestBrowserConfirmSurvivesPolls(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 4*time.Minute)
	j := newJourney(t)
	t.Cleanup(func() { _ = chromedp.Cancel(ctx) }) // the page's polling would hold the server open
	app, srv := j.app, j.srv
	bg := context.Background()
	health := &jobs.Health{Store: app.store, Providers: providers.Registry{"sim": j.cloud}}
	stop := &jobs.Stop{Store: app.store, Providers: providers.Registry{"sim": j.cloud}}
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 2000*models.Micro, "confirm-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	launch := func(name string) models.Cluster {
		t.Helper()
		q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, Location: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
			Workload: models.Workload{Name: name, Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl, other := launch("kept-busy"), launch("ends-meanwhile")
	until := func(what string, id string, ok func(models.Cluster) bool) {
		t.Helper()
		for range 30 {
			if ok(j.cluster(acc.org.ID, id)) {
				return
			}
			app.clock.Advance(30 * time.Second)
			j.tick()
			if err := stop.Run(bg); err != nil {
				t.Fatal(err)
			}
			if err := health.Run(bg); err != nil {
				t.Fatal(err)
			}
		}
		c := j.cluster(acc.org.ID, id)
		t.Fatalf("%s: the cluster is %s (%s)", what, c.Status, c.LastError)
	}
	ready := func(c models.Cluster) bool { return c.Status == models.StatusReady && !c.Resuming() }
	until("setup", cl.ID, ready)
	until("setup", other.ID, ready)

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
				t.Fatalf("waiting for %s: %v\n%s", what, err, body)
			}
		}
	}
	// twoPolls waits until two polls in a row have replaced the live
	// region: each marks the region it finds and waits for a fresh one.
	twoPolls := func() {
		t.Helper()
		for range 2 {
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('cluster-live').dataset.seen = 'true', true)`)); err != nil {
				t.Fatal(err)
			}
			wait("a poll replacing the live region", `!!document.getElementById('cluster-live') && document.getElementById('cluster-live').dataset.seen !== 'true'`)
		}
	}
	// confirmLate opens the confirmation of the button sel, lets two polls
	// replace the page under the dialog, and confirms.
	confirmLate := func(sel string) {
		t.Helper()
		wait(sel, `!!document.querySelector(`+jsString(sel)+`)`)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__asked = document.querySelector(`+jsString(sel)+`).form, true)`)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, clickLive(sel)); err != nil {
			t.Fatal(err)
		}
		wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`)
		twoPolls()
		if gone, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.__asked.isConnected && document.getElementById('confirm-dialog').open`)); !gone {
			t.Fatalf("%s: the polls did not replace the form under the open dialog", sel)
		}
		if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
			t.Fatal(err)
		}
	}
	open := func(id string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+id)); err != nil {
			t.Fatal(err)
		}
		wait("the cluster page", `!!document.getElementById('cluster-live')`)
	}

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `location.pathname === '/offers'`)

	// Add worker (L10).
	open(cl.ID)
	confirmLate(`[data-testid=add-worker]`)
	wait("node-2 joining", `!!document.querySelector('[data-node="node-2"]')`)
	if got := j.cluster(acc.org.ID, cl.ID); got.Nodes != 3 {
		t.Fatalf("add worker confirmed after two polls: %d machines, want 3", got.Nodes)
	}
	until("node-2 joined", cl.ID, func(c models.Cluster) bool {
		ns, err := app.store.NodesFor(bg, c.ID)
		return err == nil && len(ns) == 3 && ns[2].Status == models.NodeReady && c.Status == models.StatusReady
	})

	// Replace a machine that went down (X5).
	nodes, err := app.store.NodesFor(bg, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cloud.StopNode(bg, cl.GroupName(), nodes[1].ProviderNodeID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && j.cluster(acc.org.ID, cl.ID).Status != models.StatusDegraded; i++ {
		app.clock.Advance(40 * time.Second)
		if err := health.Run(bg); err != nil {
			t.Fatal(err)
		}
	}
	confirmLate(`[data-testid=replace-node][data-node=node-1]`)
	wait("node-1 being replaced", `!document.querySelector('[data-testid=replace-node]')`)
	if nodes, err = app.store.NodesFor(bg, cl.ID); err != nil || nodes[1].JoinKind != models.JoinReplace {
		t.Fatalf("replace confirmed after two polls: node-1 join kind %q (%v), want %q", nodes[1].JoinKind, err, models.JoinReplace)
	}
	until("node-1 replaced", cl.ID, ready)

	// Resume a stopped cluster (B6): it starts billing, so it asks too (L7).
	if _, err := app.store.RequestStop(bg, acc.org.ID, cl.ID, models.StopByBalance, "The balance ran out."); err != nil {
		t.Fatal(err)
	}
	until("stopped", cl.ID, func(c models.Cluster) bool { return c.Status == models.StatusStopped })
	confirmLate(`[data-testid=resume]`)
	wait("resuming", `(document.querySelector('[data-testid=stop-state]') || {innerText: ''}).innerText.startsWith('Resuming')`)
	if got := j.cluster(acc.org.ID, cl.ID); !got.Resuming() {
		t.Fatalf("resume after two polls: %s, not resuming", got.Status)
	}
	until("resumed", cl.ID, ready)

	// Terminate (L7).
	confirmLate(`[data-testid=terminate]`)
	wait("terminating", `!!document.querySelector('[data-testid=terminating]')`)
	if got := j.cluster(acc.org.ID, cl.ID); got.TerminateRequestedAt == nil && !got.Status.Terminal() {
		t.Fatalf("terminate confirmed after two polls: the cluster is %s, not terminating", got.Status)
	}

	// The other cluster is terminated elsewhere while its question is open:
	// the page no longer offers Terminate, and the dialog says nothing was sent.
	open(other.ID)
	wait("terminate", `!!document.querySelector('[data-testid=terminate]')`)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=terminate]`)); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`)
	if _, err := app.store.RequestTerminate(bg, acc.org.ID, other.ID, "api"); err != nil {
		t.Fatal(err)
	}
	twoPolls()
	wait("terminate gone", `!document.querySelector('[data-testid=terminate]')`)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait("the dialog telling", `document.getElementById('confirm-dialog').open && document.getElementById('confirm-title').textContent === 'Nothing was sent'`)
	if vis, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid=confirm-ok]').checkVisibility()`)); vis {
		t.Error("the dialog that says nothing was sent still offers to confirm")
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-cancel]`)); err != nil {
		t.Fatal(err)
	}
	wait("the dialog closed", `!document.getElementById('confirm-dialog').open`)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
}

// The other questions (SSH keys, API keys, members, invitations, volumes,
// machines) live on pages that do not poll, but a re-render of the form
// under the dialog sends the re-rendered form the same way (L7).
func TestBrowserConfirmAfterRerender(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	key, err := app.store.AddSSHKey(bg, acc.org.ID, acc.user.ID, "old-laptop", testSSHKey(t, "ada@old"))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
		chromedp.WaitVisible(`[data-testid=header-balance]`),
		chromedp.Navigate(srv.URL+"/settings/ssh-keys"),
	); err != nil {
		t.Fatal(err)
	}
	sel := `form[action="/settings/ssh-keys/` + key.ID + `/delete"] button[type=submit]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(sel), clickLive(sel)); err != nil {
		t.Fatal(err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('confirm-dialog').open`, chromedp.WithPollingTimeout(browserPatience)))
	if err != nil || !ok {
		t.Fatalf("no dialog: %v", err)
	}
	// The page re-renders the form (as a swap would) while the dialog is open.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const f = document.querySelector(`+jsString(sel)+`).form; f.outerHTML = f.outerHTML; return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(browserPatience)
	for { // the confirmed form navigates, which interrupts a single poll
		ok, err = chromedp.Run(ctx, chromedp.Poll[bool](`!document.querySelector(`+jsString(sel)+`) && document.readyState === 'complete'`, chromedp.WithPollingTimeout(browserPatience)))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key's form is still there after confirming: %v", err)
		}
	}
	keys, err := app.store.SSHKeys(bg, acc.org.ID, acc.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID == key.ID {
			t.Fatalf("the key %s was not deleted: the confirmed re-rendered form was not sent", strings.TrimSpace(k.Name))
		}
	}
}

// Money inputs are guarded (B9): a top-up up to $1,000 goes as
// typed; a larger one asks first, naming the amount, and nothing is
// credited unless confirmed.
func TestBrowserLargeTopUpAsks(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	balance := func() models.Money {
		b, err := app.store.Balance(bg, acc.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	start := balance()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
		chromedp.WaitVisible(`[data-testid=header-balance]`),
	); err != nil {
		t.Fatal(err)
	}
	topUp := func(amount string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+"/billing"),
			chromedp.WaitVisible(`[data-testid=top-up-form] input[name=amount]`),
			chromedp.SetValue(`[data-testid=top-up-form] input[name=amount]`, amount),
			clickLive(`[data-testid=add-funds]`),
		); err != nil {
			t.Fatal(err)
		}
	}
	dialogOpen := func() bool {
		t.Helper()
		isOpen, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById('confirm-dialog') && document.getElementById('confirm-dialog').open`))
		if err != nil {
			t.Fatal(err)
		}
		return isOpen
	}
	waitBalance := func(want models.Money) {
		t.Helper()
		deadline := time.Now().Add(browserPatience)
		for balance() != want {
			if time.Now().After(deadline) {
				t.Fatalf("balance %d, want %d", balance(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	topUp("20.00")
	waitBalance(start + 20*models.Micro)
	if dialogOpen() {
		t.Fatal("a $20 top-up asked for a confirmation")
	}

	topUp("2500")
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('confirm-dialog').open`, chromedp.WithPollingTimeout(browserPatience)))
	if err != nil || !ok {
		t.Fatalf("a $2,500 top-up asked nothing: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=confirm-title]').textContent`))
	if err != nil || title != "Add $2,500.00 to the balance?" {
		t.Errorf("dialog title %q (%v)", title, err)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-cancel]`)); err != nil {
		t.Fatal(err)
	}
	if got := balance(); got != start+20*models.Micro {
		t.Fatalf("cancelled, yet the balance moved to %d", got)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=add-funds]`)); err != nil {
		t.Fatal(err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('confirm-dialog').open`, chromedp.WithPollingTimeout(browserPatience))); err != nil || !ok {
		t.Fatalf("no dialog the second time: %v", err)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	waitBalance(start + 2520*models.Micro)
}

// browserPatience bounds how long a browser test waits for a page to act on
// a click: a ceiling for a loaded two-core CI machine running Chromium beside
// the race-instrumented server, not a speed the test asserts.
const browserPatience = 60 * time.Second
