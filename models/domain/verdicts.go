package domain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Verdicts of verification's checks (X13): a check is pending until it
// reports; a pair's measurement is measured until JudgePairs reads it
// passed or slow; a machine being swapped reads swapping.
const (
	VerdictPending  = "pending"
	VerdictPassed   = "passed"
	VerdictFailed   = "failed"
	VerdictSlow     = "slow"
	VerdictMeasured = "measured"
	VerdictSwapping = "swapping"
)

// VerifyThresholds are what "passes" means (X13). They are
// configuration (Settings.Verify; the server reads CLUSTERDECK_VERIFY_*),
// and docs/clusters.md gives each one's source.
type VerifyThresholds struct {
	// RingPercent: the ring all-reduce's bus bandwidth must reach this
	// share of what a healthy ring reaches on the machines' NICs
	// (nodespec.RingExpectedBusBW: NICs × line rate × 0.94, at any machine
	// count). Healthy rings measure 46–48 GB/s per 400G NIC, 98–102 % of
	// it; the half-speed RoCE fabric of NVIDIA/nccl issue 2409, 57–61 %.
	// On the encrypted overlay the ring is held to a floor instead
	// (nodespec.OverlayFloorGBps).
	RingPercent int
	// PairBelowMedianPercent: no pair may be further than this below the
	// median pair (the one slow link).
	PairBelowMedianPercent int
	// IdleTempMaxC: a GPU at idle above this is failing its cooling (idle
	// data-centre GPUs read 25–45 °C; their slowdown temperature is 85–90 °C).
	IdleTempMaxC int
	// Window: the verification ends within it (L4's 25-minute cap); a
	// swap extends it to the swap's time plus Cluster.SwapWindow.
	Window time.Duration
}

// DefaultVerifyThresholds are the thresholds unless configured otherwise.
var DefaultVerifyThresholds = VerifyThresholds{RingPercent: 85, PairBelowMedianPercent: 10, IdleTempMaxC: 70, Window: ProvisionCap}

// WithDefaults is t with its zero fields set to DefaultVerifyThresholds'.
func (t VerifyThresholds) WithDefaults() VerifyThresholds {
	d := DefaultVerifyThresholds
	if t.RingPercent > 0 {
		d.RingPercent = t.RingPercent
	}
	if t.PairBelowMedianPercent > 0 {
		d.PairBelowMedianPercent = t.PairBelowMedianPercent
	}
	if t.IdleTempMaxC > 0 {
		d.IdleTempMaxC = t.IdleTempMaxC
	}
	if t.Window > 0 {
		d.Window = t.Window
	}
	return d
}

// MachineVerdict is one machine's check.
type MachineVerdict struct {
	Node         string   `json:"node"`
	Rank         int      `json:"rank"`
	MachineID    string   `json:"machineId,omitempty"`
	Status       string   `json:"status"` // pending, passed, failed
	GPUs         string   `json:"gpus"`
	Errors       []string `json:"errors"`
	Stress       string   `json:"stress"` // the tool, or "skipped"
	StressPassed bool     `json:"stressPassed"`
	StressDetail string   `json:"stressDetail,omitempty"`
	MaxTempC     int      `json:"maxTempC,omitempty"`
}

// PairVerdict is one pair's all-reduce.
type PairVerdict struct {
	A      string  `json:"a"`
	B      string  `json:"b"`
	Status string  `json:"status"` // pending, passed, slow, failed
	BusBW  float64 `json:"busBwGBps"`
	Detail string  `json:"detail,omitempty"`
}

// MachineCheck is one machine's check as the agent returned it.
type MachineCheck struct {
	Node      string
	Rank      int
	MachineID string
	Failed    bool   // the check's task failed
	Output    string // what the check printed (nodespec.VerifyMachineScript)
	Brief     string // the output's tail, quoted when the check did not run
}

// JudgeMachine reads one machine check against the offer (its GPUs per
// machine and accelerator) and the thresholds (X13): every problem is
// an error, and any error fails the machine.
func JudgeMachine(in MachineCheck, gpusPerNode int, accelerator string, th VerifyThresholds) MachineVerdict {
	mv := MachineVerdict{Node: in.Node, Rank: in.Rank, MachineID: in.MachineID, Status: VerdictPassed, Errors: []string{}}
	mc := nodespec.ParseMachineCheck(in.Output)
	bad := func(format string, args ...any) { mv.Errors = append(mv.Errors, fmt.Sprintf(format, args...)) }
	if in.Failed && mc.Stress.Tool == "" {
		bad("the check did not run: %s", in.Brief)
	}
	if mc.SMIErr != nil {
		bad("nvidia-smi -q could not be read: %v", mc.SMIErr)
	}
	gpus := make([]nodespec.GPU, len(mc.SMI.GPUs))
	for i, g := range mc.SMI.GPUs {
		gpus[i] = nodespec.GPU{Index: i, Name: g.Name, MemoryTotalMiB: g.MemoryTotalMiB, DriverVersion: mc.SMI.Driver}
	}
	mv.GPUs = nodespec.SummarizeGPUs(gpus)
	if len(gpus) != gpusPerNode {
		bad("%d GPUs, the offer promises %d × %s", len(gpus), gpusPerNode, strings.ReplaceAll(accelerator, "_", " "))
	}
	for i, g := range mc.SMI.GPUs {
		if !nodespec.IsAccelerator(gpus[i], accelerator) {
			bad("GPU %d is %s, the offer promises %s", i, g.Name, strings.ReplaceAll(accelerator, "_", " "))
		}
		if g.VolatileUncorrectable > 0 {
			bad("GPU %d: %d uncorrectable ECC errors since boot", i, g.VolatileUncorrectable)
		}
		if g.RemapFailure {
			bad("GPU %d: a row remapping failed", i)
		}
		if g.RemapPending {
			bad("GPU %d: a row remap is pending (the GPU needs a reset)", i)
		}
		if g.RetiredPagesPending {
			bad("GPU %d: a page retirement is pending", i)
		}
		if g.WidthMax > 0 && g.WidthCurrent > 0 && g.WidthCurrent < g.WidthMax {
			bad("GPU %d: PCIe link runs x%d of x%d", i, g.WidthCurrent, g.WidthMax)
		}
		if g.TemperatureC > th.IdleTempMaxC {
			bad("GPU %d: %d °C at idle (more than %d °C)", i, g.TemperatureC, th.IdleTempMaxC)
		}
		mv.MaxTempC = max(mv.MaxTempC, g.TemperatureC)
	}
	for _, x := range mc.Xids {
		if _, fatal := FatalXID(x.Code); fatal { // the one list, as telemetry and health
			bad("kernel log: %s", strings.TrimSuffix(x.Line, "."))
		}
	}
	mv.Stress, mv.StressPassed, mv.StressDetail = mc.Stress.Tool, mc.Stress.Passed, mc.Stress.Detail
	switch {
	case mc.Stress.Tool == "":
		mv.Stress = "not run"
	case !mc.Stress.Passed:
		bad("%s failed: %s", mc.Stress.Tool, mc.Stress.Detail)
	}
	if len(mv.Errors) > 0 {
		mv.Status = VerdictFailed
	}
	return mv
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// JudgePairs marks each measured pair passed or slow and returns the
// median pair. A pair is slow below RingPercent of what a pair allows
// (expected, GB/s) — the rule that holds at any machine count: with three
// pairs the slow value can be the median itself — or more than
// PairBelowMedianPercent below the median (one link slower than its peers
// on a fabric that reads below its expected value).
func JudgePairs(pairs []PairVerdict, expected float64, th VerifyThresholds) float64 {
	var bws []float64
	for _, p := range pairs {
		if p.Status == VerdictMeasured {
			bws = append(bws, p.BusBW)
		}
	}
	if len(bws) == 0 {
		return 0
	}
	sort.Float64s(bws)
	med := median(bws)
	floor := expected * float64(th.RingPercent) / 100
	medFloor := med * float64(100-th.PairBelowMedianPercent) / 100
	for i := range pairs {
		p := &pairs[i]
		if p.Status != VerdictMeasured {
			continue
		}
		p.Status = VerdictPassed
		var why []string
		if expected > 0 && p.BusBW < floor {
			why = append(why, fmt.Sprintf("%.0f %% of the %.1f GB/s a pair allows (at least %d %% required)", 100*p.BusBW/expected, expected, th.RingPercent))
		}
		if p.BusBW < medFloor {
			why = append(why, fmt.Sprintf("%.0f %% below the median pair", 100*(1-p.BusBW/med)))
		}
		if len(why) > 0 {
			p.Status, p.Detail = VerdictSlow, strings.Join(why, "; ")
		}
	}
	return med
}

// PairCulprit is the machine on the slow link: the one in the most slow
// (or failed) pairs, the higher rank on a tie (node-0 holds the head and
// the volume), and how many; -1 when no pair is slow. When every pair is
// slow (the fabric reads below what it allows), only the pairs more than
// PairBelowMedianPercent below the median (or failed) count: none, or
// all, is the fabric as a whole, not one machine. names are the
// machines' names by rank; median is the median pair.
func PairCulprit(pairs []PairVerdict, names []string, median float64, th VerifyThresholds) (int, int) {
	bad := func(p PairVerdict) bool { return p.Status == VerdictSlow || p.Status == VerdictFailed }
	n := 0
	for _, p := range pairs {
		if bad(p) {
			n++
		}
	}
	if n == len(pairs) {
		floor := median * float64(100-th.PairBelowMedianPercent) / 100
		bad = func(p PairVerdict) bool { return p.Status == VerdictFailed || p.BusBW < floor }
		n = 0
		for _, p := range pairs {
			if bad(p) {
				n++
			}
		}
	}
	if n == 0 || n == len(pairs) {
		return -1, 0
	}
	count := map[string]int{}
	for _, p := range pairs {
		if bad(p) {
			count[p.A]++
			count[p.B]++
		}
	}
	best, rank := 0, -1
	for r, name := range names {
		if c := count[name]; c > 0 && c >= best {
			best, rank = c, r
		}
	}
	return rank, best
}
