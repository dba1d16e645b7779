package models_test

import (
	"context"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// O3: the picker serves a snapshot of the catalog per catalog version.
// Two stores on one database stand for two instances: a refresh written by
// one is seen by the other on its next pick, because the version moves in
// the refresh's own transaction.
func TestCatalogSnapshotFollowsTheVersionAcrossInstances(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(t0)
		a, b := models.NewStore(db, clock), models.NewStore(db, clock)
		seedCatalog(t, b, offer("b8", "eu-west", 8, 2_200_000, intp(20)))
		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2}
		price := func() models.Money {
			t.Helper()
			groups, err := a.PickOffers(ctx, f)
			if err != nil || len(groups) != 1 || len(groups[0].Offers) != 1 {
				t.Fatalf("pick: %v %v", err, groupSummary(groups, 2))
			}
			return groups[0].Offers[0].PerGPUHour
		}
		before, err := a.CatalogVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := price(); got != 2_200_000 {
			t.Fatalf("first pick: %d", got)
		}

		seedCatalog(t, b, offer("b8", "eu-west", 8, 2_100_000, intp(20)))
		if got := price(); got != 2_100_000 {
			t.Errorf("after another instance's refresh the picker shows %d per GPU-hour, want the new 2100000", got)
		}
		if after, _ := a.CatalogVersion(ctx); after != before+1 {
			t.Errorf("catalog version %d after one refresh from %d", after, before)
		}

		// A refresh that removes the offer empties the picker as well.
		seedCatalog(t, b)
		if groups, _ := a.PickOffers(ctx, f); len(groups) != 0 {
			t.Errorf("removed offer still shown: %v", groupSummary(groups, 2))
		}
	})
}

// Freshness (O6) is applied per request: the snapshot does not keep an
// offer startable past its window when nothing else changed.
func TestCatalogSnapshotAppliesFreshnessPerRequest(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(t0)
		s := models.NewStore(db, clock)
		seedCatalog(t, s, offer("b8", "eu-west", 8, 2_200_000, intp(20)))
		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2}
		if groups, _ := s.PickOffers(ctx, f); len(groups) != 1 {
			t.Fatalf("fresh offer missing: %v", groupSummary(groups, 2))
		}
		clock.Advance(models.OfferFreshness)
		if groups, _ := s.PickOffers(ctx, f); len(groups) != 1 {
			t.Errorf("offer at the edge of its window left out: %v", groupSummary(groups, 2))
		}
		clock.Advance(1)
		if groups, _ := s.PickOffers(ctx, f); len(groups) != 0 {
			t.Errorf("stale offer still shown: %v", groupSummary(groups, 2))
		}
	})
}
