// Package providerstest is the contract every providers.Provider passes
// alike (OP1): the simulated cloud and each real adapter against its fake
// run the same cases, so the jobs can rely on one behaviour.
package providerstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Env is one fresh provider and what the contract needs to drive it.
type Env struct {
	Provider providers.Provider
	// OfferID and Location name an offer with at least Free (≥ 2) machines
	// free in Location.
	OfferID, Location string
	Free              int
	// Advance moves the provider's clock (machines boot with it).
	Advance func(time.Duration)
	// Boot is long enough for a placed machine to be running.
	Boot time.Duration
	// FailMidway scripts the next placement to fail after part of the group
	// was placed (a provider that places a group in one call may refuse it
	// as a whole).
	FailMidway func(t *testing.T)
	// Stops says whether the upstream can stop a machine and start it
	// again; one that cannot refuses StopNode with ErrUnsupported.
	Stops bool
	// Volumes says whether the provider attaches a persistent volume to a
	// group's head (PlaceRequest.Volume, V4); one that cannot refuses a
	// placement with one with ErrUnsupported, placing nothing.
	Volumes bool
	// PlacesNodes says whether the upstream can add one machine to a placed
	// group (L10); one that cannot refuses PlaceNode with ErrUnsupported.
	PlacesNodes bool
	// GroupBound says the machines of a group placed with one upstream
	// call are released only together (RunPod's Instant Clusters): then
	// ReleaseNode of one of them is ErrUnsupported and leaves it running,
	// and so is RestartNode (the upstream manages its members whole).
	GroupBound bool
	// RateLimited scripts the upstream's next answer to be "too many
	// requests, retry after d"; Waited is how long the provider has slept
	// so far (on the test's clock). Both nil for a provider whose upstream
	// has no rate limit (the simulated cloud).
	RateLimited func(t *testing.T, d time.Duration)
	Waited      func() time.Duration
}

// Request is a placement of n machines of the env's offer.
func (e Env) Request(group string, n int) providers.PlaceRequest {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("agt_%s_%d", group, i)
	}
	return providers.PlaceRequest{GroupName: group, OfferID: e.OfferID, Location: e.Location, Count: n,
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcontract contract@test"},
		Agent:   providers.AgentBootstrap{ServerURL: "https://deck.example.com", Token: "cdb_" + group + "_contract", Tokens: tokens}}
}

// Run runs every case of the contract, each on a fresh Env.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	ctx := context.Background()
	t.Run("capacity refusal leaves nothing", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.Provider.PlaceGroup(ctx, e.Request("cl_big", e.Free+1))
		if !errors.Is(err, providers.ErrNoCapacity) {
			t.Fatalf("%d machines of %d free: want ErrNoCapacity, got %v", e.Free+1, e.Free, err)
		}
		gone(t, e, "cl_big")
		if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_fits", e.Free)); err != nil {
			t.Fatalf("the refusal must hold no machines: placing all %d free: %v", e.Free, err)
		}
	})
	t.Run("validation refusal", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request("cl_bad", 1)
		req.OfferID = "no-such-offer"
		if _, err := e.Provider.PlaceGroup(ctx, req); !errors.Is(err, providers.ErrValidation) {
			t.Fatalf("unknown offer: want ErrValidation, got %v", err)
		}
		req = e.Request("cl_bad", 1)
		req.Count = 0
		if _, err := e.Provider.PlaceGroup(ctx, req); !errors.Is(err, providers.ErrValidation) {
			t.Fatalf("no machines: want ErrValidation, got %v", err)
		}
		gone(t, e, "cl_bad")
	})
	t.Run("price ceiling refusal leaves nothing", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request("cl_dear", 1)
		req.MaxMachineHourUSD = 1 // one micro-dollar per machine-hour: below any price
		_, err := e.Provider.PlaceGroup(ctx, req)
		var pe *providers.Error
		if !errors.Is(err, providers.ErrPriceAboveCeiling) || !errors.Is(err, providers.ErrValidation) || !errors.As(err, &pe) ||
			pe.Code != providers.CodePriceAboveCeiling || !strings.Contains(pe.Message, "above the ceiling of 1 ") {
			t.Fatalf("price above the ceiling: want the typed ErrPriceAboveCeiling (an ErrValidation), got %v", err)
		}
		if errors.Is(err, providers.ErrNoCapacity) || errors.Is(providers.AboveCeiling("x", "op", "l", "o", 2, 1), providers.ErrNoCapacity) {
			t.Fatal("a price refusal is not a capacity refusal")
		}
		gone(t, e, "cl_dear")
		req.MaxMachineHourUSD = 1_000_000 * 1_000_000 // a million dollars: above any price
		if _, err := e.Provider.PlaceGroup(ctx, req); err != nil {
			t.Fatalf("price below the ceiling: %v", err)
		}
	})
	t.Run("partial placement rolled back", func(t *testing.T) {
		e := newEnv(t)
		e.FailMidway(t)
		_, err := e.Provider.PlaceGroup(ctx, e.Request("cl_half", 2))
		if !errors.Is(err, providers.ErrNoCapacity) {
			t.Fatalf("want ErrNoCapacity, got %v", err)
		}
		gone(t, e, "cl_half")
	})
	t.Run("placement is idempotent on the group name", func(t *testing.T) {
		e := newEnv(t)
		a, err := e.Provider.PlaceGroup(ctx, e.Request("cl_twice", 2))
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Provider.PlaceGroup(ctx, e.Request("cl_twice", 2))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Nodes) != 2 || len(b.Nodes) != 2 || a.Nodes[0].ID != b.Nodes[0].ID || a.Nodes[1].ID != b.Nodes[1].ID {
			t.Fatalf("a retry placed other machines: %+v then %+v", a.Nodes, b.Nodes)
		}
		if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_rest", e.Free-2)); err != nil {
			t.Fatalf("the retry took more machines: %v", err)
		}
	})
	t.Run("terminate of a missing group is success", func(t *testing.T) {
		e := newEnv(t)
		if err := e.Provider.TerminateGroup(ctx, "cl_never"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
				t.Fatalf("terminate %d: %v", i+1, err)
			}
		}
	})
	t.Run("describe after terminate", func(t *testing.T) {
		e := newEnv(t)
		for _, g := range []string{"cl_1", "cl_2"} {
			if _, err := e.Provider.PlaceGroup(ctx, e.Request(g, 1)); err != nil {
				t.Fatal(err)
			}
		}
		e.Advance(e.Boot)
		gs, err := e.Provider.DescribeGroups(ctx, []string{"cl_1", "cl_2", "cl_never"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := gs["cl_never"]; ok || len(gs) != 2 {
			t.Fatalf("groups %v", gs)
		}
		for name, g := range gs {
			if len(g.Nodes) != 1 || g.Nodes[0].State != providers.NodeRunning || g.Name != name {
				t.Fatalf("%s booted: %+v", name, g)
			}
		}
		if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
			t.Fatal(err)
		}
		gone(t, e, "cl_1")
		if g, err := e.Provider.DescribeGroup(ctx, "cl_2"); err != nil || g.Nodes[0].State != providers.NodeRunning {
			t.Fatalf("the other group: %+v %v", g, err)
		}
	})
	t.Run("restart of a running machine", func(t *testing.T) {
		e := newEnv(t)
		g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
		if err != nil {
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		err = e.Provider.RestartNode(ctx, "cl_1", g.Nodes[1].ID)
		switch {
		case e.GroupBound && !errors.Is(err, providers.ErrUnsupported):
			t.Fatalf("a member of a group the upstream manages whole: want ErrUnsupported, got %v", err)
		case !e.GroupBound && err != nil:
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		g, err = e.Provider.DescribeGroup(ctx, "cl_1")
		if err != nil || g.Nodes[1].State != providers.NodeRunning || g.Nodes[0].State != providers.NodeRunning {
			t.Fatalf("after the restart: %+v %v", g, err)
		}
		if err := e.Provider.RestartNode(ctx, "cl_1", "no-such-machine"); !errors.Is(err, providers.ErrNotFound) {
			t.Fatalf("unknown machine: want ErrNotFound, got %v", err)
		}
	})
	t.Run("rate limit honoured", func(t *testing.T) {
		e := newEnv(t)
		if e.RateLimited == nil {
			return // no upstream rate limit to honour
		}
		if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
			t.Fatal(err)
		}
		before := e.Waited()
		e.RateLimited(t, 45*time.Second)
		gs, err := e.Provider.DescribeGroups(ctx, []string{"cl_1"})
		if err != nil || len(gs["cl_1"].Nodes) != 1 {
			t.Fatalf("a rate-limited describe is retried after the wait: %v %v", gs, err)
		}
		if w := e.Waited() - before; w < 45*time.Second {
			t.Fatalf("waited %v before retrying; the upstream asked for 45s", w)
		}
	})
	t.Run("placement with a volume", func(t *testing.T) {
		e := newEnv(t)
		req := e.Request("cl_vol", 2)
		req.Volume = &providers.Volume{ID: "vol_contract", Name: "ckpt", SizeGB: 100}
		g, err := e.Provider.PlaceGroup(ctx, req)
		if !e.Volumes {
			if !errors.Is(err, providers.ErrUnsupported) {
				t.Fatalf("a provider that attaches no volume refuses: want ErrUnsupported, got %v", err)
			}
			gone(t, e, "cl_vol")
			return
		}
		if err != nil || len(g.Nodes) != 2 {
			t.Fatalf("placement with a volume: %+v %v", g, err)
		}
	})
	t.Run("stop, then restart starts the machine", func(t *testing.T) {
		e := newEnv(t)
		g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1))
		if err != nil {
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		err = e.Provider.StopNode(ctx, "cl_1", g.Nodes[0].ID)
		if !e.Stops {
			if !errors.Is(err, providers.ErrUnsupported) {
				t.Fatalf("a provider that cannot stop refuses: want ErrUnsupported, got %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		if g, err = e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || g.Nodes[0].State != providers.NodeStopped {
			t.Fatalf("after stop: %+v %v", g, err)
		}
		if err := e.Provider.RestartNode(ctx, "cl_1", g.Nodes[0].ID); err != nil {
			t.Fatalf("restart of a stopped machine: %v", err)
		}
		e.Advance(e.Boot)
		if g, err = e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || g.Nodes[0].State != providers.NodeRunning {
			t.Fatalf("after the restart: %+v %v", g, err)
		}
	})
	t.Run("release one machine leaves the others", func(t *testing.T) {
		e := newEnv(t)
		g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
		if err != nil {
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		if e.GroupBound {
			if err := e.Provider.ReleaseNode(ctx, "cl_1", g.Nodes[1].ID); !errors.Is(err, providers.ErrUnsupported) {
				t.Fatalf("a machine of a group placed as one is released only with it: want ErrUnsupported, got %v", err)
			}
			if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 2 || g.Nodes[1].State != providers.NodeRunning {
				t.Fatalf("a refused release leaves the machine: %+v %v", g, err)
			}
			return
		}
		for range 2 { // a second release of the same machine is success
			if err := e.Provider.ReleaseNode(ctx, "cl_1", g.Nodes[1].ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Provider.ReleaseNode(ctx, "cl_1", "no-such-machine"); err != nil {
			t.Fatalf("unknown machine: %v", err)
		}
		if err := e.Provider.ReleaseNode(ctx, "cl_never", g.Nodes[0].ID); err != nil {
			t.Fatalf("unknown group: %v", err)
		}
		e.Advance(e.Boot)
		g, err = e.Provider.DescribeGroup(ctx, "cl_1")
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, n := range g.Nodes {
			if n.State == providers.NodeRunning {
				running++
				if n.Index != 0 {
					t.Errorf("machine %d still runs after its release: %+v", n.Index, g.Nodes)
				}
			}
		}
		if running != 1 {
			t.Errorf("machine 0 must keep running alone: %+v", g.Nodes)
		}
	})
	t.Run("place one more machine", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
			t.Fatal(err)
		}
		e.Advance(e.Boot)
		req := e.Request("cl_1", 2)
		req.Agent.Tokens = req.Agent.Tokens[1:]
		n, err := e.Provider.PlaceNode(ctx, "cl_1", 1, req)
		if !e.PlacesNodes {
			if !errors.Is(err, providers.ErrUnsupported) {
				t.Fatalf("a provider that cannot add a machine refuses: want ErrUnsupported, got %v", err)
			}
			if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 1 {
				t.Fatalf("a refused placement adds nothing: %+v %v", g, err)
			}
			return
		}
		if err != nil || n.Index != 1 {
			t.Fatalf("place node 1: %+v %v", n, err)
		}
		e.Advance(e.Boot)
		if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 2 || g.Nodes[1].State != providers.NodeRunning {
			t.Fatalf("after placing node 1: %+v %v", g, err)
		}
	})
}

// gone requires that the group holds no live machine: unknown upstream, or
// every machine terminated.
func gone(t *testing.T, e Env, group string) {
	t.Helper()
	g, err := e.Provider.DescribeGroup(context.Background(), group)
	if errors.Is(err, providers.ErrNotFound) {
		return
	}
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	for _, n := range g.Nodes {
		if n.State != providers.NodeTerminated {
			t.Fatalf("group %s left machine %s %s behind", group, n.ID, n.State)
		}
	}
}
