package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

func TestParseFaults(t *testing.T) {
	got, err := ParseFaults([]byte(`[
		{"kind": "refuse_capacity", "offer": "t1.h100.8x.vm", "count": 1},
		{"kind": "dies", "group": "cl_1", "node": 2, "after": "90s"},
		{"kind": "install_fails", "node": 1, "software": "slurm", "count": 1}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Kind: FaultRefuseCapacity, Offer: offCounted, Count: 1},
		{Kind: FaultDies, Group: "cl_1", Node: 2, After: Duration(90 * time.Second)},
		{Kind: FaultInstallFails, Node: 1, Software: Slurm, Count: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fault %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	one, err := ParseFaults([]byte(` {"kind": "never_boots", "location": "t-1"} `))
	if err != nil || len(one) != 1 || one[0].Kind != FaultNeverBoots || one[0].Location != locT1 {
		t.Errorf("single object: %+v, %v", one, err)
	}
}

func TestParseFaultsErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"empty", ``, "empty body"},
		{"not json", `kind=dies`, "invalid character"},
		{"unknown kind", `{"kind": "explodes"}`, `unknown kind "explodes" (want one of refuse_capacity,`},
		{"missing kind", `{"node": 1}`, `unknown kind ""`},
		{"unknown field", `{"kind": "dies", "nodes": 1}`, `unknown field "nodes"`},
		{"negative node", `{"kind": "dies", "node": -1}`, "node must not be negative"},
		{"negative count", `{"kind": "dies", "count": -1}`, "count must not be negative"},
		{"bad after", `{"kind": "dies", "after": "later"}`, `invalid duration "later"`},
		{"after on other kind", `{"kind": "never_boots", "after": "1m"}`, `after only applies to "dies"`},
		{"software on other kind", `{"kind": "dies", "software": "ray"}`, "software only applies"},
		{"unknown software", `{"kind": "install_fails", "software": "lsf"}`, `unknown software "lsf"`},
		{"names the fault", `[{"kind": "dies"}, {"kind": "dies", "node": -3}]`, "faults[1] (dies)"},
		{"trailing data", `{"kind": "dies"} {"kind": "dies"}`, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFaults([]byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseFaults error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestInjectRejectsInvalidFaultsWhole(t *testing.T) {
	c, _ := newTestCloud(t)
	err := c.Inject(Fault{Kind: FaultNeverBoots}, Fault{Kind: "bogus"})
	if err == nil {
		t.Fatal("Inject accepted an unknown kind")
	}
	if got := c.Faults(); len(got) != 0 {
		t.Errorf("an invalid batch injected %+v", got)
	}
}

// A fault narrowed by the offer id the API shows ("sim:…") matches
// that offer's launches; an offer the simulator lacks is refused, never
// silently kept.
func TestFaultOfferTakesThePublicID(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	mustInject(t, c, Fault{Kind: FaultRefuseCapacity, Offer: c.Name() + ":" + offCounted, Count: 1})
	if got := c.Faults(); len(got) != 1 || got[0].Offer != offCounted {
		t.Fatalf("faults = %+v, want the offer stored as %q", got, offCounted)
	}
	place(t, c, "other", offBM, 1) // another offer: not matched
	_, err := c.PlaceGroup(ctx, request(c, "g", offCounted, 1))
	wantClass(t, err, providers.ErrNoCapacity)

	for _, offer := range []string{"sim:no-such-offer", "other:" + offCounted, "no-such-offer"} {
		err := c.Inject(Fault{Kind: FaultNeverBoots}, Fault{Kind: FaultRefuseCapacity, Offer: offer})
		if err == nil || !strings.Contains(err.Error(), "no offer") {
			t.Errorf("offer %q: error %v, want a refusal naming the offer", offer, err)
		}
	}
	if got := c.Faults(); len(got) != 0 {
		t.Errorf("a refused batch injected %+v", got)
	}
}

func TestRefusalFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		class error
	}{
		{"capacity", Fault{Kind: FaultRefuseCapacity, Count: 1}, providers.ErrNoCapacity},
		{"validation", Fault{Kind: FaultRefuseValidation, Count: 1}, providers.ErrValidation},
		{"by offer", Fault{Kind: FaultRefuseCapacity, Offer: offCounted, Count: 1}, providers.ErrNoCapacity},
		{"by location", Fault{Kind: FaultRefuseCapacity, Location: locT1, Count: 1}, providers.ErrNoCapacity},
		{"by group", Fault{Kind: FaultRefuseCapacity, Group: "g", Count: 1}, providers.ErrNoCapacity},
		{"message", Fault{Kind: FaultRefuseValidation, Message: "region retired", Count: 1}, providers.ErrValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := newTestCloud(t)
			mustInject(t, c, tt.fault)
			_, err := c.PlaceGroup(ctx, request(c, "g", offCounted, 2))
			pe := wantClass(t, err, tt.class)
			if tt.fault.Message != "" && pe.Message != tt.fault.Message {
				t.Errorf("message = %q", pe.Message)
			}
			if n, _ := stockOf(t, c, offCounted); n != 10 {
				t.Errorf("refused placement took stock: %d left", n)
			}
			place(t, c, "g", offCounted, 2) // count 1: the retry succeeds
			if len(c.Faults()) != 0 {
				t.Errorf("used-up fault still active: %+v", c.Faults())
			}
		})
	}
}

func TestFaultMatching(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	mustInject(t, c,
		Fault{Kind: FaultRefuseCapacity, Offer: offBM},
		Fault{Kind: FaultRefuseCapacity, Location: locT2},
		Fault{Kind: FaultRefuseCapacity, Group: "unlucky"},
	)
	for range 3 { // Count 0: until cleared
		for _, r := range []providers.PlaceRequest{
			request(c, "a", offBM, 1), request(c, "b", offGW, 1), request(c, "unlucky", offCounted, 1),
		} {
			_, err := c.PlaceGroup(ctx, r)
			wantClass(t, err, providers.ErrNoCapacity)
		}
	}
	place(t, c, "lucky", offCounted, 1) // matches none
	c.ClearFaults()
	place(t, c, "unlucky", offCounted, 1)
	place(t, c, "a", offBM, 1)
}

func TestNodeFaultOutsideGroupDoesNotMatch(t *testing.T) {
	c, clk := newTestCloud(t)
	mustInject(t, c, Fault{Kind: FaultNeverBoots, Node: 3, Count: 1})
	place(t, c, "small", offCt, 2) // no node 3: not hit, not used up
	place(t, c, "big", offCounted, 4)
	clk.Advance(time.Hour)
	if got := states(describe(t, c, "small")); !allState(got, providers.NodeRunning) {
		t.Errorf("small group: %v", got)
	}
	want := []providers.NodeState{providers.NodeRunning, providers.NodeRunning, providers.NodeRunning, providers.NodePending}
	if got := states(describe(t, c, "big")); !equalStates(got, want) {
		t.Errorf("big group: %v, want %v", got, want)
	}
}

func TestNeverBoots(t *testing.T) {
	c, clk := newTestCloud(t)
	mustInject(t, c, Fault{Kind: FaultNeverBoots, Node: 1, Count: 1})
	place(t, c, "g", offCounted, 3)
	place(t, c, "next", offCounted, 3) // count 1: only the first placement
	clk.Advance(24 * time.Hour)
	g := describe(t, c, "g")
	want := []providers.NodeState{providers.NodeRunning, providers.NodePending, providers.NodeRunning}
	if got := states(g); !equalStates(got, want) {
		t.Errorf("states = %v, want %v", got, want)
	}
	if got := states(describe(t, c, "next")); !allState(got, providers.NodeRunning) {
		t.Errorf("second placement: %v", got)
	}
}

func TestDies(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		// states of node 1 at boot+20%, +1m and +2m
		want [3]providers.NodeState
	}{
		{"lost mid-start", 0, [3]providers.NodeState{providers.NodeTerminated, providers.NodeTerminated, providers.NodeTerminated}},
		{"after 90s", 90 * time.Second, [3]providers.NodeState{providers.NodeRunning, providers.NodeRunning, providers.NodeTerminated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, clk := newTestCloud(t)
			mustInject(t, c, Fault{Kind: FaultDies, Node: 1, After: Duration(tt.after)})
			place(t, c, "g", offCt, 2)
			n := c.groups["g"].nodes[1]
			clk.Advance(n.bootAt.Sub(clk.Now()) - time.Second)
			if got := describe(t, c, "g").Nodes[1].State; got != providers.NodePending {
				t.Fatalf("before boot: %s", got)
			}
			clk.Advance(time.Second)
			for i, step := range []time.Duration{0, time.Minute, time.Minute} {
				clk.Advance(step)
				g := describe(t, c, "g")
				if g.Nodes[1].State != tt.want[i] || (i == 2 && g.Nodes[0].State != providers.NodeRunning) {
					t.Errorf("step %d: states %v, want node 1 %s", i, states(g), tt.want[i])
				}
			}
			wantClass(t, c.RestartNode(ctx, "g", n.id), providers.ErrNotFound)
			if err := c.TerminateGroup(ctx, "g"); err != nil {
				t.Fatal(err)
			}
			if left, _ := stockOf(t, c, offCt); left != 8 {
				t.Errorf("stock after terminate = %d, want 8", left)
			}
		})
	}
}

func mustInject(t *testing.T, c *Cloud, faults ...Fault) {
	t.Helper()
	if err := c.Inject(faults...); err != nil {
		t.Fatal(err)
	}
}

func equalStates(a, b []providers.NodeState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
