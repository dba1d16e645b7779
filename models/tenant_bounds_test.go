package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// smiListing is a check-in's nvidia-smi output (nodespec.GPUQuery) listing
// H100s at the given indexes.
func smiListing(indexes ...int) string {
	var b strings.Builder
	b.WriteString("index, name, memory.total [MiB], driver_version\n")
	for _, i := range indexes {
		fmt.Fprintf(&b, "%d, NVIDIA H100 80GB HBM3, 81559 MiB, 550.90.07\n", i)
	}
	return b.String()
}

func countPoints(t *testing.T, db *gorm.DB, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Model(&models.GPUPoint{}).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// X19: a machine's GPUs are fixed when it registers — the indexes its
// first nvidia-smi listed, else its offer's GPUsPerNode — and a report
// naming another index is refused whole: nothing of it is kept.
func TestAbuseTelemetryRefusesGPUsTheMachineDoesNotHave(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e) // 8 GPUs per machine
		now := e.s.Now()
		beat := func(n models.ClusterNode, idx ...int) error {
			r := models.GPUReport{}
			for _, i := range idx {
				r.Samples = append(r.Samples, gpuSample(now, i, 50, 0))
			}
			_, err := e.s.Heartbeat(ctx, c, n, models.HeartbeatReport{GPU: &r})
			return err
		}
		refused := func(err error, what string) {
			t.Helper()
			var re *models.ReportError
			if !errors.As(err, &re) || re.Field != "gpu" || !strings.Contains(err.Error(), "not one of this machine's GPUs") {
				t.Fatalf("%s: %v, want a gpu report error naming the machine's GPUs", what, err)
			}
		}
		// No check-in listing: the offer's 8 GPUs, 0…7.
		refused(beat(nodes[0], 0, 1, 8), "index 8 of an 8-GPU offer")
		refused(beat(nodes[0], 12), "index 12")
		if n := countPoints(t, db, "cluster_id = ?", c.ID); n != 0 {
			t.Fatalf("a refused report kept %d points", n)
		}
		var machines int64
		db.Model(&models.GPUMachine{}).Where("cluster_id = ?", c.ID).Count(&machines)
		if machines != 0 {
			t.Fatalf("a refused report kept the machine's state")
		}
		if err := beat(nodes[0], 0, 7); err != nil {
			t.Fatalf("the offer's GPUs: %v", err)
		}
		// The first nvidia-smi fixes them: node-1 listed only 0…3; a later
		// check-in listing sixteen changes nothing.
		if _, err := models.CheckNodeGPUs(e.s, ctx, c, nodes[1], smiListing(0, 1, 2, 3)); err != nil {
			t.Fatal(err)
		}
		if _, err := models.CheckNodeGPUs(e.s, ctx, c, nodes[1], smiListing(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)); err != nil {
			t.Fatal(err)
		}
		refused(beat(nodes[1], 4), "index 4 after a check-in listing 0…3")
		if err := beat(nodes[1], 0, 1, 2, 3); err != nil {
			t.Fatalf("the GPUs the machine registered: %v", err)
		}
		// At most GPUsPerNode of them: a listing of 64 keeps the first 8.
		if _, err := models.CheckNodeGPUs(e.s, ctx, c, nodes[0], smiListing(func() []int {
			v := make([]int, 64)
			for i := range v {
				v[i] = i
			}
			return v
		}()...)); err != nil {
			t.Fatal(err)
		}
		refused(beat(nodes[0], 8), "index 8 after a check-in listing 64 GPUs on an 8-GPU offer")
		// A replacement machine registers afresh.
		if err := models.ForgetGPUMachine(e.s, ctx, c, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := models.CheckNodeGPUs(e.s, ctx, c, nodes[1], smiListing(4, 5, 6, 7)); err != nil {
			t.Fatal(err)
		}
		refused(beat(nodes[1], 0), "the old machine's index after a replacement")
		if err := beat(nodes[1], 4, 5); err != nil {
			t.Fatalf("the replacement's GPUs: %v", err)
		}
	})
}

// X19: points stored per machine-minute are bounded: one per GPU per
// minute, of at most MaxSamplesPerGPUMinute samples, however many reports
// repeat that minute.
func TestAbuseTelemetryPointsPerGPUMinute(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		minute := e.s.Now().Truncate(time.Minute)
		e.clock.Set(minute.Add(50 * time.Second))
		flood := make([]models.GPUSample, models.MaxGPUSamplesPerReport)
		for i := range flood {
			flood[i] = gpuSample(minute.Add(time.Duration(i%50)*time.Second), i%8, 10+i%80, 0)
		}
		for range 5 {
			if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: flood}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := countPoints(t, db, "cluster_id = ?", c.ID); n != 8 {
			t.Fatalf("%d points after 5 × 512 samples of one minute, want one per GPU (8)", n)
		}
		if n := countPoints(t, db, "cluster_id = ? AND n > ?", c.ID, models.MaxSamplesPerGPUMinute); n != 0 {
			t.Fatalf("%d points fold more than %d samples", n, models.MaxSamplesPerGPUMinute)
		}
		// An honest minute: two samples in two heartbeats, averaged.
		next := minute.Add(time.Minute)
		e.clock.Set(next.Add(50 * time.Second))
		for _, s := range []models.GPUSample{gpuSample(next, 0, 20, 0), gpuSample(next.Add(30*time.Second), 0, 60, 0)} {
			if _, err := e.s.Heartbeat(ctx, c, nodes[0], models.HeartbeatReport{GPU: &models.GPUReport{Samples: []models.GPUSample{s}}}); err != nil {
				t.Fatal(err)
			}
		}
		var p models.GPUPoint
		if err := db.Where("cluster_id = ? AND gpu = 0 AND at = ?", c.ID, next.Unix()).Take(&p).Error; err != nil {
			t.Fatal(err)
		}
		if p.N != 2 || *p.Util != 40 {
			t.Fatalf("an honest minute: n %d util %d, want 2 samples averaged to 40", p.N, *p.Util)
		}
	})
}

// X19: a metrics answer is bounded by window × machines × real GPUs:
// points stored for indexes a machine does not have (before the check, or
// written around it) are never in it, and each GPU has at most one point
// per step.
func TestAbuseTelemetrySeriesBoundedByRealGPUs(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, nodes := readyCluster(t, e)
		if _, err := models.CheckNodeGPUs(e.s, ctx, c, nodes[0], smiListing(0, 1)); err != nil {
			t.Fatal(err)
		}
		now := e.s.Now().Truncate(time.Minute)
		var rows []models.GPUPoint
		for m := 0; m < 90; m++ { // 90 minutes of node-0's 64 "GPUs"
			for g := 0; g < 64; g++ {
				rows = append(rows, models.GPUPoint{ClusterID: c.ID, Rank: 0, GPU: g, At: now.Add(-time.Duration(m) * time.Minute).Unix(), N: 2, Util: ip(50)})
			}
		}
		if err := db.CreateInBatches(rows, 500).Error; err != nil {
			t.Fatal(err)
		}
		for _, w := range []models.GPUWindow{models.GPUWindowHour, models.GPUWindowDay, models.GPUWindowMonth} {
			s, err := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			maxPoints := int(w.Span()/w.Step()) + 1
			gpus := 0
			for _, n := range s.Nodes {
				gpus += len(n.GPUs)
				for _, g := range n.GPUs {
					if len(g.Points) > maxPoints {
						t.Errorf("%s: GPU %d of rank %d has %d points, at most %d", w, g.Index, n.Rank, len(g.Points), maxPoints)
					}
				}
			}
			if len(s.Nodes[0].GPUs) != 2 || gpus != 2 {
				t.Fatalf("%s: %d GPUs in the answer (rank 0: %d), want node-0's two registered GPUs", w, gpus, len(s.Nodes[0].GPUs))
			}
			raw, _ := json.Marshal(s)
			// machines × real GPUs × points per window, at most 300 bytes a point, plus 4 KB per machine
			limit := len(s.Nodes)*4096 + 8*2*maxPoints*300
			if len(raw) > limit {
				t.Errorf("%s: answer of %d bytes, bound %d", w, len(raw), limit)
			}
		}
		hour, _ := e.s.GPUSeriesFor(ctx, c.OrgID, c.ID, models.GPUWindowHour)
		if got := len(hour.Nodes[0].GPUs[0].Points); got < 60 {
			t.Fatalf("the real GPU's hour: %d points, want every minute (60+)", got)
		}
	})
}
