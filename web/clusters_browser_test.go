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

// The cluster page in a real browser through provisioning → ready →
// degraded → terminated ("The cluster page"; L8, L11, N5, R2, L7):
// the simulated cloud's machines run the real agent, the provision and
// health jobs move the cluster on the fake clock, and at each state the
// page — updating in place — shows the sections, the progress line, node
// statuses that agree with the cluster's, node-0's SSH command in the
// header, masked values with a reveal, the degraded banner and, at the end,
// when the cluster ended, how long it ran, what it cost and its last log
// lines. Screenshots at 1440 and 390 px are saved at every state (under
// SCREENSHOTS_DIR, else the test's artifact directory), and the page never
// scrolls sideways on the phone.
func TestBrowserClusterPageStates(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 3*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	health := &jobs.Health{Store: app.store, Providers: providers.Registry{"sim": j.cloud}}
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "cluster-page-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:h100.8x.ib"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: "llama-3-70b-finetune", Software: "none", Env: map[string]string{"HF_TOKEN": "hf_SeCrEt42"}},
		SSHKeys:  []string{testSSHKey(t, "ada@laptop")}})
	if err != nil {
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
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
				t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, js, err, body)
			}
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`) || {innerText: ''}).innerText.trim()`))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, clickLive(sel)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	// tab switches to a section in place and checks the URL says which.
	tab := func(name string) {
		t.Helper()
		click(`[data-testid=tab][data-tab=` + name + `]`)
		wait("the "+name+" section", `document.getElementById('cluster-live').dataset.tab === '`+name+`' &&
			document.querySelector('[data-testid=tab][aria-current=page]').dataset.tab === '`+name+`'`)
	}
	// nodes is the node rows' statuses, in order, joined.
	nodes := `[...document.querySelectorAll('#cluster-live [data-testid=node-row]')].map(r => r.dataset.status).join(' ')`
	badge := `document.querySelector('#cluster-live > header [data-testid=status-badge]').dataset.status`
	// shots saves the page at a desktop's and a phone's width; the phone
	// must not scroll sideways. It returns to the desktop width.
	shots := func(name string) {
		t.Helper()
		for _, w := range []int64{1440, 390} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)); err != nil {
				t.Fatal(err)
			}
			sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`[window.innerWidth, document.documentElement.scrollWidth]`))
			if err != nil || len(sizes) != 2 {
				t.Fatalf("measuring: %v", err)
			}
			if sizes[1] > sizes[0] {
				t.Errorf("%s at %d px: the page is %d px wide", name, w, sizes[1])
			}
			saveScreenshot(t, ctx, "cluster-"+name, w)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err != nil {
			t.Fatal(err)
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
	wait("the cluster page", `!!document.querySelector('[data-testid=cluster-tabs]')`)
	if got := text(`[data-testid=cluster-tabs]`); got != "Overview Connect Logs Events" {
		t.Errorf("sections: %q", got)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__noReload = true, true)`)); err != nil {
		t.Fatal(err)
	}
	kept := func(when string) {
		t.Helper()
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === true`)); err != nil || !ok {
			t.Fatalf("the page reloaded %s instead of updating in place (%v)", when, err)
		}
	}

	// Provisioning: the progress line, both nodes provisioning and booting,
	// nothing to connect to yet.
	j.tick()
	wait("both machines booting", `document.querySelector('[data-testid=progress-phase]')?.innerText === 'Booting' && `+nodes+` === 'provisioning provisioning'`)
	app.clock.Advance(30 * time.Second)
	j.tick()
	placed := j.cluster(acc.org.ID, cl.ID)
	wait("the elapsed time moving on", `document.querySelector('[data-testid=progress-elapsed]')?.innerText === '0:30 elapsed'`)
	if got := text(`[data-testid=progress]`); !strings.HasPrefix(got, "Booting · ") || !strings.Contains(got, "of 2 machines booted · usually about 4 min for VMs · 0:30 elapsed") ||
		!strings.HasSuffix(got, "gives up at "+placed.StepDeadline(models.StepRunning).Format("15:04")) {
		t.Errorf("progress while booting: %q", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=header-ssh], [data-testid=cluster-actions] [data-testid=retry-install]').length`)); n != 0 {
		t.Error("a provisioning cluster shows an SSH command or a retry")
	}
	shots("1-provisioning")
	tab("connect")
	if got := text(`[data-testid=connect-unavailable]`); !strings.Contains(got, "once every machine is up") {
		t.Errorf("connect while provisioning: %q", got)
	}
	tab("overview")
	kept("while provisioning")

	// Ready: every node ready, no progress line, node-0's SSH in the header.
	for i := 0; i < 40 && j.cluster(acc.org.ID, cl.ID).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
		st := j.cluster(acc.org.ID, cl.ID).Status
		if st != models.StatusProvisioning && st != models.StatusReady {
			t.Fatalf("the cluster went %s (%s)", st, j.cluster(acc.org.ID, cl.ID).LastError)
		}
	}
	wait("ready", badge+` === 'ready' && `+nodes+` === 'ready ready' && !document.querySelector('[data-testid=progress]')`)
	wait("node-0's SSH in the header", `!!document.querySelector('[data-testid=header-ssh] button[data-copy=ssh-primary]')`)
	if got := text(`[data-testid=header-ssh] [data-testid=ssh-primary]`); !strings.HasPrefix(got, "ssh ") {
		t.Errorf("header SSH: %q", got)
	}
	kept("on ready")
	shots("2-ready")

	// Connect: Copy on every node's SSH row, the customer's value masked
	// until revealed, NODE_RANK marked per node, every recipe folded.
	tab("connect")
	wait("the connect section", `document.querySelectorAll('[data-testid=connect-node] button[data-copy^=ssh-node-]').length === 2`)
	if got := text(`[data-testid=env-var][data-name=HF_TOKEN]`); strings.Contains(got, "hf_SeCrEt42") || !strings.Contains(got, "HF_TOKEN=••") || !strings.Contains(got, "yours") {
		t.Errorf("masked HF_TOKEN: %q", got)
	}
	if got := text(`[data-testid=env-var][data-name=NODE_RANK]`); !strings.Contains(got, "per node") {
		t.Errorf("NODE_RANK: %q", got)
	}
	if vis, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('env-block').checkVisibility()`)); vis {
		t.Error("the clear values show before Reveal")
	}
	if open, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('details[data-testid=recipe][open]').length`)); open != 0 {
		t.Errorf("%d recipes open; want all folded", open)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid=connect] *')].filter(e => e.childElementCount === 0 && e.textContent.includes('`+"`"+`')).length`)); n != 0 {
		t.Errorf("%d elements show a literal backtick", n)
	}
	shots("3-connect")
	click(`[data-testid=env-reveal] summary`)
	wait("the revealed values", `document.getElementById('env-block').checkVisibility() && document.getElementById('env-block').innerText.includes('HF_TOKEN=hf_SeCrEt42')`)
	click(`[data-testid=recipe][data-recipe="0"] summary`)
	wait("an opened recipe", `document.getElementById('cmd-0').checkVisibility()`)
	kept("in the connect section")

	// Degraded: node-1 stops at the provider; the health job notices it.
	nodesNow, err := app.store.NodesFor(bg, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cloud.StopNode(bg, cl.GroupName(), nodesNow[1].ProviderNodeID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && j.cluster(acc.org.ID, cl.ID).Status != models.StatusDegraded; i++ {
		app.clock.Advance(40 * time.Second)
		if err := health.Run(bg); err != nil {
			t.Fatal(err)
		}
	}
	if st := j.cluster(acc.org.ID, cl.ID).Status; st != models.StatusDegraded {
		t.Fatalf("after node-1 stopped the cluster is %s", st)
	}
	tab("overview")
	wait("degraded", badge+` === 'degraded' && `+nodes+` === 'ready down'`)
	if got := text(`[data-testid=problem-sentence]`); !strings.HasPrefix(got, "A machine stopped running: node-1") {
		t.Errorf("degraded sentence: %q", got)
	}
	if got := text(`[data-testid=problem-advice]`); !strings.Contains(got, "billing continues at $39.94/h") || !strings.Contains(got, "terminate") {
		t.Errorf("degraded advice: %q", got)
	}
	if got := text(`[data-testid=problem-code]`); !strings.HasPrefix(got, "node_down:node-1") {
		t.Errorf("degraded code: %q", got)
	}
	kept("on degraded")
	shots("4-degraded")

	// Terminate (confirmed in the styled dialog): the actions go at once;
	// then terminated, with when it ended, how long it ran and what it cost,
	// and the last log lines.
	click(`[data-testid=terminate]`)
	wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`)
	click(`[data-testid=confirm-ok]`)
	wait("terminating", `!!document.querySelector('[data-testid=terminating]') && !document.querySelector('[data-testid=cluster-actions]') &&
		!document.querySelector('[data-testid=recover-now]') && !document.querySelector('[data-testid=header-ssh]') && `+nodes+` === 'terminating terminating'`)
	if got := text(`[data-testid=problem-advice]`); !strings.Contains(got, "billing has stopped") {
		t.Errorf("advice while terminating: %q", got)
	}
	j.tick()
	if st := j.cluster(acc.org.ID, cl.ID).Status; st != models.StatusTerminated {
		t.Fatalf("after terminate: %s", st)
	}
	wait("terminated", badge+` === 'terminated' && `+nodes+` === 'terminated terminated' && !document.getElementById('cluster-live').hasAttribute('hx-get')`)
	if got := text(`[data-testid=ended-at]`); !strings.Contains(got, "UTC") || !strings.Contains(got, "billed for") {
		t.Errorf("ended: %q", got)
	}
	if got := text(`[data-testid=ran-duration]`); got != "7 min" {
		t.Errorf("ran for %q, want 7 min (launched 12:00, ended 12:07)", got)
	}
	if got := text(`[data-testid=total-cost]`); !strings.HasPrefix(got, "$") {
		t.Errorf("total cost: %q", got)
	}
	kept("on terminated")
	shots("5-terminated")
	tab("logs")
	wait("node-0's last lines, no stream", `!!document.querySelector('[data-testid=log-ended]') && !document.querySelector('[sse-connect]') &&
		[...document.querySelectorAll('[data-testid=log-ended] [data-testid=log-line]')].some(l => l.innerText.includes('checked in as node-0'))`)
	shots("6-terminated-logs")
	tab("events")
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=events] [data-testid=event]').length`)); n < 5 {
		t.Errorf("%d events listed", n)
	}
	kept("in the events section")
	// A reload keeps the section: the links work without htmx too.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("the events section after a reload", `location.search === '?tab=events' && document.getElementById('cluster-live').dataset.tab === 'events'`)
}
