package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// gpuWorld is the health world (a ready cluster, an owner who gets mails)
// with the GPU watch job, and each machine's GPUs reported minute by
// minute through the telemetry store as a workload would make them.
type gpuWorld struct {
	*healthWorld
	watch *jobs.GPUWatch
}

func newGPUWorld(t *testing.T, db *gorm.DB, nodes int) *gpuWorld {
	t.Helper()
	h := newHealthWorldWith(t, db, nodes, "none")
	if c := h.cluster(h.c.ID); c.Status != models.StatusReady {
		t.Fatalf("setup: status %s\n%s", c.Status, h.events(c.ID))
	}
	return &gpuWorld{healthWorld: h, watch: &jobs.GPUWatch{Store: h.store, Mail: &models.ClusterNotify{BaseURL: "https://deck.example"}}}
}

// minute advances the clock one minute, reports every machine's 8 GPUs at
// util(rank, minute) with memory and power that move when the GPU works
// (a stalled collective keeps them flat), and runs the watch job (unless
// watch is nil: then a scheduler runs it).
func (g *gpuWorld) minute(i int, util func(rank, i int) (pct int, flat bool)) {
	g.t.Helper()
	ctx := context.Background()
	g.clock.Advance(time.Minute)
	now, total := g.clock.Now(), 81559
	nodes, err := g.store.NodesFor(ctx, g.c.ID)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, n := range nodes {
		pct, flat := util(n.Rank, i)
		mem, power := 60000+pct*100+(i%3)*1500, 80+pct*5+(i%4)*40
		if flat || pct < 5 {
			mem, power = 70000, 80+pct*3
		}
		var samples []models.GPUSample
		for gpu := range 8 {
			samples = append(samples, models.GPUSample{At: now.Add(-10 * time.Second), Index: gpu, UUID: "GPU-" + n.Name + "-" + string(rune('a'+gpu)),
				UtilPct: &pct, MemUsedMiB: &mem, MemTotalMiB: &total, PowerW: &power})
		}
		if err := g.store.RecordGPUReport(ctx, g.c, n, models.GPUReport{Samples: samples}); err != nil {
			g.t.Fatal(err)
		}
	}
	if g.watch == nil {
		return // a scheduler runs the watch
	}
	if err := g.watch.Run(ctx); err != nil {
		g.t.Fatalf("gpu-watch: %v", err)
	}
}

// Journey (X15, E1): four machines train; node-2's GPUs
// drop to 0 % while the others stay busy. Nothing is said before the set
// time; within it an event and one mail name node-2 ("node-2 idle while 3
// machines are busy for 10 minutes"), once, however long it lasts; when
// node-2 works again the stall is over.
func TestStalledRankIsNamedWithinTheSetTime(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newGPUWorld(t, db, 4)
		busy := func(int, int) (int, bool) { return 95, false }
		for i := range 5 {
			g.minute(i, busy)
		}
		stalled := func(rank, i int) (int, bool) {
			if rank == 2 {
				return 0, false
			}
			return 97, false
		}
		named := -1
		for i := range 20 {
			g.minute(i, stalled)
			if named < 0 && g.count("GPU stall: node-2 idle while 3 machines are busy") > 0 {
				named = i
			}
		}
		if named < 9 || named > 10 {
			t.Fatalf("named after %d minutes, want at the 10-minute mark\n%s", named, g.events(g.c.ID))
		}
		if n := g.count("GPU stall:"); n != 1 {
			t.Fatalf("%d stall events, want one per episode\n%s", n, g.events(g.c.ID))
		}
		if m := g.mails("node-2 idle while 3 machines are busy"); len(m) != 1 {
			t.Fatalf("stall mails %v", m)
		}
		for i := range 3 {
			g.minute(i, busy)
		}
		if g.count("GPU stall over: node-2") != 1 {
			t.Fatalf("the end of the stall is not noted\n%s", g.events(g.c.ID))
		}
		if c := g.cluster(g.c.ID); c.Status != models.StatusReady || c.StopRequestedAt != nil {
			t.Fatalf("a stall alert changed the cluster: %s", c.Status)
		}
	})
}

// X15: every GPU pinned at 100 % with memory and power flat
// (a collective waiting on a lost peer) is a stall too; the off switch
// silences it.
func TestFrozenCollectiveAndOffSwitch(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newGPUWorld(t, db, 2)
		pinned := func(int, int) (int, bool) { return 100, true }
		for i := range 12 {
			g.minute(i, pinned)
		}
		if g.count("GPU stall: Every GPU of all 2 machines at 100 %") != 1 {
			t.Fatalf("frozen collective not named\n%s", g.events(g.c.ID))
		}
		p := models.DefaultWatchPolicy()
		p.StallOff = true
		if _, err := g.store.As(g.actor).SetGPUWatch(context.Background(), g.c.ID, p); err != nil {
			t.Fatal(err)
		}
		working := func(int, int) (int, bool) { return 100, false }
		for i := range 3 {
			g.minute(i, working)
		}
		for i := range 15 {
			g.minute(i, pinned)
		}
		if n := g.count("GPU stall:"); n != 1 {
			t.Fatalf("with the off switch a stall was announced again (%d)\n%s", n, g.events(g.c.ID))
		}
	})
}

// Journey (X15, L7, B6): without the opt-in an idle cluster
// is left alone; with it (2 h, then stop after 60 min) the owners get one
// warning mail at 2 h naming the time of the stop, and after the grace the
// stop job stops every machine through the domain's stop (reason idle).
func TestIdleClusterIsMailedThenStopped(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newGPUWorld(t, db, 2)
		idle := func(int, int) (int, bool) { return 1, false }
		for i := range 150 {
			g.minute(i, idle)
		}
		if g.count("Idle:") != 0 || len(g.mails("idle")) != 0 {
			t.Fatalf("the idle rule acted without the opt-in\n%s", g.events(g.c.ID))
		}
		p := models.DefaultWatchPolicy()
		p.IdleOn, p.IdleAction = true, models.IdleStop
		if _, err := g.store.As(g.actor).SetGPUWatch(context.Background(), g.c.ID, p); err != nil {
			t.Fatal(err)
		}
		g.minute(0, idle)
		mails := g.mails("is idle and will be stopped at")
		if len(mails) != 1 {
			t.Fatalf("idle for 2.5 h with the opt-in: mails %v\n%s", mails, g.events(g.c.ID))
		}
		for i := range 58 {
			g.minute(i, idle)
		}
		if c := g.cluster(g.c.ID); c.StopRequestedAt != nil {
			t.Fatal("stopped before the grace ended")
		}
		g.minute(0, idle)
		g.minute(0, idle)
		c := g.cluster(g.c.ID)
		if c.StopRequestedAt == nil || c.StopReason != string(models.StopByIdle) {
			t.Fatalf("not stopping after the grace: %+v\n%s", c.StopRequestedAt, g.events(g.c.ID))
		}
		g.tick()
		if c = g.cluster(g.c.ID); c.Status != models.StatusStopped {
			t.Fatalf("status %s after the stop job\n%s", c.Status, g.events(g.c.ID))
		}
		if len(g.mails("is idle and will be stopped at")) != 1 {
			t.Fatal("the warning was mailed more than once")
		}
		if !strings.Contains(g.events(g.c.ID), "Stop requested (idle)") {
			t.Fatalf("no stop event\n%s", g.events(g.c.ID))
		}
	})
}
