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

// "The simulated cloud plays it" (X15, E1, N3): the whole path,
// with nothing written by the test but the launch. A start command that
// declares one stalled rank runs on the simulated cloud; its agents sample
// their GPUs and send them with their heartbeats over HTTP; the store keeps
// the minute points; the gpu-watch job reads them and names node-1 within
// the set time (10 minutes), once.
func TestSimulatedStalledRankIsNamedEndToEnd(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 3, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID, Actor: "test@example.com",
			Workload: models.Workload{Name: "train", Software: "none", StartCommand: "# sim: gpus=stalled node=1\ntorchrun train.py"}})
		if err != nil {
			t.Fatal(err)
		}
		w.tick()
		w.run(6*time.Minute, time.Minute)
		if got := w.cluster(c.ID); got.Status != models.StatusReady {
			t.Fatalf("setup: %s\n%s", got.Status, w.events(c.ID))
		}
		watch := &jobs.GPUWatch{Store: w.store, Mail: &models.ClusterNotify{BaseURL: "https://deck.example"}}
		named := -1
		for i := range 16 {
			for range 2 { // the agents sample every 30 s
				w.clock.Advance(30 * time.Second)
				w.tick()
			}
			if err := watch.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if named < 0 && strings.Contains(w.events(c.ID), "GPU stall: node-1") {
				named = i + 1
			}
		}
		if named < 0 || named > 12 {
			t.Fatalf("node-1 named after %d minutes of samples, want within the 10-minute set time (and the minutes its start command took)\n%s",
				named, w.events(c.ID))
		}
		if n := strings.Count(w.events(c.ID), "GPU stall: "); n != 1 {
			t.Errorf("%d stall events, want one\n%s", n, w.events(c.ID))
		}
		series, err := w.store.GPUSeriesByID(ctx, c.ID, models.GPUWindowHour)
		if err != nil || len(series.Nodes) != 3 {
			t.Fatalf("series: %d nodes, %v", len(series.Nodes), err)
		}
	})
}

// X15 on the simulated cloud: a start command that leaves the
// GPUs alone (a forgotten notebook), launched with the idle opt-in (one
// hour, then stop after the grace): the owners are mailed once, and the
// cluster is stopped through the stop job after the grace, never before.
func TestSimulatedIdleClusterIsMailedThenStopped(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorldWith(t, db, 2, "none")
		ctx := context.Background()
		h.c = h.launchWithCommand("# sim: gpus=idle\njupyter lab")
		p := models.DefaultWatchPolicy()
		p.IdleOn, p.IdleHours, p.IdleAction = true, 1, models.IdleStop
		if _, err := h.store.As(h.actor).SetGPUWatch(ctx, h.c.ID, p); err != nil {
			t.Fatal(err)
		}
		watch := &jobs.GPUWatch{Store: h.store, Mail: &models.ClusterNotify{BaseURL: "https://deck.example"}}
		// Each minute the agents beat twice (they sample every 30 s) and the
		// gpu-watch job runs; the stop it requests is carried out by the stop
		// job of the tick after the loop.
		mailedAt, stoppedAt := -1, -1
		for i := 0; i < 150 && stoppedAt < 0; i++ {
			for range 2 {
				h.clock.Advance(30 * time.Second)
				if err := h.cloud.StepAgents(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := watch.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if mailedAt < 0 && len(h.mails("is idle and will be stopped at")) > 0 {
				mailedAt = i
			}
			if c := h.cluster(h.c.ID); stoppedAt < 0 && c.StopRequestedAt != nil {
				stoppedAt = i
			}
		}
		if mailedAt < 55 || mailedAt > 75 {
			t.Fatalf("mailed after %d minutes, want about an hour after the GPUs went idle\n%s", mailedAt, h.events(h.c.ID))
		}
		if stoppedAt < mailedAt+p.IdleGraceMinutes-1 {
			t.Fatalf("stopped at minute %d, mailed at %d: the grace of %d minutes was not kept", stoppedAt, mailedAt, p.IdleGraceMinutes)
		}
		h.tick()
		if c := h.cluster(h.c.ID); c.Status != models.StatusStopped || c.StopReason != string(models.StopByIdle) {
			t.Fatalf("status %s (%s)\n%s", c.Status, c.StopReason, h.events(h.c.ID))
		}
		if n := len(h.mails("is idle and will be stopped at")); n != 1 {
			t.Errorf("%d warning mails, want one", n)
		}
	})
}

// launchWithCommand launches a second, two-machine cluster running command
// and walks it to ready.
func (h *healthWorld) launchWithCommand(command string) models.Cluster {
	h.t.Helper()
	ctx := context.Background()
	q, err := h.store.CreateQuote(ctx, h.org.ID, h.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		h.t.Fatal(err)
	}
	c, _, err := h.store.LaunchCluster(ctx, models.LaunchParams{OrgID: h.org.ID, EnvID: h.env.ID, QuoteID: q.ID, Actor: "test@example.com",
		Workload: models.Workload{Name: "notebook", Software: "none", StartCommand: command}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.tick()
	h.run(6*time.Minute, time.Minute)
	if got := h.cluster(c.ID); got.Status != models.StatusReady {
		h.t.Fatalf("setup: %s\n%s", got.Status, h.events(c.ID))
	}
	return c
}
