package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// journeyCloud is a small simulated cloud: the H100 offer the journey
// launches (counted stock, 4-minute boot), a cheaper one too scarce for two
// machines, and an uncounted bare-metal offer in a second location, so the
// offers page has groups, a sell label and a Request a quote link to show.
const journeyCloud = `{
  "locations": [
    {"id": "us-east-1", "name": "Ashburn, VA, US", "offers": [
      {"id": "h100.8x.ib", "accelerator": "H100_80GB", "machine_kind": "vm", "interconnect": "infiniband", "nics": 8, "nic_gbps": 400,
       "gpus_per_node": 8, "vcpus": 96, "memory_gb": 1000, "per_gpu_hour_usd": 2490000,
       "root_disk_gb": 500, "disk_gb_hour_usd": 100, "nodes_available": 10, "boot_time": "4m"},
      {"id": "h100.8x.eth", "accelerator": "H100_80GB", "machine_kind": "vm", "interconnect": "ethernet",
       "gpus_per_node": 8, "vcpus": 96, "memory_gb": 1000, "per_gpu_hour_usd": 2100000,
       "root_disk_gb": 500, "disk_gb_hour_usd": 100, "nodes_available": 1, "boot_time": "4m"}
    ]},
    {"id": "eu-west-1", "name": "Dublin, IE", "offers": [
      {"id": "h100.8x.metal", "accelerator": "H100_80GB", "machine_kind": "bare_metal", "interconnect": "infiniband", "nics": 8, "nic_gbps": 400,
       "gpus_per_node": 8, "vcpus": 112, "memory_gb": 2000, "per_gpu_hour_usd": 2690000,
       "root_disk_gb": 1000, "disk_gb_hour_usd": 100}
    ]}
  ]}`

// journey is the whole product on one fake clock: the real router and
// static assets behind a real HTTP server, the simulated cloud whose
// machines run the real agent against that server, and the catalog,
// provision and install jobs, which only the test runs.
type journey struct {
	t       *testing.T
	app     *testApp
	srv     *httptest.Server
	cloud   *sim.Cloud
	cat     *jobs.Catalog
	prov    *jobs.Provision
	term    *jobs.Terminate
	install *jobs.Install
	join    *jobs.Join
	verify  *jobs.Verify
}

// browserPagePoll is how often the journey's cluster pages poll: the
// production default (views.DefaultPoll, 3 s) would make each test that
// waits for real polls wait seconds for every one.
const browserPagePoll = 400 * time.Millisecond

func newJourney(t *testing.T) *journey {
	t.Helper()
	app := newTestAppWith(t, openSQLite(t), func(d *Deps) { d.Config.PagePoll = browserPagePoll })
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	cfg, err := sim.ParseConfig([]byte(journeyCloud), "json")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cloud := sim.New(cfg, sim.WithClock(app.clock.Now), sim.WithLogger(quiet), sim.WithAgents(func(m sim.Machine) sim.MachineAgent {
		return agent.New(agent.Config{Server: m.ServerURL, Token: m.Token, MachineID: m.NodeID, Exec: m.Exec, HTTP: srv.Client(),
			Hostname: m.Name, PrivateIP: m.PrivateIP, Now: app.clock.Now, Workload: m.Workload})
	}))
	reg := providers.Registry{"sim": cloud}
	j := &journey{t: t, app: app, srv: srv, cloud: cloud,
		cat:     &jobs.Catalog{Store: app.store, Providers: reg},
		prov:    &jobs.Provision{Store: app.store, Providers: reg, ServerURL: srv.URL},
		term:    &jobs.Terminate{Store: app.store, Providers: reg},
		install: &jobs.Install{Store: app.store},
		join:    &jobs.Join{Store: app.store, Providers: reg, ServerURL: srv.URL},
		verify:  &jobs.Verify{Store: app.store}}
	if err := j.cat.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// tick runs the jobs, lets every running machine's agent take one step over
// HTTP, refreshes the catalog and runs the jobs again.
func (j *journey) tick() {
	j.t.Helper()
	ctx := context.Background()
	j.runJobs()
	if err := j.cloud.StepAgents(ctx); err != nil && !errors.Is(err, agent.ErrRevoked) {
		j.t.Logf("agents: %v", err)
	}
	if err := j.cat.Run(ctx); err != nil {
		j.t.Fatalf("catalog: %v", err)
	}
	j.runJobs()
}

func (j *journey) runJobs() {
	j.t.Helper()
	ctx := context.Background()
	if err := j.prov.Run(ctx); err != nil {
		j.t.Fatalf("provision: %v", err)
	}
	if err := j.term.Run(ctx); err != nil {
		j.t.Fatalf("terminate: %v", err)
	}
	if err := j.install.Run(ctx); err != nil {
		j.t.Fatalf("install: %v", err)
	}
	if err := j.join.Run(ctx); err != nil {
		j.t.Fatalf("join: %v", err)
	}
	if err := j.verify.Run(ctx); err != nil {
		j.t.Fatalf("verify: %v", err)
	}
}

func (j *journey) cluster(orgID, id string) models.Cluster {
	j.t.Helper()
	cl, err := j.app.store.ClusterForOrg(context.Background(), orgID, id)
	if err != nil {
		j.t.Fatal(err)
	}
	return cl
}

// journeyShot saves a full-page screenshot as web/testdata/screenshots/NAME.png.
func journeyShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: web/%s", file)
}

// The main journey in a real browser: a customer logs in, picks an offer
// for 2 machines, sees the locked price and its expiry, launches a Slurm
// cluster with an env line, and watches the cluster page go provisioning →
// installing → ready in place (htmx polling, no reload) while the test moves
// the fake clock and runs the jobs and the simulated machines' agents. Once
// ready it connects (SSH command with a copy button) and terminates
// (the confirmation dialog), and the page shows the cluster terminated.
func TestBrowserJourneyLaunchToTerminate(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	j := newJourney(t)
	app, srv := j.app, j.srv
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "journey-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.AddSSHKey(bg, acc.org.ID, acc.user.ID, "laptop", testSSHKey(t, "ada@laptop")); err != nil {
		t.Fatal(err)
	}

	// wait polls until js holds; it survives navigations, which interrupt a
	// single chromedp.Poll.
	wait := func(what, js string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(within)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
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
		return s
	}

	// Log in through the form.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the offers page after logging in", `location.pathname === '/offers' &&
		!!document.querySelector('header') && document.querySelector('header').innerText.includes('ada@example.com')`, 15*time.Second)

	// The picker for 2 machines: the launched offer can start, the scarce
	// one cannot and says so.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/offers?accelerator=H100_80GB&nodes=2"),
		chromedp.WaitVisible(`[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]`),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(`[data-offer-id="sim:h100.8x.eth"] [data-testid=sell-label]`); got == "" {
		t.Error("the offer with 1 machine free shows no sell label for 2 machines")
	}
	offerPrice := text(`[data-offer-id="sim:h100.8x.ib"] [data-testid=cluster-price]`)
	if !strings.HasPrefix(offerPrice, "$") { // under the $/cluster-h column
		t.Fatalf("offer price = %q", offerPrice)
	}
	journeyShot(t, ctx, "journey-1-offers")

	// Launch: the price locked for QuoteTTL, and the workload form.
	if err := chromedp.Do(ctx, clickLive(`[data-offer-id="sim:h100.8x.ib"] [data-testid=launch-link]`)); err != nil {
		t.Fatal(err)
	}
	wait("the launch page", `location.pathname === '/clusters/new' && !!document.querySelector('#launch-form')`, 15*time.Second)
	if got := text(`[data-testid=quote-price]`); got != offerPrice+"/h" {
		t.Errorf("locked price %q, want the offer's %q", got, offerPrice)
	}
	expiry := app.clock.Now().Add(models.QuoteTTL).Format("15:04 MST, 2 Jan")
	if got := text(`[data-testid=quote-expiry]`); !strings.Contains(got, "locked until") || !strings.Contains(got, expiry) {
		t.Errorf("expiry = %q, want the price locked until %s", got, expiry)
	}
	if got := text(`h1`); !strings.Contains(got, "2 × 8 × H100") {
		t.Errorf("launch heading = %q, want the 2-machine shape", got)
	}
	journeyShot(t, ctx, "journey-2-launch")
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#name`, "llama-ft"),
		clickLive(`#launch-form input[name=software][value=slurm]`),
		chromedp.SetValue(`#env`, "NCCL_DEBUG=INFO"),
		chromedp.SetValue(`#start_command`, "echo serving on 8888; sleep 60; exit 0"),
		chromedp.SetValue(`#ports`, "8888"),
		clickLive(`[data-testid=launch-submit]`),
	); err != nil {
		t.Fatal(err)
	}

	// The cluster page, straight after the launch: provisioning.
	wait("the cluster page", `location.pathname.startsWith('/clusters/') && location.pathname !== '/clusters/new' &&
		!!document.querySelector('[data-testid=cluster-name]')`, 15*time.Second)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	id := loc[strings.LastIndex(loc, "/")+1:]
	cl := j.cluster(acc.org.ID, id)
	if cl.Name != "llama-ft" || cl.Software != "slurm" || cl.Nodes != 2 || cl.Env()["NCCL_DEBUG"] != "INFO" {
		t.Fatalf("launched %+v with env %v", cl, cl.Env())
	}
	if got := text(`[data-testid=cluster-name]`); got != "llama-ft" {
		t.Errorf("cluster name = %q", got)
	}
	wait("the provisioning badge", `document.querySelector('#cluster-live [data-testid=status-badge]').dataset.status === 'provisioning'`, 5*time.Second)

	// From here on the page must not reload: a marker on window survives
	// only in-place updates.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__noReload = true, document.body.dataset.mark = "kept", true)`)); err != nil {
		t.Fatal(err)
	}
	kept := func(when string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === true && document.body.dataset.mark === "kept"`))
		if err != nil || !ok {
			info, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' ' + JSON.stringify(performance.getEntriesByType('navigation').map(e => e.type + ' ' + e.name))`))
			t.Fatalf("the page reloaded %s instead of updating in place (%v) %s", when, err, info)
		}
	}
	badge := `document.querySelector('#cluster-live [data-testid=status-badge]').dataset.status`

	// Placement: every machine reserved at once; each node then waits for
	// its boot, with the time left before the deadline.
	j.tick()
	if got := j.cluster(acc.org.ID, id); got.Status != models.StatusProvisioning || got.PlacedAt == nil {
		t.Fatalf("after placement: %s placed %v", got.Status, got.PlacedAt)
	}
	wait("both nodes reserved and booting", `(() => {
		const rows = document.querySelectorAll('#cluster-live [data-testid=node-row]');
		if (rows.length !== 2) return false;
		return [...rows].every(r => {
			const reserved = r.querySelector('[data-step=reserved]');
			const boot = r.querySelector('[data-step=booting]');
			return reserved && reserved.dataset.state === 'done' &&
				boot && boot.dataset.state === 'active' && boot.innerText.includes('gives up at') &&
				r.dataset.status === 'provisioning';
		});
	})()`, 10*time.Second)
	kept("while provisioning")
	journeyShot(t, ctx, "journey-3a-provisioning")

	// Time moves only when the test says: 30 s a tick. Each status the
	// cluster reaches is waited for on the page before time moves on.
	seen := []string{"provisioning"}
	for i := 0; i < 60 && seen[len(seen)-1] != string(models.StatusReady); i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
		st := string(j.cluster(acc.org.ID, id).Status)
		if st == seen[len(seen)-1] {
			continue
		}
		if st != string(models.StatusInstalling) && st != string(models.StatusVerifying) && st != string(models.StatusReady) {
			c := j.cluster(acc.org.ID, id)
			t.Fatalf("cluster went %s (lastError %q) after %v", st, c.LastError, seen)
		}
		wait("the "+st+" badge", badge+` === '`+st+`'`, 10*time.Second)
		kept("on " + st)
		seen = append(seen, st)
		if st == string(models.StatusInstalling) {
			wait("every node installing slurm", `[...document.querySelectorAll('#cluster-live [data-testid=node-row]')].every(r =>
				['reserved', 'booting', 'agent', 'mesh'].every(s => r.querySelector('[data-step="' + s + '"]').dataset.state === 'done') &&
				r.querySelector('[data-step=slurm]').dataset.state !== 'waiting')`, 10*time.Second)
		}
	}
	// Launched from the page, the cluster is verified before hand-over (X13).
	if strings.Join(seen, " → ") != "provisioning → installing → verifying → ready" {
		t.Fatalf("the page showed %s", strings.Join(seen, " → "))
	}
	// Ready: every step of every node done, the ready time shown.
	wait("every node step done", `(() => {
		const steps = document.querySelectorAll('#cluster-live [data-testid=node-step]');
		return steps.length === 10 && [...steps].every(s => s.dataset.state === 'done') &&
			[...document.querySelectorAll('#cluster-live [data-testid=node-row]')].every(r => r.dataset.status === 'ready');
	})()`, 10*time.Second)
	if got := text(`[data-testid=ready-at]`); got == "" || got == "not yet" {
		t.Errorf("ready at = %q", got)
	}
	kept("on ready")

	// Connect: the primary SSH command in the header, exactly what the
	// nodes answer to, with a copy button; the Connect section (switched to
	// in place) has every node's and the env block with the customer's line.
	wait("node-0's SSH command in the header", `!!document.querySelector('[data-testid=header-ssh] [data-testid=ssh-primary]')`, 10*time.Second)
	kept("when the SSH command appeared")
	cl = j.cluster(acc.org.ID, id)
	nodes, err := app.store.NodesFor(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	wantSSH := models.ClusterSpec(cl, nodes, models.Offer{}).PrimarySSH().Command
	if got := text(`[data-testid=ssh-primary]`); got != wantSSH || !strings.HasPrefix(got, "ssh ") || !strings.Contains(got, nodes[0].PublicHost) {
		t.Errorf("primary SSH = %q, want %q (node-0 at %q)", got, wantSSH, nodes[0].PublicHost)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=tab][data-tab=connect]`)); err != nil {
		t.Fatal(err)
	}
	wait("the connect section", `!!document.querySelector('[data-testid=connect]') && location.search === '?tab=connect'`, 10*time.Second)
	kept("when switching to the connect section")
	copyBtn, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const b = document.querySelector('[data-testid=header-ssh] button[data-copy=ssh-primary]');
		return !!b && b.innerText.trim() === 'Copy' && b.getAttribute('aria-label') !== null;
	})()`))
	if err != nil || !copyBtn {
		t.Errorf("no copy button for the primary SSH command (%v)", err)
	}
	// The customer's values are masked until revealed (A3).
	if got := text(`[data-testid=env-masked]`); !strings.Contains(got, "NCCL_DEBUG=••") || strings.Contains(got, "INFO") {
		t.Errorf("masked env block:\n%s", got)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=env-reveal] summary`)); err != nil {
		t.Fatal(err)
	}
	if got := text(`[data-testid=env-block]`); !strings.Contains(got, "NCCL_DEBUG=INFO") {
		t.Errorf("revealed env block lacks the customer's line:\n%s", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=connect-node]').length`)); n != 2 {
		t.Errorf("connect lists %d nodes, want 2", n)
	}
	// The workload (N3): every node's agent starts the start command once
	// the cluster is ready; its state shows per node, live, then its exit.
	if err := chromedp.Do(ctx, clickLive(`[data-testid=tab][data-tab=overview]`)); err != nil {
		t.Fatal(err)
	}
	wait("the overview section", `!!document.querySelector('#cluster-live [data-testid=node-row]')`, 10*time.Second)
	for range 2 {
		app.clock.Advance(10 * time.Second)
		j.tick()
	}
	nodeStarts := func(state, label string) string {
		return `(() => { const s = [...document.querySelectorAll('#cluster-live [data-testid=node-start]')];
			return s.length === 2 && s.every(e => e.dataset.state === '` + state + `' && e.innerText.includes('` + label + `')); })()`
	}
	wait("every node's start command running", nodeStarts("running", "running since"), 10*time.Second)
	kept("when the start command ran")
	for range 4 {
		app.clock.Advance(20 * time.Second)
		j.tick()
	}
	wait("every node's start command exited", nodeStarts("exited", "exited with code 0"), 10*time.Second)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=tab][data-tab=connect]`)); err != nil {
		t.Fatal(err)
	}
	wait("port 8888 published in the connect section", `(() => { const p = document.querySelector('[data-testid=connect-port][data-port="8888"]');
		return !!p && p.dataset.published === 'true' && p.innerText.includes(':8888'); })()`, 10*time.Second)
	// The logs section follows node-0's log over a stream.
	if err := chromedp.Do(ctx, clickLive(`[data-testid=tab][data-tab=logs]`)); err != nil {
		t.Fatal(err)
	}
	wait("node-0's log streamed", `[...document.querySelectorAll('#logs [data-testid=log-line]')].some(l => l.innerText.includes('checked in as node-0'))`, 10*time.Second)
	// The panel says the stream is live; pausing keeps the reader's place
	// while lines arrive, resuming jumps to the tail and follows again.
	wait("the log marked live", `(s => s.dataset.state === 'live' && s.innerText.trim() === 'Live')(document.querySelector('[data-testid=log-status]'))`, 10*time.Second)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=log-follow]`)); err != nil {
		t.Fatal(err)
	}
	// More lines than the box shows, delivered as the SSE extension does.
	feed := `(() => { const box = document.getElementById('log-lines');
		document.dispatchEvent(new CustomEvent('htmx:sseBeforeMessage'));
		for (let i = 0; i < 60; i++) box.insertAdjacentHTML('beforeend', '<span class="block" data-testid="log-line">fed ' + i + '</span>');
		document.dispatchEvent(new CustomEvent('htmx:sseMessage')); return box.scrollTop; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('log-lines').scrollTop = 0, true)`)); err != nil {
		t.Fatal(err)
	}
	if top, err := chromedp.Run(ctx, chromedp.Evaluate[float64](feed)); err != nil || top != 0 {
		t.Errorf("paused, the log scrolled to %v (%v)", top, err)
	}
	if got := text(`[data-testid=log-follow]`); got != "Resume following" {
		t.Errorf("the follow button reads %q while paused", got)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=log-follow]`)); err != nil {
		t.Fatal(err)
	}
	atBottom := `(b => b.scrollHeight - b.scrollTop - b.clientHeight < 2)(document.getElementById('log-lines'))`
	wait("resumed at the tail", atBottom, 5*time.Second)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[float64](feed)); err != nil {
		t.Fatal(err)
	}
	wait("following the new tail", atBottom, 5*time.Second)
	// A poll replaces the live part but keeps the open stream.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('logs').__same = true, document.getElementById('cluster-live').__old = true, true)`)); err != nil {
		t.Fatal(err)
	}
	wait("a poll on the logs section", `!document.getElementById('cluster-live').__old && document.getElementById('cluster-live').dataset.tab === 'logs'`, 10*time.Second)
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById('logs') && document.getElementById('logs').__same === true`)); err != nil || !same {
		t.Errorf("the poll replaced the logs section (and its stream) instead of keeping it (%v)", err)
	}
	// What a poll brings answers clicks at once: htmx processes the new part
	// within the swap (no settle delay), so a click just after a poll (a tab,
	// Terminate) never falls through to a full page load or a plain POST.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__processedAfterPoll = null, document.body.addEventListener('htmx:afterSwap', function h(e) {
		if (e.detail.elt.id !== 'cluster-live') return;
		document.body.removeEventListener('htmx:afterSwap', h);
		queueMicrotask(() => { const f = document.querySelector('#cluster-live [data-testid=terminate]').form;
			window.__processedAfterPoll = !!(f['htmx-internal-data'] && f['htmx-internal-data'].initHash); });
	}), true)`)); err != nil {
		t.Fatal(err)
	}
	wait("the next poll", `window.__processedAfterPoll !== null`, 10*time.Second)
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__processedAfterPoll`)); err != nil || !ok {
		t.Errorf("right after a poll's swap its Terminate form is not yet wired to htmx (%v): a click then would post the plain form", err)
	}
	journeyShot(t, ctx, "journey-3-ready")

	// Terminate: the styled dialog names the cluster and says billing stops;
	// the htmx form waits for it.
	if err := chromedp.Do(ctx, clickLive(`[data-testid=terminate]`)); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`, 10*time.Second)
	if got := j.cluster(acc.org.ID, id); got.TerminateRequestedAt != nil {
		t.Fatal("terminate was sent before it was confirmed")
	}
	if msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('confirm-dialog').innerText`)); err != nil ||
		!strings.Contains(msg, "llama-ft") || !strings.Contains(msg, "billing stops") {
		t.Errorf("confirmation = %q (%v), want it to name the cluster and say billing stops", msg, err)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait("the terminating notice", `!!document.querySelector('[data-testid=terminating]') && !document.querySelector('[data-testid=terminate]')`, 10*time.Second)
	if got := j.cluster(acc.org.ID, id); got.TerminateRequestedAt == nil {
		t.Fatal("the terminate click recorded nothing")
	}
	j.tick()
	if got := j.cluster(acc.org.ID, id); got.Status != models.StatusTerminated {
		t.Fatalf("after the provision job: %s", got.Status)
	}
	wait("the terminated badge, polling stopped", badge+` === 'terminated' &&
		!document.getElementById('cluster-live').hasAttribute('hx-get')`, 10*time.Second)
	kept("on terminate")
	// The ended cluster's log is its stored lines, not a stream waiting for
	// more (nor one retrying): the status reads Ended, with nothing to follow.
	wait("node-0's last lines, no stream", `!!document.querySelector('[data-testid=log-ended]') && !document.querySelector('[data-testid=log-stream]') &&
		[...document.querySelectorAll('[data-testid=log-ended] [data-testid=log-line]')].some(l => l.innerText.includes('checked in as node-0'))`, 10*time.Second)
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(s => !!s && s.dataset.state === 'ended' && s.innerText.trim().startsWith('Ended'))(document.querySelector('[data-testid=log-status]')) &&
		!document.querySelector('[data-testid=log-follow]')`)); err != nil || !ok {
		t.Errorf("the ended log does not read Ended, or still offers to follow (%v)", err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=header-ssh], [data-testid=connect]').length`)); n != 0 {
		t.Error("the page still offers SSH into a terminated cluster")
	}
	journeyShot(t, ctx, "journey-4-terminated")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
