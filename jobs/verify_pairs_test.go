package jobs

import (
	"fmt"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// pairsOf is the pairwise check of n machines as pairPlan runs it, each
// pair reading bw(a, b) GB/s.
func pairsOf(n int, bw func(a, b int) float64) ([]models.PairVerdict, []string) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node-%d", i)
	}
	var out []models.PairVerdict
	for _, wave := range pairPlan(n) {
		for _, p := range wave {
			out = append(out, models.PairVerdict{A: names[p[0]], B: names[p[1]], Status: "measured", BusBW: bw(p[0], p[1])})
		}
	}
	return out, names
}

// L6, X13: the slow machine is found by a rule that holds at any machine
// count — a pair is slow below RingPercent of what a pair allows, or more
// than PairBelowMedianPercent below the median — and the culprit is the
// machine in the most slow pairs. At three machines the slow value is the
// median itself, so the median alone never finds it (the old rule named
// the fabric as a whole).
func TestPairCulpritAtEveryMachineCount(t *testing.T) {
	th := models.VerifyThresholds{RingPercent: 85, PairBelowMedianPercent: 10}
	const expected = 750.0 // GB/s a pair allows
	healthy := 0.88 * expected
	for _, n := range []int{3, 4, 8, 64} {
		for _, tc := range []struct {
			name    string
			slow    int     // the machine on the slow link, -1 none
			fabric  float64 // the whole fabric's share of healthy
			link    float64 // the slow link's share of the fabric
			culprit int
		}{
			{"healthy", -1, 1, 1, -1},
			{"slow link on the last machine", n - 1, 1, 0.4, n - 1},
			{"slow link on node-1", 1, 1, 0.4, 1},
			{"slow link on node-0", 0, 1, 0.4, 0},
			{"fabric slow as a whole", -1, 0.3, 1, -1},
			{"fabric slow as a whole with a slow link", n - 1, 0.3, 0.4, map[bool]int{true: -1, false: n - 1}[n == 3]},
		} {
			t.Run(fmt.Sprintf("%d machines/%s", n, tc.name), func(t *testing.T) {
				pairs, names := pairsOf(n, func(a, b int) float64 {
					bw := healthy * tc.fabric
					if a == tc.slow || b == tc.slow {
						bw *= tc.link
					}
					return bw
				})
				med := judgePairs(pairs, expected, th)
				got, count := pairCulprit(pairs, names, med, th)
				if got != tc.culprit {
					t.Fatalf("culprit %d (in %d pairs), want %d; median %.1f; pairs %+v", got, count, tc.culprit, med, pairs)
				}
				slow := 0
				for _, p := range pairs {
					if p.Status == "slow" {
						slow++
						if p.Detail == "" {
							t.Errorf("slow pair %s–%s says not why", p.A, p.B)
						}
					}
				}
				if tc.culprit >= 0 && count != 2 {
					t.Errorf("culprit in %d slow pairs, want its two", count)
				}
				if tc.slow < 0 && tc.fabric == 1 && slow != 0 {
					t.Errorf("%d slow pairs on a healthy fabric: %+v", slow, pairs)
				}
			})
		}
	}
}

// The report of a three-machine run measured for X13: 659 GB/s for node-0–node-1,
// 264 GB/s for both pairs of node-2 → node-2, each of its pairs slow
// against what a pair allows.
func TestPairCulpritThreeMachinesReported(t *testing.T) {
	th := models.VerifyThresholds{RingPercent: 85, PairBelowMedianPercent: 10}
	pairs := []models.PairVerdict{
		{A: "node-0", B: "node-1", Status: "measured", BusBW: 659.4},
		{A: "node-1", B: "node-2", Status: "measured", BusBW: 263.8},
		{A: "node-2", B: "node-0", Status: "measured", BusBW: 263.8},
	}
	med := judgePairs(pairs, 750, th)
	if got, _ := pairCulprit(pairs, []string{"node-0", "node-1", "node-2"}, med, th); got != 2 {
		t.Fatalf("culprit %d, want node-2; pairs %+v", got, pairs)
	}
	if pairs[0].Status != "passed" || pairs[1].Status != "slow" || pairs[2].Status != "slow" {
		t.Errorf("pairs %+v", pairs)
	}
	// Without the expected pair (unknown), the median alone cannot tell.
	for i := range pairs {
		pairs[i].Status, pairs[i].Detail = "measured", ""
	}
	med = judgePairs(pairs, 0, th)
	if got, _ := pairCulprit(pairs, []string{"node-0", "node-1", "node-2"}, med, th); got != -1 {
		t.Errorf("culprit %d by the median alone", got)
	}
}
