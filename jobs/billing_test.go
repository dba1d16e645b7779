package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// checkUsage asserts B2 on a terminated cluster's written usage: one row
// per machine per hour touched, each machine charged exactly its whole
// minutes from readyAt to the release at the locked per-machine rate, and
// the balance equal to the sum of the ledger (B1).
func (w *world) checkUsage(id string) {
	w.t.Helper()
	ctx := context.Background()
	c := w.cluster(id)
	if c.ReadyAt == nil || c.ReleasedAt == nil {
		w.t.Fatalf("cluster %s: readyAt %v releasedAt %v", id, c.ReadyAt, c.ReleasedAt)
	}
	minutes := int64(c.ReleasedAt.Sub(*c.ReadyAt) / time.Minute)
	rows, err := w.store.UsageEntries(ctx, w.org.ID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	nodes, _ := w.store.NodesFor(ctx, id)
	per := map[string]models.Money{}
	perMin := map[string]int64{}
	for _, r := range rows {
		per[r.NodeID] -= r.Amount
		perMin[r.NodeID] += r.Minutes
	}
	for _, n := range nodes {
		if want := c.MachineHour * models.Money(minutes) / 60; per[n.ID] != want || perMin[n.ID] != minutes {
			w.t.Errorf("%s charged %d for %d minutes, want %d for %d minutes at %d/h", n.Name, per[n.ID], perMin[n.ID], want, minutes, c.MachineHour)
		}
	}
	if len(per) != len(nodes) {
		w.t.Errorf("usage for %d machines, want %d", len(per), len(nodes))
	}
	w.checkBalance()
}

func (w *world) checkBalance() {
	w.t.Helper()
	ctx := context.Background()
	bal, _ := w.store.Balance(ctx, w.org.ID)
	entries, _ := w.store.LedgerEntries(ctx, w.org.ID, 100_000)
	var sum models.Money
	for _, e := range entries {
		sum += e.Amount
	}
	if bal != sum {
		w.t.Errorf("balance %d != sum of the ledger %d", bal, sum)
	}
}

// B1, B2: the billing job bills every machine from readyAt through closed
// hours; Accumulating shows the open hour; terminate closes the partial
// hour; two jobs at once (real goroutines) charge once.
func TestBillingJob(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		c := w.launch("H100_80GB", 3, 8)
		w.run(6*time.Minute, time.Minute)
		c = w.cluster(c.ID)
		if c.ReadyAt == nil {
			t.Fatalf("not ready: %s\n%s", c.Status, w.events(c.ID))
		}
		if w.billed() != 0 {
			t.Fatalf("billed before an hour closed: %d entries", w.billed())
		}
		w.clock.Set(c.ReadyAt.Truncate(time.Hour).Add(2*time.Hour + 17*time.Minute + 30*time.Second))
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.billing.Run(ctx); err != nil {
					t.Errorf("billing: %v", err)
				}
			}()
		}
		wg.Wait()
		if got := w.billed(); got != 2*3 {
			t.Errorf("usage entries %d after two concurrent jobs, want 2 closed hours × 3 machines", got)
		}
		w.checkBalance()
		u, err := w.store.UsageForCluster(ctx, w.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range u.Machines {
			if m.AccumulatingMinutes != 17 || m.Accumulating <= 0 || m.Completed <= 0 {
				t.Errorf("%s: %+v, want 17 minutes accumulating", m.Name, m)
			}
		}
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.tick()
		w.clock.Advance(3 * time.Hour)
		w.tick()
		if got := w.cluster(c.ID); got.Status != models.StatusTerminated {
			t.Fatalf("status %s", got.Status)
		}
		w.checkUsage(c.ID)
		if got := w.billed(); got != 3*3 {
			t.Errorf("usage entries %d, want 3 hours touched × 3 machines", got)
		}
	})
}

// The billing job is scheduled (every minute, under the scheduler's lease).
func TestBillingJobIsRegistered(t *testing.T) {
	w := newWorld(t, modelstest.Open(t, "sqlite"))
	s := jobs.NewScheduler(w.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := jobs.Register(s, jobs.Deps{Store: w.store}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Names(), "billing") {
		t.Fatalf("jobs %v lack billing", s.Names())
	}
	if err := s.RunNow(context.Background(), "billing"); err != nil {
		t.Fatal(err)
	}
}
