package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/web"
	"gorm.io/gorm"
)

// The test cloud: one location, a VM offer (boot 4 m) with 10 machines
// counted, a slow-booting VM (boot 10 m) for the cap, and a container offer
// (boot 1 m) for what containers cannot run.
const testCloud = `{
  "locations": [{
    "id": "test-1", "name": "Testville",
    "offers": [
      {"id": "h100.8x.vm", "accelerator": "H100_80GB", "machine_kind": "vm", "interconnect": "infiniband", "nics": 8, "nic_gbps": 400,
       "gpus_per_node": 8, "vcpus": 96, "memory_gb": 1000, "per_gpu_hour_usd": 2490000,
       "root_disk_gb": 500, "disk_gb_hour_usd": 100, "nodes_available": 10, "boot_time": "4m"},
      {"id": "a100.4x.slow", "accelerator": "A100_80GB", "machine_kind": "vm", "interconnect": "ethernet",
       "gpus_per_node": 4, "vcpus": 48, "memory_gb": 500, "per_gpu_hour_usd": 1500000,
       "root_disk_gb": 200, "disk_gb_hour_usd": 100, "nodes_available": 10, "boot_time": "10m"},
      {"id": "l40s.2x.container", "accelerator": "L40S", "machine_kind": "container", "interconnect": "ethernet",
       "gpus_per_node": 2, "vcpus": 16, "memory_gb": 128, "per_gpu_hour_usd": 900000,
       "root_disk_gb": 100, "disk_gb_hour_usd": 100, "nodes_available": 10, "boot_time": "1m"}
    ]}]}`

var start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// world is the real thing at test scale: database, simulated cloud whose
// machines run the real agent against the real agent endpoints over HTTP,
// and the provision and install jobs, all on one fake clock.
type world struct {
	t       testing.TB
	store   *models.Store
	clock   *models.FakeClock
	cloud   *sim.Cloud
	srv     *httptest.Server
	job     *jobs.Provision
	term    *jobs.Terminate
	install *jobs.Install
	join    *jobs.Join
	verify  *jobs.Verify
	// verifyTime is the wall time spent in the verify job (the benchmark).
	verifyTime time.Duration
	billing    *jobs.Billing
	stop       *jobs.Stop
	nccl       *jobs.NCCLCheck // nil: the NCCL check is not planned (tests that want it set it)
	cat        *jobs.Catalog
	org        models.Org
	env        models.Environment
	execs      map[string]providers.Executor // each machine's executor, by "group/node-i"
	tokens     map[string]string             // the token each machine's agent started with, by "group/node-i"
}

func newWorld(t testing.TB, db *gorm.DB) *world {
	t.Helper()
	return newWorldOn(t, db, testCloud)
}

// newWorldOn is newWorld on another simulated cloud.
func newWorldOn(t testing.TB, db *gorm.DB, cloudConfig string) *world {
	t.Helper()
	return newWorldOnSet(t, db, cloudConfig, models.Settings{})
}

// newWorldOnSet is newWorldOn with the store built with set.
func newWorldOnSet(t testing.TB, db *gorm.DB, cloudConfig string, set models.Settings) *world {
	t.Helper()
	ctx := context.Background()
	clock := models.NewFakeClock(start)
	if set.WebhookClusterView == nil {
		set.WebhookClusterView = web.WebhookClusterView // as main sets it
	}
	store := models.NewStoreWith(db, clock, set)
	srv := httptest.NewServer(web.New(web.Deps{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: web.Config{SessionAuthKey: make([]byte, 64), SessionEncKey: make([]byte, 32)}}))
	t.Cleanup(srv.Close)
	cfg, err := sim.ParseConfig([]byte(cloudConfig), "json")
	if err != nil {
		t.Fatal(err)
	}
	execs, tokens := map[string]providers.Executor{}, map[string]string{}
	cloud := sim.New(cfg, sim.WithClock(clock.Now), sim.WithAgents(func(m sim.Machine) sim.MachineAgent {
		execs[m.Group+"/"+m.Name] = m.Exec
		tokens[m.Group+"/"+m.Name] = m.Token
		return agent.New(agent.Config{Server: m.ServerURL, Token: m.Token, MachineID: m.NodeID, Exec: m.Exec, HTTP: srv.Client(),
			Hostname: m.Name, PrivateIP: m.PrivateIP, Now: clock.Now, Workload: m.Workload})
	}))
	reg := providers.Registry{"sim": cloud}
	w := &world{t: t, store: store, clock: clock, cloud: cloud, srv: srv, cat: &jobs.Catalog{Store: store, Providers: reg},
		job: &jobs.Provision{Store: store, Providers: reg, ServerURL: srv.URL}, term: &jobs.Terminate{Store: store, Providers: reg}, install: &jobs.Install{Store: store}, billing: &jobs.Billing{Store: store},
		join: &jobs.Join{Store: store, Providers: reg, ServerURL: srv.URL}, verify: &jobs.Verify{Store: store},
		stop: &jobs.Stop{Store: store, Providers: reg}, execs: execs, tokens: tokens}
	if err := w.cat.Run(ctx); err != nil {
		t.Fatal(err)
	}
	w.org = models.Org{ID: models.NewID("org"), Name: "Acme", MaxMachines: 64, MaxGPUs: 512, CreatedAt: start}
	w.env = models.Environment{ID: models.NewID("env"), OrgID: w.org.ID, Name: "default", IsDefault: true, CreatedAt: start}
	if err := db.Create(&w.org).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&w.env).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deposit(ctx, w.org.ID, 1000*models.Micro, "test-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) launch(accel string, nodes, gpus int) models.Cluster {
	w.t.Helper()
	return w.launchWith(accel, nodes, gpus, "none")
}

// launchWith launches a cluster running software (S1).
func (w *world) launchWith(accel string, nodes, gpus int, software string) models.Cluster {
	w.t.Helper()
	ctx := context.Background()
	q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: accel, Nodes: nodes, GPUsPerNode: gpus})
	if err != nil {
		w.t.Fatal(err)
	}
	c, _, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID, Actor: "test@example.com", Workload: models.Workload{Name: "train", Software: software}})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// tick runs the provision and install jobs, lets every running machine's
// agent take a step over HTTP, and runs the jobs again.
func (w *world) tick() {
	w.t.Helper()
	ctx := context.Background()
	w.runJobs()
	if err := w.cloud.StepAgents(ctx); err != nil && !errors.Is(err, agent.ErrRevoked) {
		w.t.Logf("agents: %v", err)
	}
	if err := w.cat.Run(ctx); err != nil {
		w.t.Fatalf("catalog: %v", err)
	}
	w.runJobs()
}

func (w *world) runJobs() {
	w.t.Helper()
	ctx := context.Background()
	if err := w.job.Run(ctx); err != nil {
		w.t.Fatalf("provision: %v", err)
	}
	if err := w.term.Run(ctx); err != nil {
		w.t.Fatalf("terminate: %v", err)
	}
	if err := w.install.Run(ctx); err != nil {
		w.t.Fatalf("install: %v", err)
	}
	if err := w.join.Run(ctx); err != nil {
		w.t.Fatalf("join: %v", err)
	}
	began := time.Now()
	if err := w.verify.Run(ctx); err != nil {
		w.t.Fatalf("verify: %v", err)
	}
	w.verifyTime += time.Since(began)
	if err := w.stop.Run(ctx); err != nil {
		w.t.Fatalf("stop: %v", err)
	}
	if err := w.billing.Run(ctx); err != nil {
		w.t.Fatalf("billing: %v", err)
	}
	if w.nccl != nil {
		if err := w.nccl.Run(ctx); err != nil {
			w.t.Fatalf("nccl: %v", err)
		}
	}
}

// run advances the clock by step and ticks until d has passed.
func (w *world) run(d, step time.Duration) {
	for end := w.clock.Now().Add(d); w.clock.Now().Before(end); {
		w.clock.Advance(step)
		w.tick()
	}
}

func (w *world) cluster(id string) models.Cluster {
	w.t.Helper()
	c, err := w.store.ClusterForOrg(context.Background(), w.org.ID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) stock(offer string) int {
	w.t.Helper()
	offers, err := w.cloud.ListOffers(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	for _, o := range offers {
		if o.OfferID == offer {
			return *o.NodesAvailable
		}
	}
	w.t.Fatalf("no offer %s", offer)
	return 0
}

func (w *world) events(id string) string {
	evs, _ := w.store.EventsFor(context.Background(), id)
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Kind + "|" + e.Status + "|" + e.Node + "|" + e.Step + "|" + e.Message + "\n")
	}
	return b.String()
}

func (w *world) billed() int {
	entries, _ := w.store.LedgerEntries(context.Background(), w.org.ID, 100)
	n := 0
	for _, e := range entries {
		if e.Kind == models.LedgerUsage {
			n++
		}
	}
	return n
}

// L3, L5: every machine reserved at once, each node through its steps,
// readyAt set once when every node reached every other; L7 terminate
// releases every machine.
func TestProvisionHappyPath(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launch("H100_80GB", 3, 8)
		w.tick()
		if got := w.stock("h100.8x.vm"); got != 7 {
			t.Fatalf("stock after placement = %d, want 7 (3 reserved at once)", got)
		}
		c = w.cluster(c.ID)
		if c.Status != models.StatusProvisioning || c.PlacedAt == nil {
			t.Fatalf("after placement: %s placed=%v", c.Status, c.PlacedAt)
		}
		w.run(6*time.Minute, time.Minute)
		c = w.cluster(c.ID)
		if c.Status != models.StatusReady || c.ReadyAt == nil || c.LastError != "" {
			t.Fatalf("status %s readyAt %v lastError %q\n%s", c.Status, c.ReadyAt, c.LastError, w.events(c.ID))
		}
		nodes, _ := w.store.NodesFor(context.Background(), c.ID)
		for _, n := range nodes {
			if n.RunningAt == nil || n.AgentAt == nil || n.MeshAt == nil || n.Status != models.NodeReady || n.HeartbeatAt == nil {
				t.Errorf("%s: running %v agent %v mesh %v status %s", n.Name, n.RunningAt, n.AgentAt, n.MeshAt, n.Status)
			}
			if n.MeshAt.After(*c.ReadyAt) {
				t.Errorf("%s joined after readyAt", n.Name)
			}
		}
		ev := w.events(c.ID)
		for _, want := range []string{"|reserved|", "|node-2|running|", "|node-1|agent|", "|node-0|mesh|", "status|ready|"} {
			if !strings.Contains(ev, want) {
				t.Errorf("events lack %q:\n%s", want, ev)
			}
		}
		// OP1: every machine started with the cluster's bootstrap token
		// only, and its agent claimed the rank of its own machine id.
		for _, n := range nodes {
			if tok := w.tokens[c.GroupName()+"/"+n.Name]; tok != models.BootstrapToken(c) {
				t.Errorf("%s's agent started with %q, want the bootstrap token", n.Name, tok)
			}
			if n.ClaimedBy == "" || n.ClaimedBy != n.ProviderNodeID || n.ClaimedAt == nil {
				t.Errorf("%s claimed by %q at %v, want its machine %q", n.Name, n.ClaimedBy, n.ClaimedAt, n.ProviderNodeID)
			}
		}
		logs, _ := w.store.TailNodeLogs(context.Background(), w.org.ID, c.ID, 0, 50)
		if len(logs) < 2 || !strings.Contains(logs[0].Text, "claimed node-0 (rank 0)") || !strings.Contains(logs[1].Text, "checked in as node-0") {
			t.Errorf("node-0 logs = %+v", logs)
		}

		if _, err := w.store.RequestTerminate(context.Background(), w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.tick()
		c = w.cluster(c.ID)
		if c.Status != models.StatusTerminated || c.EndedAt == nil {
			t.Fatalf("after terminate: %s", c.Status)
		}
		if got := w.stock("h100.8x.vm"); got != 10 {
			t.Errorf("stock after terminate = %d, want 10", got)
		}
		w.checkUsage(c.ID) // B2: every machine billed from readyAt to the release
	})
}

// L4: each failure fails the whole cluster at once with its lastError, names
// the node and the step, releases every machine and bills nothing.
func TestProvisionFailsWhole(t *testing.T) {
	tests := []struct {
		name      string
		fault     sim.Fault
		accel     string
		offer     string
		run       time.Duration
		lastError string
		node      string
		step      string
	}{
		{"capacity refused", sim.Fault{Kind: sim.FaultRefuseCapacity}, "H100_80GB", "h100.8x.vm", time.Minute,
			"provider_rejected:no_capacity", "", "reserved"},
		{"validation refused", sim.Fault{Kind: sim.FaultRefuseValidation}, "H100_80GB", "h100.8x.vm", time.Minute,
			"provider_rejected:validation", "", "reserved"},
		{"never boots", sim.Fault{Kind: sim.FaultNeverBoots, Node: 1}, "H100_80GB", "h100.8x.vm", 12 * time.Minute,
			"timeout:running", "node-1", "running"},
		{"agent never checks in", sim.Fault{Kind: sim.FaultAgentSilent, Node: 2}, "H100_80GB", "h100.8x.vm", 15 * time.Minute,
			"timeout:agent", "node-2", "agent"},
		{"peer unreachable", sim.Fault{Kind: sim.FaultPeerUnreachable, Node: 0}, "H100_80GB", "h100.8x.vm", 16 * time.Minute,
			"timeout:mesh", "node-0", "mesh"},
		{"node lost mid-start", sim.Fault{Kind: sim.FaultDies, Node: 1}, "H100_80GB", "h100.8x.vm", 8 * time.Minute,
			"node_lost:", "node-1", ""},
		{"slow kind capped at 25 minutes", sim.Fault{Kind: sim.FaultPeerUnreachable, Node: 1}, "A100_80GB", "a100.4x.slow", 30 * time.Minute,
			"timeout:mesh", "node-1", "mesh"},
		{"a GPU missing", sim.Fault{Kind: sim.FaultGPUMissing, Node: 1}, "H100_80GB", "h100.8x.vm", 8 * time.Minute,
			"gpu_mismatch:node-1", "node-1", "agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				w := newWorld(t, db)
				if err := w.cloud.Inject(tt.fault); err != nil {
					t.Fatal(err)
				}
				gpus := 8
				if tt.accel == "A100_80GB" {
					gpus = 4
				}
				c := w.launch(tt.accel, 3, gpus)
				w.tick()
				var failedAt time.Time
				for end := w.clock.Now().Add(tt.run); w.clock.Now().Before(end); {
					w.clock.Advance(30 * time.Second)
					w.tick()
					if cur := w.cluster(c.ID); cur.Status == models.StatusFailed && failedAt.IsZero() {
						failedAt = w.clock.Now()
					}
				}
				c = w.cluster(c.ID)
				if c.Status != models.StatusFailed || !strings.HasPrefix(c.LastError, tt.lastError) {
					t.Fatalf("status %s lastError %q, want failed %s\n%s", c.Status, c.LastError, tt.lastError, w.events(c.ID))
				}
				if c.ReadyAt != nil || w.billed() != 0 {
					t.Errorf("a cluster that never came up was billed: readyAt %v, usage entries %d", c.ReadyAt, w.billed())
				}
				if c.ReleasedAt == nil {
					t.Error("machines not confirmed released")
				}
				if got := w.stock(tt.offer); got != 10 {
					t.Errorf("stock = %d after the failure, want all 10 released", got)
				}
				want := "status|failed|" + tt.node + "|" + tt.step
				if !strings.Contains(w.events(c.ID), want) {
					t.Errorf("no failure event naming %q:\n%s", want, w.events(c.ID))
				}
				if tt.name == "slow kind capped at 25 minutes" {
					if waited := failedAt.Sub(*c.PlacedAt); waited > 25*time.Minute+time.Minute {
						t.Errorf("waited %s after placement, past the 25-minute cap", waited)
					}
					if !strings.Contains(w.events(c.ID), "cannot reach") {
						t.Errorf("the failure should say which peer was unreachable:\n%s", w.events(c.ID))
					}
				}
				// Nothing retries without the user (L4).
				w.run(10*time.Minute, 2*time.Minute)
				if got := w.cluster(c.ID); got.Status != models.StatusFailed || w.stock(tt.offer) != 10 {
					t.Errorf("after more ticks: %s, stock %d", got.Status, w.stock(tt.offer))
				}
			})
		})
	}
}

// L7: terminate mid-provision, at every point and racing the job, never
// leaves a machine behind.
func TestTerminateRacingProvisionLeavesNothing(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		// Before placement, after placement, mid-boot, and concurrently with the job.
		for i, ticksBefore := range []int{0, 1, 3, -1} {
			c := w.launch("H100_80GB", 2, 8)
			for range max(ticksBefore, 0) {
				w.clock.Advance(time.Minute)
				w.tick()
			}
			if ticksBefore < 0 {
				var wg sync.WaitGroup
				wg.Add(3)
				go func() { defer wg.Done(); _ = w.job.Run(ctx) }()
				go func() { defer wg.Done(); _ = w.term.Run(ctx) }()
				go func() { defer wg.Done(); _, _ = w.store.RequestTerminate(ctx, w.org.ID, c.ID, "racer") }()
				wg.Wait()
			} else if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
				t.Fatal(err)
			}
			w.run(3*time.Minute, time.Minute)
			if got := w.cluster(c.ID); got.Status != models.StatusTerminated {
				t.Errorf("case %d: status %s, want terminated\n%s", i, got.Status, w.events(c.ID))
			}
			if got := w.stock("h100.8x.vm"); got != 10 {
				t.Errorf("case %d: stock %d, want 10: a machine was left behind", i, got)
			}
			nodes, _ := w.store.NodesFor(ctx, c.ID)
			cl := w.cluster(c.ID)
			if _, _, err := w.store.NodeForAgentToken(ctx, models.AgentToken(cl, nodes[0])); !errors.Is(err, models.ErrAgentRevoked) {
				t.Errorf("case %d: agent token after terminate: %v, want revoked", i, err)
			}
		}
		if w.billed() != 0 {
			t.Error("terminated-before-ready clusters were billed")
		}
	})
}

// gatedPlace holds PlaceGroup until released, so a test can carry out a
// terminate while the provider is placing.
type gatedPlace struct {
	providers.Provider
	entered, release chan struct{}
}

func (g gatedPlace) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	close(g.entered)
	<-g.release
	return g.Provider.PlaceGroup(ctx, req)
}

// L7: a terminate carried out while the provider is still placing the
// machines (the terminate job finds nothing to release and marks the
// cluster terminated) does not leave the machines running once the
// placement returns: the provision job releases them.
func TestTerminateDuringPlacementReleasesTheMachines(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		c := w.launch("H100_80GB", 2, 8)
		gate := gatedPlace{Provider: w.cloud, entered: make(chan struct{}), release: make(chan struct{})}
		placing := &jobs.Provision{Store: w.store, Providers: providers.Registry{"sim": gate}, ServerURL: w.srv.URL}
		done := make(chan error, 1)
		go func() { done <- placing.Run(ctx) }()
		<-gate.entered
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if err := w.term.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := w.cluster(c.ID); got.Status != models.StatusTerminated {
			t.Fatalf("setup: status %s, want terminated before the placement returns", got.Status)
		}
		close(gate.release)
		if err := <-done; err != nil {
			t.Fatalf("provision: %v", err)
		}
		if got := w.stock("h100.8x.vm"); got != 10 {
			t.Fatalf("stock %d, want 10: the machines placed after the terminate run on", got)
		}
	})
}
