package nodespec

import (
	"fmt"
	"strings"
	"testing"
)

const testRingPercent = 85 // models.DefaultVerifyThresholds.RingPercent

// ibOrRoCE: the source does not say which; the rule does not care.
const ibOrRoCE = InterconnectInfiniBand

// X13: the verification ring is judged by what the NICs carry, at any
// machine count. Figures published for real fabrics (each with its
// source): healthy ones pass with margin, degraded ones fail and say why.
func TestJudgeRingPublishedFigures(t *testing.T) {
	tests := []struct {
		source     string
		nics, gbps int
		busbw      float64
		pass       bool
	}{
		// NVIDIA/nccl-tests issue 290: "For NDR @ 400Gbps you should see 46-48GB/s per NIC".
		{"nccl-tests#290 low end, 8 × 400G", 8, 400, 8 * 46, true},
		{"nccl-tests#290 high end, 8 × 400G", 8, 400, 8 * 48, true},
		// NVIDIA/nccl issue 812: "On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards and we measure 192GB/s".
		{"nccl#812 DGX A100, 8 × 200G", 8, 200, 192, true},
		// NVIDIA/nccl issue 2409: 2 × 8 H100, 8 × 400G RoCEv2, 216.5 GB/s at 1 GiB and 231 GB/s at 8 GiB.
		{"nccl#2409 half-speed RoCE at 1 GiB", 8, 400, 216.5, false},
		{"nccl#2409 half-speed RoCE at 8 GiB", 8, 400, 231, false},
		// NVIDIA/nccl issue 812: "you're only getting 60GB/s from Ring - that seems a little low for 8x100Gbit/s NICs".
		{"nccl#812 ring low on 8 × 100G", 8, 100, 60, false},
		// NVIDIA/nccl issue 412: one HDR 200G card, 15.3 GB/s; "the peak for 200G HDR is 24GB/s".
		{"nccl#412 one 200G card at 15.3", 1, 200, 15.3, false},
	}
	for _, tt := range tests {
		for _, machines := range []int{2, 8, 64} {
			c := cards(machines, 8, InterconnectInfiniBand, tt.nics, tt.gbps)
			r := c.JudgeRing(tt.busbw, testRingPercent)
			if r.Passed != tt.pass {
				t.Errorf("%s on %d machines: passed %v, want %v (%s)", tt.source, machines, r.Passed, tt.pass, r.Why)
			}
			if tt.pass && r.Percent < testRingPercent+10 {
				t.Errorf("%s: %d %% passes without a margin of 10 points over %d %%", tt.source, r.Percent, testRingPercent)
			}
			if !tt.pass && (!strings.Contains(r.Why, "at least 85 % required") || !strings.Contains(r.Why, "NICs")) {
				t.Errorf("%s: the failure does not say why: %q", tt.source, r.Why)
			}
			if want := float64(tt.nics*tt.gbps) / 8; r.LineRateGBps != want {
				t.Errorf("%s: line rate %v, want %v", tt.source, r.LineRateGBps, want)
			}
		}
	}
}

// The expected ring bus bandwidth is NICs × line rate × 0.94, whatever the
// machine count, and the pair's is the same.
func TestRingExpectedIndependentOfMachines(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8, 64} {
		c := cards(n, 8, InterconnectRoCE, 8, 400)
		if got := c.RingExpectedBusBW(); got != 400*RingEfficiency {
			t.Errorf("%d machines: ring expects %v GB/s, want %v", n, got, 400*RingEfficiency)
		}
		if c.PairExpectedBusBW() != c.RingExpectedBusBW() {
			t.Errorf("%d machines: a pair expects %v, the ring %v", n, c.PairExpectedBusBW(), c.RingExpectedBusBW())
		}
	}
}

// The encrypted overlay (O1: about 1 to 2 Gbit/s between machines) is held
// to a floor of 0.1 GB/s, not to a share of a peak.
func TestJudgeRingOverlayFloor(t *testing.T) {
	c := shape(2, 1, InterconnectEthernet)
	for _, tt := range []struct {
		gbit float64
		pass bool
	}{{2, true}, {1, true}, {0.8, true}, {0.5, false}} {
		r := c.JudgeRing(tt.gbit/8, testRingPercent)
		if r.Passed != tt.pass || r.FloorBusBW != OverlayFloorGBps || r.LineRateGBps != 0 {
			t.Errorf("%v Gbit/s on the overlay: %+v, want passed %v", tt.gbit, r, tt.pass)
		}
		if !strings.Contains(r.Why, "floor is 0.100 GB/s") {
			t.Errorf("%v Gbit/s: %q does not name the floor", tt.gbit, r.Why)
		}
	}
	// Cards on Ethernet do not lift the overlay's judgment to a NIC's.
	c.NICs, c.NICGbps = 1, 100
	if r := c.JudgeRing(0.2, testRingPercent); !r.Passed || r.LineRateGBps != 0 {
		t.Errorf("ethernet with cards: %+v", r)
	}
}

// Real outputs read through the parser and judged as the ring is.
func TestReadRingRealOutputs(t *testing.T) {
	tests := []struct {
		file   string
		c      Cluster
		busbw  float64
		pass   bool
		reason string
	}{
		// CSCS Alps, 2 × 1 GH200, one 200 Gbit/s Slingshot NIC each: with
		// one rank per machine every algorithm is a ring through the NIC.
		{"nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt", cards(2, 1, InterconnectInfiniBand, 1, 200), 22.88, true, ""},
		// NVIDIA/nccl-tests issue 252, 2 × 4 H100 with NCCL_ALGO=RING; the
		// maintainer: "that looks great with ~24GB/s per NIC", four
		// 200 Gbit/s NICs per machine.
		{"nccl_all_reduce_perf_2node_8x_h100_ring_excerpt.txt", cards(2, 4, ibOrRoCE, 4, 200), 95.10, true, "101 % of the 94.0 GB/s"},
		// The same healthy ring on cards it does not have (8 × 400G)
		// fails and says why.
		{"nccl_all_reduce_perf_2node_8x_h100_ring_excerpt.txt", cards(2, 4, ibOrRoCE, 8, 400), 95.10, false, "25 % of the 376.0 GB/s a healthy ring reaches on 8 × 400 Gbit/s NICs"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%dx%dG", tt.file, tt.c.NICs, tt.c.NICGbps), func(t *testing.T) {
			r, err := tt.c.ReadRing(readFixture(t, tt.file), testRingPercent)
			if err != nil {
				t.Fatal(err)
			}
			if r.BusBW < tt.busbw-0.01 || r.BusBW > tt.busbw+0.01 || r.Passed != tt.pass || !strings.Contains(r.Why, tt.reason) {
				t.Errorf("got %+v, want %.2f GB/s passed %v", r, tt.busbw, tt.pass)
			}
		})
	}
}
