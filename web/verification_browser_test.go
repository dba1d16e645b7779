package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// X13: the hand-over report on the cluster page in a real
// browser, at 1440 and 390 px — a four-machine launch whose node-2 had
// ECC errors, verified with node-2 swapped: every machine's line, the ring
// against its threshold, the pairs, the swap and why, and "Run
// verification again"; the phone never scrolls sideways.
func TestBrowserVerificationReport(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 3*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "verify-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	if err := j.cloud.Inject(sim.Fault{Kind: sim.FaultECCErrors, Node: 2, Count: 1}); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 4, GPUsPerNode: 8, OfferID: "sim:h100.8x.ib"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: "llama-3-70b-finetune", Software: "none"}, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60 && j.cluster(acc.org.ID, cl.ID).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
		if st := j.cluster(acc.org.ID, cl.ID).Status; st == models.StatusDegraded || st == models.StatusFailed {
			t.Fatalf("the cluster went %s (%s)", st, j.cluster(acc.org.ID, cl.ID).LastError)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
		chromedp.WaitNotPresent(`#login-form`), // the log-in answered: the session cookie is set before the next page
		chromedp.Navigate(srv.URL+"/clusters/"+cl.ID),
		chromedp.WaitVisible(`[data-testid=verification]`),
	); err != nil {
		t.Fatal(err)
	}
	text := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	if got := text(`document.querySelector('[data-testid=verification]').dataset.state`); got != "passed" {
		t.Errorf("report state %q", got)
	}
	machines := text(`[...document.querySelectorAll('[data-testid=verification-machine]')].map(m => m.dataset.node + ':' + m.dataset.state).join(' ')`)
	if machines != "node-0:passed node-1:passed node-2:passed node-3:passed" {
		t.Errorf("machines %q", machines)
	}
	if got := text(`document.querySelector('[data-testid=verification-ring]').innerText`); !strings.Contains(got, "at least 85 % required") || !strings.Contains(got, "of their line rate") {
		t.Errorf("ring %q", got)
	}
	if got := text(`document.querySelectorAll('[data-testid=verification-pair]').length + ''`); got != "4" {
		t.Errorf("%s pairs shown, want 4", got)
	}
	// The swap line says when the swap began and when the replacement
	// actually joined (its own time, not the swap's start).
	run, err := app.store.VerificationFor(bg, acc.org.ID, cl.ID)
	if err != nil || run == nil || len(run.ReportOf().Swaps) != 1 {
		t.Fatalf("the report's swaps: %+v, %v", run, err)
	}
	sw := run.ReportOf().Swaps[0]
	nodes, err := app.store.NodesFor(bg, cl.ID)
	if err != nil || len(nodes) != 4 {
		t.Fatalf("nodes: %d, %v", len(nodes), err)
	}
	var node2 models.ClusterNode
	for _, n := range nodes {
		if n.Rank == 2 {
			node2 = n
		}
	}
	if sw.JoinedAt == nil || node2.SoftwareAt == nil || !sw.JoinedAt.Equal(node2.SoftwareAt.UTC()) || !sw.JoinedAt.After(sw.At.Add(time.Minute)) {
		t.Fatalf("the swap began %v and joined %v; the replacement joined at %v", sw.At, sw.JoinedAt, node2.SoftwareAt)
	}
	swap := text(`document.querySelector('[data-testid=verification-swap]')?.innerText || ''`)
	want := "node-2 swapped " + sw.At.UTC().Format("15:04") + " · joined " + sw.JoinedAt.UTC().Format("15:04")
	if !strings.HasPrefix(swap, want) || !strings.Contains(swap, "uncorrectable ECC errors") {
		t.Errorf("swap line %q, want it to start %q", swap, want)
	}
	if got := text(`document.querySelector('[data-testid=verify-again]')?.innerText || ''`); got != "Run verification again" {
		t.Errorf("run again button %q", got)
	}
	for _, w := range []int64{1440, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)); err != nil {
			t.Fatal(err)
		}
		sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`[window.innerWidth, document.documentElement.scrollWidth]`))
		if err != nil || len(sizes) != 2 {
			t.Fatalf("measuring: %v", err)
		}
		if sizes[1] > sizes[0] {
			t.Errorf("at %d px the page is %d px wide", w, sizes[1])
		}
		if err := chromedp.Do(ctx, scrollLive(`[data-testid=verification]`)); err != nil {
			t.Fatal(err)
		}
		saveScreenshot(t, ctx, "verification-report", w)
	}
	// X13: running it again on the customer's cluster asks first, naming
	// the disruption; confirmed, the run starts.
	if err := chromedp.Do(ctx, clickLive(`[data-testid=verify-again]`), chromedp.WaitVisible(`#confirm-dialog[open]`)); err != nil {
		t.Fatal(err)
	}
	if d := text(`document.getElementById('confirm-detail').textContent`); !strings.Contains(d, "every GPU of all 4 machines for about 5 minutes") ||
		!strings.Contains(d, "slows down, runs out of GPU memory or fails") {
		t.Errorf("the confirmation says %q", d)
	}
	if run, _ := app.store.VerificationFor(bg, acc.org.ID, cl.ID); run == nil || run.Rerun {
		t.Fatalf("a run started before the confirmation: %+v", run)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=confirm-ok]`),
		chromedp.WaitVisible(`[data-testid=verification][data-state=running]`)); err != nil {
		t.Fatal(err)
	}
	if run, _ := app.store.VerificationFor(bg, acc.org.ID, cl.ID); run == nil || !run.Rerun || run.Run != 2 {
		t.Errorf("after the confirmation: %+v", run)
	}
}
