package models

import (
	"context"
	"slices"
	"time"
)

// GPUMinutes is a cluster's GPU telemetry folded into one series per
// machine for the watch rules, over a window: at each step, the mean and the
// highest utilization over the machine's GPUs that reported one, and its
// memory used and power summed. Every machine of the cluster is there, a
// machine without points too (the rules then conclude nothing from it).
type GPUMinutes struct {
	From  time.Time
	Step  time.Duration
	Nodes []NodeSeries
}

// GPUMinutesByID folds the window's points of GPUSeriesByID in the
// database: one row per machine and step instead of one per GPU, and none
// of the series' display parts. The gpu-watch job reads it for every live
// cluster every minute.
func (s *Store) GPUMinutesByID(ctx context.Context, clusterID string, w GPUWindow) (GPUMinutes, error) {
	if _, err := ParseGPUWindow(string(w)); err != nil {
		return GPUMinutes{}, err
	}
	from, step := w.start(s.Now())
	out := GPUMinutes{From: time.Unix(from, 0).UTC(), Step: w.Step()}
	source := "SELECT rank, at, util, mem_used, power FROM gpu_points WHERE cluster_id = ? AND at >= ?"
	switch w {
	case GPUWindowMonth:
		source = "SELECT rank, at, util, mem_used, power FROM gpu_hours WHERE cluster_id = ? AND at >= ?"
	case GPUWindowDay:
		source = gpuBucketsSQL(step)
	}
	var rows []struct {
		Rank       int
		At         int64
		UtilSum    int64
		UtilMax    int64
		N          int64
		Mem, Power int64
	}
	db := s.db.WithContext(ctx)
	if err := db.Raw("SELECT rank, at, SUM(util) AS util_sum, MAX(util) AS util_max, COUNT(util) AS n, "+
		"COALESCE(SUM(mem_used), 0) AS mem, COALESCE(SUM(power), 0) AS power FROM ("+source+") g "+
		"WHERE util IS NOT NULL GROUP BY rank, at ORDER BY rank, at", clusterID, from).Scan(&rows).Error; err != nil {
		return out, err
	}
	nodes, err := s.NodesFor(ctx, clusterID)
	if err != nil {
		return out, err
	}
	slices.SortFunc(nodes, func(a, b ClusterNode) int { return a.Rank - b.Rank })
	byRank := map[int]int{}
	for i, n := range nodes {
		out.Nodes = append(out.Nodes, NodeSeries{Node: n.Name})
		byRank[n.Rank] = i
	}
	for _, r := range rows {
		if i, ok := byRank[r.Rank]; ok {
			out.Nodes[i].Points = append(out.Nodes[i].Points, NodeMinute{At: time.Unix(r.At, 0).UTC(),
				UtilAvg: float64(r.UtilSum) / float64(r.N), UtilMax: float64(r.UtilMax), MemUsedMiB: float64(r.Mem), PowerW: float64(r.Power)})
		}
	}
	return out, nil
}

// ClusterIdleSince is when every GPU of the cluster went idle (below
// percent), read from the last hour's minute points and, beyond them, the
// last day's 10-minute points: within the hour every minute counts; before
// it the day's steps do. ok is false when a GPU works now or the
// telemetry does not say.
func ClusterIdleSince(hour, day GPUMinutes, now time.Time, below float64) (time.Time, bool) {
	recent, ok := IdleSince(hour.Nodes, now, IdleRule{Below: below})
	if !ok {
		return time.Time{}, false
	}
	if recent.After(hour.From.Add(hour.Step)) {
		return recent, true // work within the hour: the streak began there
	}
	long, ok := IdleSince(day.Nodes, now, IdleRule{Below: below, Gap: 2*day.Step + 5*time.Minute})
	if !ok || long.After(recent) {
		return recent, true
	}
	return long, true
}
