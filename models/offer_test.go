package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func intp(n int) *int { return &n }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func offer(id, loc string, gpus int, perGPU models.Money, avail *int) models.Offer {
	return models.Offer{
		ProviderOffer: id, Location: loc, LocationName: loc + " DC", Interconnect: "infiniband",
		MachineKind: "vm", Accelerator: "H100_80GB", GPUsPerNode: gpus, PerGPUHour: perGPU,
		RootDiskGB: 500, DiskGBHour: 100, NodesAvailable: avail, Available: avail == nil || *avail > 0,
		BootSeconds: 240, PublicIPs: true,
	}
}

// O2: counted → min(64, count); null → 8 (or 0 when the location has none).
func TestMaxNodesO2(t *testing.T) {
	tests := []struct {
		name  string
		avail *int
		flag  bool
		want  int
	}{
		{"null count, has some", nil, true, 8},
		{"null count, has none", nil, false, 0},
		{"counted 3", intp(3), true, 3},
		{"counted 64", intp(64), true, 64},
		{"counted 200 caps at 64", intp(200), true, 64},
		{"counted 0", intp(0), false, 0},
	}
	for _, tt := range tests {
		o := models.Offer{NodesAvailable: tt.avail, Available: tt.flag}
		if got := o.MaxNodes(); got != tt.want {
			t.Errorf("%s: MaxNodes = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// O4: sizes beyond what a location sells read reserved ahead or not in stock.
func TestSellForO4(t *testing.T) {
	uncounted := models.Offer{Available: true}
	counted := models.Offer{NodesAvailable: intp(12), Available: true}
	tests := []struct {
		o    models.Offer
		n    int
		want models.Sellability
	}{
		{uncounted, 8, models.Startable},
		{uncounted, 9, models.ReservedAhead},
		{uncounted, 64, models.ReservedAhead},
		{counted, 12, models.Startable},
		{counted, 13, models.NotInStock},
		{models.Offer{Available: false}, 2, models.NotInStock},
	}
	for _, tt := range tests {
		if got := tt.o.SellFor(tt.n); got != tt.want {
			t.Errorf("SellFor(%d) on %+v = %s, want %s", tt.n, tt.o, got, tt.want)
		}
	}
}

// Q3/O7: the per-GPU formula equals machine price × machines for every size.
func TestPerGPUFormulaEqualsMachinePriceQ3(t *testing.T) {
	for _, gpus := range models.GPUCounts {
		o := offer("x", "l", gpus, 2_490_000, nil)
		o.DiskGBHour = 139
		for n := models.MinNodes; n <= models.MaxNodes; n++ {
			perGPU := models.Money(gpus)*models.Money(n)*o.PerGPUHour + models.Money(o.RootDiskGB)*models.Money(n)*o.DiskGBHour
			if o.ClusterHour(n) != perGPU || o.MachineHour()*models.Money(n) != perGPU {
				t.Fatalf("gpus=%d n=%d: cluster %d, machine×n %d, per-GPU formula %d",
					gpus, n, o.ClusterHour(n), o.MachineHour()*models.Money(n), perGPU)
			}
		}
	}
}

func seedCatalog(t *testing.T, s *models.Store, offers ...models.Offer) {
	t.Helper()
	if err := s.ReplaceOffers(context.Background(), "sim", offers, s.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestPickOffers(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(t0)
		s := models.NewStore(db, clock)
		community := offer("c1", "home-1", 8, 1_000_000, intp(10))
		community.Community = true
		seedCatalog(t, s,
			offer("a8", "us-east", 8, 2_490_000, nil),
			offer("a4", "us-east", 4, 2_600_000, intp(2)),
			offer("b8", "eu-west", 8, 2_200_000, intp(20)),
			offer("c8", "ap-south", 8, 3_000_000, intp(1)),
			community,
		)
		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 4}

		groups, err := s.PickOffers(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(groupSummary(groups, 4))
		want := "[eu-west:b8=available us-east:a8=available,a4=not_in_stock ap-south:c8=not_in_stock]"
		if got != want {
			t.Errorf("grouping/sort:\n got %s\nwant %s", got, want)
		}

		// O5: community hosts only when asked.
		f.IncludeCommunity = true
		groups, _ = s.PickOffers(ctx, f)
		if groups[0].Location != "home-1" {
			t.Errorf("community offer missing or misplaced when asked: %v", groupSummary(groups, 4))
		}

		// Price ceiling is on the whole cluster.
		f.IncludeCommunity = false
		f.MaxClusterHour = b8Price(4)
		groups, _ = s.PickOffers(ctx, f)
		if got := fmt.Sprint(groupSummary(groups, 4)); got != "[eu-west:b8=available us-east:a4=not_in_stock]" {
			t.Errorf("ceiling: %s", got)
		}

		// O6: stale offers are not startable (left out) once past the window.
		clock.Advance(models.OfferFreshness + time.Second)
		groups, _ = s.PickOffers(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2})
		if len(groups) != 0 {
			t.Errorf("stale offers still shown: %v", groupSummary(groups, 2))
		}
		seedCatalog(t, s, offer("b8", "eu-west", 8, 2_200_000, intp(20)))
		groups, _ = s.PickOffers(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2})
		if len(groups) != 1 || len(groups[0].Offers) != 1 {
			t.Errorf("refresh should replace the provider's catalog: %v", groupSummary(groups, 2))
		}
	})
}

// O3: sorted by $/GPU-h, groups follow their best startable offer's rate and
// offers inside a group their rate (startable first); a tie on the rate goes
// to the cheaper whole cluster. The stamp tells the two sorts apart.
// LargestMachine is the picker's default GPUs per machine: the largest the
// other filters leave, here 8, or 4 where only 4-GPU machines are fresh.
func TestPickOffersSortByGPUPrice(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db, models.NewFakeClock(t0))
		// Per GPU-hour vs whole cluster at 4 machines (disk 500 GB × $0.0001):
		// x1 $2.00 × 1 GPU = $8.20/h, y8 $1.90 × 8 = $61.00/h, y8disk $1.90 with
		// a dearer disk, z4 $2.10 × 4 = $33.80/h.
		dearDisk := offer("y8disk", "eu-west", 8, 1_900_000, intp(10))
		dearDisk.DiskGBHour = 300
		ethernet := offer("x1", "us-east", 1, 2_000_000, intp(10))
		ethernet.Interconnect = "ethernet"
		seedCatalog(t, s, ethernet, offer("y8", "eu-west", 8, 1_900_000, intp(10)), dearDisk,
			offer("z4", "us-east", 4, 2_100_000, intp(10)), offer("w8", "us-east", 8, 1_000_000, intp(1)))
		f := models.OfferFilter{Accelerator: "H100_80GB", Nodes: 4}
		byCluster, err := s.PickOffers(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(groupSummary(byCluster, 4)); got != "[us-east:x1=available,z4=available,w8=not_in_stock eu-west:y8=available,y8disk=available]" {
			t.Errorf("by cluster price: %s", got)
		}
		f.Sort = models.SortGPUPrice
		byGPU, err := s.PickOffers(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(groupSummary(byGPU, 4)); got != "[eu-west:y8=available,y8disk=available us-east:x1=available,z4=available,w8=not_in_stock]" {
			t.Errorf("by $/GPU-h: %s", got)
		}
		a, err := s.PreparePick(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: 4})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.PreparePick(ctx, f)
		if a.Stamp == b.Stamp {
			t.Error("the two sorts share a stamp: a kept answer would be served in the wrong order")
		}
		if got := a.LargestMachine(); got != 8 {
			t.Errorf("LargestMachine = %d, want 8", got)
		}
		ib, _ := s.PreparePick(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: 4, Interconnect: "ethernet", GPUsPerNode: 8})
		if got := ib.LargestMachine(); got != 1 {
			t.Errorf("LargestMachine over ethernet = %d, want 1 (the filter's GPUs per machine is ignored)", got)
		}
		if w := a.WithGPUs(4); w.Stamp == a.Stamp || fmt.Sprint(groupSummary(w.Groups(), 4)) != "[us-east:z4=available]" {
			t.Errorf("WithGPUs(4): stamp unchanged or answer %v", groupSummary(w.Groups(), 4))
		}
		if none, _ := s.PreparePick(ctx, models.OfferFilter{Accelerator: "L40S", Nodes: 4}); none.LargestMachine() != 0 {
			t.Error("LargestMachine with no offers should be 0")
		}
	})
}

func b8Price(n int) models.Money { return models.Money(8*n)*2_200_000 + models.Money(500*n)*100 }

func groupSummary(groups []models.OfferGroup, n int) []string {
	var out []string
	for _, g := range groups {
		s := g.Location + ":"
		for i, o := range g.Offers {
			if i > 0 {
				s += ","
			}
			s += o.ProviderOffer + "=" + string(o.SellFor(n))
		}
		out = append(out, s)
	}
	return out
}

func TestOfferFilterValidate(t *testing.T) {
	tests := []struct {
		f     models.OfferFilter
		field string
	}{
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 1}, "nodes"},
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 65}, "nodes"},
		{models.OfferFilter{Accelerator: "TPU", Nodes: 2}, "accelerator"},
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 3}, "gpus_per_node"},
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2, Interconnect: "carrier-pigeon"}, "interconnect"},
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2, MachineKind: "mainframe"}, "machine_kind"},
		{models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2, Sort: "cheapest"}, "sort"},
	}
	for _, tt := range tests {
		if fe := tt.f.Validate(); fe[tt.field] == "" {
			t.Errorf("%+v: want a problem on %s, got %v", tt.f, tt.field, fe)
		}
	}
	if fe := (models.OfferFilter{Accelerator: "L40S", Nodes: 64}).Validate(); len(fe) != 0 {
		t.Errorf("valid filter refused: %v", fe)
	}
}

func TestLeaseIsExclusive(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db, models.NewFakeClock(t0))
		if ok, err := s.AcquireLease(ctx, "catalog", "a", t0, time.Minute); !ok || err != nil {
			t.Fatalf("first acquire: %v %v", ok, err)
		}
		if ok, _ := s.AcquireLease(ctx, "catalog", "b", t0.Add(59*time.Second), time.Minute); ok {
			t.Fatal("second instance took a held lease")
		}
		if ok, _ := s.AcquireLease(ctx, "catalog", "b", t0.Add(2*time.Minute), time.Minute); !ok {
			t.Fatal("expired lease not taken over")
		}
		if err := s.RecordJobRun(ctx, "catalog", t0, t0.Add(time.Second), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordJobRun(ctx, "catalog", t0, t0.Add(time.Second), fmt.Errorf("boom")); err != nil {
			t.Fatal(err)
		}
		runs, _ := s.JobRuns(ctx)
		if len(runs) != 1 || runs[0].Runs != 2 || runs[0].Failures != 1 || runs[0].Error != "boom" {
			t.Errorf("job runs = %+v", runs)
		}
		seedCatalog(t, s, offer("x", "l", 8, 1, nil), offer("y", "l", 8, 1, nil))
		health, err := s.CatalogHealthByProvider(ctx)
		if err != nil || len(health) != 1 || health[0].Offers != 2 || !health[0].RefreshedAt.Equal(s.Now()) {
			t.Errorf("catalog health = %+v, %v", health, err)
		}
	})
}
