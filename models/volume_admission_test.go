package models_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// B9, B6, V3, E1: an organisation that only keeps volumes is
// enforced too once its balance runs out: its owners are mailed first,
// and the mail says the volumes are kept and keep billing. No pass ever
// deletes a volume, however long the balance stays unpaid; its billing
// goes on.
func TestBalanceEnforcementMailsAndKeepsVolumes(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 15*models.Micro)
		owner := models.User{ID: models.NewID("usr"), Email: "owner@acme.example", CreatedAt: t0}
		if err := db.Create(&owner).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: e.org.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: t0}).Error; err != nil {
			t.Fatal(err)
		}
		v := e.volume(t, "data", "us-east", 50_000) // $6.85/h, admitted on $15
		p := models.EnforcePolicy{BaseURL: "https://deck.example"}
		pass := func(d time.Duration) models.EnforceResult {
			t.Helper()
			e.clock.Advance(d)
			if _, err := e.s.MeterUsage(ctx); err != nil {
				t.Fatal(err)
			}
			orgs, err := e.s.OrgsToEnforce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(orgs, e.org.ID) {
				t.Fatalf("an organisation keeping a volume is not enforced: %v", orgs)
			}
			res, err := e.s.EnforceBalance(ctx, e.org.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}

		if res := pass(time.Minute); res.Warned {
			t.Fatalf("warned while the balance covers the next hour: %+v", res)
		}
		res := pass(3 * time.Hour) // $20.55 of volume: the balance is below zero
		if !res.Warned || res.Balance >= 0 {
			t.Fatalf("no warning once the balance ran out: %+v", res)
		}
		mails, err := views.RenderedMails(e.s.OutboxMails(ctx, 10))
		if err != nil {
			t.Fatal(err)
		}
		if len(mails) != 1 || mails[0].To != "owner@acme.example" || !strings.Contains(mails[0].Text, "never deletes a volume") ||
			!strings.Contains(mails[0].Text, "$6.85") {
			t.Fatalf("the owner's mail does not say the volumes are kept and billing: %+v", mails)
		}
		for range 3 { // past the grace and the second grace
			pass(models.DefaultTerminateGrace)
		}
		got, err := e.s.VolumeForOrg(ctx, e.org.ID, v.ID)
		if err != nil || got.DeletedAt != nil {
			t.Fatalf("the unpaid balance deleted the volume: %+v %v", got, err)
		}
		before, err := e.s.Balance(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		pass(time.Hour)
		if after, _ := e.s.Balance(ctx, e.org.ID); before-after != v.HourRate() {
			t.Errorf("the volume's billing did not go on: %s → %s", models.USD(before), models.USD(after))
		}
	})
}
