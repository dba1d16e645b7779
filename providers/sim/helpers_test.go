package sim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// fakeClock is a settable clock; tests advance it instead of sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// Offer ids of testConfig.
const (
	offCounted = "t1.h100.8x.vm"  // counted, 10 free, vm
	offBM      = "t1.h100.8x.bm"  // counted, 5 free, bare metal
	offCt      = "t1.4090.1x.ct"  // counted, 3 free, container
	offYes     = "t1.a100.4x.yes" // yes/no: yes (hidden capacity 8)
	offNo      = "t1.a100.4x.no"  // yes/no: no
	offGW      = "t2.l40s.2x.gw"  // counted, behind a gateway
	locT1      = "t-1"
	locT2      = "t-2"
	testGW     = "jump@gw.t-2.sim.clusterdeck.test:22"
	testGPUs   = 8
	testVCPUs  = 208
	testMemGB  = 1800
	testDiskGB = 2000
)

func ptr[T any](v T) *T { return &v }

// testConfig is a small catalog with every stock signal.
func testConfig() Config {
	h100 := func(id, kind string, s stock) OfferConfig {
		o := OfferConfig{
			ID: id, Accelerator: accH100, MachineKind: kind, Interconnect: providers.InfiniBand, NICs: 8, NICGbps: 400,
			GPUsPerNode: testGPUs, VCPUs: testVCPUs, MemoryGB: testMemGB,
			PerGPUHourUSD: 2_490_000, RootDiskGB: testDiskGB, DiskGBHourUSD: 137,
		}
		s(&o)
		return o
	}
	small := func(id, acc, kind string, gpus int, s stock) OfferConfig {
		o := OfferConfig{
			ID: id, Accelerator: acc, MachineKind: kind, Interconnect: providers.Ethernet,
			GPUsPerNode: gpus, VCPUs: 16 * gpus, MemoryGB: 64 * gpus,
			PerGPUHourUSD: 890_000, RootDiskGB: 250 * gpus, DiskGBHourUSD: 110,
		}
		s(&o)
		return o
	}
	return Config{
		Locations: []Location{
			{ID: locT1, Name: "Testville, US", Offers: []OfferConfig{
				h100(offCounted, providers.VM, free(10)),
				h100(offBM, providers.BareMetal, free(5)),
				small(offCt, accRTX4090, providers.Container, 1, free(8)),
				small(offYes, accA100, providers.VM, 4, saysYes),
				small(offNo, accA100, providers.VM, 4, saysNo),
			}},
			{ID: locT2, Name: "Testburg, DE", Gateway: testGW, Offers: []OfferConfig{
				small(offGW, accL40S, providers.VM, 2, free(4)),
			}},
		},
	}
}

// newTestCloud is a Cloud on testConfig with a fake clock and seed 7.
func newTestCloud(t *testing.T, opts ...Option) (*Cloud, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	c := New(testConfig(), append([]Option{WithClock(clk.Now), WithSeed(7)}, opts...)...)
	return c, clk
}

// place places count machines of offer (in its own test location) as group.
func place(t *testing.T, c *Cloud, group, offer string, count int) providers.Group {
	t.Helper()
	g, err := c.PlaceGroup(context.Background(), request(c, group, offer, count))
	if err != nil {
		t.Fatalf("PlaceGroup(%s, %s, %d): %v", group, offer, count, err)
	}
	return g
}

// request builds a placement request in the offer's location with one
// agent token per machine.
func request(c *Cloud, group, offer string, count int) providers.PlaceRequest {
	loc := ""
	if s, ok := c.byID[offer]; ok {
		loc = s.loc.ID
	}
	req := providers.PlaceRequest{GroupName: group, OfferID: offer, Location: loc, Count: count}
	req.Agent.ServerURL = "http://clusterdeck.test"
	for i := range count {
		req.Agent.Tokens = append(req.Agent.Tokens, group+"-token-"+string(rune('a'+i)))
	}
	return req
}

// stockOf is the offer's counted stock (or -1 when uncounted) and Available.
func stockOf(t *testing.T, c *Cloud, offer string) (int, bool) {
	t.Helper()
	offers, err := c.ListOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.OfferID == offer {
			if o.NodesAvailable == nil {
				return -1, o.Available
			}
			return *o.NodesAvailable, o.Available
		}
	}
	t.Fatalf("offer %s not listed", offer)
	return 0, false
}

// describe is DescribeGroup that fails the test on error.
func describe(t *testing.T, c *Cloud, group string) providers.Group {
	t.Helper()
	g, err := c.DescribeGroup(context.Background(), group)
	if err != nil {
		t.Fatalf("DescribeGroup(%s): %v", group, err)
	}
	return g
}

// states lists the node states of a group in index order.
func states(g providers.Group) []providers.NodeState {
	out := make([]providers.NodeState, len(g.Nodes))
	for i, n := range g.Nodes {
		out[i] = n.State
	}
	return out
}

// wantClass fails unless err is a *providers.Error of class.
func wantClass(t *testing.T, err, class error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) || !errors.Is(err, class) {
		t.Fatalf("error = %v, want a *providers.Error wrapping %v", err, class)
	}
	return pe
}
