package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

func TestName(t *testing.T) {
	if got := New(testConfig()).Name(); got != "sim" {
		t.Errorf("default Name() = %q", got)
	}
	c := New(testConfig(), WithName("sim-eu"))
	offers, _ := c.ListOffers(context.Background())
	if c.Name() != "sim-eu" || offers[0].Provider != "sim-eu" {
		t.Errorf("WithName: Name() = %q, offer provider %q", c.Name(), offers[0].Provider)
	}
}

func TestListOffersStockSignals(t *testing.T) {
	c, _ := newTestCloud(t)
	tests := []struct {
		offer     string
		count     int // -1: uncounted
		available bool
	}{
		{offCounted, 10, true},
		{offBM, 5, true},
		{offYes, -1, true},
		{offNo, -1, false},
		{offGW, 4, true},
	}
	for _, tt := range tests {
		n, avail := stockOf(t, c, tt.offer)
		if n != tt.count || avail != tt.available {
			t.Errorf("%s stock = %d/%v, want %d/%v", tt.offer, n, avail, tt.count, tt.available)
		}
	}
	offers, _ := c.ListOffers(context.Background())
	o := offers[0]
	if o.Location != locT1 || o.LocationName != "Testville, US" || !o.PublicIPs || o.Gateway != "" ||
		o.GPUsPerNode != testGPUs || o.VCPUs != testVCPUs || o.MemoryGB != testMemGB ||
		o.MachineHourUSD() != 8*2_490_000+2000*137 {
		t.Errorf("first offer = %+v", o)
	}
	if gw := offers[len(offers)-1]; gw.PublicIPs || gw.Gateway != testGW {
		t.Errorf("gateway offer = %+v", gw)
	}
}

func TestListOffersDoesNotAliasStock(t *testing.T) {
	c, _ := newTestCloud(t)
	offers, _ := c.ListOffers(context.Background())
	*offers[0].NodesAvailable = 999
	if n, _ := stockOf(t, c, offCounted); n != 10 {
		t.Errorf("stock changed through a listed offer: %d", n)
	}
}

func TestStockTakenAndReleased(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	place(t, c, "a", offCounted, 4)
	place(t, c, "b", offCounted, 6)
	if n, avail := stockOf(t, c, offCounted); n != 0 || avail {
		t.Fatalf("after placing 10 of 10: stock %d available %v", n, avail)
	}
	_, err := c.PlaceGroup(ctx, request(c, "c", offCounted, 1))
	wantClass(t, err, providers.ErrNoCapacity)

	for range 2 { // terminate twice: stock comes back once
		if err := c.TerminateGroup(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := stockOf(t, c, offCounted); n != 4 {
		t.Fatalf("after terminating a twice: stock %d, want 4", n)
	}
	if err := c.TerminateGroup(ctx, "never-placed"); err != nil {
		t.Errorf("TerminateGroup(unknown) = %v, want nil", err)
	}
	place(t, c, "c", offCounted, 4)
	if n, _ := stockOf(t, c, offCounted); n != 0 {
		t.Errorf("stock %d, want 0", n)
	}
}

func TestUncountedStockHasHiddenCapacity(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	place(t, c, "a", offYes, 5)
	_, err := c.PlaceGroup(ctx, request(c, "b", offYes, 4)) // 5 + 4 > 8
	wantClass(t, err, providers.ErrNoCapacity)
	place(t, c, "b", offYes, 3)
	if n, avail := stockOf(t, c, offYes); n != -1 || avail {
		t.Errorf("exhausted yes/no offer reads %d/%v, want null count and no", n, avail)
	}
	if err := c.TerminateGroup(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, avail := stockOf(t, c, offYes); !avail {
		t.Error("yes/no offer still says no after a release")
	}
}

func TestPlaceGroupIsIdempotent(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	first := place(t, c, "cl_1", offCounted, 3)
	again := place(t, c, "cl_1", offCounted, 3)
	if !slices.Equal(nodeIDs(first), nodeIDs(again)) {
		t.Errorf("retry returned other machines: %v vs %v", nodeIDs(first), nodeIDs(again))
	}
	if n, _ := stockOf(t, c, offCounted); n != 7 {
		t.Errorf("stock after a retried placement = %d, want 7", n)
	}
	_, err := c.PlaceGroup(ctx, request(c, "cl_1", offCounted, 4))
	if pe := wantClass(t, err, providers.ErrValidation); pe.Code != "group-conflict" {
		t.Errorf("different shape under the same name: code %q", pe.Code)
	}
	// A terminated name places a new group with new machines.
	if err := c.TerminateGroup(ctx, "cl_1"); err != nil {
		t.Fatal(err)
	}
	fresh := place(t, c, "cl_1", offCounted, 3)
	if slices.Equal(nodeIDs(first), nodeIDs(fresh)) || states(fresh)[0] != providers.NodePending {
		t.Errorf("re-placing a terminated name: %+v", fresh)
	}
}

func TestPlaceGroupValidation(t *testing.T) {
	c, _ := newTestCloud(t)
	tests := []struct {
		name   string
		change func(*providers.PlaceRequest)
		want   string
	}{
		{"unknown offer", func(r *providers.PlaceRequest) { r.OfferID = "nope" }, `unknown offer "nope"`},
		{"wrong location", func(r *providers.PlaceRequest) { r.Location = locT2 }, "is sold in t-1"},
		{"zero count", func(r *providers.PlaceRequest) { r.Count = 0 }, "count must be at least 1"},
		{"negative count", func(r *providers.PlaceRequest) { r.Count = -2 }, "count must be at least 1"},
		{"no group name", func(r *providers.PlaceRequest) { r.GroupName = "" }, "group name is required"},
		{"token per machine", func(r *providers.PlaceRequest) { r.Agent.Tokens = r.Agent.Tokens[:1] }, "1 agent tokens for 2 machines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(c, "v", offCounted, 2)
			tt.change(&req)
			_, err := c.PlaceGroup(context.Background(), req)
			pe := wantClass(t, err, providers.ErrValidation)
			if !strings.Contains(pe.Message, tt.want) || pe.Provider != "sim" || pe.Op != "PlaceGroup" {
				t.Errorf("error = %+v, want message with %q", pe, tt.want)
			}
		})
	}
	if n, _ := stockOf(t, c, offCounted); n != 10 {
		t.Errorf("rejected placements took stock: %d left", n)
	}
}

func TestRefusedPlacementTakesNothing(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	tests := []struct {
		offer string
		count int
	}{
		{offBM, 6},  // counted: 5 free
		{offNo, 1},  // yes/no saying no
		{offYes, 9}, // hidden capacity 8
	}
	for _, tt := range tests {
		before, beforeAvail := stockOf(t, c, tt.offer)
		_, err := c.PlaceGroup(ctx, request(c, "g-"+tt.offer, tt.offer, tt.count))
		pe := wantClass(t, err, providers.ErrNoCapacity)
		if pe.Location != locT1 || pe.Code != "insufficient-capacity" {
			t.Errorf("%s: error %+v", tt.offer, pe)
		}
		if after, afterAvail := stockOf(t, c, tt.offer); after != before || afterAvail != beforeAvail {
			t.Errorf("%s: refused placement changed stock %d→%d", tt.offer, before, after)
		}
		if _, err := c.DescribeGroup(ctx, "g-"+tt.offer); err == nil {
			t.Errorf("%s: a refused placement left a group behind", tt.offer)
		}
	}
}

func TestConcurrentPlacementNeverOversells(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	const workers = 64
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		placed  int
		minSeen = 10
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			count := 1 + i%3
			_, err := c.PlaceGroup(ctx, request(c, fmt.Sprintf("g%d", i), offCounted, count))
			offers, lerr := c.ListOffers(ctx)
			mu.Lock()
			defer mu.Unlock()
			if lerr == nil {
				if n := *offers[0].NodesAvailable; n < minSeen {
					minSeen = n
				}
			}
			switch {
			case err == nil:
				placed += count
			case !strings.Contains(err.Error(), "no capacity"):
				t.Errorf("placement %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	left, _ := stockOf(t, c, offCounted)
	if placed > 10 || minSeen < 0 || left < 0 || placed+left != 10 {
		t.Fatalf("placed %d, %d left, lowest stock seen %d: oversold", placed, left, minSeen)
	}
	if placed < 8 { // 64 tries of 1–3 machines fill at least 8 of 10
		t.Errorf("only %d of 10 placed", placed)
	}
}

func TestBootTiming(t *testing.T) {
	tests := []struct {
		offer string
		boot  time.Duration
	}{
		{offCt, time.Minute},
		{offCounted, 4 * time.Minute},
		{offBM, 12 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.offer, func(t *testing.T) {
			c, clk := newTestCloud(t)
			place(t, c, "g", tt.offer, 3)
			if got := states(describe(t, c, "g")); !allState(got, providers.NodePending) {
				t.Fatalf("just placed: %v", got)
			}
			clk.Advance(tt.boot - time.Second)
			if got := states(describe(t, c, "g")); !allState(got, providers.NodePending) {
				t.Fatalf("before boot time: %v", got)
			}
			clk.Advance(tt.boot/5 + time.Second) // jitter is under 20%
			g := describe(t, c, "g")
			if got := states(g); !allState(got, providers.NodeRunning) {
				t.Fatalf("after boot time + 20%%: %v", got)
			}
			if g.Nodes[0].Message != "" {
				t.Errorf("running node message %q", g.Nodes[0].Message)
			}
		})
	}
}

func TestBootJitterIsSeededPerNode(t *testing.T) {
	bootAts := func(seed int64) []time.Time {
		c := New(testConfig(), WithSeed(seed), WithClock(newFakeClock().Now))
		place(t, c, "g", offBM, 5)
		var out []time.Time
		for _, n := range c.groups["g"].nodes {
			out = append(out, n.bootAt)
		}
		return out
	}
	a, b := bootAts(1), bootAts(1)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different boot times: %v vs %v", a, b)
	}
	if slices.Equal(a, bootAts(2)) {
		t.Error("seed does not change boot times")
	}
	distinct := slices.CompactFunc(slices.SortedFunc(slices.Values(a), time.Time.Compare), time.Time.Equal)
	if len(distinct) == 1 {
		t.Error("every node boots at the same moment: no jitter")
	}
}

func TestNodesAndAddresses(t *testing.T) {
	c, _ := newTestCloud(t)
	g := place(t, c, "pub", offCounted, 3)
	if g.Provider != "sim" || g.Name != "pub" || g.Location != locT1 || len(g.Nodes) != 3 {
		t.Fatalf("group = %+v", g)
	}
	for i, n := range g.Nodes {
		if n.Index != i || n.PrivateIP != fmt.Sprintf("10.77.0.%d", i+1) || n.SSHPort != 22 || n.SSHUser != "ubuntu" {
			t.Errorf("node %d = %+v", i, n)
		}
		if n.PublicHost != "t-1-"+n.ID+".sim.clusterdeck.test" {
			t.Errorf("node %d public host %q", i, n.PublicHost)
		}
	}
	if ids := nodeIDs(g); len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 3 {
		t.Errorf("node ids not unique: %v", ids)
	}
	for _, n := range place(t, c, "gw", offGW, 2).Nodes {
		if n.PublicHost != "" {
			t.Errorf("gateway node has public host %q", n.PublicHost)
		}
	}
	// Same seed, same ids; another seed, other ids.
	again, _ := newTestCloud(t)
	if !slices.Equal(nodeIDs(place(t, again, "pub", offCounted, 3)), nodeIDs(g)) {
		t.Error("node ids are not deterministic for a seed")
	}
	other := New(testConfig(), WithSeed(8))
	if slices.Equal(nodeIDs(place(t, other, "pub", offCounted, 3)), nodeIDs(g)) {
		t.Error("node ids do not depend on the seed")
	}
}

func TestDescribeGroup(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	_, err := c.DescribeGroup(ctx, "nope")
	wantClass(t, err, providers.ErrNotFound)

	place(t, c, "g", offCt, 2)
	clk.Advance(time.Hour)
	if err := c.TerminateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	g := describe(t, c, "g")
	if !allState(states(g), providers.NodeTerminated) || len(g.Nodes) != 2 {
		t.Errorf("terminated group: %+v", g)
	}
}

func TestRestartNode(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	g := place(t, c, "g", offCounted, 2) // vm: 4m boot, 1m restart
	clk.Advance(5 * time.Minute)
	id := g.Nodes[1].ID
	if err := c.RestartNode(ctx, "g", id); err != nil {
		t.Fatal(err)
	}
	got := describe(t, c, "g")
	if got.Nodes[1].State != providers.NodeRestarting || got.Nodes[0].State != providers.NodeRunning {
		t.Fatalf("after restart: %v", states(got))
	}
	clk.Advance(time.Minute)
	got = describe(t, c, "g")
	if got.Nodes[1].State != providers.NodeRunning || got.Nodes[1].PrivateIP != "10.77.0.2" || got.Nodes[1].ID != id {
		t.Fatalf("a minute after restart: %+v", got.Nodes[1])
	}

	tests := []struct {
		name, group, node string
	}{
		{"unknown group", "nope", id},
		{"unknown node", "g", "sim-nope"},
	}
	for _, tt := range tests {
		wantClass(t, c.RestartNode(ctx, tt.group, tt.node), providers.ErrNotFound)
	}
	if err := c.TerminateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	wantClass(t, c.RestartNode(ctx, "g", id), providers.ErrNotFound)
}

func TestCancelledContext(t *testing.T) {
	c, _ := newTestCloud(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ListOffers(ctx); err != context.Canceled {
		t.Errorf("ListOffers = %v", err)
	}
	if _, err := c.PlaceGroup(ctx, request(c, "g", offCounted, 1)); err != context.Canceled {
		t.Errorf("PlaceGroup = %v", err)
	}
	if n, _ := stockOf(t, c, offCounted); n != 10 {
		t.Errorf("cancelled placement took stock")
	}
}

func nodeIDs(g providers.Group) []string {
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

func allState(got []providers.NodeState, want providers.NodeState) bool {
	for _, s := range got {
		if s != want {
			return false
		}
	}
	return len(got) > 0
}
