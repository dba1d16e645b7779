package models

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Tenant bounds on what a machine reports (X19, X15): a machine's GPUs are
// fixed when it registers — the indexes its first nvidia-smi listed at
// check-in, at most its offer's GPUsPerNode of them — and a report naming
// any other index is refused whole. Stored points are one per GPU per
// minute (gpu_points' key) of at most MaxSamplesPerGPUMinute samples, so
// a machine-minute holds at most its real GPUs' points, and a series
// answer at most window/step points for each of them.

// MaxSamplesPerGPUMinute is how many samples one GPU's minute point
// folds; more for the same GPU and minute (repeats, a flood) are ignored.
// The agent samples every 30 s: two a minute, a restart a third.
const MaxSamplesPerGPUMinute = 4

func up0993TenantBounds(tx *gorm.DB) error {
	for _, q := range []string{
		"ALTER TABLE node_gpu_checks ADD COLUMN gpu_indexes varchar(400) NOT NULL DEFAULT ''",
		// Which evidence a machine fault rests on and whose cluster it
		// was on (fault_evidence.go); counted = it is in the track
		// record and the lemon count. Faults from before are counted.
		"ALTER TABLE machine_faults ADD COLUMN org_id varchar(32) NOT NULL DEFAULT ''",
		"ALTER TABLE machine_faults ADD COLUMN evidence varchar(16) NOT NULL DEFAULT ''",
		"ALTER TABLE machine_faults ADD COLUMN counted boolean NOT NULL DEFAULT true",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// smiIndexes is the GPU indexes nvidia-smi's check-in output lists,
// sorted, at most gpusPerNode of them, as "0,1"; "" when it lists none.
func smiIndexes(smi string, gpusPerNode int) string {
	gpus, err := nodespec.ParseSMIQuery(smi)
	if err != nil {
		return ""
	}
	var idx []int
	for _, g := range gpus {
		if g.Index >= 0 && g.Index <= MaxGPUIndex {
			idx = append(idx, g.Index)
		}
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	if len(idx) > max(gpusPerNode, 1) {
		idx = idx[:max(gpusPerNode, 1)]
	}
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// offerGPUs is 0 … GPUsPerNode-1: a machine's GPUs when its check-in
// listed none.
func offerGPUs(c Cluster) []int {
	out := make([]int, max(c.GPUsPerNode, 1))
	for i := range out {
		out[i] = i
	}
	return out
}

func parseIndexes(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// MachineGPUs is every machine's GPU indexes of cluster c by rank, as
// fixed when it registered; a rank missing from the map has the offer's
// (offerGPUs).
func (s *Store) MachineGPUs(ctx context.Context, c Cluster) (map[int][]int, error) {
	var checks []NodeGPUCheck
	if err := s.db.WithContext(ctx).Select("rank, gpu_indexes").Where("cluster_id = ? AND gpu_indexes <> ''", c.ID).
		Find(&checks).Error; err != nil {
		return nil, err
	}
	out := make(map[int][]int, len(checks))
	for _, ch := range checks {
		if idx := parseIndexes(ch.GPUIndexes); len(idx) > 0 {
			out[ch.Rank] = idx
		}
	}
	return out, nil
}

// gpusOf is rank's GPUs in a MachineGPUs answer.
func gpusOf(byRank map[int][]int, c Cluster, rank int) []int {
	if idx, ok := byRank[rank]; ok {
		return idx
	}
	return offerGPUs(c)
}

// checkGPUIndexes refuses a report that names a GPU the machine does not
// have (X19).
func (s *Store) checkGPUIndexes(ctx context.Context, c Cluster, n ClusterNode, r GPUReport) error {
	if len(r.Samples) == 0 {
		return nil
	}
	byRank, err := s.MachineGPUs(ctx, c)
	if err != nil {
		return err
	}
	have := gpusOf(byRank, c, n.Rank)
	for i, smp := range r.Samples {
		if !slices.Contains(have, smp.Index) {
			return &ReportError{"gpu", fmt.Errorf("samples[%d]: GPU index %d is not one of this machine's GPUs (%s, fixed when it registered)",
				i, smp.Index, joinInts(have))}
		}
	}
	return nil
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}
