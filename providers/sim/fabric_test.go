package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/providers"
)

// ringPercent is the verification's default pass mark
// (models.DefaultVerifyThresholds.RingPercent).
const ringPercent = 85

// X13, X4: the simulated fabric is not the checker's mirror. Every offer
// of the default catalog, at every machine count it sells (2 to 64, 8 where
// the location only says yes), is placed; what the simulated machines print
// for the verification ring, a pair and the after-ready NCCL check is read
// through the real parser and judged by the real rule. Healthy readings
// pass with margin; a slow fabric and one slow link fail.
func TestDefaultCatalogFabricReadingsPassAndFaultsFail(t *testing.T) {
	clk := newFakeClock()
	c := New(DefaultConfig(), WithClock(clk.Now), WithSeed(1))
	offers, err := c.ListOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	shapes := 0
	for _, o := range offers {
		c := New(DefaultConfig(), WithClock(clk.Now), WithSeed(1)) // a fresh cloud per offer: ended groups are not searched again
		maxNodes := 8
		switch {
		case o.NodesAvailable != nil:
			maxNodes = min(64, *o.NodesAvailable)
		case !o.Available:
			continue // not sellable
		}
		for n := 2; n <= maxNodes; n++ {
			shapes++
			spec := nodespec.Cluster{Interconnect: o.Interconnect, GPUsPerNode: o.GPUsPerNode, NICs: o.NICs, NICGbps: o.NICGbps,
				Nodes: nodespec.DefaultNodes(n)}
			what := fmt.Sprintf("%s × %d", o.OfferID, n)

			// Healthy: the ring and a pair pass with a margin of 10
			// points (or 20 % over the overlay's floor); the NCCL check
			// is not flagged.
			g := placeRunning(t, c, clk, o, n, "healthy")
			ring := readRing(t, c, g, spec, what)
			if !ring.Passed || (!spec.Overlay() && ring.Percent < ringPercent+10) || (spec.Overlay() && ring.BusBW < 1.2*ring.FloorBusBW) {
				t.Fatalf("%s healthy ring: %+v", what, ring)
			}
			if pair := readPair(t, c, g, spec, 0, 1, what); !pair.Passed || pair.BusBW < ring.FloorBusBW*1.1 {
				t.Fatalf("%s healthy pair: %+v", what, pair)
			}
			x4 := readNCCL(t, c, g, spec, what)
			if x4.Warning != "" {
				t.Fatalf("%s healthy NCCL check flagged: %+v", what, x4)
			}
			terminate(t, c, g)

			// The whole fabric slow: the ring and every pair fail; the NCCL
			// check (X4, flagged below half of the hierarchical bound)
			// reads it too.
			g = placeRunning(t, c, clk, o, n, "fabric", Fault{Kind: FaultFabricSlow, Count: 1})
			if ring := readRing(t, c, g, spec, what); ring.Passed {
				t.Fatalf("%s slow fabric: the ring passes: %+v", what, ring)
			}
			if pair := readPair(t, c, g, spec, 0, 1, what); pair.Passed {
				t.Fatalf("%s slow fabric: a pair passes: %+v", what, pair)
			}
			if slow := readNCCL(t, c, g, spec, what); slow.BusBW > 0.65*x4.BusBW || (spec.Overlay() && slow.Warning == "") {
				t.Fatalf("%s slow fabric: the NCCL check reads %+v, healthy %+v", what, slow, x4)
			}
			terminate(t, c, g)

			// One slow link (the last machine's): the ring and its pairs
			// fail, a pair without it passes.
			last := n - 1
			g = placeRunning(t, c, clk, o, n, "link", Fault{Kind: FaultSlowLink, Node: last, Count: 1})
			if ring := readRing(t, c, g, spec, what); ring.Passed {
				t.Fatalf("%s slow link: the ring passes: %+v", what, ring)
			}
			if pair := readPair(t, c, g, spec, last-1, last, what); pair.Passed {
				t.Fatalf("%s slow link: its pair passes: %+v", what, pair)
			}
			if n >= 3 {
				if pair := readPair(t, c, g, spec, 0, 1, what); !pair.Passed {
					t.Fatalf("%s slow link: a pair without it fails: %+v", what, pair)
				}
			}
			terminate(t, c, g)
		}
	}
	if shapes < 500 {
		t.Errorf("walked %d shapes; the default catalog sells more", shapes)
	}
}

// placeRunning places n machines of o with the faults scripted onto that
// placement and lets them boot.
func placeRunning(t *testing.T, c *Cloud, clk *fakeClock, o providers.Offer, n int, tag string, faults ...Fault) string {
	t.Helper()
	name := fmt.Sprintf("cl-%s-%d-%s", o.OfferID, n, tag)
	for i := range faults {
		faults[i].Group = name
	}
	if len(faults) > 0 {
		if err := c.Inject(faults...); err != nil {
			t.Fatal(err)
		}
	}
	req := providers.PlaceRequest{GroupName: name, OfferID: o.OfferID, Location: o.Location, Count: n}
	req.Agent.ServerURL = "http://clusterdeck.test"
	for i := range n {
		req.Agent.Tokens = append(req.Agent.Tokens, fmt.Sprintf("%s-token-%d", name, i))
	}
	if _, err := c.PlaceGroup(context.Background(), req); err != nil {
		t.Fatalf("PlaceGroup(%s): %v", name, err)
	}
	clk.Advance(time.Hour)
	return name
}

func terminate(t *testing.T, c *Cloud, g string) {
	t.Helper()
	if err := c.TerminateGroup(context.Background(), g); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, c *Cloud, g string, rank int, step, script string) string {
	t.Helper()
	ex, err := c.Executor(g, rank)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ex.Run(context.Background(), step, script)
	if err != nil {
		t.Fatalf("%s on %s/%d: %v\n%s", step, g, rank, err, out)
	}
	return out
}

func readRing(t *testing.T, c *Cloud, g string, spec nodespec.Cluster, what string) nodespec.RingReading {
	t.Helper()
	r, err := spec.ReadRing(run(t, c, g, 0, VerifyRingStep, spec.VerifyRingCommand()), ringPercent)
	if err != nil {
		t.Fatalf("%s ring: %v", what, err)
	}
	return r
}

// readPair judges the pair (a, b) by the ring's rule on a two-machine
// cluster of the same machines (nodespec.PairExpectedBusBW).
func readPair(t *testing.T, c *Cloud, g string, spec nodespec.Cluster, a, b int, what string) nodespec.RingReading {
	t.Helper()
	pair := spec
	pair.Nodes = nodespec.DefaultNodes(2)
	script := fmt.Sprintf("export PEER_RANK='%d'\n%s", b, spec.VerifyPairCommand("10.77.0.1", "10.77.0.2"))
	r, err := pair.ReadRing(run(t, c, g, a, VerifyPairStep, script), ringPercent)
	if err != nil {
		t.Fatalf("%s pair %d–%d: %v", what, a, b, err)
	}
	if r.ExpectedBusBW != spec.PairExpectedBusBW() {
		t.Fatalf("%s: a pair expects %v, PairExpectedBusBW %v", what, r.ExpectedBusBW, spec.PairExpectedBusBW())
	}
	return r
}

func readNCCL(t *testing.T, c *Cloud, g string, spec nodespec.Cluster, what string) nodespec.NCCLReading {
	t.Helper()
	out := run(t, c, g, 0, NCCLStep, spec.Commands().NCCLAllReduce.Text)
	r, err := spec.ReadAllReduce(out)
	if err != nil {
		t.Fatalf("%s NCCL check: %v", what, err)
	}
	if !strings.Contains(out, "# Avg bus bandwidth") {
		t.Fatalf("%s: not nccl-tests' output", what)
	}
	return r
}
