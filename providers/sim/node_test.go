package sim

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
)

// nodeRequest is a one-machine request for group's offer with one token.
func nodeRequest(c *Cloud, group, offer, token string) providers.PlaceRequest {
	req := request(c, group, offer, 1)
	req.Agent.Tokens = []string{token}
	return req
}

// Adding a machine (L10) takes one of counted stock at the next index with
// the next address, boots on its own schedule, and is idempotent on its
// token; releasing it gives the stock back and leaves the group as it was.
func TestPlaceNodeAddsAndReleasesOneMachine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := newFakeClock()
		c := sharedCloud(db, clk, "a")
		place(t, c, "cl_w", offBM, 2) // 5 counted
		clk.Advance(30 * time.Minute)

		n, err := c.PlaceNode(ctx, "cl_w", 2, nodeRequest(c, "cl_w", offBM, "tok-2"))
		if err != nil {
			t.Fatal(err)
		}
		if n.Index != 2 || n.PrivateIP != "10.77.0.3" || n.State != providers.NodePending {
			t.Fatalf("added node = %+v, want index 2, 10.77.0.3, pending", n)
		}
		if got, _ := stockOf(t, c, offBM); got != 2 {
			t.Fatalf("stock = %d, want 2 (5 − 2 − 1)", got)
		}
		again, err := c.PlaceNode(ctx, "cl_w", 2, nodeRequest(c, "cl_w", offBM, "tok-2"))
		if err != nil || again.ID != n.ID {
			t.Fatalf("retry = %+v, %v; want the same machine %s", again, err, n.ID)
		}
		if got, _ := stockOf(t, c, offBM); got != 2 {
			t.Fatalf("stock after retry = %d, want 2 (a retry takes nothing)", got)
		}
		// A second instance sees it (the state is the database's).
		other := sharedCloud(modelstest.SecondInstance(t, db), clk, "b")
		g := describe(t, other, "cl_w")
		if len(g.Nodes) != 3 || g.Nodes[2].ID != n.ID {
			t.Fatalf("group on another instance = %+v, want 3 machines with %s last", g.Nodes, n.ID)
		}
		if m := c.machine(c.groups["cl_w"].nodes[2]); m.Token != "tok-2" || m.Name != "node-2" {
			t.Fatalf("the new machine's agent gets token %q as %s, want tok-2 as node-2", m.Token, m.Name)
		}

		if err := other.ReleaseNode(ctx, "cl_w", n.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.ReleaseNode(ctx, "cl_w", n.ID); err != nil { // twice: once
			t.Fatal(err)
		}
		if got := describe(t, c, "cl_w"); len(got.Nodes) != 2 || got.Nodes[0].State != providers.NodeRunning {
			t.Fatalf("after release: %+v, want the 2 original machines, running", got.Nodes)
		}
		if got, _ := stockOf(t, c, offBM); got != 3 {
			t.Fatalf("stock after release = %d, want 3", got)
		}
		if err := c.TerminateGroup(ctx, "cl_w"); err != nil {
			t.Fatal(err)
		}
		if got, _ := stockOf(t, c, offBM); got != 5 {
			t.Fatalf("stock after terminate = %d, want 5 (the released machine is not returned twice)", got)
		}
	})
}

// Counted stock is never oversold by single placements, and a refused one
// takes nothing; a request that is not the group's is refused.
func TestPlaceNodeRefusals(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	place(t, c, "cl_f", offBM, 5) // every machine of the offer
	_, err := c.PlaceNode(ctx, "cl_f", 5, nodeRequest(c, "cl_f", offBM, "t5"))
	wantClass(t, err, providers.ErrNoCapacity)
	if got := describe(t, c, "cl_f"); len(got.Nodes) != 5 {
		t.Fatalf("machines after a refused add = %d, want 5", len(got.Nodes))
	}
	_, err = c.PlaceNode(ctx, "cl_f", 7, nodeRequest(c, "cl_f", offBM, "t7"))
	wantClass(t, err, providers.ErrValidation)
	_, err = c.PlaceNode(ctx, "cl_f", 5, nodeRequest(c, "cl_f", offCounted, "t5"))
	wantClass(t, err, providers.ErrValidation)
	_, err = c.PlaceNode(ctx, "cl_none", 0, nodeRequest(c, "cl_none", offBM, "t0"))
	wantClass(t, err, providers.ErrNotFound)
	// A running machine is never replaced.
	_, err = c.PlaceNode(ctx, "cl_f", 1, nodeRequest(c, "cl_f", offBM, "other"))
	wantClass(t, err, providers.ErrValidation)

	place(t, c, "cl_g", offCounted, 2)
	if err := c.Inject(Fault{Kind: FaultRefuseCapacity, Group: "cl_g", Count: 1}); err != nil {
		t.Fatal(err)
	}
	before, _ := stockOf(t, c, offCounted)
	_, err = c.PlaceNode(ctx, "cl_g", 2, nodeRequest(c, "cl_g", offCounted, "t2"))
	wantClass(t, err, providers.ErrNoCapacity)
	if after, _ := stockOf(t, c, offCounted); after != before {
		t.Fatalf("stock %d → %d after a refused add, want unchanged", before, after)
	}
}

// A fault scripted for an index the group does not have yet hits the
// machine added there, and only it (the sim fault that makes one join fail).
func TestPlaceNodeTakesItsFaults(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	if err := c.Inject(Fault{Kind: FaultNeverBoots, Group: "cl_n", Node: 2, Count: 1}); err != nil {
		t.Fatal(err)
	}
	place(t, c, "cl_n", offCounted, 2)
	if len(c.Faults()) != 1 {
		t.Fatalf("faults after placing 2 machines = %v, want the node-2 fault still waiting", c.Faults())
	}
	if _, err := c.PlaceNode(ctx, "cl_n", 2, nodeRequest(c, "cl_n", offCounted, "t2")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if got := states(describe(t, c, "cl_n")); got[0] != providers.NodeRunning || got[1] != providers.NodeRunning || got[2] != providers.NodePending {
		t.Fatalf("states = %v, want [running running pending]", got)
	}
	if len(c.Faults()) != 0 {
		t.Fatalf("faults left = %v, want none", c.Faults())
	}
}

// Replacing a machine that cannot come back (X5) puts a new machine at the
// same index, name and address, with its own id and token; the faulty host
// does not go back to stock, and the other machines are untouched.
func TestPlaceNodeReplacesAnUnrecoverableMachine(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	g := place(t, c, "cl_r", offBM, 3)
	clk.Advance(30 * time.Minute)
	if err := c.Inject(Fault{Kind: FaultUnrecoverable, Group: "cl_r", Node: 1}); err != nil {
		t.Fatal(err)
	}
	wantClass(t, c.RestartNode(ctx, "cl_r", g.Nodes[1].ID), providers.ErrUnrecoverable)
	stock, _ := stockOf(t, c, offBM)

	n, err := c.PlaceNode(ctx, "cl_r", 1, nodeRequest(c, "cl_r", offBM, "new-1"))
	if err != nil {
		t.Fatal(err)
	}
	if n.ID == g.Nodes[1].ID || n.Index != 1 || n.PrivateIP != g.Nodes[1].PrivateIP {
		t.Fatalf("replacement = %+v, want a new id at index 1 with %s", n, g.Nodes[1].PrivateIP)
	}
	if got, _ := stockOf(t, c, offBM); got != stock-1 {
		t.Fatalf("stock = %d, want %d (one taken, the faulty host not returned)", got, stock-1)
	}
	clk.Advance(30 * time.Minute)
	after := describe(t, c, "cl_r")
	if len(after.Nodes) != 3 || after.Nodes[0].ID != g.Nodes[0].ID || after.Nodes[2].ID != g.Nodes[2].ID {
		t.Fatalf("group after replace = %+v, want the other machines unchanged", after.Nodes)
	}
	if got := states(after); got[1] != providers.NodeRunning {
		t.Fatalf("states = %v, want the replacement running", got)
	}
	if m := c.machine(c.groups["cl_r"].nodes[1]); m.Token != "new-1" || m.Name != "node-1" {
		t.Fatalf("replacement's agent = %s with %q, want node-1 with new-1", m.Name, m.Token)
	}
	if err := c.RestartNode(ctx, "cl_r", g.Nodes[1].ID); err == nil {
		t.Fatal("the replaced machine still restarts, want it gone")
	}
}
