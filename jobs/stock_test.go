package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// free is what the picker says the test cloud's H100 offer can start now.
func (w *world) free() int {
	w.t.Helper()
	groups, err := w.store.PickOffers(context.Background(), models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, g := range groups {
		for _, o := range g.Offers {
			if o.ProviderOffer == "h100.8x.vm" {
				return *o.NodesAvailable
			}
		}
	}
	w.t.Fatal("the picker lost the H100 offer")
	return 0
}

// quote locks a 2-machine H100 price now, to launch later.
func (w *world) quote() models.Quote {
	w.t.Helper()
	q, err := w.store.CreateQuote(context.Background(), w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		w.t.Fatal(err)
	}
	return q
}

func (w *world) launchQuote(q models.Quote) (models.Cluster, error) {
	c, _, err := w.store.LaunchCluster(context.Background(), models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID,
		QuoteID: q.ID, Actor: "test@example.com", Workload: models.Workload{Name: "train", Software: "none"}})
	return c, err
}

// L2 with the simulated cloud and the real jobs: launches hold
// counted stock from the launch on, so the provision job never meets a
// no_capacity the launch let through; held machines come back when a cluster
// is terminated before or after placement; and the catalog job's refresh,
// whose count already leaves placed machines out, does not count them twice.
func TestLaunchesHoldCountedStock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		quotes := make([]models.Quote, 6)
		for i := range quotes {
			quotes[i] = w.quote() // all priced while 10 machines are free
		}
		var launched []models.Cluster
		for _, q := range quotes[:5] {
			c, err := w.launchQuote(q)
			if err != nil {
				t.Fatal(err)
			}
			launched = append(launched, c)
		}
		if got := w.free(); got != 0 {
			t.Errorf("picker before placement: %d free, want 0 (5 × 2 held)", got)
		}
		_, err := w.launchQuote(quotes[5])
		var nc *models.NoCapacityError
		if !errors.As(err, &nc) || nc.Reason != models.NotInStockReason || nc.Free == nil || *nc.Free != 0 {
			t.Fatalf("sixth launch: %v, want not_in_stock with 0 free", err)
		}

		w.tick()
		for _, c := range launched {
			if c = w.cluster(c.ID); c.PlacedAt == nil || c.Status != models.StatusProvisioning {
				t.Errorf("%s: %s placed %v, last error %q", c.ID, c.Status, c.PlacedAt, c.LastError)
			}
		}
		if got := w.stock("h100.8x.vm"); got != 0 {
			t.Errorf("provider stock %d after placing 10 of 10", got)
		}

		// Terminated after placement: the provider gets them back and the
		// next refresh shows them, once.
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, launched[0].ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		w.tick()
		if got := w.free(); got != 2 {
			t.Errorf("after terminating a placed cluster and a refresh: %d free, want 2", got)
		}

		// Held before placement, then terminated before placement: back at once.
		c, err := w.launchQuote(w.quote())
		if err != nil {
			t.Fatal(err)
		}
		if got := w.free(); got != 0 {
			t.Errorf("after a launch not yet placed: %d free, want 0", got)
		}
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if err := w.term.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := w.free(); got != 2 {
			t.Errorf("after terminating before placement: %d free, want 2", got)
		}

		// Placed after the last refresh: held until the next refresh shows
		// it, then counted by the provider only (not twice).
		if c, err = w.launchQuote(w.quote()); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		if err := w.job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if w.cluster(c.ID).PlacedAt == nil || w.free() != 0 {
			t.Errorf("placed after the refresh: placed %v, %d free, want 0", w.cluster(c.ID).PlacedAt, w.free())
		}
		w.clock.Advance(time.Minute)
		if err := w.cat.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := w.free(); got != 0 {
			t.Errorf("after a refresh that shows the placement: %d free, want 0", got)
		}
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		w.tick()
		if got := w.free(); got != 2 {
			t.Errorf("after its terminate and a refresh: %d free, want 2", got)
		}

		// Failing before placement (the provider refuses) or after it (a
		// machine dies) gives the machines back too.
		for _, f := range []sim.Fault{{Kind: sim.FaultRefuseCapacity}, {Kind: sim.FaultDies, Node: 1}} {
			if err := w.cloud.Inject(f); err != nil {
				t.Fatal(err)
			}
			if c, err = w.launchQuote(w.quote()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 30 && w.cluster(c.ID).Status != models.StatusFailed; i++ {
				w.clock.Advance(30 * time.Second)
				w.tick()
			}
			if c = w.cluster(c.ID); c.Status != models.StatusFailed || c.ReleasedAt == nil {
				t.Fatalf("%s: %s released %v", f.Kind, c.Status, c.ReleasedAt)
			}
			w.clock.Advance(time.Minute)
			w.tick()
			if got := w.free(); got != 2 {
				t.Errorf("after a cluster failed (%s) and a refresh: %d free, want 2", f.Kind, got)
			}
		}
	})
}

// racingList is a provider whose catalog answer is followed, before the
// catalog job writes it, by whatever then does (a placement, time passing).
type racingList struct {
	providers.Provider
	then func()
}

func (r racingList) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	offers, err := r.Provider.ListOffers(ctx)
	r.then()
	return offers, err
}

// A placement between the provider's answer and the catalog job's write is
// not in the count the job stores, so it must still be held: the refresh is
// stamped before the provider is asked.
func TestRefreshRacingAPlacementMissesNothing(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		for range 4 {
			if _, err := w.launchQuote(w.quote()); err != nil {
				t.Fatal(err)
			}
		}
		w.clock.Advance(time.Minute)
		cat := &jobs.Catalog{Store: w.store, Providers: providers.Registry{"sim": racingList{Provider: w.cloud, then: func() {
			w.clock.Advance(time.Second)
			if err := w.job.Run(ctx); err != nil { // places all 8 machines
				t.Error(err)
			}
			w.clock.Advance(time.Second)
		}}}}
		if err := cat.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := w.stock("h100.8x.vm"); got != 2 {
			t.Fatalf("provider stock %d, want 2 after placing 8", got)
		}
		if got := w.free(); got != 2 {
			t.Errorf("after a refresh racing the placement: %d free, want 2", got)
		}
	})
}
