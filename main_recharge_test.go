package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/stripemock"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// stripeMockURL starts Stripe's own stripe-mock for one test.
func stripeMockURL(t *testing.T) string {
	t.Helper()
	url, stop, err := stripemock.Start()
	stripemock.Require(t, err)
	t.Cleanup(stop)
	return url
}

// B4, B7: the charges job's whole path through the Stripe adapter: the
// charge row is written, the off-session PaymentIntent is created on
// Stripe's own API description (stripe-mock) keyed by the row, and its
// outcome is recorded on the row. stripe-mock answers a fixture, not a real
// outcome (its PaymentIntent requires a payment method), so which outcome
// is left to the in-process fakes (jobs and providers/payments tests).
func TestChargesJobAgainstStripeMock(t *testing.T) {
	apiURL := stripeMockURL(t)
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db, models.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)))
		org := models.Org{ID: models.NewID("org"), Name: "Acme", CreatedAt: store.Now()}
		u := models.User{ID: models.NewID("usr"), Email: "o@example.com", CreatedAt: store.Now()}
		for _, row := range []any{&org, &u, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner}} {
			if err := db.Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := store.SaveCard(ctx, org.ID, "cus_123", "pm_123"); err != nil {
			t.Fatal(err)
		}
		owner := models.Actor{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner, Name: u.Email}
		if _, err := store.As(owner).SetAutoRecharge(ctx, true, 20*models.Micro, 50*models.Micro); err != nil {
			t.Fatal(err)
		}
		charger := chargerFor(t, apiURL)
		if err := (&jobs.Charges{Store: store, Charger: charger}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		cs, _ := store.Charges(ctx, org.ID)
		if len(cs) != 1 || !strings.HasPrefix(cs[0].PaymentIntentID, "pi_") || cs[0].Status == models.ChargePending {
			t.Fatalf("charges %+v: want one sent to stripe-mock and its outcome recorded", cs)
		}
	})
}

func chargerFor(t *testing.T, apiURL string) jobs.Charger {
	t.Helper()
	c := jobsChargerWith(config{StripeSecretKey: "sk_test_123", StripeWebhookSecret: "whsec_1"}, apiURL)
	if c == nil {
		t.Fatal("a Stripe key must give the charges job a charger")
	}
	return c
}
