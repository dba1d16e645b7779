package domain

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// The pure rules that read a cluster's GPU telemetry (X15): which machines stand apart in a stall, and how long every GPU
// has been idle. They take per-machine series and the moment to judge at;
// they read nothing and write nothing, so tables test them.

// NodeMinute is one machine's GPUs at one point of its series: the mean and
// the highest utilization over its GPUs (percent), and the machine's
// memory used (MiB) and power draw (W) summed over its GPUs.
type NodeMinute struct {
	At         time.Time
	UtilAvg    float64
	UtilMax    float64
	MemUsedMiB float64
	PowerW     float64
}

// NodeSeries is one machine's points, oldest first.
type NodeSeries struct {
	Node   string // node-0 …
	Points []NodeMinute
}

// StallRule is a cluster's stall setting: how long a pattern must hold and
// what counts as idle and busy (percent utilization).
type StallRule struct {
	For       time.Duration // default 10 minutes
	IdleBelow float64       // a machine whose every GPU stays at or below this is idle (default 5)
	BusyAbove float64       // a machine whose mean stays at or above this is busy (default 50)
}

// Stall defaults (X15).
const (
	DefaultStallMinutes   = 10
	DefaultStallIdleBelow = 5
	DefaultStallBusyAbove = 50
	// frozenUtil is the "every GPU at 100 %" of a collective waiting on a
	// lost peer: spinning kernels keep the utilization counter pinned.
	frozenUtil = 98
	// maxGap is the longest hole in a series a streak survives: a machine
	// that missed more than this says nothing about the time in between.
	maxGap = 3 * time.Minute
)

// Stall kinds.
const (
	StallSplit  = "split"  // some machines idle while others stay busy
	StallFrozen = "frozen" // every GPU pinned at 100 % with memory and power unchanged
)

// StallFinding is a stall seen at a moment: its kind, the machines that
// stand apart, how many others there are, since when it holds, and a
// sentence for people.
type StallFinding struct {
	Kind    string
	Apart   []string // the machines named: idle ones among busy, or busy ones among idle; every machine when frozen
	Others  int
	Since   time.Time
	Message string
}

// Key identifies the episode: the same kind and the same machines apart is
// the same stall, so it is announced once.
func (f StallFinding) Key() string { return f.Kind + ":" + strings.Join(f.Apart, ",") }

// streak is how long the trailing run of points for which ok holds lasts,
// ending at the last point, which must be recent (within maxGap of now).
// A gap longer than maxGap ends the run.
func streak(pts []NodeMinute, now time.Time, ok func(NodeMinute) bool) (since time.Time, held bool) {
	return streakGap(pts, now, maxGap, ok)
}

// streakGap is streak with another longest gap (coarser points).
func streakGap(pts []NodeMinute, now time.Time, gap time.Duration, ok func(NodeMinute) bool) (since time.Time, held bool) {
	if len(pts) == 0 || now.Sub(pts[len(pts)-1].At) > gap {
		return time.Time{}, false
	}
	i := len(pts) - 1
	if !ok(pts[i]) {
		return time.Time{}, false
	}
	for i > 0 && ok(pts[i-1]) && pts[i].At.Sub(pts[i-1].At) <= gap {
		i--
	}
	return pts[i].At, true
}

// DetectStall judges the series at now. A split stall: at least one
// machine idle and one busy, each for at least r.For; the minority is
// named (the idle ones on a tie). A frozen stall: every machine (two or
// more) at frozenUtil or more with its memory and power unchanged for
// r.For. ok is false when neither holds.
func DetectStall(series []NodeSeries, now time.Time, r StallRule) (StallFinding, bool) {
	if r.For <= 0 {
		r.For = DefaultStallMinutes * time.Minute
	}
	if r.IdleBelow <= 0 {
		r.IdleBelow = DefaultStallIdleBelow
	}
	if r.BusyAbove <= 0 {
		r.BusyAbove = DefaultStallBusyAbove
	}
	if len(series) < 2 {
		return StallFinding{}, false
	}
	if f, ok := detectFrozen(series, now, r); ok {
		return f, true
	}
	var idle, busy []string
	var since time.Time // the latest start among the machines involved: when the pattern began as a whole
	for _, s := range series {
		if t, ok := streak(s.Points, now, func(p NodeMinute) bool { return p.UtilMax <= r.IdleBelow }); ok && now.Sub(t) >= r.For {
			idle = append(idle, s.Node)
			since = later(since, t)
		} else if t, ok := streak(s.Points, now, func(p NodeMinute) bool { return p.UtilAvg >= r.BusyAbove }); ok && now.Sub(t) >= r.For {
			busy = append(busy, s.Node)
			since = later(since, t)
		}
	}
	if len(idle) == 0 || len(busy) == 0 {
		return StallFinding{}, false
	}
	f := StallFinding{Kind: StallSplit, Since: since}
	mins := minutes(now.Sub(since))
	if len(busy) < len(idle) {
		f.Apart, f.Others = sortNodes(busy), len(idle)
		f.Message = fmt.Sprintf("%s busy while %s %s idle for %s.", nodeList(f.Apart), machines(f.Others), areWord(f.Others), mins)
	} else {
		f.Apart, f.Others = sortNodes(idle), len(busy)
		f.Message = fmt.Sprintf("%s idle while %s %s busy for %s.", nodeList(f.Apart), machines(f.Others), areWord(f.Others), mins)
	}
	return f, true
}

// detectFrozen is the collective waiting on a dead peer: every machine
// pinned at frozenUtil with memory and power flat (within a small
// tolerance of their latest values) for r.For.
func detectFrozen(series []NodeSeries, now time.Time, r StallRule) (StallFinding, bool) {
	var since time.Time
	var names []string
	for _, s := range series {
		if len(s.Points) == 0 {
			return StallFinding{}, false
		}
		last := s.Points[len(s.Points)-1]
		memTol, powTol := math.Max(64, last.MemUsedMiB*0.01), math.Max(5, last.PowerW*0.03)
		t, ok := streak(s.Points, now, func(p NodeMinute) bool {
			return p.UtilAvg >= frozenUtil && math.Abs(p.MemUsedMiB-last.MemUsedMiB) <= memTol && math.Abs(p.PowerW-last.PowerW) <= powTol
		})
		if !ok || now.Sub(t) < r.For {
			return StallFinding{}, false // real work moves memory or power
		}
		since = later(since, t)
		names = append(names, s.Node)
	}
	f := StallFinding{Kind: StallFrozen, Apart: sortNodes(names), Since: since}
	f.Message = fmt.Sprintf("Every GPU of all %d machines at 100 %% with memory and power unchanged for %s: "+
		"a collective is likely waiting on a peer that is gone.", len(names), minutes(now.Sub(since)))
	return f, true
}

// IdleRule is a cluster's idle setting (X15): every GPU below Below
// percent for For.
type IdleRule struct {
	Below float64
	For   time.Duration
	Gap   time.Duration // the longest hole a streak survives; 0 = 3 minutes (minute points)
}

// IdleSince is when every GPU of every machine last became idle (highest
// utilization below r.Below) and stayed so until now. ok is false when a
// machine has a GPU at work, reports nothing recent, or no machine reports:
// idleness is only ever concluded from telemetry that says so.
func IdleSince(series []NodeSeries, now time.Time, r IdleRule) (time.Time, bool) {
	if len(series) == 0 {
		return time.Time{}, false
	}
	var since time.Time
	for _, s := range series {
		gap := r.Gap
		if gap <= 0 {
			gap = maxGap
		}
		t, ok := streakGap(s.Points, now, gap, func(p NodeMinute) bool { return p.UtilMax < r.Below })
		if !ok {
			return time.Time{}, false
		}
		since = later(since, t)
	}
	return since, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sortNodes orders node names by rank (node-2 before node-10).
func sortNodes(n []string) []string {
	out := append([]string(nil), n...)
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) < len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// nodeList is "node-5", "node-3 and node-5", "node-1, node-3 and node-5".
func nodeList(n []string) string {
	switch len(n) {
	case 0:
		return ""
	case 1:
		return n[0]
	}
	return strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1]
}

func machines(n int) string {
	if n == 1 {
		return "1 machine"
	}
	return fmt.Sprintf("%d machines", n)
}

func areWord(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// minutes is a duration for people: "12 minutes", "1 minute", "2 h 5 min".
func minutes(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m == 1:
		return "1 minute"
	case m < 120:
		return fmt.Sprintf("%d minutes", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// Idle actions: what happens once every GPU has been idle long enough.
const (
	IdleMail      = "mail"      // mail the owners, nothing else
	IdleStop      = "stop"      // mail a warning, then stop the cluster after the grace (B6's stop)
	IdleTerminate = "terminate" // mail a warning, then terminate it after the grace (L7)
)
