package web

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// decorateGPU adds the GPU watch panel (X15) to the cluster page.
func (h *handler) decorateGPU(c echo.Context, cl models.Cluster, cp *views.ClusterPage) error {
	w, err := h.Store.GPUWatchFor(c.Request().Context(), cl.OrgID, cl.ID)
	if err != nil {
		return err
	}
	cp.Watch = watchView(cl, w, nil)
	if !cl.Lifecycle().OnceUp() {
		return nil
	}
	ctx := c.Request().Context()
	hour, err := h.Store.GPUSeriesFor(ctx, cl.OrgID, cl.ID, models.GPUWindowHour)
	if err != nil {
		return err
	}
	day, err := h.Store.GPUSeriesFor(ctx, cl.OrgID, cl.ID, models.GPUWindowDay)
	if err != nil {
		return err
	}
	nodes, err := h.Store.NodesFor(ctx, cl.ID)
	if err != nil {
		return err
	}
	cp.GPU = gpuView(cl, nodes, hour, day)
	if w.StallKey != "" {
		cp.GPU.Stall = w.StallMessage
	}
	return nil
}

// slots lays values at their step over the window: one slot per step, NaN
// where nothing was reported.
func slots(s models.GPUSeries, at []time.Time, v []float64) []float64 {
	n := int(s.To.Sub(s.From)/s.Step) + 1
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	for i, t := range at {
		if k := int(t.Sub(s.From) / s.Step); k >= 0 && k < n {
			out[k] = v[i]
		}
	}
	return out
}

func pct(v float64) string { return strconv.Itoa(int(math.Round(v))) + " %" }

// gpuView is the Overview's GPU section from the last hour's and day's
// series. Figures are "now" only while the cluster and the machine run;
// otherwise they are said as last seen, with when (a stopped cluster, a
// down or stopped machine, a series whose newest point is old).
func gpuView(cl models.Cluster, nodes []models.ClusterNode, hour, day models.GPUSeries) *views.GPUView {
	g := &views.GPUView{}
	cu := func(s models.GPUSeries) ([]float64, float64, float64, bool) {
		var at []time.Time
		var v []float64
		sum := 0.0
		for _, p := range s.ClusterUtil() {
			at, v = append(at, p.At), append(v, float64(*p.UtilPct))
			sum += float64(*p.UtilPct)
		}
		if len(v) == 0 {
			return slots(s, nil, nil), 0, 0, false
		}
		return slots(s, at, v), v[len(v)-1], sum / float64(len(v)), true
	}
	hv, hnow, hmean, hok := cu(hour)
	cuPoints := hour.ClusterUtil()
	dv, _, dmean, dok := cu(day)
	if !hok && !dok {
		g.Empty = "No GPU telemetry yet: each machine's agent reports its GPUs every 30 seconds once it runs."
	}
	g.HourNow, g.DayMean = "no samples", "no samples"
	if hok {
		last := cuPoints[len(cuPoints)-1].At
		switch {
		case !cl.Lifecycle().GPUsAtWork():
			g.HourNow = pct(hnow) + " last seen " + last.Format("15:04")
		case hour.To.Sub(last) > models.GPUNowWithin:
			g.HourNow = pct(hnow) + " last seen " + last.Format("15:04")
		default:
			g.HourNow = pct(hnow) + " now"
		}
	}
	if dok {
		g.DayMean = "mean " + pct(dmean)
	}
	g.HourUtil = views.Spark{ID: "gpu-cluster-1h", Label: "Cluster GPU utilization, last hour", Values: hv, Max: 100,
		Summary: fmt.Sprintf("%s, mean %s", g.HourNow, pct(hmean))}
	g.DayUtil = views.Spark{ID: "gpu-cluster-24h", Label: "Cluster GPU utilization, last 24 hours", Values: dv, Max: 100,
		Summary: g.DayMean + " in 10-minute steps"}
	shown := map[int]models.NodeStatus{}
	for _, n := range nodes {
		shown[n.Rank] = models.ShownNodeStatus(cl, n)
		if cl.Lifecycle().GPUsAtWork() && !n.Status.GPUsRunning() {
			shown[n.Rank] = n.Status // down, restarting or stopped while the cluster runs
		}
	}
	for _, n := range hour.Nodes {
		m := machineView(hour, n)
		if st, ok := shown[n.Rank]; ok && (!cl.Lifecycle().GPUsAtWork() || !st.GPUsRunning()) {
			lastSeen(&m, n, st)
		}
		g.Machines = append(g.Machines, m)
	}
	return g
}

// machineView is one machine's row: utilization (mean over its GPUs) and
// memory (share of its GPUs' memory in use) per minute, what it is now.
func machineView(s models.GPUSeries, n models.GPUNodeSeries) views.GPUMachineView {
	m := views.GPUMachineView{Node: n.Name, GPUs: models.Count(len(n.GPUs), "GPU"), UtilNow: "–", MemNow: "–", Temp: "– °C", Power: "– W", Errors: "no errors"}
	type acc struct{ util, un, used, total float64 }
	by := map[int64]*acc{}
	for _, g := range n.GPUs {
		for _, p := range g.Points {
			a := by[p.At.Unix()]
			if a == nil {
				a = &acc{}
				by[p.At.Unix()] = a
			}
			if p.UtilPct != nil {
				a.util, a.un = a.util+float64(*p.UtilPct), a.un+1
			}
			if p.MemUsedMiB != nil && p.MemTotalMiB != nil {
				a.used, a.total = a.used+float64(*p.MemUsedMiB), a.total+float64(*p.MemTotalMiB)
			}
		}
	}
	var at []time.Time
	var util, mem []float64
	for _, k := range sortedKeys(by) {
		a := by[k]
		at = append(at, time.Unix(k, 0))
		u, mm := math.NaN(), math.NaN()
		if a.un > 0 {
			u = a.util / a.un
		}
		if a.total > 0 {
			mm = 100 * a.used / a.total
		}
		util, mem = append(util, u), append(mem, mm)
	}
	var nowUtil, nowN, used, total, hottest, watts float64
	for _, g := range n.GPUs {
		if v := g.Now; v != nil {
			if v.UtilPct != nil {
				nowUtil, nowN = nowUtil+float64(*v.UtilPct), nowN+1
			}
			if v.MemUsedMiB != nil && v.MemTotalMiB != nil {
				used, total = used+float64(*v.MemUsedMiB), total+float64(*v.MemTotalMiB)
			}
			if v.TempC != nil {
				hottest = math.Max(hottest, float64(*v.TempC))
			}
			if v.PowerW != nil {
				watts += float64(*v.PowerW)
			}
		}
	}
	if nowN > 0 {
		m.UtilNow = pct(nowUtil / nowN)
	}
	if total > 0 {
		m.MemNow = fmt.Sprintf("%.0f / %.0f GB", used/1024, total/1024)
	}
	if hottest > 0 {
		m.Temp = fmt.Sprintf("%.0f °C", hottest)
	}
	if watts > 0 {
		m.Power = kw(int(watts))
	}
	m.Util = views.Spark{ID: "gpu-util-" + n.Name, Label: "GPU utilization of " + n.Name + ", last hour", Values: slots(s, at, util), Max: 100,
		Summary: "now " + m.UtilNow}
	m.Mem = views.Spark{ID: "gpu-mem-" + n.Name, Label: "GPU memory in use on " + n.Name + ", last hour", Values: slots(s, at, mem), Max: 100,
		Summary: "now " + m.MemNow, Tone: "idle"}
	switch {
	case n.Fault != "":
		m.Errors, m.Bad = n.Fault, true
	case len(n.XIDs) > 0:
		x := n.XIDs[len(n.XIDs)-1]
		m.Errors = fmt.Sprintf("%d XID lines, last XID %d", len(n.XIDs), x.Code)
	}
	switch {
	case n.NoSMI != "":
		m.Note = n.Name + " reports no GPUs: " + n.NoSMI
	case len(n.GPUs) == 0:
		m.Note = n.Name + " has not reported its GPUs yet."
	case nowN == 0:
		m.Note = n.Name + " sent no GPU sample in the last 3 minutes."
	}
	if nowN == 0 && n.Fault == "" && len(n.XIDs) == 0 {
		m.Errors = "unknown (no recent report)" // silence is not "no errors"
		if n.LastAt != nil {
			m.Errors = "unknown (last seen " + n.LastAt.Format("15:04") + ")"
		}
	}
	return m
}

// lastSeen says a machine that does not run now as it was last seen: no
// "now" figure, errors unknown unless a fault was recorded, and when its
// GPUs last reported.
func lastSeen(m *views.GPUMachineView, n models.GPUNodeSeries, st models.NodeStatus) {
	m.UtilNow, m.MemNow, m.Temp, m.Power = "–", "–", "– °C", "– W"
	m.Util.Summary, m.Mem.Summary = "not running", "not running"
	word := string(st)
	when := "never reported"
	if n.LastAt != nil {
		when = "last seen " + n.LastAt.Format("15:04")
	}
	if n.Fault == "" {
		m.Errors, m.Bad = "unknown ("+when+")", false
	}
	m.Note = fmt.Sprintf("%s is %s: no figure is live; the charts end where its GPUs %s.", n.Name, word,
		strings.Replace(when, "last seen", "last reported at", 1))
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gpuMetrics is GET /v1/gpu/clusters/{id}/metrics: the cluster's GPU
// series over the window, per machine and GPU, and the whole cluster's
// utilization per step.
type gpuMetrics struct {
	models.GPUSeries
	StepSeconds int               `json:"stepSeconds"`
	ClusterUtil []models.GPUValue `json:"clusterUtilization"`
	Summary     string            `json:"summary"`
}

// apiGPUMetrics answers the same series the cluster page charts (X15,
// X15): ?window=1h|24h|30d (default 1h); any other window is a
// 422 naming it (A4); another organisation's cluster is 404 (A3).
func (h *handler) apiGPUMetrics(c echo.Context) error {
	w, err := models.ParseGPUWindow(c.QueryParam("window"))
	if err != nil {
		return invalid(models.FieldErrors{"window": "Choose 1h, 24h or 30d."})
	}
	s, err := h.Store.GPUSeriesFor(c.Request().Context(), principal(c).Org.ID, c.Param("id"), w)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toGPUMetrics(s))
}

func toGPUMetrics(s models.GPUSeries) gpuMetrics {
	m := gpuMetrics{GPUSeries: s, StepSeconds: int(s.Step / time.Second), ClusterUtil: s.ClusterUtil(), Summary: gpuSummary(s)}
	if m.ClusterUtil == nil {
		m.ClusterUtil = []models.GPUValue{}
	}
	if m.Nodes == nil {
		m.Nodes = []models.GPUNodeSeries{}
	}
	return m
}

// gpuSummary says the cluster's GPUs in a sentence: "16 GPUs on 2
// machines: 62 % now (mean over 1h 55 %), hottest 71 °C, 4.2 kW; no errors."
func gpuSummary(s models.GPUSeries) string {
	gpus, machines, reporting := 0, len(s.Nodes), 0
	var utilSum, utilN, hottest, watts int
	var faults []string
	for _, n := range s.Nodes {
		if len(n.GPUs) > 0 {
			reporting++
		}
		if n.Fault != "" {
			faults = append(faults, n.Name+": "+n.Fault)
		}
		for _, g := range n.GPUs {
			gpus++
			if v := g.Now; v != nil {
				if v.UtilPct != nil {
					utilSum, utilN = utilSum+*v.UtilPct, utilN+1
				}
				if v.TempC != nil && *v.TempC > hottest {
					hottest = *v.TempC
				}
				if v.PowerW != nil {
					watts += *v.PowerW
				}
			}
		}
	}
	if gpus == 0 {
		return fmt.Sprintf("No GPU telemetry yet from the %d machines.", machines)
	}
	out := fmt.Sprintf("%s on %d of %d machines reporting", models.Count(gpus, "GPU"), reporting, machines)
	if utilN > 0 {
		out += fmt.Sprintf(": %d %% now", (utilSum+utilN/2)/utilN)
	} else {
		out += ": no sample in the last 3 minutes"
	}
	if cu := s.ClusterUtil(); len(cu) > 0 {
		sum := 0
		for _, v := range cu {
			sum += *v.UtilPct
		}
		out += fmt.Sprintf(" (mean over %s %d %%)", s.Window, (sum+len(cu)/2)/len(cu))
	}
	if hottest > 0 {
		out += fmt.Sprintf(", hottest %d °C", hottest)
	}
	if watts > 0 {
		out += ", " + kw(watts)
	}
	if len(faults) == 0 {
		return out + "; no hardware errors."
	}
	return out + "; hardware errors: " + strings.Join(faults, "; ") + "."
}

func kw(w int) string {
	if w >= 1000 {
		return strconv.FormatFloat(float64(w)/1000, 'f', 1, 64) + " kW"
	}
	return strconv.Itoa(w) + " W"
}
