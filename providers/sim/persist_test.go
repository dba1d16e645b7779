package sim

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
)

// sharedCloud is a Cloud on testConfig keeping its state in db, as one
// server instance would build it.
func sharedCloud(db *gorm.DB, clk *fakeClock, holder string, opts ...Option) *Cloud {
	return New(testConfig(), append([]Option{WithClock(clk.Now), WithSeed(7), WithDB(db, holder)}, opts...)...)
}

// A placement, its stock, its boot progress and its scripted faults outlive
// the process that made them, and a second instance on the same database
// sees and changes the same cloud (OP4).
func TestPersistedCloudOutlivesRestartAndIsShared(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := newFakeClock()
		a := sharedCloud(db, clk, "a")
		if err := a.Inject(Fault{Kind: FaultNeverBoots, Node: 1, Count: 1}, Fault{Kind: FaultRestartFails, Count: 1}); err != nil {
			t.Fatal(err)
		}
		placed := place(t, a, "cl_1", offCounted, 2)
		clk.Advance(10 * time.Minute)

		// "Restart": a new process on the same database, and a second instance.
		b := sharedCloud(db, clk, "b")
		other := sharedCloud(modelstest.SecondInstance(t, db), clk, "c")
		for _, c := range []*Cloud{b, other} {
			g := describe(t, c, "cl_1")
			if got := states(g); got[0] != providers.NodeRunning || got[1] != providers.NodePending {
				t.Fatalf("states after restart = %v, want [running pending] (boot progress and never_boots kept)", got)
			}
			if g.Nodes[0].ID != placed.Nodes[0].ID {
				t.Fatalf("node id = %s, want %s", g.Nodes[0].ID, placed.Nodes[0].ID)
			}
			if n, _ := stockOf(t, c, offCounted); n != 8 {
				t.Fatalf("stock after restart = %d, want 8 (10 − 2 placed)", n)
			}
		}
		// The restart_fails fault was kept: the first restart fails, wherever it is asked.
		wantClass(t, other.RestartNode(ctx, "cl_1", placed.Nodes[0].ID), providers.ErrTransient)
		if err := b.RestartNode(ctx, "cl_1", placed.Nodes[0].ID); err != nil {
			t.Fatalf("second restart: %v", err)
		}
		if got := describe(t, a, "cl_1").Nodes[0].State; got != providers.NodeRestarting {
			t.Fatalf("first instance sees %s after another restarted the machine, want restarting", got)
		}
		// A retried placement on another instance takes nothing more.
		place(t, other, "cl_1", offCounted, 2)
		if err := b.TerminateGroup(ctx, "cl_1"); err != nil {
			t.Fatal(err)
		}
		if n, _ := stockOf(t, a, offCounted); n != 10 {
			t.Fatalf("stock after terminate on another instance = %d, want 10", n)
		}
		if len(a.Faults()) != 0 {
			t.Fatalf("faults left = %v, want none (both used up)", a.Faults())
		}
	})
}

// Two instances placing at once never sell one machine twice: the counted
// stock is taken under the cloud's lock.
func TestPersistedCloudConcurrentPlacementsShareStock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := newFakeClock()
		clouds := []*Cloud{sharedCloud(db, clk, "a"), sharedCloud(modelstest.SecondInstance(t, db), clk, "b")}
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Go(func() {
				c := clouds[i%2]
				_, errs[i] = c.PlaceGroup(context.Background(), request(c, "g"+string(rune('a'+i)), offBM, 2))
			})
		}
		wg.Wait()
		placed := 0
		for _, err := range errs {
			if err == nil {
				placed++
			} else {
				wantClass(t, err, providers.ErrNoCapacity)
			}
		}
		if n, _ := stockOf(t, clouds[0], offBM); placed != 2 || n != 1 {
			t.Fatalf("placed %d groups of 2 with %d left, want 2 placed and 1 left of 5", placed, n)
		}
	})
}

// A machine's agent runs in one instance only; when that instance stops,
// another takes the agents over.
func TestPersistedCloudRunsEachAgentOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := newFakeClock()
		fa, fb := &fakeAgents{}, &fakeAgents{}
		a := sharedCloud(db, clk, "a", WithAgents(fa.factory))
		b := sharedCloud(modelstest.SecondInstance(t, db), clk, "b", WithAgents(fb.factory))
		place(t, a, "cl_1", offCt, 2)
		clk.Advance(2 * time.Minute)
		for range 3 {
			for _, c := range []*Cloud{a, b} {
				if err := c.StepAgents(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(fa.steps) != 6 || len(fb.steps) != 0 {
			t.Fatalf("steps: first instance %d, second %d; want 6 and 0 (each machine's agent runs once)", len(fa.steps), len(fb.steps))
		}
		a.releaseAgentLease(context.Background()) // the first instance shuts down
		if err := b.StepAgents(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(fb.started) != 2 || len(fb.steps) != 2 {
			t.Fatalf("second instance started %d agents, stepped %d; want 2 and 2 after taking over", len(fb.started), len(fb.steps))
		}
		if err := a.StepAgents(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(fa.steps) != 6 {
			t.Fatalf("first instance stepped again (%d steps) while the second holds the agents", len(fa.steps))
		}
	})
}

// StopNode stops a running machine until RestartNode starts it again
// (billing's stop/start); a stopped machine cannot be stopped twice.
func TestStopNode(t *testing.T) {
	c, clk := newTestCloud(t)
	g := place(t, c, "cl_1", offCt, 1)
	ctx := context.Background()
	wantClass(t, c.StopNode(ctx, "cl_1", g.Nodes[0].ID), providers.ErrValidation) // still booting
	clk.Advance(2 * time.Minute)
	if err := c.StopNode(ctx, "cl_1", g.Nodes[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, c, "cl_1").Nodes[0].State; got != providers.NodeStopped {
		t.Fatalf("state = %s, want stopped", got)
	}
	wantClass(t, c.StopNode(ctx, "cl_1", g.Nodes[0].ID), providers.ErrValidation)
	wantClass(t, c.StopNode(ctx, "cl_1", "sim-nope"), providers.ErrNotFound)
	if err := c.RestartNode(ctx, "cl_1", g.Nodes[0].ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if got := describe(t, c, "cl_1").Nodes[0].State; got != providers.NodeRunning {
		t.Fatalf("state after start = %s, want running", got)
	}
}

// An instance that dies holding the agents (no release) loses them when its
// lease lapses: another instance starts them afresh, and the dead one's
// lease is not renewed behind its back.
func TestPersistedCloudAgentLeaseLapses(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := newFakeClock()
		wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fa, fb := &fakeAgents{}, &fakeAgents{}
		a := sharedCloud(db, clk, "a", WithAgents(fa.factory))
		b := sharedCloud(modelstest.SecondInstance(t, db), clk, "b", WithAgents(fb.factory))
		a.wall = func() time.Time { return wall }
		b.wall = func() time.Time { return wall }
		place(t, a, "cl_1", offCt, 1)
		clk.Advance(2 * time.Minute)
		step := func(c *Cloud) {
			t.Helper()
			if err := c.StepAgents(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		step(a)
		wall = wall.Add(agentLease - time.Second)
		step(b)
		if len(fb.steps) != 0 {
			t.Fatalf("the second instance ran an agent while the first one's lease held")
		}
		wall = wall.Add(2 * time.Second) // a died: no renewal
		step(b)
		if len(fb.started) != 1 || len(fb.steps) != 1 {
			t.Fatalf("after the lease lapsed the second instance started %d agents, stepped %d; want 1 and 1", len(fb.started), len(fb.steps))
		}
	})
}

// A server running the agents every interval (Run, SIM_AGENT_EVERY) holds
// them for 7½ intervals: 15 s at the default 2 s, and as many rounds at a
// shorter interval, so a dead instance's agents are taken over that soon.
func TestRunHoldsAgentLeaseForItsRounds(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := newFakeClock()
		wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fa := &fakeAgents{}
		a := sharedCloud(db, clk, "a", WithAgents(fa.factory))
		a.wall = func() time.Time { return wall }
		place(t, a, "cl_1", offCt, 1)
		clk.Advance(2 * time.Minute)
		for _, every := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
			ctx, cancel := context.WithCancel(context.Background())
			var row CloudRow
			rounds := 0
			err := a.Run(ctx, every, func(ctx context.Context) error {
				if rounds++; rounds == 2 { // the first round took the lease; the second one stops the run
					if err := db.Where("name = ?", a.name).First(&row).Error; err != nil {
						t.Error(err)
					}
					cancel()
				}
				return nil
			})
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			if want := wall.Add(every * 15 / 2); row.AgentHolder != "a" || !row.AgentUntil.Equal(want) {
				t.Errorf("every %s: lease held by %q until %s, want a until %s", every, row.AgentHolder, row.AgentUntil, want)
			}
		}
		if len(fa.steps) != 2 {
			t.Errorf("%d agent steps, want one per run", len(fa.steps))
		}
	})
}

// The placement's workload and the workload steps each machine ran are kept
// in the database: another instance (or a restarted one) hands the same
// workload to the agents it takes over and lists the same steps, and a start
// command playing in one instance ends when another reboots its machine
// (N3, OP4).
func TestPersistedCloudKeepsWorkloadAndRanSteps(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := newFakeClock()
		fa, fb := &fakeAgents{}, &fakeAgents{}
		a := sharedCloud(db, clk, "a", WithAgents(fa.factory))
		req := request(a, "w", offCt, 2)
		req.StartCommand, req.Ports, req.SSHKeys = "python -m http.server 8888", []int{8888}, []string{"ssh-ed25519 AAAA k"}
		if _, err := a.PlaceGroup(ctx, req); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		if err := a.StepAgents(ctx); err != nil {
			t.Fatal(err)
		}
		exec := fa.started[1].Exec
		if _, err := exec.Run(ctx, PortsStep, "ufw allow 8888"); err != nil {
			t.Fatal(err)
		}
		if _, err := exec.Run(ctx, KeysStep, "add keys"); err != nil {
			t.Fatal(err)
		}
		p, err := exec.(providers.Starter).Start(ctx, providers.Command{Step: "start", Script: req.StartCommand, User: "ubuntu",
			Env: map[string]string{"NODE_RANK": "1"}})
		if err != nil {
			t.Fatal(err)
		}

		b := sharedCloud(modelstest.SecondInstance(t, db), clk, "b", WithAgents(fb.factory))
		ran := b.Ran("w", 1)
		if len(ran) != 3 || ran[0].Step != PortsStep || ran[1].Step != KeysStep || ran[2].Script != req.StartCommand ||
			ran[2].User != "ubuntu" || ran[2].Env["NODE_RANK"] != "1" || !ran[2].At.Equal(clk.Now()) {
			t.Fatalf("steps seen by another instance = %+v, want ports, ssh-keys and the start command", ran)
		}
		a.releaseAgentLease(ctx) // the first instance shuts down
		if err := b.StepAgents(ctx); err != nil {
			t.Fatal(err)
		}
		if len(fb.started) != 2 {
			t.Fatalf("second instance started %d agents, want 2", len(fb.started))
		}
		for _, m := range fb.started {
			w := m.Workload
			if w.StartCommand != req.StartCommand || !slices.Equal(w.Ports, []int{8888}) || !slices.Equal(w.SSHKeys, req.SSHKeys) {
				t.Fatalf("%s's agent got workload %+v after the takeover, want the placement's", m.Name, w)
			}
		}
		if err := b.RestartNode(ctx, "w", fb.started[1].NodeID); err != nil {
			t.Fatal(err)
		}
		if _, exit := p.Poll(); exit == nil || exit.Code != -1 {
			t.Fatalf("the first instance's start command outlived a reboot made by another instance: %+v", exit)
		}
	})
}
