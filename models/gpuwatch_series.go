package models

import (
	"math"
	"sort"
	"time"
)

// NodeMinutes folds a cluster's series (gpu_telemetry.go) into one series
// per machine for the watch rules: at each step, the mean and the highest
// utilization over the machine's GPUs that reported one, and its memory
// used and power summed. Every machine of the series is there, a machine
// without points too (the rules then conclude nothing from it).
func (s GPUSeries) NodeMinutes() []NodeSeries {
	out := make([]NodeSeries, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		type acc struct {
			sum, max, mem, power float64
			count                int
		}
		by := map[int64]*acc{}
		for _, g := range n.GPUs {
			for _, p := range g.Points {
				if p.UtilPct == nil {
					continue
				}
				a := by[p.At.Unix()]
				if a == nil {
					a = &acc{max: math.Inf(-1)}
					by[p.At.Unix()] = a
				}
				u := float64(*p.UtilPct)
				a.sum, a.max, a.count = a.sum+u, math.Max(a.max, u), a.count+1
				if p.MemUsedMiB != nil {
					a.mem += float64(*p.MemUsedMiB)
				}
				if p.PowerW != nil {
					a.power += float64(*p.PowerW)
				}
			}
		}
		ns := NodeSeries{Node: n.Name}
		for at, a := range by {
			ns.Points = append(ns.Points, NodeMinute{At: time.Unix(at, 0).UTC(), UtilAvg: a.sum / float64(a.count), UtilMax: a.max,
				MemUsedMiB: a.mem, PowerW: a.power})
		}
		sort.Slice(ns.Points, func(i, j int) bool { return ns.Points[i].At.Before(ns.Points[j].At) })
		out = append(out, ns)
	}
	return out
}

// ClusterIdleSince is when every GPU of the cluster went idle (below
// percent), read from the last hour's minute points and, beyond them, the
// last day's 10-minute points: within the hour every minute counts; before
// it the day's steps do. ok is false when a GPU works now or the
// telemetry does not say.
func ClusterIdleSince(hour, day GPUSeries, now time.Time, below float64) (time.Time, bool) {
	recent, ok := IdleSince(hour.NodeMinutes(), now, IdleRule{Below: below})
	if !ok {
		return time.Time{}, false
	}
	if recent.After(hour.From.Add(hour.Step)) {
		return recent, true // work within the hour: the streak began there
	}
	long, ok := IdleSince(day.NodeMinutes(), now, IdleRule{Below: below, Gap: 2*day.Step + 5*time.Minute})
	if !ok || long.After(recent) {
		return recent, true
	}
	return long, true
}
