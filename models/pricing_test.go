package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// The rounding rule: each rate marked up alone, half up to the micro-dollar.
func TestCustomerPriceRounding(t *testing.T) {
	tests := []struct {
		rate models.Money
		bp   models.MarkupBP
		want models.Money
	}{
		{2_490_000, 0, 2_490_000},
		{2_490_000, 1000, 2_739_000},    // 10 %
		{100, 1250, 113},                // 112.5 rounds half up
		{100, 1249, 112},                // 112.49 rounds down
		{137, 333, 142},                 // 141.5621 → 142
		{1, 5000, 2},                    // 1.5 → 2
		{0, 5000, 0},                    // free stays free
		{2_490_000, 50_000, 14_940_000}, // 500 %
	}
	for _, tc := range tests {
		if got := models.CustomerPrice(tc.rate, tc.bp); got != tc.want {
			t.Errorf("CustomerPrice(%d, %d) = %d, want %d", tc.rate, tc.bp, got, tc.want)
		}
	}
	for in, want := range map[string]models.MarkupBP{"12": 1200, "12.5": 1250, "0.25": 25, "7%": 700, "0": 0} {
		if got, err := models.ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %d, %v; want %d", in, got, err, want)
		}
		if models.PercentText(want) != strings.TrimSuffix(in, "%")+"%" {
			t.Errorf("PercentText(%d) = %s", want, models.PercentText(want))
		}
	}
	for _, bad := range []string{"", "-5", "1.234", "abc", "1e3"} {
		if _, err := models.ParsePercent(bad); err == nil {
			t.Errorf("ParsePercent(%q) accepted", bad)
		}
	}
}

// OP2: a provider's markup reaches every price a customer sees and pays,
// with the same figures: the picker's machine and cluster prices, the
// quote's usdPerHour and per-machine share, and the cluster's locked rates
// that the ledger charges (usage = machine rate × machines × hours). The
// default markup applies to providers without a setting; a setting audits.
func TestMarkupIdenticalInPickerQuoteAndLedger(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		e.restartWith(models.Settings{DefaultMarkup: 500}) // 5 % from the configuration
		op := e.actions()
		if _, err := op.SetProviderMarkup(ctx, "sim", "12.5"); err != nil {
			t.Fatal(err)
		}
		if _, err := op.SetProviderMarkup(ctx, "sim", "-3"); err == nil {
			t.Error("a negative markup was accepted")
		}
		const n = 2
		groups, err := e.s.PickOffers(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: n, Location: "eu-west"})
		if err != nil || len(groups) != 1 || len(groups[0].Offers) != 1 {
			t.Fatalf("picker: %+v, %v", groups, err)
		}
		picked := groups[0].Offers[0]
		// 2.30/GPU-h + 12.5 % = 2.5875; 100 µ$/GB-h + 12.5 % = 112.5 → 113.
		wantMachine := 8*models.Money(2_587_500) + 500*113
		if picked.MachineHour() != wantMachine || picked.ClusterHour(n) != n*wantMachine {
			t.Fatalf("picker machine %d cluster %d, want %d and %d", picked.MachineHour(), picked.ClusterHour(n), wantMachine, n*wantMachine)
		}
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: n, GPUsPerNode: 8, Location: "eu-west"})
		if q.USDPerHour != picked.ClusterHour(n) || q.MachineHour() != picked.MachineHour() {
			t.Errorf("quote %d (machine %d), picker %d (machine %d)", q.USDPerHour, q.MachineHour(), picked.ClusterHour(n), picked.MachineHour())
		}
		var sum models.Money
		for _, li := range q.LineItems() {
			sum += li.USDPerHour
		}
		if sum != q.USDPerHour {
			t.Errorf("line items add up to %d, not %d", sum, q.USDPerHour)
		}
		c, _, err := e.launch(q, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if c.USDPerHour != picked.ClusterHour(n) || c.MachineHour != picked.MachineHour() ||
			c.MachineHour*models.Money(c.Nodes) != c.USDPerHour {
			t.Errorf("cluster locks %d/h, %d per machine; picker said %d and %d", c.USDPerHour, c.MachineHour, picked.ClusterHour(n), picked.MachineHour())
		}

		// A markup changed later reprices new quotes only: the cluster keeps its rate.
		if _, err := op.SetProviderMarkup(ctx, "sim", "0"); err != nil {
			t.Fatal(err)
		}
		q2 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: n, GPUsPerNode: 8, Location: "us-east"})
		if q2.USDPerHour != n*(8*2_490_000+500*100) {
			t.Errorf("quote at 0 %% markup: %d", q2.USDPerHour)
		}
		if again, _ := e.s.ClusterByID(ctx, c.ID); again.USDPerHour != c.USDPerHour {
			t.Errorf("a markup change moved a running cluster's rate to %d", again.USDPerHour)
		}

		// Another provider without a setting gets the default.
		if err := e.s.ReplaceOffers(ctx, "other", []models.Offer{offer("x8", "us-west", 8, 2_000_000, intp(9))}, e.s.Now()); err != nil {
			t.Fatal(err)
		}
		q3 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: n, GPUsPerNode: 8, Location: "us-west"})
		if q3.PerGPUHour != 2_100_000 || q3.DiskGBHour != 105 {
			t.Errorf("default markup: per GPU %d, disk %d", q3.PerGPUHour, q3.DiskGBHour)
		}
		recs, _, err := e.s.AuditRecords(ctx, e.org.ID, 0, 10)
		if err != nil || len(recs) < 2 || recs[len(recs)-1].Action != "provider.markup" {
			t.Errorf("markup settings audit %+v, %v", recs, err)
		}
	})
}

// X9: a private offer made from a quoted request is seen and quoted by its
// organisation only, at its locked price (no markup), launches at it, and
// stops quoting and launching when its day ends. The customer is mailed in
// the same transaction; a request not marked quoted is refused.
func TestPrivateOffer(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		other := newLaunchEnvIn(t, db, e.s, 10_000*models.Micro)
		if _, err := e.actions().SetProviderMarkup(ctx, "sim", "20"); err != nil {
			t.Fatal(err)
		}
		req, err := e.actions().RequestCapacity(ctx, validCapacityInput("", "usr_t"), notify)
		if err != nil {
			t.Fatal(err)
		}
		in := models.PrivateOfferInput{RequestID: req.ID, OfferID: "sim:h100x8", Nodes: 4, Price: "18.40", ValidUntil: "2026-12-05"}
		if _, err := e.actions().CreatePrivateOffer(ctx, in, notify); !hasField(err, "status") {
			t.Fatalf("a request not yet quoted: %v", err)
		}
		if _, _, err := e.actions().SetQuoteRequestStatus(ctx, req.ID, "quoted", "", notify); err != nil {
			t.Fatal(err)
		}
		for field, bad := range map[string]models.PrivateOfferInput{
			"offer_id":    {RequestID: req.ID, OfferID: "sim:nope", Nodes: 4, Price: "18.40", ValidUntil: "2026-12-05"},
			"nodes":       {RequestID: req.ID, OfferID: "sim:h100x8", Nodes: 65, Price: "18.40", ValidUntil: "2026-12-05"},
			"price":       {RequestID: req.ID, OfferID: "sim:h100x8", Nodes: 4, Price: "18.405", ValidUntil: "2026-12-05"},
			"valid_until": {RequestID: req.ID, OfferID: "sim:h100x8", Nodes: 4, Price: "18.40", ValidUntil: "2026-11-01"},
		} {
			if _, err := e.actions().CreatePrivateOffer(ctx, bad, notify); !hasField(err, field) {
				t.Errorf("bad %s: %v", field, err)
			}
		}
		po, err := e.actions().CreatePrivateOffer(ctx, in, notify)
		if err != nil {
			t.Fatal(err)
		}
		var mails []models.OutboxMail
		db.Where("idempotency_key = ?", "private-offer:"+po.ID).Find(&mails)
		if mails, err = views.RenderedMails(mails, nil); err != nil {
			t.Fatal(err)
		}
		if len(mails) != 1 || !strings.Contains(mails[0].Text, po.ID) || !strings.Contains(mails[0].Text, "$18.40 per machine-hour") {
			t.Errorf("customer mail %+v", mails)
		}

		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2}
		picks, err := e.s.PrivatePicks(ctx, e.org.ID, f)
		if err != nil || len(picks) != 1 || picks[0].ID != po.ID || picks[0].Offer.MachineHour() != 18_400_000 ||
			picks[0].Offer.ClusterHour(4) != 4*18_400_000 {
			t.Fatalf("own picker: %+v, %v", picks, err)
		}
		if picks, _ := e.s.PrivatePicks(ctx, other.org.ID, f); len(picks) != 0 {
			t.Errorf("another organisation sees %d private offers", len(picks))
		}
		r := models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 4, GPUsPerNode: 8, PrivateOfferID: po.ID}
		var nc *models.NoCapacityError
		if _, err := other.s.CreateQuote(ctx, other.org.ID, other.env.ID, r); !errors.As(err, &nc) || nc.Reason != "offer_not_found" {
			t.Errorf("another organisation quoted it: %v", err)
		}
		wrong := r
		wrong.Nodes = 2
		if _, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, wrong); !errors.As(err, &nc) || nc.Reason != "private_offer_shape" {
			t.Errorf("another size: %v", err)
		}
		q := e.quote(t, r)
		if q.USDPerHour != 4*18_400_000 || q.MachineHour() != 18_400_000 || q.PrivateOfferID != po.ID {
			t.Errorf("quote %d/h, %d per machine, private %q", q.USDPerHour, q.MachineHour(), q.PrivateOfferID)
		}
		if li := q.LineItems(); len(li) != 1 || li[0].Name != "machines" || li[0].USDPerHour != q.USDPerHour {
			t.Errorf("private line items %+v", li)
		}
		c, _, err := e.actions().Launch(ctx, models.LaunchInput{Priced: models.QuoteFields{Accelerator: ptr("H100_80GB"),
			Nodes: ptr(4), GPUsPerNode: ptr(8), PrivateOfferID: ptr(po.ID)}, Workload: models.Workload{Name: "big", Software: "none"}})
		if err != nil || c.USDPerHour != 4*18_400_000 || c.MachineHour != 18_400_000 || c.OfferID != "sim:h100x8" {
			t.Fatalf("launch from the private offer: %+v, %v", c, err)
		}

		// A quote made near the end is locked only until the day ends; after it, nothing.
		e.clock.Set(time.Date(2026, 12, 5, 23, 55, 0, 0, time.UTC))
		seedCatalog(t, e.s, offer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		late := e.quote(t, r)
		if !late.ExpiresAt.Equal(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("late quote expires %v, not with the offer", late.ExpiresAt)
		}
		e.clock.Advance(10 * time.Minute)
		seedCatalog(t, e.s, offer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		var pc *models.PriceChangedError
		if _, _, err := e.actions().Launch(ctx, models.LaunchInput{QuoteID: late.ID, FreshQuote: true,
			Workload: models.Workload{Name: "late", Software: "none"}}); !errors.As(err, &pc) || pc.New != nil {
			t.Errorf("launch after expiry: %v", err)
		}
		if _, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, r); !errors.As(err, &nc) || nc.Reason != models.PrivateOfferExpired {
			t.Errorf("quote after expiry: %v", err)
		}
		if picks, _ := e.s.PrivatePicks(ctx, e.org.ID, f); len(picks) != 0 {
			t.Errorf("an expired private offer is still shown")
		}
	})
}

func hasField(err error, field string) bool {
	var fe models.FieldErrors
	return errors.As(err, &fe) && fe[field] != ""
}

// newLaunchEnvIn is a second organisation on e's store and catalog.
func newLaunchEnvIn(t *testing.T, db *gorm.DB, s *models.Store, deposit models.Money) *launchEnv {
	t.Helper()
	e := &launchEnv{s: s, db: db, org: models.Org{ID: models.NewID("org"), Name: "Other", MaxMachines: 8, MaxGPUs: 40, CreatedAt: t0}}
	e.env = models.Environment{ID: models.NewID("env"), OrgID: e.org.ID, Name: "default", IsDefault: true}
	if err := db.Create(&e.org).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&e.env).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Deposit(context.Background(), e.org.ID, deposit, "dep-"+e.org.ID, "test"); err != nil {
		t.Fatal(err)
	}
	return e
}

// OP2: the picker serves a snapshot of customer prices, so a
// markup change (a setting or the configured default) must reach it at once:
// the snapshot is reloaded and the stamp under which answers are kept moves.
func TestMarkupChangeReachesPickerAtOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2, Location: "eu-west"}
		pick := func(step string, perGPU, disk models.Money) string {
			t.Helper()
			p, err := e.s.PreparePick(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			groups := p.Groups()
			if len(groups) != 1 || len(groups[0].Offers) != 1 {
				t.Fatalf("%s: picker %+v", step, groups)
			}
			if want := 8*perGPU + 500*disk; groups[0].Offers[0].MachineHour() != want || groups[0].Cheapest != 2*want {
				t.Errorf("%s: machine %d, cheapest %d; want %d and %d", step, groups[0].Offers[0].MachineHour(), groups[0].Cheapest, want, 2*want)
			}
			return p.Stamp
		}
		before := pick("no markup", 2_300_000, 100)
		if _, err := e.actions().SetProviderMarkup(ctx, "sim", "12.5"); err != nil {
			t.Fatal(err)
		}
		set := pick("12.5 % set", 2_587_500, 113)
		e.restartWith(models.Settings{DefaultMarkup: 1000}) // the configuration's default; sim keeps its own setting
		sameSet := pick("default changed, sim set", 2_587_500, 113)
		if _, err := e.actions().SetProviderMarkup(ctx, "sim", "0"); err != nil {
			t.Fatal(err)
		}
		pick("0 % set", 2_300_000, 100)
		if before == set || set == sameSet {
			t.Errorf("the stamp did not move with the markup: %q, %q, %q", before, set, sameSet)
		}
	})
}
