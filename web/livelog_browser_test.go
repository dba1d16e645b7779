package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// The live log opens at the newest line and stays there
// while the reader has not scrolled up — also across the page's 3 s polls,
// which keep the log section (hx-preserve) by moving it, and a moved box
// loses its scroll position.
func TestBrowserLiveLogOpensAtNewestLine(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	// Leave the page before the server closes, so its open log stream ends.
	t.Cleanup(func() { _ = chromedp.Do(ctx, chromedp.Navigate("about:blank")) })
	bg := context.Background()
	acc := app.signupAccount("tail@example.com", "Tailers")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "tail-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:h100.8x.ib"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: "tailer", Software: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	j.tick()
	lines := make([]models.LogInput, 200)
	for i := range lines {
		lines[i] = models.LogInput{Text: fmt.Sprintf("backlog line %d", i)}
	}
	if err := app.store.AppendNodeLogs(bg, cl, 0, lines); err != nil {
		t.Fatal(err)
	}
	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
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
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+cl.ID)); err != nil {
		t.Fatal(err)
	}
	wait("the cluster page", `!!document.querySelector('[data-testid=tab][data-tab=logs]')`)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=tab][data-tab=logs]`)); err != nil {
		t.Fatal(err)
	}
	atBottom := `(b => !!b && b.scrollHeight > b.clientHeight && b.scrollHeight - b.scrollTop - b.clientHeight < 2)(document.getElementById('log-lines'))`
	wait("the backlog", `document.querySelectorAll('#log-lines [data-testid=log-line]').length >= 200`)
	wait("the log open at its newest line", atBottom)
	// Two polls later (every 3 s) it is still at the newest line.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__polls = 0, document.body.addEventListener('htmx:afterSwap', e => { if (e.detail.elt.id === 'cluster-live') window.__polls++ }), true)`)); err != nil {
		t.Fatal(err)
	}
	wait("two polls", `window.__polls >= 2`)
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](atBottom)); err != nil || !ok {
		top, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById('log-lines').scrollTop`))
		t.Fatalf("after a poll the live log is no longer at its newest line (scrollTop %v, %v)", top, err)
	}
	// A new line arrives: it is followed.
	if err := app.store.AppendNodeLogs(bg, cl, 0, []models.LogInput{{Text: "the newest line"}}); err != nil {
		t.Fatal(err)
	}
	wait("the new line shown", `[...document.querySelectorAll('#log-lines [data-testid=log-line]')].some(l => l.innerText.includes('the newest line'))`)
	wait("the new line followed", atBottom)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('#log-lines [data-testid=log-line]')].filter(l => l.innerText.includes('the newest line')).length`)); err != nil || n != 1 {
		all, _ := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.querySelectorAll("#log-lines [data-testid=log-line]").length, [...document.querySelectorAll("#log-lines [data-testid=log-line]")].filter(l => l.innerText.includes("backlog line 199")).length]`))
		t.Errorf("the new line is shown %d times (%v); lines, backlog 199: %v", n, err, all)
	}
	for _, w := range []int64{1440, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)); err != nil {
			t.Fatal(err)
		}
		saveScreenshot(t, ctx, "live-log", w)
	}
}
