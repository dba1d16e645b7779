package sim

import (
	"fmt"
	"strings"
)

// NCCLStep is the step the agent runs for the NCCL check (X4): nccl-tests'
// all_reduce_perf across every GPU of the group, started on node-0.
const NCCLStep = "nccl:nccl-tests"

// Bus bandwidth per node the interconnects advertise, in GB/s per GPU
// (InfiniBand: one 400 Gbit/s port per GPU; RoCE: 200 Gbit/s) or per node
// (Ethernet: an encrypted 2 Gbit/s overlay), and the share of it a healthy
// simulated fabric delivers, with the latency of a tiny message.
var fabrics = map[string]struct {
	perGPU, perNode float64 // GB/s
	share           float64
	latencyUS       float64
}{
	"infiniband": {perGPU: 50, share: 0.88, latencyUS: 24},
	"roce":       {perGPU: 25, share: 0.81, latencyUS: 38},
	"ethernet":   {perNode: 0.25, share: 0.86, latencyUS: 160},
}

// ncclSlowShare is what an nccl_slow fault leaves of the fabric.
const ncclSlowShare = 0.3

// allReducePerf prints what all_reduce_perf prints on this group, in
// nccl-tests' format (see the samples in models/nodespec/testdata): one
// rank per GPU, messages doubling from 8 B to 8 GB (128 MB on Ethernet),
// bus bandwidth rising to the fabric's share of what it advertises.
// Callers hold c.mu.
func (e *executor) allReducePerf() string {
	g := e.n.g
	f, ok := fabrics[g.offer.cfg.Interconnect]
	if !ok {
		f = fabrics["ethernet"]
	}
	share := f.share
	for _, n := range g.nodes {
		if n.ncclSlow {
			share = ncclSlowShare
		}
	}
	return allReduceOn(g, g.nodes, share)
}

// allReduceOn prints all_reduce_perf across the given machines of g at
// share of what the fabric advertises. Callers hold c.mu.
func allReduceOn(g *group, members []*node, share float64) string {
	cfg := g.offer.cfg
	f, ok := fabrics[cfg.Interconnect]
	if !ok {
		f = fabrics["ethernet"]
	}
	nodes, gpus := len(members), cfg.GPUsPerNode
	ranks := nodes * gpus
	perNode := f.perNode + f.perGPU*float64(gpus)
	// A network-bound ring all-reduce: busbw = B·N(R−1)/(R(N−1)).
	peakBus := share * perNode * float64(nodes) * float64(ranks-1) / (float64(ranks) * float64(max(nodes-1, 1)))
	peakAlg := peakBus * float64(ranks) / (2 * float64(ranks-1))
	maxBytes := int64(8) << 30
	if cfg.Interconnect == "ethernet" || !ok {
		maxBytes = 128 << 20
	}
	model := gpuModels[cfg.Accelerator].name

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# nThread 1 nGpus 1 minBytes 8 maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0", maxBytes)
	w("#")
	w("# Using devices")
	for r := range ranks {
		n := members[r/gpus]
		w("#  Rank %2d Group  0 Pid %6d on %s device %2d [0000:%02x:00] %s", r, 4100+r, n.name(), r%gpus, 0x18+0x10*(r%gpus), model)
	}
	w("#")
	w("#                                                              out-of-place                       in-place          ")
	w("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
	w("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
	sum, rows := 0.0, 0
	for size := int64(8); size <= maxBytes; size *= 2 {
		out := row(size, f.latencyUS, peakAlg, ranks, 1.0)
		in := row(size, f.latencyUS*0.97, peakAlg, ranks, 0.996)
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
