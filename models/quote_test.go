package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// O6, Q1: a quote is priced from a fresh catalog only. An offer last
// refreshed more than OfferFreshness ago is not quoted, whatever its price;
// the fresher, dearer one is.
func TestQuoteRefusesAStaleCatalog(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(t0)
		s := models.NewStore(db, clock)
		env := models.Environment{ID: models.NewID("env"), OrgID: models.NewID("org"), Name: "default", IsDefault: true}
		r := models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}
		seedCatalog(t, s, offer("cheap", "us-east", 8, 1_000_000, intp(10)))

		clock.Advance(models.OfferFreshness)
		if q, err := s.CreateQuote(ctx, env.OrgID, env.ID, r); err != nil || q.OfferID != "sim:cheap" {
			t.Fatalf("at the edge of the freshness window: %v %s, want the offer quoted", err, q.OfferID)
		}

		clock.Advance(time.Second)
		var nc *models.NoCapacityError
		if _, err := s.CreateQuote(ctx, env.OrgID, env.ID, r); !errors.As(err, &nc) {
			t.Fatalf("stale catalog quoted: err %v, want no_capacity", err)
		}
		// Another provider's fresh, dearer offer is quoted; the stale cheap one is not.
		if err := s.ReplaceOffers(ctx, "other", []models.Offer{offer("dear", "us-west", 8, 3_000_000, intp(10))}, s.Now()); err != nil {
			t.Fatal(err)
		}
		if q, err := s.CreateQuote(ctx, env.OrgID, env.ID, r); err != nil || q.OfferID != "other:dear" {
			t.Errorf("with one fresh offer: %v %s, want other:dear", err, q.OfferID)
		}
	})
}
