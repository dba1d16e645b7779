package nodespec

import (
	"fmt"
	"math"
)

// What a cluster's fabric should measure (X4, X13). A machine's fabric is
// its NICs (Cluster.NICs cards of Cluster.NICGbps each); a cluster without
// them (or on Ethernet) talks over an encrypted overlay (O1).
//
// The verification ring runs nccl-tests' all_reduce_perf with
// NCCL_ALGO=Ring. nccl-tests defines busbw = algbw·2(n−1)/n so that it
// "should reflect the speed of the hardware bottleneck" (nccl-tests
// doc/PERFORMANCE.md), and for a ring that bottleneck is the NICs at any
// node count: "If we use ring, the busbw is going to reflect exactly
// what's going through the NICs" (NVIDIA/nccl-tests issue 160). Healthy
// rings measure 46–48 GB/s per 400 Gbit/s NDR NIC, whose line rate is
// 50 GB/s (NVIDIA/nccl-tests issue 290), about 24 GB/s per 200 Gbit/s NIC
// (NVIDIA/nccl issue 812: 192 GB/s on a DGX A100's 8 × 200G;
// NVIDIA/nccl-tests issues 119, 252) and about 12 GB/s per 100 Gbit/s NIC
// (NVIDIA/nccl-tests issue 119): 92–96 % of the line rate. Only
// hierarchical algorithms (tree, NVLS tree, CollNet) exceed the NICs on two
// or more machines (NVIDIA/nccl-tests issue 196, NVIDIA/nccl issue 812);
// the default algorithm of the after-ready check (X4) may use them, so that
// check keeps their bound (ExpectedBusBW).

// RingEfficiency is the share of the NICs' line rate a healthy ring's bus
// bandwidth reaches: 0.94, the middle of 46–48 GB/s per 400G NIC (of 50).
// The ring passes at VerifyThresholds.RingPercent (85 %) of it, about 80 %
// of the line rate: the half-speed RoCE fabric of NVIDIA/nccl issue 2409
// (216–231 GB/s on 8 × 400G, 54–58 % of the line rate) fails.
const RingEfficiency = 0.94

// OverlayFloorGBps is the bus bandwidth, in GB/s, a ring across machines
// that meet on the encrypted Ethernet overlay must reach. The overlay
// carries "about 1 to 2 Gbit/s between machines" (the Runcrate seed; O1).
// A ring's bus bandwidth is what one machine's link carries (see above), so
// the low end, 1 Gbit/s, is 0.125 GB/s; "about" allows a fifth less:
// 0.8 Gbit/s = 0.1 GB/s. Below it the overlay delivers less than it
// promises. It is a floor, not a share of a peak: the overlay's rate is
// not the machines' to reach.
const OverlayFloorGBps = 0.1

// OverlayGbps is what the overlay advertises between machines, in Gbit/s
// (O1's upper bound).
const OverlayGbps = 2

// Overlay reports whether the machines meet on the encrypted Ethernet
// overlay: an Ethernet interconnect, or no fabric cards known.
func (c Cluster) Overlay() bool {
	return c.interconnect() == InterconnectEthernet || c.NICs <= 0 || c.NICGbps <= 0
}

// LineRateGBps is what one machine's fabric cards carry together, in GB/s:
// NICs × NICGbps / 8 (0 on the overlay).
func (c Cluster) LineRateGBps() float64 {
	if c.Overlay() {
		return 0
	}
	return float64(c.NICs) * float64(c.NICGbps) / 8
}

// AdvertisedGbps is what one machine's fabric advertises, in Gbit/s: its
// NICs' line rates together, or the overlay's 2 Gbit/s.
func (c Cluster) AdvertisedGbps() int {
	if c.Overlay() {
		return OverlayGbps
	}
	return c.NICs * c.NICGbps
}

// RingExpectedBusBW is the bus bandwidth, in GB/s, a healthy ring
// all-reduce (NCCL_ALGO=Ring) reaches across any number of this cluster's
// machines: the NICs' line rate × RingEfficiency, or OverlayFloorGBps on
// the overlay.
func (c Cluster) RingExpectedBusBW() float64 {
	if c.Overlay() {
		return OverlayFloorGBps
	}
	return c.LineRateGBps() * RingEfficiency
}

// PairExpectedBusBW is the bus bandwidth, in GB/s, a healthy pairwise ring
// all-reduce between two of this cluster's machines reaches: the same as
// the whole ring's (RingExpectedBusBW), since a ring's bus bandwidth is
// what goes through the NICs at any machine count.
func (c Cluster) PairExpectedBusBW() float64 { return c.RingExpectedBusBW() }

// ExpectedBusBW is the bound of the after-ready NCCL check (X4), which runs
// with NCCL's default algorithm: with B GB/s of NICs per machine
// (LineRateGBps), N machines and R ranks a network-bound all-reduce may
// reach busbw = B·N(R−1)/(R(N−1)), the bound of hierarchical algorithms
// (tree, NVLS tree), which exceeds the NICs on few machines. On the overlay
// it is OverlayFloorGBps.
func (c Cluster) ExpectedBusBW() float64 {
	if c.Overlay() {
		return OverlayFloorGBps
	}
	n, r := float64(len(c.Nodes)), float64(c.WorldSize())
	b := c.LineRateGBps()
	if n < 2 || r < 2 {
		return b
	}
	return b * n * (r - 1) / (r * (n - 1))
}

// RingReading is the verification ring's measurement judged by the rule
// above.
type RingReading struct {
	BusBW         float64 // GB/s at the largest message size, the better of out-of-place and in-place
	ExpectedBusBW float64 // RingExpectedBusBW
	LineRateGBps  float64 // one machine's NICs together; 0 on the overlay
	FloorBusBW    float64 // the least bus bandwidth that passes, in GB/s
	Percent       int     // BusBW as a share of ExpectedBusBW, rounded down
	Passed        bool
	Why           string // one sentence: what was measured against what
}

// ReadRing reads the verification ring's output (ParseAllReduce) and
// judges it: with NICs it passes at thresholdPercent of RingExpectedBusBW
// or more; on the overlay at OverlayFloorGBps or more. An error means the
// test did not measure the whole cluster (see ReadAllReduce).
func (c Cluster) ReadRing(output string, thresholdPercent int) (RingReading, error) {
	res, err := c.parseWhole(output)
	if err != nil {
		return RingReading{}, err
	}
	return c.JudgeRing(res.busBW(), thresholdPercent), nil
}

// JudgeRing judges a ring's bus bandwidth (GB/s) by the rule of ReadRing.
func (c Cluster) JudgeRing(busBW float64, thresholdPercent int) RingReading {
	r := RingReading{BusBW: busBW, ExpectedBusBW: c.RingExpectedBusBW(), LineRateGBps: c.LineRateGBps()}
	r.Percent = int(math.Floor(100 * r.BusBW / r.ExpectedBusBW))
	if c.Overlay() {
		r.FloorBusBW = OverlayFloorGBps
		r.Passed = r.BusBW >= r.FloorBusBW
		r.Why = fmt.Sprintf("%s GB/s bus bandwidth on the encrypted Ethernet overlay, whose floor is %s GB/s (about 1 to 2 Gbit/s between machines)",
			GBps(r.BusBW), GBps(r.FloorBusBW))
		return r
	}
	r.FloorBusBW = r.ExpectedBusBW * float64(thresholdPercent) / 100
	r.Passed = r.Percent >= thresholdPercent
	r.Why = fmt.Sprintf("%s GB/s bus bandwidth, %d %% of the %s GB/s a healthy ring reaches on %d × %d Gbit/s NICs (%d %% of their %s GB/s line rate; at least %d %% required)",
		GBps(r.BusBW), r.Percent, GBps(r.ExpectedBusBW), c.NICs, c.NICGbps, int(math.Floor(100*r.BusBW/r.LineRateGBps)), GBps(r.LineRateGBps), thresholdPercent)
	return r
}

// GBps formats a bandwidth in GB/s: one decimal from 10 GB/s, two from
// 1 GB/s, three below (the overlay's tenths of a GB/s).
func GBps(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// parseWhole parses an all-reduce that must have run on every GPU of the
// cluster.
func (c Cluster) parseWhole(output string) (AllReduceResult, error) {
	res, err := ParseAllReduce(output)
	if err != nil {
		return res, err
	}
	if len(res.Devices) > 0 && len(res.Devices) != c.WorldSize() {
		return res, fmt.Errorf("the test ran on %d GPUs, the cluster has %d", len(res.Devices), c.WorldSize())
	}
	return res, nil
}

// busBW is the bus bandwidth at the largest message size, the better of
// out-of-place and in-place.
func (r AllReduceResult) busBW() float64 {
	row := r.Largest()
	return max(row.OutOfPlace.BusBW, row.InPlace.BusBW)
}
