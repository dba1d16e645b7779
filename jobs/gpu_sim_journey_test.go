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

// Issue 26, "the simulated cloud plays it" (X15, E1, N3): the whole path,
// with nothing written by the test but the launch. A start command that
// declares one stalled rank runs on the simulated cloud; its agents sample
// their GPUs and send them with their heartbeats over HTTP; the store keeps
// the minute points; the gpu-watch job reads them and names node-1 within
// the set time (10 minutes), once.
func TestSimulatedStalledRankIsNamedEndToEnd(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.QuoteRequest{Accelerator: "H100_80GB", Nodes: 3, GPUsPerNode: 8})
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
