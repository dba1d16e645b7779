package models_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// L10 with L2: workers added to several clusters of one organisation at
// once are admitted one after another inside the organisation's lock, so
// exactly the machine quota is admitted and the rest refused.
func TestConcurrentWorkersAdmitExactlyTheQuota(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro) // quota: 8 machines
		var ids []string
		for range 3 {
			q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
			c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
				Actor: "t", Workload: models.Workload{Name: "train", Software: "none"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": t0}).Error; err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.ID)
		}
		actor := models.Actor{OrgID: e.org.ID, Name: "owner@acme.example", Role: models.RoleOwner}
		var (
			wg             sync.WaitGroup
			mu             sync.Mutex
			admitted, over int
			others         []error
		)
		ready := make(chan struct{})
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				_, _, err := e.s.As(actor).AddWorker(ctx, id)
				var qe *models.QuotaError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case errors.As(err, &qe):
					over++
				default:
					others = append(others, err)
				}
			}()
		}
		close(ready)
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("workers failed otherwise: %v", others)
		}
		machines, _, err := e.s.UsageInUse(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if admitted != 2 || over != 1 || machines != 8 {
			t.Errorf("admitted %d, refused %d, %d machines in use; want 2 workers, 1 refusal, 8 machines", admitted, over, machines)
		}
	})
}

// B2 with L10, X5: a machine's billable minutes leave out its unbilled
// gaps, open or closed, and only the part of a gap after readyAt.
func TestBilledMinutesLeaveOutGaps(t *testing.T) {
	ready := t0
	at := func(m int) time.Time { return ready.Add(time.Duration(m) * time.Minute) }
	end := func(m int) *time.Time { e := at(m); return &e }
	for _, c := range []struct {
		name string
		gaps []models.BillingGap
		t    time.Time
		want int64
	}{
		{"no gap", nil, at(90), 90},
		{"worker joined at 30", []models.BillingGap{{StartedAt: ready, EndedAt: end(30)}}, at(90), 60},
		{"worker still joining", []models.BillingGap{{StartedAt: ready}}, at(90), 0},
		{"replaced 40–55", []models.BillingGap{{StartedAt: at(40), EndedAt: end(55)}}, at(90), 75},
		{"before the gap", []models.BillingGap{{StartedAt: at(40), EndedAt: end(55)}}, at(30), 30},
		{"inside the gap", []models.BillingGap{{StartedAt: at(40), EndedAt: end(55)}}, at(50), 40},
		{"two gaps", []models.BillingGap{{StartedAt: ready, EndedAt: end(10)}, {StartedAt: at(40)}}, at(90), 30},
		{"gap from before readyAt", []models.BillingGap{{StartedAt: ready.Add(-time.Hour), EndedAt: end(5)}}, at(20), 15},
		{"partial minute", []models.BillingGap{{StartedAt: ready, EndedAt: func() *time.Time { e := ready.Add(90 * time.Second); return &e }()}}, at(10), 8},
	} {
		if got := models.BilledMinutes(ready, c.gaps, c.t); got != c.want {
			t.Errorf("%s: %d minutes, want %d", c.name, got, c.want)
		}
	}
}
