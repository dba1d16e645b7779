package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

type launchEnv struct {
	s     *models.Store
	clock *models.FakeClock
	org   models.Org
	env   models.Environment
	db    *gorm.DB
}

func newLaunchEnv(t *testing.T, db *gorm.DB, deposit models.Money) *launchEnv {
	t.Helper()
	clock := models.NewFakeClock(t0)
	s := models.NewStore(db, clock)
	e := &launchEnv{s: s, clock: clock, db: db,
		org: models.Org{ID: models.NewID("org"), Name: "Acme", MaxMachines: 8, MaxGPUs: 40, CreatedAt: t0}}
	e.env = models.Environment{ID: models.NewID("env"), OrgID: e.org.ID, Name: "default", IsDefault: true}
	if err := db.Create(&e.org).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&e.env).Error; err != nil {
		t.Fatal(err)
	}
	seedCatalog(t, s,
		offer("h100x8", "us-east", 8, 2_490_000, intp(20)),
		offer("h100x4", "us-east", 4, 2_600_000, nil),
		offer("h100x8-eu", "eu-west", 8, 2_300_000, intp(3)),
	)
	if deposit > 0 {
		if _, err := s.Deposit(context.Background(), e.org.ID, deposit, "dep-1", "test"); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// restartWith is the server started again with other settings on the same
// database and clock: the env's store is a new one built with set.
func (e *launchEnv) restartWith(set models.Settings) {
	e.s = models.NewStoreWith(e.db, e.s.Clock, set)
}

func (e *launchEnv) quote(t *testing.T, r models.ShapeQuery) models.Quote {
	t.Helper()
	q, err := e.s.CreateQuote(context.Background(), e.org.ID, e.env.ID, r)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (e *launchEnv) launch(q models.Quote, key, hash string) (models.Cluster, bool, error) {
	return e.s.LaunchCluster(context.Background(), models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID, IdemKey: key, RequestHash: hash, Actor: "t", Workload: models.Workload{Name: "train", Software: "none"}})
}

// Q1–Q4: the cheapest fitting offer, the Q3 price with line items that add
// up, and no_capacity reasons.
func TestQuotePricingAndNoCapacity(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newLaunchEnv(t, db, 0)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeGB: 1000})
		if q.OfferID != "sim:h100x8-eu" {
			t.Errorf("picked %s, want the cheapest that fits (eu-west, 3 free)", q.OfferID)
		}
		want := models.Money(8*2)*2_300_000 + models.Money(500*2)*100 + 1000*models.VolumeGBHour
		var sum models.Money
		for _, li := range q.LineItems() {
			sum += li.USDPerHour
		}
		if q.USDPerHour != want || sum != want {
			t.Errorf("usdPerHour %d, line items %d, want %d (Q3)", q.USDPerHour, sum, want)
		}
		if !q.ExpiresAt.Equal(t0.Add(models.QuoteTTL)) || q.Availability != "low" {
			t.Errorf("expires %v availability %q", q.ExpiresAt, q.Availability)
		}
		// 4 nodes do not fit in eu-west (3 free): us-east is chosen.
		if q4 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 4, GPUsPerNode: 8}); q4.OfferID != "sim:h100x8" {
			t.Errorf("4 nodes picked %s", q4.OfferID)
		}
		tests := []struct {
			r      models.ShapeQuery
			reason string
		}{
			{models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 2}, "gpus_per_node_unavailable"},
			{models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 40, GPUsPerNode: 8}, "no_location_with_n_nodes"},
			{models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 9, GPUsPerNode: 4}, "no_location_with_n_nodes"}, // uncounted: max 8 (O2)
			{models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, MaxHourlyPrice: 10 * models.Micro}, "above_max_hourly_price"},
			{models.ShapeQuery{Accelerator: "L40S", Nodes: 2, GPUsPerNode: 8}, "gpus_per_node_unavailable"},
		}
		for _, tt := range tests {
			_, err := e.s.CreateQuote(context.Background(), e.org.ID, e.env.ID, tt.r)
			var nc *models.NoCapacityError
			if !errors.As(err, &nc) || nc.Reason != tt.reason || nc.Shape != tt.r || len(nc.Advice()) == 0 {
				t.Errorf("%+v: err %v, want no_capacity %s with the shape and advice", tt.r, err, tt.reason)
			}
		}
		var n int64
		db.Model(&models.Quote{}).Count(&n)
		if n != 2 {
			t.Errorf("%d quotes stored; refused quotes must store nothing", n)
		}
		if _, err := e.s.CreateQuote(context.Background(), e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 1, GPUsPerNode: 9}); err == nil {
			t.Error("invalid shape accepted")
		}
	})
}

// L1: same key + same body → same cluster; same key + other body → refused.
func TestLaunchIdempotency(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newLaunchEnv(t, db, 500*models.Micro)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		c1, created, err := e.launch(q, "k1", "hash-a")
		if err != nil || !created || c1.Status != models.StatusProvisioning {
			t.Fatalf("first launch: %v %v %s", err, created, c1.Status)
		}
		c2, created, err := e.launch(q, "k1", "hash-a")
		if err != nil || created || c2.ID != c1.ID {
			t.Fatalf("repeat: %v created=%v id %s vs %s", err, created, c2.ID, c1.ID)
		}
		if _, _, err := e.launch(q, "k1", "hash-b"); !errors.Is(err, models.ErrIdempotencyMismatch) {
			t.Errorf("same key, other body: %v", err)
		}
		if _, _, err := e.launch(q, "k2", "hash-a"); !errors.Is(err, models.ErrQuoteUsed) {
			t.Errorf("second launch of one quote: %v", err)
		}
		nodes, _ := e.s.NodesFor(context.Background(), c1.ID)
		// N1, OP1: no address is assumed before the provider or the agent reports one.
		if len(nodes) != 2 || nodes[0].Name != "node-0" || nodes[1].PrivateIP != "" {
			t.Errorf("nodes = %+v (N1)", nodes)
		}
		var clusters int64
		db.Model(&models.Cluster{}).Count(&clusters)
		if clusters != 1 {
			t.Errorf("%d clusters, want 1", clusters)
		}
	})
}

// Q5: an expired quote answers price_changed; L2: quota and balance.
func TestLaunchRefusals(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 0)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})

		// Balance zero refuses; the error says how much to add.
		_, _, err := e.launch(q, "", "")
		var ib *models.InsufficientBalanceError
		if !errors.As(err, &ib) || ib.Required != q.USDPerHour || ib.Shortfall() != q.USDPerHour {
			t.Fatalf("zero balance: %v", err)
		}
		// Never less than $10 even for a cheap cluster.
		if models.RequiredBalance(3*models.Micro) != 10*models.Micro {
			t.Error("the $10 floor is not applied")
		}
		e.s.Deposit(ctx, e.org.ID, q.USDPerHour-1, "dep-2", "almost")
		if _, _, err := e.launch(q, "", ""); !errors.As(err, &ib) || ib.Shortfall() != 1 {
			t.Errorf("one micro-dollar short: %v", err)
		}
		e.s.Deposit(ctx, e.org.ID, 1000*models.Micro, "dep-3", "enough")

		// Quota: 8 machines, 40 GPUs. 2×8 GPUs fits; another 4×8 would exceed GPUs.
		if _, _, err := e.launch(q, "", ""); err != nil {
			t.Fatalf("launch within quota: %v", err)
		}
		big := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 4, GPUsPerNode: 8})
		var qe *models.QuotaError
		if _, _, err := e.launch(big, "", ""); !errors.As(err, &qe) || qe.Resource != "gpus" || qe.InUse != 16 {
			t.Errorf("GPU quota: %v", err)
		}
		many := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 7, GPUsPerNode: 4})
		if _, _, err := e.launch(many, "", ""); !errors.As(err, &qe) || qe.Resource != "machines" {
			t.Errorf("machine quota: %v", err)
		}

		// Q5: an expired quote.
		stale := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
		e.clock.Advance(models.QuoteTTL)
		var pc *models.PriceChangedError
		if _, _, err := e.launch(stale, "", ""); !errors.As(err, &pc) || pc.Reason != "expired" || pc.Old.ID != stale.ID {
			t.Errorf("expired quote: %v", err)
		}
		var n int64
		db.Model(&models.Cluster{}).Count(&n)
		if n != 1 {
			t.Errorf("%d clusters exist; every refusal must create nothing", n)
		}
	})
}

// L4: step deadlines grow with boot time and never pass the cap.
func TestStepDeadlines(t *testing.T) {
	placed := t0
	for _, boot := range []time.Duration{time.Minute, 4 * time.Minute, 10 * time.Minute, 12 * time.Minute} {
		c := models.Cluster{BootSeconds: int(boot.Seconds()), PlacedAt: &placed}
		prev := placed
		for _, step := range models.ProvisionSteps {
			d := c.StepDeadline(step)
			if d.Before(prev) {
				t.Errorf("boot %s: %s deadline %s before the previous one", boot, step, d)
			}
			if d.Sub(placed) > c.Cap() {
				t.Errorf("boot %s: %s deadline past the cap", boot, step)
			}
			prev = d
		}
		if boot <= 10*time.Minute && c.Cap() != models.ProvisionCap {
			t.Errorf("boot %s: cap %s, want 25m", boot, c.Cap())
		}
	}
	slow := models.Cluster{BootSeconds: 12 * 60, PlacedAt: &placed}
	if slow.Cap() <= models.ProvisionCap {
		t.Errorf("a kind known to boot slowly (12 m) must get longer than 25 m, got %s", slow.Cap())
	}
}

// S1 and A4: bad workload settings are refused with field errors and create
// nothing; Kubernetes is refused on container machines.
func TestLaunchValidatesWorkload(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newLaunchEnv(t, db, 500*models.Micro)
		container := offer("cont", "us-east", 8, 2_000_000, intp(10))
		container.MachineKind = "container"
		container.Accelerator = "L40S"
		seedCatalog(t, e.s, container)
		q := e.quote(t, models.ShapeQuery{Accelerator: "L40S", Nodes: 2, GPUsPerNode: 8})
		tests := []struct {
			p     models.LaunchParams
			field string
		}{
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "kubernetes"}}, "software"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "windows"}}, "software"},
			{models.LaunchParams{Workload: models.Workload{Name: "Bad Name!", Software: "none"}}, "name"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "none", Env: map[string]string{"MASTER_ADDR": "x"}}}, "env"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "none", Env: map[string]string{"1BAD": "x"}}}, "env"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "none", Ports: []int{0}}}, "ports"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "none", Ports: []int{22, 22}}}, "ports"},
			{models.LaunchParams{Workload: models.Workload{Name: "ok", Software: "none", Image: "has space"}}, "image"},
		}
		for _, tt := range tests {
			tt.p.OrgID, tt.p.EnvID, tt.p.QuoteID = e.org.ID, e.env.ID, q.ID
			_, _, err := e.s.LaunchCluster(context.Background(), tt.p)
			var fe models.FieldErrors
			if !errors.As(err, &fe) || fe[tt.field] == "" {
				t.Errorf("%+v: err %v, want a problem on %s", tt.p, err, tt.field)
			}
		}
		var n int64
		db.Model(&models.Cluster{}).Count(&n)
		if n != 0 {
			t.Errorf("%d clusters created from bad input", n)
		}
		if _, _, err := e.s.LaunchCluster(context.Background(), models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID, Workload: models.Workload{Name: "fine", Software: "slurm", Env: map[string]string{"HF_TOKEN": "x"}, Ports: []int{8888}}}); err != nil {
			t.Errorf("valid launch on containers (slurm) refused: %v", err)
		}
	})
}

// API2, Q4, O6: a shape whose offers exist but went stale (the
// provider's refresh has been failing) is catalog_stale, with advice to try
// again shortly, never "another number of GPUs per machine"; a shape that
// does not exist at all stays gpus_per_node_unavailable.
func TestStaleCatalogAdvice(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newLaunchEnv(t, db, 0)
		ctx := context.Background()
		e.clock.Advance(models.OfferFreshness + time.Minute) // no refresh since: every offer is stale
		for _, r := range []models.ShapeQuery{
			{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8},
			{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:h100x8"},
		} {
			_, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, r)
			var nc *models.NoCapacityError
			if !errors.As(err, &nc) || nc.Reason != models.CatalogStaleReason {
				t.Fatalf("%+v on a stale catalog: %v, want no_capacity catalog_stale", r, err)
			}
			advice := strings.Join(nc.Advice(), " ")
			if !strings.Contains(advice, "refreshed") || !strings.Contains(advice, "Try again") || strings.Contains(advice, "GPUs per machine") {
				t.Errorf("stale catalog advice: %q", advice)
			}
		}
		_, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 2})
		var nc *models.NoCapacityError
		if !errors.As(err, &nc) || nc.Reason != "gpus_per_node_unavailable" {
			t.Errorf("a shape no offer has, stale or not: %v, want gpus_per_node_unavailable", err)
		}
	})
}
