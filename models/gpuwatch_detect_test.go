package models_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

var wnow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// run builds a machine's series for the last `mins` minutes, one point a
// minute, from f (minutes ago → point).
func run(node string, mins int, f func(ago int) models.NodeMinute) models.NodeSeries {
	s := models.NodeSeries{Node: node}
	for ago := mins; ago >= 0; ago-- {
		p := f(ago)
		p.At = wnow.Add(-time.Duration(ago) * time.Minute)
		s.Points = append(s.Points, p)
	}
	return s
}

func flat(util, mem, power float64) func(int) models.NodeMinute {
	return func(int) models.NodeMinute {
		return models.NodeMinute{UtilAvg: util, UtilMax: util, MemUsedMiB: mem, PowerW: power}
	}
}

// working moves memory and power every minute, as a training step does.
func working(util float64) func(int) models.NodeMinute {
	return func(ago int) models.NodeMinute {
		return models.NodeMinute{UtilAvg: util, UtilMax: util, MemUsedMiB: 60000 + float64(ago%3)*2000, PowerW: 500 + float64(ago%4)*60}
	}
}

// idleFor is idle for the last n minutes after busy work before.
func idleFor(n int) func(int) models.NodeMinute {
	return func(ago int) models.NodeMinute {
		if ago <= n {
			return models.NodeMinute{UtilAvg: 0, UtilMax: 1, MemUsedMiB: 60000, PowerW: 90}
		}
		return working(95)(ago)
	}
}

// X15: the stall rule names the machines that stand apart
// once the pattern held for the set time, and nothing before or otherwise.
func TestDetectStall(t *testing.T) {
	busy := func(i int) models.NodeSeries { return run(fmt.Sprintf("node-%d", i), 30, working(95)) }
	eightWith := func(odd func(int) models.NodeMinute, at ...int) []models.NodeSeries {
		var out []models.NodeSeries
		for i := range 8 {
			s := busy(i)
			for _, a := range at {
				if a == i {
					s = run(s.Node, 30, odd)
				}
			}
			out = append(out, s)
		}
		return out
	}
	rule := models.StallRule{For: 10 * time.Minute}
	cases := []struct {
		name   string
		series []models.NodeSeries
		rule   models.StallRule
		kind   string // "" = no stall
		apart  []string
		msg    string
	}{
		{name: "all busy and working", series: eightWith(nil), rule: rule},
		{name: "one idle for 12 minutes", series: eightWith(idleFor(12), 5), rule: rule, kind: models.StallSplit,
			apart: []string{"node-5"}, msg: "node-5 idle while 7 machines are busy for 12 minutes."},
		{name: "one idle for 9 minutes is not yet a stall", series: eightWith(idleFor(9), 5), rule: rule},
		{name: "the set time is per cluster", series: eightWith(idleFor(9), 5), rule: models.StallRule{For: 5 * time.Minute},
			kind: models.StallSplit, apart: []string{"node-5"}, msg: "node-5 idle while 7 machines are busy for 9 minutes."},
		{name: "two idle, ordered by rank", series: eightWith(idleFor(20), 2, 1), rule: rule, kind: models.StallSplit,
			apart: []string{"node-1", "node-2"}, msg: "node-1 and node-2 idle while 6 machines are busy for 20 minutes."},
		{name: "the busy minority is named", series: []models.NodeSeries{busy(0), run("node-1", 30, idleFor(15)), run("node-2", 30, idleFor(15))},
			rule: rule, kind: models.StallSplit, apart: []string{"node-0"}, msg: "node-0 busy while 2 machines are idle for 15 minutes."},
		{name: "everything idle is not a stall", series: []models.NodeSeries{run("node-0", 30, idleFor(20)), run("node-1", 30, idleFor(20))}, rule: rule},
		{name: "all pinned at 100 with flat memory and power", series: []models.NodeSeries{
			run("node-0", 30, flat(100, 70000, 310)), run("node-1", 30, flat(100, 70000, 305))}, rule: rule,
			kind: models.StallFrozen, apart: []string{"node-0", "node-1"},
			msg: "Every GPU of all 2 machines at 100 % with memory and power unchanged for 30 minutes: a collective is likely waiting on a peer that is gone."},
		{name: "pinned at 100 while memory and power move is work", series: []models.NodeSeries{
			run("node-0", 30, working(100)), run("node-1", 30, working(100))}, rule: rule},
		{name: "a machine that stopped reporting is not judged idle", series: func() []models.NodeSeries {
			s := eightWith(nil)
			s[3].Points = s[3].Points[:10] // last point 20 minutes ago
			return s
		}(), rule: rule},
		{name: "one machine says nothing about a stall", series: []models.NodeSeries{run("node-0", 30, idleFor(20))}, rule: rule},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := models.DetectStall(c.series, wnow, c.rule)
			if (c.kind != "") != ok {
				t.Fatalf("stall = %v (%+v), want %v", ok, f, c.kind != "")
			}
			if !ok {
				return
			}
			if f.Kind != c.kind || fmt.Sprint(f.Apart) != fmt.Sprint(c.apart) || f.Message != c.msg {
				t.Fatalf("got %s %v %q, want %s %v %q", f.Kind, f.Apart, f.Message, c.kind, c.apart, c.msg)
			}
		})
	}
}

// X15: the cluster is idle since the latest moment every GPU of
// every machine went below the threshold; a busy GPU, a silent machine or
// a long gap means not idle.
func TestIdleSince(t *testing.T) {
	rule := models.IdleRule{Below: 5}
	cases := []struct {
		name   string
		series []models.NodeSeries
		since  int // minutes ago; -1 = not idle
	}{
		{name: "nothing reported", since: -1},
		{name: "both idle, the later start counts", series: []models.NodeSeries{run("node-0", 200, idleFor(180)), run("node-1", 200, idleFor(150))}, since: 150},
		{name: "one GPU at work on one machine", series: []models.NodeSeries{run("node-0", 200, idleFor(180)),
			run("node-1", 200, func(int) models.NodeMinute { return models.NodeMinute{UtilAvg: 3, UtilMax: 40} })}, since: -1},
		{name: "threshold is below, not at", series: []models.NodeSeries{run("node-0", 60, flat(5, 1, 1))}, since: -1},
		{name: "a silent machine", series: []models.NodeSeries{run("node-0", 200, idleFor(180)), {Node: "node-1"}}, since: -1},
		{name: "a gap restarts the streak", series: func() []models.NodeSeries {
			s := run("node-0", 200, idleFor(190))
			s.Points = append(s.Points[:50], s.Points[60:]...) // 10 minutes missing 150 minutes ago
			return []models.NodeSeries{s}
		}(), since: 140},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := models.IdleSince(c.series, wnow, rule)
			if c.since < 0 {
				if ok {
					t.Fatalf("idle since %v, want not idle", got)
				}
				return
			}
			if want := wnow.Add(-time.Duration(c.since) * time.Minute); !ok || !got.Equal(want) {
				t.Fatalf("idle since %v (%v), want %v", got, ok, want)
			}
		})
	}
}
