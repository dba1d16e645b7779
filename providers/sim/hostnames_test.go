package sim

import (
	"strings"
	"testing"
)

// U*: a machine of the default catalog is named with its location once
// ("us-east-1-h100.8x.ib.vm-h00"), though the offer's id starts with it.
func TestDefaultCatalogHostNamesTheLocationOnce(t *testing.T) {
	clk := newFakeClock()
	c := New(DefaultConfig(), WithClock(clk.Now), WithSeed(7))
	cfg := DefaultConfig()
	loc := cfg.Locations[0]
	off := loc.Offers[0]
	if !strings.HasPrefix(off.ID, loc.ID+".") {
		t.Fatalf("the default offer %q no longer starts with its location %q: this test checks nothing", off.ID, loc.ID)
	}
	g := place(t, c, "names", off.ID, 1)
	h := g.Nodes[0].Host
	if strings.Count(h, loc.ID) != 1 || h != loc.ID+"-"+strings.TrimPrefix(off.ID, loc.ID+".")+"-h00" {
		t.Errorf("host %q names %q %d times", h, loc.ID, strings.Count(h, loc.ID))
	}
}
