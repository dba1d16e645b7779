package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func (w *world) owner() models.Actions {
	return w.store.As(models.Actor{OrgID: w.org.ID, EnvID: w.env.ID, Name: "owner@acme.example", Role: models.RoleOwner})
}

func (w *world) usageOf(clusterID string) models.Money {
	w.t.Helper()
	var sum models.Money
	if err := w.store.DB().Model(&models.LedgerEntry{}).Where("cluster_id = ? AND kind = ?", clusterID, models.LedgerUsage).
		Select("COALESCE(SUM(amount), 0)").Scan(&sum).Error; err != nil {
		w.t.Fatal(err)
	}
	return -sum
}

// X18, X13, B2 on the simulated cloud with its real agents: a booking's
// cluster is launched ahead by the reservations job, placed, joined and
// verified by the real jobs before the start, handed over at the start
// exactly (billing from there), and released at the end of its term;
// what was quoted is what is billed, to the micro-dollar.
func TestReservationOnSimulatedCloudIsReadyAtStart(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		rj := &jobs.Reservations{Store: w.store}
		startAt := start.Add(24 * time.Hour).Truncate(time.Hour)
		r, _, err := w.owner().Book(ctx, models.ReservationInput{OfferID: "sim:h100.8x.vm", Nodes: 2,
			StartAt: startAt.Format(time.RFC3339), DurationHours: 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != models.SourceBestEffort || r.Lead() < 30*time.Minute {
			t.Fatalf("source %s, lead %s", r.Source, r.Lead())
		}
		w.clock.Set(r.LaunchAt())
		if err := rj.Run(ctx); err != nil {
			t.Fatal(err)
		}
		r, _ = w.store.ReservationForOrg(ctx, w.org.ID, r.ID)
		if r.Status != models.ReservationLaunching || r.ClusterID == "" {
			t.Fatalf("not launched at the launch time: %+v", r)
		}
		for w.clock.Now().Before(r.StartAt) && w.cluster(r.ClusterID).Status != models.StatusReady {
			w.clock.Advance(time.Minute)
			w.tick()
			if err := rj.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c := w.cluster(r.ClusterID)
		if c.Status != models.StatusReady || !w.clock.Now().Before(r.StartAt) || c.UnbilledAt == nil {
			t.Fatalf("at %s (start %s): %s, held %v; want verified ready before the start, held", w.clock.Now(), r.StartAt, c.Status, c.UnbilledAt)
		}
		w.clock.Set(r.StartAt.Add(20 * time.Second)) // the job's next tick after the start
		w.tick()
		if err := rj.Run(ctx); err != nil {
			t.Fatal(err)
		}
		r, _ = w.store.ReservationForOrg(ctx, w.org.ID, r.ID)
		if r.Status != models.ReservationHandedOver || !r.HandedOverAt.Equal(r.StartAt) || r.LateCredit != 0 {
			t.Fatalf("hand-over: %+v", r)
		}
		w.clock.Set(r.EndAt)
		if err := rj.Run(ctx); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		w.tick()
		w.tick()
		if got := w.usageOf(r.ClusterID); got != r.Total() {
			t.Fatalf("billed %d, quoted %d", got, r.Total())
		}
		if c := w.cluster(r.ClusterID); c.Status != models.StatusTerminated {
			t.Fatalf("after the term: %s, want terminated", c.Status)
		}
	})
}
