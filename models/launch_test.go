package models_test

import (
	"context"
	"errors"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func (e *launchEnv) actions() models.Actions {
	return e.s.As(models.Actor{OrgID: e.org.ID, EnvID: e.env.ID, UserID: "usr_t", Role: models.RoleOwner,
		Name: "t@example.com", IP: "192.0.2.7"})
}

func (e *launchEnv) count(t *testing.T, model any) int64 {
	t.Helper()
	var n int64
	if err := e.db.Model(model).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// Q5 in the launch use case: a repeated priced field with another value, or
// an expired quote, refuses the launch with price_changed; the API's call
// (FreshQuote) gets a fresh quote for the shape asked, the page's does not.
// Nothing else is written.
func TestLaunchPriceChanged(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		in := models.LaunchInput{QuoteID: q.ID, Priced: models.QuoteFields{Nodes: ptr(3)}, FreshQuote: true,
			Workload: models.Workload{Name: "train", Software: "none"}}
		_, _, err := e.actions().Launch(ctx, in)
		var pc *models.PriceChangedError
		if !errors.As(err, &pc) || pc.Reason != "field:nodes" || pc.Old.ID != q.ID || pc.New == nil || pc.New.Nodes != 3 {
			t.Fatalf("changed nodes: %v %+v", err, pc)
		}
		in.FreshQuote = false
		quotes := e.count(t, &models.Quote{})
		if _, _, err := e.actions().Launch(ctx, in); !errors.As(err, &pc) || pc.New != nil {
			t.Errorf("without FreshQuote: %v, new %v", err, pc.New)
		}
		if n := e.count(t, &models.Quote{}); n != quotes {
			t.Errorf("the page's refusal wrote %d quotes", n-quotes)
		}

		// The same values repeated are no change.
		in.Priced = models.QuoteFields{Nodes: ptr(2), GPUsPerNode: ptr(8), Accelerator: ptr("H100_80GB")}
		e.clock.Advance(models.QuoteTTL)
		seedCatalog(t, e.s, offer("h100x8", "us-east", 8, 2_490_000, intp(20)), // the catalog job keeps prices fresh
			offer("h100x8-eu", "eu-west", 8, 2_300_000, intp(3)))
		if _, _, err := e.actions().Launch(ctx, in); !errors.As(err, &pc) || pc.Reason != "expired" || pc.New != nil {
			t.Errorf("expired quote: %v", err)
		}
		in.FreshQuote = true
		if _, _, err := e.actions().Launch(ctx, in); !errors.As(err, &pc) || pc.New == nil || pc.New.Nodes != 2 {
			t.Fatalf("expired quote with a fresh one: %v", err)
		}
		if n := e.count(t, &models.Cluster{}) + e.count(t, &models.AuditRecord{}); n != 0 {
			t.Errorf("refused launches wrote %d clusters and audit entries", n)
		}

		in.QuoteID = pc.New.ID
		c, created, err := e.actions().Launch(ctx, in)
		if err != nil || !created || c.QuoteID != pc.New.ID {
			t.Fatalf("launch from the fresh quote: %v %v", created, err)
		}
		recs, _, err := e.s.AuditRecords(ctx, e.org.ID, 0, 10)
		if err != nil || len(recs) != 1 || recs[0].Action != "cluster.launch" || recs[0].Target != c.ID ||
			recs[0].Actor != "t@example.com" || recs[0].IP != "192.0.2.7" {
			t.Errorf("audit entries %+v, %v", recs, err)
		}
		// The same key again returns the cluster and audits nothing more
		// (on us-east: the cluster above holds 2 of eu-west's 3 machines).
		first, _, err := e.actions().Launch(ctx, models.LaunchInput{QuoteID: e.quote(t, models.ShapeQuery{
			Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}).ID, IdemKey: "k2",
			Workload: models.Workload{Name: "again", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		again, created, err := e.actions().Launch(ctx, models.LaunchInput{QuoteID: first.QuoteID, IdemKey: "k2",
			Workload: models.Workload{Name: "again", Software: "none"}})
		if err != nil || created || again.ID != first.ID {
			t.Errorf("repeated key: %v %v %v", again.ID, created, err)
		}
		if n := e.count(t, &models.AuditRecord{}); n != 2 {
			t.Errorf("%d audit entries after two launches and a repeat", n)
		}
	})
}

// L1 straight from an offer: without a quote id the use case quotes the
// offer and size; the API's defaults name the cluster; SSH keys must be the
// actor's own.
func TestLaunchFromOffer(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		_, _, err := e.actions().Launch(ctx, models.LaunchInput{Priced: models.QuoteFields{Nodes: ptr(2)}})
		var fe models.FieldErrors
		if !errors.As(err, &fe) || fe["quoteId"] == "" {
			t.Errorf("neither quote nor offer: %v", err)
		}
		in := models.LaunchInput{DefaultName: true, SSHKeyIDs: []string{"ssh_nope"},
			Priced: models.QuoteFields{OfferID: ptr("sim:h100x8"), Accelerator: ptr("H100_80GB"), Nodes: ptr(2), GPUsPerNode: ptr(8)}}
		if _, _, err := e.actions().Launch(ctx, in); !errors.As(err, &fe) || fe["sshKeyIds"] == "" {
			t.Errorf("another's SSH key: %v", err)
		}
		if n := e.count(t, &models.Cluster{}); n != 0 {
			t.Errorf("%d clusters after refusals", n)
		}
		in.SSHKeyIDs = nil
		c, created, err := e.actions().Launch(ctx, in)
		if err != nil || !created || c.OfferID != "sim:h100x8" || c.Name != "h100-x2" || c.Software != "none" {
			t.Errorf("from an offer: %+v %v %v", c, created, err)
		}
	})
}

// X13: a cluster keeps its offer's fabric cards from launch, as it keeps
// its price: the fabric checks are judged by them even after the catalog
// changes; a cluster launched before cards were stored falls back to its
// offer's; an Ethernet cluster has none (the overlay).
func TestClusterKeepsFabricCardsFromLaunch(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		o := offer("h100x8", "us-east", 8, 2_490_000, intp(20))
		o.NICs, o.NICGbps = 8, 400
		seedCatalog(t, e.s, o)
		c, _, err := e.launch(e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := e.s.ClusterForOrg(ctx, e.org.ID, c.ID); got.NICs != 8 || got.NICGbps != 400 {
			t.Fatalf("stored cards %d × %d, want 8 × 400", got.NICs, got.NICGbps)
		}
		o.NICs, o.NICGbps = 8, 200 // the catalog changes after launch
		seedCatalog(t, e.s, o)
		now, err := e.s.OfferByID(ctx, c.OfferID)
		if err != nil {
			t.Fatal(err)
		}
		if spec := models.ClusterSpec(c, nil, now); spec.NICs != 8 || spec.NICGbps != 400 || spec.LineRateGBps() != 400 {
			t.Errorf("judged by %d × %d after the catalog changed, want the launch's 8 × 400", spec.NICs, spec.NICGbps)
		}
		legacy := c
		legacy.NICs, legacy.NICGbps = 0, 0
		if spec := models.ClusterSpec(legacy, nil, now); spec.NICs != 8 || spec.NICGbps != 200 {
			t.Errorf("a cluster without stored cards: %d × %d, want the offer's 8 × 200", spec.NICs, spec.NICGbps)
		}
		eth := legacy
		eth.Interconnect = "ethernet"
		if spec := models.ClusterSpec(eth, nil, now); spec.NICs != 0 || !spec.Overlay() {
			t.Errorf("an Ethernet cluster: %d × %d, want the overlay", spec.NICs, spec.NICGbps)
		}
	})
}
