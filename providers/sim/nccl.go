package sim

import (
	"fmt"
	"strings"
)

// NCCLStep is the step the agent runs for the NCCL check (X4): nccl-tests'
// all_reduce_perf across every GPU of the group, started on node-0.
const NCCLStep = "nccl:nccl-tests"

// What the simulated fabric measures. Every healthy reading is drawn once
// per group (a seeded draw, so a cluster reads the same each time) within
// the range published for real fabrics; faults take their size from a
// published degraded case. Nothing here uses the checker's rule
// (nodespec's expected bandwidths): the checker is tested against these
// ranges and against real outputs (models/nodespec/testdata).
const (
	// A healthy ring's bus bandwidth per NIC, as a share of its line rate:
	// 46–48 GB/s per 400 Gbit/s NIC (50 GB/s; NVIDIA/nccl-tests issue 290),
	// about 24 GB/s per 200 Gbit/s NIC (NVIDIA/nccl issue 812: 192 GB/s on
	// 8 × 200G; NVIDIA/nccl-tests issue 252: 95 GB/s on 4 × 200G) and about
	// 12 per 100 Gbit/s NIC (NVIDIA/nccl-tests issue 119): 0.92–0.96.
	ringShareLo, ringShareHi = 46.0 / 50, 48.0 / 50
	// NCCL's default algorithm on two machines of several GPUs is a tree
	// (NVLS tree) that puts more traffic on NVLink and exceeds the NICs
	// (NVIDIA/nccl-tests issue 196, NVIDIA/nccl issue 812): 430 GB/s on
	// 8 × 400G RoCE with NVLS (NVIDIA/nccl issue 1221), 222.88 GB/s on
	// OCI's 16 × 100G (the A100 sample in models/nodespec/testdata):
	// 1.075–1.115 × the line rate. Beyond two machines (or with one GPU
	// per machine) it is the ring's.
	treeShareLo, treeShareHi = 430.0 / 400, 222.88 / 200
	// The encrypted Ethernet overlay: "about 1 to 2 Gbit/s between
	// machines" (the Runcrate seed; O1). A ring's bus bandwidth is what one
	// machine's link carries.
	overlayGbpsLo, overlayGbpsHi = 1.0, 2.0
	// A slow fabric (nccl_slow, fabric_slow) or one slow link (slow_link)
	// runs at the share of its line rate of the half-speed 8 × 400G RoCE
	// fabric of NVIDIA/nccl issue 2409: 216.5–231 GB/s of 400, 0.54–0.58
	// (of the overlay's 1 Gbit/s low end on Ethernet).
	slowShareLo, slowShareHi = 216.5 / 400, 231.0 / 400
)

// fabricLatencyUS is the time of a tiny all-reduce per interconnect.
var fabricLatencyUS = map[string]float64{"infiniband": 24, "roce": 38, "ethernet": 160}

// overlay reports whether the offer's machines meet on the encrypted
// Ethernet overlay (no fabric cards of their own).
func (o OfferConfig) overlay() bool {
	return o.Interconnect == "ethernet" || o.NICs <= 0 || o.NICGbps <= 0
}

// lineGBps is what one machine's link carries at full rate, in GB/s: its
// NICs' line rates, or the overlay's low end.
func (o OfferConfig) lineGBps() float64 {
	if o.overlay() {
		return overlayGbpsLo / 8
	}
	return float64(o.NICs*o.NICGbps) / 8
}

// draw is a seeded number in [lo, hi] for this group and purpose.
func (c *Cloud) draw(g *group, what string, lo, hi float64) float64 {
	return lo + c.fraction("fabric", what, g.name, g.gen)*(hi-lo)
}

// ringBusBW is the bus bandwidth, in GB/s, of a ring all-reduce
// (NCCL_ALGO=Ring) across members of g: the group's healthy draw, or the
// slow share when the fabric is slowed or a member's link is slow (a ring
// runs at its slowest link). Callers hold c.mu.
func (c *Cloud) ringBusBW(g *group, members []*node) float64 {
	cfg := g.offer.cfg
	bw := c.draw(g, "ring", ringShareLo, ringShareHi) * cfg.lineGBps()
	if cfg.overlay() {
		bw = c.draw(g, "overlay", overlayGbpsLo, overlayGbpsHi) / 8
	}
	if c.slowed(g, members) {
		bw = min(bw, c.draw(g, "slow", slowShareLo, slowShareHi)*cfg.lineGBps())
	}
	return bw
}

// slowed reports whether an all-reduce across members runs slow: the
// group's fabric is slowed, or one of them has a slow link.
func (c *Cloud) slowed(g *group, members []*node) bool {
	for _, n := range g.nodes {
		if n.ncclSlow {
			return true
		}
	}
	for _, n := range members {
		if n.slowLink {
			return true
		}
	}
	return false
}

// defaultBusBW is the bus bandwidth, in GB/s, of the NCCL check's
// all-reduce with NCCL's default algorithm (X4) across every machine of g:
// a tree above the NICs on two machines of several GPUs, else the ring's.
// Callers hold c.mu.
func (c *Cloud) defaultBusBW(g *group) float64 {
	cfg := g.offer.cfg
	if len(g.nodes) == 2 && cfg.GPUsPerNode > 1 && !cfg.overlay() && !c.slowed(g, g.nodes) {
		return c.draw(g, "tree", treeShareLo, treeShareHi) * cfg.lineGBps()
	}
	return c.ringBusBW(g, g.nodes)
}

// allReducePerf prints what all_reduce_perf prints on this group for the
// NCCL check (X4). Callers hold c.mu.
func (e *executor) allReducePerf() string {
	g := e.n.g
	return allReduceOn(g, g.nodes, e.c.defaultBusBW(g))
}

// allReduceOn prints all_reduce_perf across the given machines of g in
// nccl-tests' format (see the samples in models/nodespec/testdata): one
// rank per GPU, messages doubling from 8 B to 8 GB (128 MB on the overlay),
// bus bandwidth rising to busBW (GB/s). Callers hold c.mu.
func allReduceOn(g *group, members []*node, busBW float64) string {
	cfg := g.offer.cfg
	latency, ok := fabricLatencyUS[cfg.Interconnect]
	if !ok {
		latency = fabricLatencyUS["ethernet"]
	}
	nodes, gpus := len(members), cfg.GPUsPerNode
	ranks := max(nodes*gpus, 2)
	peakAlg := busBW * float64(ranks) / (2 * float64(ranks-1))
	maxBytes := int64(8) << 30
	if cfg.overlay() {
		maxBytes = 128 << 20
	}
	model := gpuModels[cfg.Accelerator].name

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# nThread 1 nGpus 1 minBytes 8 maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0", maxBytes)
	w("#")
	w("# Using devices")
	for r := range nodes * gpus {
		n := members[r/gpus]
		w("#  Rank %2d Group  0 Pid %6d on %s device %2d [0000:%02x:00] %s", r, 4100+r, n.name(), r%gpus, 0x18+0x10*(r%gpus), model)
	}
	w("#")
	w("#                                                              out-of-place                       in-place          ")
	w("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
	w("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
	sum, rows := 0.0, 0
	for size := int64(8); size <= maxBytes; size *= 2 {
		out := row(size, latency, peakAlg, ranks, 1.0)
		in := row(size, latency*0.97, peakAlg, ranks, 0.996)
		w("%12d  %12d     float     sum      -1  %s  %s", size, size/4, out.text, in.text)
		sum += out.bus + in.bus
		rows += 2
	}
	w("# Out of bounds values : 0 OK")
	w("# Avg bus bandwidth    : %.6g ", sum/float64(rows))
	w("#")
	return b.String()
}

type measured struct {
	text string
	bus  float64
}

// row is one half of a row: a fixed latency plus the message at the
// fabric's algorithm bandwidth (scaled by factor).
func row(size int64, latencyUS, peakAlg float64, ranks int, factor float64) measured {
	t := latencyUS + float64(size)/(peakAlg*factor*1e3)
	alg := float64(size) / t / 1e3
	bus := alg * 2 * float64(ranks-1) / float64(ranks)
	ts := fmt.Sprintf("%7.1f", t)
	if t >= 10000 {
		ts = fmt.Sprintf("%7.0f", t)
	}
	return measured{fmt.Sprintf("%s  %6.2f  %6.2f  %5d", ts, alg, bus, 0), bus}
}
