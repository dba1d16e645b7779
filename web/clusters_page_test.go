package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// launchWorkload launches a 2 × 8 H100 cluster for acc with software and
// env, through the real models (launchFor with a workload).
func launchWorkload(t testing.TB, app *testApp, acc account, name, software string, env map[string]string) models.Cluster {
	t.Helper()
	ctx := context.Background()
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(64)))
	if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "test-deposit:"+acc.org.ID+name, "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: name, Software: software, Env: env}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// placeTwo reserves both machines of cl with public hosts.
func placeTwo(t testing.TB, app *testApp, cl models.Cluster) {
	t.Helper()
	if err := app.store.MarkPlaced(context.Background(), cl.ID, []models.PlacedNode{
		{Rank: 0, ProviderNodeID: "m0", PrivateIP: "10.77.0.1", PublicHost: "n0.example.net", User: "ubuntu", SSHPort: 22},
		{Rank: 1, ProviderNodeID: "m1", PrivateIP: "10.77.0.2", PublicHost: "n1.example.net", User: "ubuntu", SSHPort: 22},
	}); err != nil {
		t.Fatal(err)
	}
}

// nodeStatuses reads every node row's status from the page, with the
// status text the row shows.
func nodeStatuses(t testing.TB, d *goquery.Document) map[string]string {
	t.Helper()
	out := map[string]string{}
	d.Find(`[data-testid=node-row]`).Each(func(_ int, s *goquery.Selection) {
		st := s.AttrOr("data-status", "")
		if shown := strings.TrimSpace(s.Find(`[data-testid=node-status]`).Text()); shown != st {
			t.Errorf("%s: data-status %q but the row reads %q", s.AttrOr("data-node", ""), st, shown)
		}
		out[s.AttrOr("data-node", "")] = st
	})
	return out
}

// L8: a node's status is derived from its cluster's status and
// its own step, so it never contradicts the cluster's — nodes do not read
// provisioning while the cluster installs or is degraded, a healthy node of
// a failed cluster does not read failed — and the actions go once the
// cluster is terminating.
func TestClusterNodeStatusVocabulary(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("v@example.com", "Vocab")
		c := app.login(acc)
		cl := launchWorkload(t, app, acc, "vocab", "slurm", nil)
		badge := "" // what the badge says when it is not the status
		page := func(want models.ClusterStatus) (*goquery.Document, map[string]string) {
			t.Helper()
			rec := c.get("/clusters/" + cl.ID)
			if rec.Code != http.StatusOK {
				t.Fatalf("cluster page: %d", rec.Code)
			}
			d := doc(t, rec)
			if got := d.Find(`#cluster-live > header [data-testid=status-badge]`).AttrOr("data-status", ""); got != string(want) && (badge == "" || got != badge) {
				t.Fatalf("cluster badge %q, want %q", got, cmp.Or(badge, string(want)))
			}
			st := nodeStatuses(t, d)
			if len(st) != 2 {
				t.Fatalf("%d node rows", len(st))
			}
			for node, s := range st {
				if !slices.Contains(models.NodeStatusesShown[want], models.NodeStatus(s)) {
					t.Errorf("%s reads %q in a %s cluster; allowed: %v", node, s, want, models.NodeStatusesShown[want])
				}
			}
			return d, st
		}
		expect := func(st map[string]string, want map[string]string) {
			t.Helper()
			for node, s := range want {
				if st[node] != s {
					t.Errorf("%s reads %q, want %q (all: %v)", node, st[node], s, st)
				}
			}
		}
		stored := func(rank int) models.NodeStatus {
			t.Helper()
			nodes, err := app.store.NodesFor(ctx, cl.ID)
			if err != nil {
				t.Fatal(err)
			}
			return nodes[rank].Status
		}

		// Provisioning: every node provisioning, with what it is doing.
		placeTwo(t, app, cl)
		app.store.MarkNodeStep(ctx, cl.ID, 0, models.StepRunning, "up")
		d, st := page(models.StatusProvisioning)
		expect(st, map[string]string{"node-0": "provisioning", "node-1": "provisioning"})
		if got := d.Find(`[data-node=node-0] [data-testid=node-detail]`).Text(); got != "starting its cluster agent" {
			t.Errorf("node-0's detail: %q", got)
		}
		if got := d.Find(`[data-node=node-1] [data-testid=node-detail]`).Text(); got != "booting" {
			t.Errorf("node-1's detail: %q", got)
		}

		// Installing, then degraded by its software: the stored node status
		// stays installing, the page says degraded, with the install step failed.
		for i := range 2 {
			for _, step := range models.ProvisionSteps {
				app.store.MarkNodeStep(ctx, cl.ID, i, step, "ok")
			}
		}
		cur, err := app.store.MarkJoined(ctx, cl.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, st = page(models.StatusInstalling)
		expect(st, map[string]string{"node-0": "installing", "node-1": "installing"})
		if _, err := app.store.SoftwareRunFor(ctx, cur); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.DegradeSoftware(ctx, cl.ID, 1, models.ParseLastError("install_failed:node-1"), "node-1", "apt-get failed on node-1.", nil); err != nil {
			t.Fatal(err)
		}
		if stored(1) != models.NodeInstalling {
			t.Fatalf("stored status of node-1 is %q; this test expects the stored one to lag (installing)", stored(1))
		}
		d, st = page(models.StatusDegraded)
		expect(st, map[string]string{"node-0": "degraded", "node-1": "degraded"})
		if got := d.Find(`[data-node=node-1] [data-step=slurm]`).AttrOr("data-state", ""); got != "failed" {
			t.Errorf("node-1's slurm step: %q, want failed", got)
		}
		if d.Find(`[data-testid=retry-install]`).Length() != 1 || d.Find(`[data-testid=terminate]`).Length() != 1 {
			t.Error("a degraded cluster offers retry install and terminate")
		}
		// The terminate dialog says the disks go.
		if got := d.Find(`[data-testid=terminate]`).Closest("form").AttrOr("data-confirm-detail", ""); !strings.Contains(got, "its disks are deleted") || strings.Contains(got, "volume") {
			t.Errorf("terminate dialog of a cluster without a volume: %q", got)
		}

		// Retry, ready, then a machine goes down: that node down, the other ready.
		cur, err = app.store.RetryInstall(ctx, acc.org.ID, cl.ID, acc.user.Email)
		if err != nil {
			t.Fatal(err)
		}
		_, st = page(models.StatusInstalling)
		expect(st, map[string]string{"node-0": "installing", "node-1": "installing"})
		if cur, err = app.store.MarkSoftwareReady(ctx, cl.ID, 2, "Slurm passed its check.", nil); err != nil {
			t.Fatal(err)
		}
		_, st = page(models.StatusReady)
		expect(st, map[string]string{"node-0": "ready", "node-1": "ready"})
		if _, err := app.store.MarkMachinesDown(ctx, cur, []models.DownMachine{{Rank: 1, Name: "node-1", Seen: "stopped at the provider"}}, nil); err != nil {
			t.Fatal(err)
		}
		d, st = page(models.StatusDegraded)
		expect(st, map[string]string{"node-0": "ready", "node-1": "down"})
		if d.Find(`[data-testid=recover-now]`).Length() != 1 {
			t.Error("a cluster with a machine down offers recover now")
		}

		// Terminating: every node terminating, and no action is left; the
		// badge says terminating, not the state the machines were in.
		if _, err := app.store.RequestTerminate(ctx, acc.org.ID, cl.ID, acc.user.Email); err != nil {
			t.Fatal(err)
		}
		badge = views.TerminatingBadge
		d, st = page(models.StatusDegraded)
		if got := d.Find(`#cluster-live > header [data-testid=status-badge]`).Text(); strings.TrimSpace(got) != "terminating" {
			t.Errorf("the badge of a terminating cluster reads %q", got)
		}
		if got := doc(t, c.get("/clusters")).Find(`[data-testid=cluster-status] [data-testid=status-badge]`).AttrOr("data-status", ""); got != "terminating" {
			t.Errorf("the clusters list shows a terminating cluster as %q", got)
		}
		expect(st, map[string]string{"node-0": "terminating", "node-1": "terminating"})
		for _, action := range []string{"terminate", "retry-install", "recover-now", "recovery-form", "kubeconfig", "cluster-actions", "header-ssh"} {
			if d.Find(`[data-testid=`+action+`]`).Length() != 0 {
				t.Errorf("a terminating cluster still shows %s", action)
			}
		}
		if _, err := app.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		badge = ""
		_, st = page(models.StatusTerminated)
		expect(st, map[string]string{"node-0": "terminated", "node-1": "terminated"})
	})
}

// L4: in a failed cluster only the node that failed it reads
// failed; the others read released, never failed.
func TestFailedClusterNodeStatuses(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("f@example.com", "Fails")
		cl := launchWorkload(t, app, acc, "fails", "none", nil)
		placeTwo(t, app, cl)
		app.store.MarkNodeStep(ctx, cl.ID, 0, models.StepRunning, "up")
		app.store.MarkNodeStep(ctx, cl.ID, 1, models.StepRunning, "up")
		app.store.MarkNodeStep(ctx, cl.ID, 0, models.StepAgent, "in")
		if _, err := app.store.FailCluster(ctx, cl.ID, models.ParseLastError("timeout:agent"), "node-1", models.StepAgent, "node-1 was late.", nil); err != nil {
			t.Fatal(err)
		}
		d := doc(t, app.login(acc).get("/clusters/"+cl.ID))
		st := nodeStatuses(t, d)
		if st["node-0"] != "released" || st["node-1"] != "failed" {
			t.Errorf("node statuses of a failed cluster: %v", st)
		}
		if got := d.Find(`[data-node=node-1] [data-step=agent]`).AttrOr("data-state", ""); got != "failed" {
			t.Errorf("node-1's agent step: %q", got)
		}
		if got := d.Find(`[data-node=node-0] [data-step=agent]`).AttrOr("data-state", ""); got != "done" {
			t.Errorf("node-0's agent step: %q", got)
		}
		// Event times carry the date.
		at := d.Find(`[data-testid=event-at]`).First()
		if want := testNow.Format("2 Jan "); !strings.HasPrefix(at.Text(), want) || at.AttrOr("datetime", "") == "" {
			t.Errorf("event time %q (datetime %q), want it to start with the date %q", at.Text(), at.AttrOr("datetime", ""), want)
		}
		// Never billed reads "never", not "not yet".
		if got := strings.TrimSpace(d.Find(`[data-testid=ready-at]`).Text()); got != "never" {
			t.Errorf("Billing since of a cluster that failed before it was ready: %q, want never", got)
		}
	})
}

// problemCase puts a cluster in the state whose lastError is code.
type problemCase struct {
	code     string
	status   models.ClusterStatus
	sentence string // the sentence, exactly
	advice   string // part of the advice
}

// L4, L6, R2, R5: every lastError code reads as a sentence, with
// what happens to billing and what to do; the code stays in small print.
func TestClusterErrorSentences(t *testing.T) {
	released := "every machine was released and nothing was billed."
	cases := []problemCase{
		{"timeout:running", models.StatusFailed, "node-1 did not finish booting in time; " + released, "Nothing is retried without you. One offer of the same shape can start now"},
		{"timeout:agent", models.StatusFailed, "node-1 booted but its cluster agent never checked in; " + released, "Nothing is retried without you. One offer of the same shape can start now"},
		{"timeout:mesh", models.StatusFailed, "node-1 did not reach every other machine on the private network in time; " + released, "Nothing is retried without you"},
		{"timeout:reserved", models.StatusFailed, "The provider did not accept the reservation in time; " + released, "Nothing is retried without you"},
		{"node_lost:running", models.StatusFailed, "node-1 vanished at the provider while booting; " + released, "Nothing is retried without you"},
		{"node_lost:mesh", models.StatusFailed, "node-1 vanished at the provider while joining the private network; " + released, "Nothing is retried without you"},
		{"gpu_mismatch:node-1", models.StatusFailed, "node-1 does not have the GPUs the offer promises; " + released, "Nothing is retried without you"},
		{"provider_rejected:no_capacity", models.StatusFailed, "The provider no longer had 2 machines of this shape free in Loc us-east; " + released, "Nothing is retried without you"},
		{"provider_rejected:validation", models.StatusFailed, "The provider refused the reservation (the offer changed or is no longer available); " + released, "Nothing is retried without you"},
		{"install_failed:node-1", models.StatusDegraded, "Slurm failed to install on node-1; the node's log says why.", "billing continues at $39.94/h. Retry the install, or terminate"},
		{"install_failed:config", models.StatusDegraded, "Slurm cannot be set up for this cluster's configuration.", "billing continues at $39.94/h"},
		{"check_failed:slurm", models.StatusDegraded, "Slurm installed but did not pass its check in time.", "billing continues at $39.94/h. Retry the install"},
		{"node_down:node-1: stopped at the provider", models.StatusDegraded, "A machine stopped running: node-1: stopped at the provider.", "billing continues at $39.94/h for every machine"},
		{"recovery_exhausted", models.StatusDegraded, "Every recovery attempt is spent and a machine is still down.", "Billing continues at $39.94/h for every machine. Terminate"},
	}
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("e@example.com", "Errors")
		c := app.login(acc)
		var failedID string
		for i, tc := range cases {
			kind, detail, _ := strings.Cut(tc.code, ":")
			sw := "none"
			if tc.status == models.StatusDegraded && kind != "node_down" && kind != "recovery_exhausted" {
				sw = "slurm"
			}
			cl := launchWorkload(t, app, acc, fmt.Sprintf("err-%d", i), sw, nil)
			if tc.status == models.StatusFailed && kind != "provider_rejected" && detail != "reserved" {
				placeTwo(t, app, cl)
			}
			switch {
			case tc.status == models.StatusFailed:
				if kind == "node_lost" {
					if err := app.store.MarkNodeLost(ctx, cl.ID, 1, "vanished"); err != nil {
						t.Fatal(err)
					}
				}
				node := "node-1"
				if kind == "provider_rejected" || detail == "reserved" {
					node = ""
				}
				if _, err := app.store.FailCluster(ctx, cl.ID, models.ParseLastError(tc.code), node, detail, "failed", nil); err != nil {
					t.Fatal(err)
				}
			case sw == "slurm":
				cur := makeJoined(t, app, cl, true)
				if _, err := app.store.SoftwareRunFor(ctx, cur); err != nil {
					t.Fatal(err)
				}
				if _, err := app.store.DegradeSoftware(ctx, cl.ID, 1, models.ParseLastError(tc.code), "node-1", "failed", nil); err != nil {
					t.Fatal(err)
				}
			default:
				cur := makeJoined(t, app, cl, true)
				cur, err := app.store.MarkMachinesDown(ctx, cur, []models.DownMachine{{Rank: 1, Name: "node-1", Seen: "stopped at the provider"}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if kind == "recovery_exhausted" {
					if _, err := app.store.MarkRecoveryExhausted(ctx, cur, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.status == models.StatusFailed {
				failedID = cl.ID
			}
			got, _ := app.store.ClusterByID(ctx, cl.ID)
			if got.Status != tc.status || got.LastError != tc.code {
				t.Fatalf("%s: the cluster is %s with %q", tc.code, got.Status, got.LastError)
			}
			d := doc(t, c.get("/clusters/"+cl.ID))
			box := d.Find(`[data-testid=last-error]`)
			if s := strings.TrimSpace(box.Find(`[data-testid=problem-sentence]`).Text()); s != tc.sentence {
				t.Errorf("%s: sentence %q\n want %q", tc.code, s, tc.sentence)
			}
			if a := box.Find(`[data-testid=problem-advice]`).Text(); !strings.Contains(a, tc.advice) {
				t.Errorf("%s: advice %q, want it to contain %q", tc.code, a, tc.advice)
			}
			if code := box.Find(`[data-testid=problem-code]`); code.Text() != tc.code || !code.Is("code") {
				t.Errorf("%s: the code in small print reads %q", tc.code, code.Text())
			}
			if strings.Contains(box.Find(`[data-testid=problem-sentence]`).Text(), ":") && !strings.HasPrefix(tc.code, "node_down") {
				t.Errorf("%s: the sentence shows a code: %q", tc.code, box.Find(`[data-testid=problem-sentence]`).Text())
			}
		}
		// With nothing of the shape in stock, a failed cluster's advice says so.
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(0)))
		d := doc(t, c.get("/clusters/"+failedID))
		if a := d.Find(`[data-testid=problem-advice]`).Text(); !strings.Contains(a, "No offer of this shape can start right now") ||
			d.Find(`[data-testid=alternatives]`).Length() != 0 {
			t.Errorf("advice with nothing in stock: %q", a)
		}
	})
}

// L11: a starting cluster shows its phase, how many machines
// finished it, how long it usually takes and the time elapsed, with the
// deadline as secondary text — not a countdown that reads as an ETA.
func TestClusterProgressLine(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("g@example.com", "Progress")
		c := app.login(acc)
		cl := launchWorkload(t, app, acc, "progress", "slurm", nil)
		line := func() (string, string) {
			t.Helper()
			d := doc(t, c.get("/clusters/"+cl.ID))
			p := d.Find(`[data-testid=progress]`)
			return strings.Join(strings.Fields(p.Find(`p`).First().Text()), " "), p.Find(`[data-testid=progress-gives-up]`).Text()
		}
		app.clock.Advance(20 * time.Second)
		if got, _ := line(); got != "Reserving · 0 of 2 machines reserved · usually under a minute · 0:20 elapsed" {
			t.Errorf("before placement: %q", got)
		}
		placeTwo(t, app, cl)
		app.store.MarkNodeStep(ctx, cl.ID, 0, models.StepRunning, "up")
		app.clock.Advance(2*time.Minute + 50*time.Second)
		placed, _ := app.store.ClusterByID(ctx, cl.ID)
		got, givesUp := line()
		if got != "Booting · 1 of 2 machines booted · usually about 4 min for VMs · 3:10 elapsed" {
			t.Errorf("booting: %q", got)
		}
		if want := "gives up at " + placed.StepDeadline(models.StepRunning).Format("15:04"); givesUp != want {
			t.Errorf("booting deadline %q, want %q", givesUp, want)
		}
		app.store.MarkNodeStep(ctx, cl.ID, 1, models.StepRunning, "up")
		if got, givesUp := line(); got != "Starting agents · 0 of 2 machines checked in · usually under a minute · 3:10 elapsed" ||
			givesUp != "gives up at "+placed.StepDeadline(models.StepAgent).Format("15:04") {
			t.Errorf("agents: %q, %q", got, givesUp)
		}
		for i := range 2 {
			for _, step := range models.ProvisionSteps {
				app.store.MarkNodeStep(ctx, cl.ID, i, step, "ok")
			}
		}
		joined, err := app.store.MarkJoined(ctx, cl.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		run, err := app.store.SoftwareRunFor(ctx, joined)
		if err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(65 * time.Second)
		if got, givesUp := line(); got != "Installing Slurm · on 2 machines · 1:05 elapsed" || givesUp != "gives up at "+run.Deadline.Format("15:04") {
			t.Errorf("installing: %q, %q", got, givesUp)
		}
		if _, err := app.store.MarkSoftwareReady(ctx, cl.ID, 1, "ok", nil); err != nil {
			t.Fatal(err)
		}
		if d := doc(t, c.get("/clusters/"+cl.ID)); d.Find(`[data-testid=progress]`).Length() != 0 {
			t.Error("a ready cluster still shows progress")
		}
	})
}

// N2, N3: the connect section masks the customer's values until
// revealed (a closed <details>, no JavaScript needed) and marks NODE_RANK as
// the one variable that differs per node; readiness prose shows its code as
// code, and every launcher recipe is folded.
func TestClusterConnectSection(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("m@example.com", "Masks")
		cl := launchWorkload(t, app, acc, "masks", "none", map[string]string{"HF_TOKEN": "hf_SeCrEt42", "WANDB_PROJECT": "llama"})
		makeJoined(t, app, cl, true)
		c := app.login(acc)
		overview := doc(t, c.get("/clusters/"+cl.ID))
		if overview.Find(`[data-testid=connect]`).Length() != 0 || overview.Find(`[data-testid=logs]`).Length() != 0 {
			t.Error("the overview shows the connect or logs section")
		}
		if ssh := overview.Find(`[data-testid=header-ssh] [data-testid=ssh-primary]`).Text(); !strings.Contains(ssh, "ubuntu@n0.example.net") ||
			overview.Find(`[data-testid=header-ssh] button[data-copy=ssh-primary]`).Length() != 1 {
			t.Errorf("node-0's SSH command with Copy in the header: %q", ssh)
		}
		d := doc(t, c.get("/clusters/"+cl.ID+"?tab=connect"))
		if cur := d.Find(`[data-testid=tab][aria-current=page]`); cur.Length() != 1 || cur.AttrOr("data-tab", "") != "connect" {
			t.Errorf("current section: %q", cur.AttrOr("data-tab", ""))
		}
		vars := map[string]*goquery.Selection{}
		d.Find(`[data-testid=env-var]`).Each(func(_ int, s *goquery.Selection) { vars[s.AttrOr("data-name", "")] = s })
		for name, want := range map[string]string{"HF_TOKEN": "yours", "WANDB_PROJECT": "yours", "NODE_RANK": "per node", "MASTER_ADDR": "every node", "WORLD_SIZE": "every node"} {
			v := vars[name]
			if v == nil {
				t.Errorf("%s is not listed", name)
				continue
			}
			if v.AttrOr("data-scope", "") != want || !strings.Contains(v.Text(), want) {
				t.Errorf("%s is marked %q (%q), want %q", name, v.AttrOr("data-scope", ""), v.Text(), want)
			}
		}
		if list := d.Find(`[data-testid=env-masked]`).Text(); strings.Contains(list, "hf_SeCrEt42") || strings.Contains(list, "=llama") ||
			!strings.Contains(list, "HF_TOKEN="+maskedEnvText) || !strings.Contains(list, "MASTER_ADDR=10.77.0.1") {
			t.Errorf("the listed environment:\n%s", list)
		}
		if vars["HF_TOKEN"].AttrOr("data-masked", "") != "true" || vars["MASTER_ADDR"].AttrOr("data-masked", "") != "false" {
			t.Error("masked flags")
		}
		reveal := d.Find(`details[data-testid=env-reveal]:not([open])`)
		if reveal.Length() != 1 || !strings.Contains(reveal.Find(`[data-testid=env-block]`).Text(), "HF_TOKEN=hf_SeCrEt42") ||
			!strings.Contains(reveal.Find(`summary`).Text(), "Reveal") {
			t.Error("the clear values are not behind a closed Reveal")
		}
		// Copy on every node's SSH command.
		d.Find(`[data-testid=connect-node]`).Each(func(_ int, s *goquery.Selection) {
			node := s.AttrOr("data-node", "")
			if s.Find(`button[data-copy=ssh-`+node+`]`).Length() != 1 || !strings.HasPrefix(s.Find(`#ssh-`+node).Text(), "ssh ") {
				t.Errorf("%s's SSH row has no copy button for its command", node)
			}
		})
		// Code as code: no literal backticks, the commands in <code>.
		note := d.Find(`[data-testid=readiness-note]`)
		if !strings.Contains(note.Text(), "do sleep 5; done, or run") {
			t.Errorf("the readiness note's code is not followed by its comma: %q", note.Text())
		}
		if strings.Contains(note.Text(), "`") || note.Find(`code`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.HasPrefix(s.Text(), "until curl")
		}).Length() != 1 {
			t.Errorf("readiness note: %q", note.Text())
		}
		recipes := d.Find(`details[data-testid=recipe]`)
		if recipes.Length() < 4 || d.Find(`details[data-testid=recipe][open]`).Length() != 0 {
			t.Errorf("%d launcher recipes, %d open; want them all folded", recipes.Length(), d.Find(`details[data-testid=recipe][open]`).Length())
		}
		if strings.Contains(d.Find(`[data-testid=connect]`).Text(), "`") {
			t.Error("a literal backtick on the connect section")
		}
	})
}

// N6: an ended cluster's log shows the stored lines and never
// opens a stream that waits for more; a live one streams, and its stream
// ends with a last line once the cluster ended. The sections work without
// JavaScript: ?tab= picks one, an unknown one is the overview.
func TestClusterLogsAndEventsSections(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("l@example.com", "Logs")
		c := app.login(acc)
		cl := launchWorkload(t, app, acc, "logs", "none", nil)
		placeTwo(t, app, cl)
		live := doc(t, c.get("/clusters/"+cl.ID+"?tab=logs"))
		if live.Find(`#logs[hx-preserve] [data-testid=log-stream][sse-connect][sse-close=end]`).Length() != 1 {
			t.Error("a live cluster's log is a stream that closes on its end event")
		}
		if err := app.store.AppendNodeLogs(ctx, cl, 1, []models.LogInput{{Text: "node-1 booted"}, {Text: "node-1 waiting"}}); err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(25*time.Minute + 10*time.Second)
		if _, err := app.store.FailCluster(ctx, cl.ID, models.ParseLastError("timeout:running"), "node-0", models.StepRunning, "late", nil); err != nil {
			t.Fatal(err)
		}
		d := doc(t, c.get("/clusters/"+cl.ID+"?tab=logs&node=1"))
		if got := d.Find(`[data-testid=ran-duration]`).Text(); got != "25 min" {
			t.Errorf("a cluster that failed 25 minutes after its launch ran for %q", got)
		}
		if got := d.Find(`[data-testid=ended-at]`).Text(); !strings.Contains(got, "never billed") {
			t.Errorf("ended: %q", got)
		}
		if d.Find(`[sse-connect]`).Length() != 0 || d.Find(`#cluster-live[hx-trigger]`).Length() != 0 {
			t.Error("a failed cluster's page opens a stream or polls")
		}
		lines := d.Find(`[data-testid=log-ended][data-node="1"] [data-testid=log-line]`)
		if lines.Length() != 2 || !strings.Contains(lines.Last().Text(), "node-1 waiting") {
			t.Errorf("node-1's stored lines: %d %q", lines.Length(), lines.Text())
		}
		if d.Find(`#log-node option[selected]`).AttrOr("value", "") != "1" || d.Find(`[data-testid=log-node-show]`).Length() != 1 {
			t.Error("the node picker does not keep node-1 or has no Show button")
		}
		if rec := c.get("/clusters/" + cl.ID + "?tab=logs&node=9"); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "this cluster has node-0 to node-1") {
			t.Errorf("a node the cluster does not have: %d %s", rec.Code, rec.Body)
		}
		if empty := doc(t, c.get("/clusters/"+cl.ID+"?tab=logs")).Find(`[data-testid=log-empty]`).Text(); !strings.Contains(empty, "node-0 sent no lines") {
			t.Errorf("node-0 without lines: %q", empty)
		}
		// The page's stream of an ended cluster sends what it has, then its end line.
		rec := c.get("/clusters/" + cl.ID + "/logs/stream?node=1")
		body := rec.Body.String()
		if !strings.Contains(body, "event: line") || !strings.Contains(body, "event: end\ndata: <span") || !strings.Contains(body, "nothing more will come") {
			t.Errorf("stream of an ended cluster:\n%s", body)
		}
		ev := doc(t, c.get("/clusters/"+cl.ID+"?tab=events"))
		events, _ := app.store.EventsFor(ctx, cl.ID)
		if n := ev.Find(`[data-testid=events] [data-testid=event]`).Length(); n != len(events) || n < 3 {
			t.Errorf("events section lists %d of %d events", n, len(events))
		}
		if ev.Find(`[data-testid=tab][data-tab=events][aria-current=page]`).Length() != 1 || ev.Find(`[data-testid=node-row]`).Length() != 0 {
			t.Error("the events section is not the one shown")
		}
		for _, tab := range []string{"bogus", ""} {
			o := doc(t, c.get("/clusters/"+cl.ID+"?tab="+tab))
			if o.Find(`[data-testid=tab][data-tab=overview][aria-current=page]`).Length() != 1 || o.Find(`[data-testid=node-row]`).Length() != 2 {
				t.Errorf("?tab=%s does not show the overview", tab)
			}
		}
		// Each tab link works without JavaScript: a plain link to its section.
		o := doc(t, c.get("/clusters/"+cl.ID))
		for _, tab := range []string{"connect", "logs", "events"} {
			a := o.Find(`a[data-testid=tab][data-tab=` + tab + `]`)
			if a.AttrOr("href", "") != "/clusters/"+cl.ID+"?tab="+tab || a.AttrOr("hx-get", "") != a.AttrOr("href", "") {
				t.Errorf("%s link: href %q hx-get %q", tab, a.AttrOr("href", ""), a.AttrOr("hx-get", ""))
			}
		}
	})
}
