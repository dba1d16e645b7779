package models_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func ip(v int) *int      { return &v }
func i64(v int64) *int64 { return &v }

// gpuSample is a sample of GPU i at at with utilization util.
func gpuSample(at time.Time, i, util int, ecc int64) models.GPUSample {
	return models.GPUSample{At: at, Index: i, UUID: "GPU-" + string(rune('a'+i)), UtilPct: ip(util), MemUsedMiB: ip(1000 * util),
		MemTotalMiB: ip(81559), TempC: ip(40 + util/4), PowerW: ip(100 + 5*util), SMClockMHz: ip(1980), ECCUncorrected: i64(ecc), Throttle: i64(0)}
}

// readyCluster is a ready two-machine cluster of e's organisation and its nodes.
func readyCluster(t *testing.T, e *launchEnv) (models.Cluster, []models.ClusterNode) {
	t.Helper()
	ctx := context.Background()
	c, err := e.s.ClusterByID(ctx, clusterIn(t, e, models.StatusReady, ""))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := e.s.NodesFor(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c, nodes
}

// X15: a heartbeat's samples become one point per GPU per
// minute (two samples of a minute are averaged, also across heartbeats),
// "[N/A]" stays unknown, the series is read through the organisation only.
func TestGPUReportStoresMinutePoints(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		now := e.s.Now().Truncate(time.Minute)
		e.clock.Set(now.Add(45 * time.Second))
		first := []models.GPUSample{gpuSample(now, 0, 40, 0), gpuSample(now, 1, 100, 0)}
		first[1].PowerW = nil // "[N/A]"
		if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: first}}); err != nil {
			t.Fatal(err)
		}
		second := []models.GPUSample{gpuSample(now.Add(30*time.Second), 0, 80, 0), gpuSample(now.Add(30*time.Second), 1, 90, 0)}
		if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: second}}); err != nil {
			t.Fatal(err)
		}
		var rows int64
		db.Model(&models.GPUPoint{}).Count(&rows)
		if rows != 2 {
			t.Fatalf("%d rows, want one per GPU per minute (2)", rows)
		}
		if _, err := e.s.GPUSeriesFor(ctx, "org_other", c.ID, models.GPUWindowHour); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another organisation reads the series: %v", err)
		}
		got, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowHour)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Nodes) != 2 || len(got.Nodes[0].GPUs) != 2 || len(got.Nodes[1].GPUs) != 0 {
			t.Fatalf("series shape: %+v", got.Nodes)
		}
		g0, g1 := got.Nodes[0].GPUs[0], got.Nodes[0].GPUs[1]
		if len(g0.Points) != 1 || *g0.Points[0].UtilPct != 60 || g0.Now == nil || *g0.Now.UtilPct != 60 || g0.UUID != "GPU-a" {
			t.Fatalf("GPU 0: %+v now %+v, want one point at 60 %% (40 and 80 averaged)", g0.Points, g0.Now)
		}
		if *g1.Points[0].UtilPct != 95 || g1.Points[0].PowerW == nil || *g1.Points[0].PowerW != 550 {
			t.Fatalf("GPU 1: util %v power %v, want 95 and the one known power, 550 W", *g1.Points[0].UtilPct, g1.Points[0].PowerW)
		}
		// 24h and 30d windows read the same data at their steps.
		day, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowDay)
		if err != nil || len(day.Nodes[0].GPUs[0].Points) != 1 || *day.Nodes[0].GPUs[0].Points[0].UtilPct != 60 {
			t.Fatalf("24h: %+v %v", day, err)
		}
	})
}

// X15: an oversized or malformed report is refused with a
// clear error and nothing of the heartbeat is kept.
func TestAbuseTelemetryReportRefusedWhole(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		now := e.s.Now()
		many := make([]models.GPUSample, models.MaxGPUSamplesPerReport+1)
		for i := range many {
			many[i] = gpuSample(now, i%8, 50, 0)
		}
		bad := gpuSample(now, 0, 50, 0)
		bad.UtilPct = ip(140)
		old := gpuSample(now.Add(-2*time.Hour), 0, 50, 0)
		for name, r := range map[string]models.GPUReport{
			"513 samples": {Samples: many},
			"utilization": {Samples: []models.GPUSample{gpuSample(now, 1, 50, 0), bad}},
			"time":        {Samples: []models.GPUSample{old}},
			"xid":         {XIDs: []models.XIDLine{{At: now, Code: 0, Text: "x"}}},
		} {
			_, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &r})
			var re *models.ReportError
			if !errors.As(err, &re) || re.Field != "gpu" {
				t.Fatalf("%s: %v, want a gpu report error", name, err)
			}
			if !strings.Contains(err.Error(), "gpu: ") {
				t.Fatalf("%s: %q", name, err)
			}
		}
		var rows int64
		db.Model(&models.GPUPoint{}).Count(&rows)
		n, _ := e.s.NodesFor(ctx, c.ID)
		if rows != 0 || n[0].HeartbeatAt != nil && !n[0].HeartbeatAt.Before(now) {
			t.Fatalf("a refused report left %d points (heartbeat %v)", rows, n[0].HeartbeatAt)
		}
	})
}

// X15, R1: a new uncorrectable ECC error, a fatal XID and a
// GPU gone from nvidia-smi each set the node's hardware fault; a harmless
// XID and an ECC count already known at the first report of zero do not.
func TestGPUFaultsMarkTheNode(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		fault := func(rank int) string {
			ns, err := e.s.NodesFor(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			return ns[rank].HWFault
		}
		beat := func(rank int, r models.GPUReport) {
			t.Helper()
			if _, err := e.s.Heartbeat(ctx, c, nodes[rank], models.HeartbeatReport{GPU: &r}); err != nil {
				t.Fatal(err)
			}
		}
		now := e.s.Now()
		two := func(ecc0 int64) []models.GPUSample {
			return []models.GPUSample{gpuSample(now, 0, 10, ecc0), gpuSample(now, 1, 10, 0)}
		}
		beat(0, models.GPUReport{Samples: two(0), XIDs: []models.XIDLine{{At: now, Code: 13, Text: "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception"}}})
		beat(1, models.GPUReport{Samples: two(0)})
		if f0, f1 := fault(0), fault(1); f0 != "" || f1 != "" {
			t.Fatalf("faults on a healthy report: %q %q", f0, f1)
		}
		beat(0, models.GPUReport{Samples: two(2)})
		if f := fault(0); !strings.Contains(f, "GPU 0: 2 new uncorrectable ECC errors") {
			t.Fatalf("ECC: %q", f)
		}
		beat(1, models.GPUReport{Samples: two(0)[1:]})
		if f := fault(1); f != "GPU 0 (GPU-a) vanished from nvidia-smi" {
			t.Fatalf("vanished: %q", f)
		}
		db.Model(&models.ClusterNode{}).Where("cluster_id = ?", c.ID).Update("hw_fault", "")
		beat(1, models.GPUReport{XIDs: []models.XIDLine{{At: now, Code: 79, Text: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."}}})
		if f := fault(1); !strings.HasPrefix(f, "XID 79 (GPU has fallen off the bus): NVRM") {
			t.Fatalf("XID: %q", f)
		}
		got, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowHour)
		if err != nil || len(got.Nodes[1].XIDs) != 1 || got.Nodes[1].Fault == "" || got.Nodes[0].XIDs[0].Code != 13 {
			t.Fatalf("series: %+v %v", got.Nodes, err)
		}
	})
}

// X15: a machine without nvidia-smi says so, and the series shows it.
func TestGPUReportNoSMI(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		r := models.GPUReport{NoSMI: "nvidia-smi: command not found"}
		if _, err := e.s.Heartbeat(ctx, c, nodes[1], models.HeartbeatReport{GPU: &r}); err != nil {
			t.Fatal(err)
		}
		got, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowHour)
		if err != nil || got.Nodes[1].NoSMI != "nvidia-smi: command not found" || got.Nodes[1].LastAt == nil {
			t.Fatalf("%+v %v", got.Nodes[1], err)
		}
	})
}

// X15: the rollup turns complete hours of minute points into
// hourly points (idempotently), the 30d window reads them, and the prune
// forgets minute points after 48 h and hourly points after 30 days.
func TestGPURollupAndPrune(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		start := e.s.Now().Truncate(time.Hour)
		for m := range 60 {
			at := start.Add(time.Duration(m) * time.Minute)
			e.clock.Set(at.Add(time.Second))
			s := gpuSample(at, 0, m%2*100, 0) // 0 and 100 in turn: the hour's mean is 50
			s.Throttle = i64(int64(1) << (m % 3))
			if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: []models.GPUSample{s}}}); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Set(start.Add(65 * time.Minute))
		for range 2 {
			if n, err := e.s.RollupGPUHours(ctx, e.s.Now()); err != nil || n != 1 {
				t.Fatalf("rollup: %d rows, %v", n, err)
			}
		}
		got, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowMonth)
		if err != nil {
			t.Fatal(err)
		}
		p := got.Nodes[0].GPUs[0].Points
		if len(p) != 1 || *p[0].UtilPct != 50 || *p[0].Throttle != 7 || !p[0].At.Equal(start) {
			t.Fatalf("hourly: %+v", p)
		}
		e.clock.Set(start.Add(49 * time.Hour))
		if _, err := e.s.PruneGPUPoints(ctx); err != nil {
			t.Fatal(err)
		}
		var minutes, hours int64
		db.Model(&models.GPUPoint{}).Count(&minutes)
		db.Model(&models.GPUHour{}).Count(&hours)
		if minutes != 0 || hours != 1 {
			t.Fatalf("after 49 h: %d minute points, %d hourly", minutes, hours)
		}
		e.clock.Set(start.Add(31 * 24 * time.Hour))
		if _, err := e.s.PruneGPUPoints(ctx); err != nil {
			t.Fatal(err)
		}
		db.Model(&models.GPUHour{}).Count(&hours)
		if hours != 0 {
			t.Fatalf("after 31 days: %d hourly points", hours)
		}
	})
}

// The gpu-watch job reads GPUMinutesByID, folded by the database; it must
// say exactly what folding the displayed series says (GPUSeries.Minutes),
// for every window: GPUs that report no utilization or no memory, a
// machine without points, hours rolled up, buckets of the 24-hour window.
func TestGPUMinutesFoldLikeTheSeries(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		start := e.s.Now().Truncate(time.Hour)
		for m := range 150 {
			at := start.Add(time.Duration(m) * time.Minute)
			e.clock.Set(at.Add(time.Second))
			var samples []models.GPUSample
			for g := range 3 {
				s := gpuSample(at, g, (m*7+g*31)%101, 0)
				switch {
				case g == 1 && m%5 == 0:
					s.UtilPct = nil // "[N/A]" now and then
				case g == 2 && m%3 == 0:
					s.MemUsedMiB, s.PowerW = nil, nil
				}
				samples = append(samples, s)
			}
			if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: samples}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.s.RollupGPUHours(ctx, e.s.Now()); err != nil {
			t.Fatal(err)
		}
		for _, w := range []models.GPUWindow{models.GPUWindowHour, models.GPUWindowDay, models.GPUWindowMonth} {
			series, err := e.s.GPUSeriesByID(ctx, c.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.s.GPUMinutesByID(ctx, c.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			want := foldSeries(series)
			if len(want.Nodes) != 2 || len(want.Nodes[0].Points) < 2 || want.Nodes[1].Points != nil {
				t.Fatalf("%s: setup: %d machines, %d points", w, len(want.Nodes), len(want.Nodes[0].Points))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: folded by the database\n%+v\nwant\n%+v", w, got, want)
			}
		}
	})
}

// foldSeries is the watch rules' fold written plainly over the displayed
// series, the reference GPUMinutesByID must agree with: per machine and
// step, the mean and highest utilization of the GPUs that reported one,
// their memory and power summed.
func foldSeries(s models.GPUSeries) models.GPUMinutes {
	out := models.GPUMinutes{From: s.From, Step: s.Step}
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
		ns := models.NodeSeries{Node: n.Name}
		for at, a := range by {
			ns.Points = append(ns.Points, models.NodeMinute{At: time.Unix(at, 0).UTC(), UtilAvg: a.sum / float64(a.count), UtilMax: a.max,
				MemUsedMiB: a.mem, PowerW: a.power})
		}
		sort.Slice(ns.Points, func(i, j int) bool { return ns.Points[i].At.Before(ns.Points[j].At) })
		out.Nodes = append(out.Nodes, ns)
	}
	return out
}
