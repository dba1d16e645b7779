package jobs_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// runBenchCloud is the test cloud with stock for 8 machines and a dozen
// replacements (a dead machine's host does not return to stock).
var runBenchCloud = strings.NewReplacer(`"nodes_available": 10, "boot_time": "4m"`, `"nodes_available": 40, "boot_time": "4m"`,
	`"nodes_available": 10, "boot_time": "10m"`, `"nodes_available": 40, "boot_time": "10m"`).Replace(testCloud)

// BenchmarkRunSurvivesFailures is X17's targets on the simulated cloud at
// the default timings (health every 30 s, the runs job every 10 s, real
// agents over HTTP, real database): a run of 8 machines on one offer, one
// machine killed every 2 hours over 24 simulated hours. It reports ETTR
// (productive over wall time since hand-over), the p90 and worst time
// from a machine's death to every rank running again (the replacement's
// boot dominates: 4 min on h100.8x.vm, 10 min on a100.4x.slow), the
// worst detection time, and the healthy machines re-provisioned (must be
// 0). Simulated time steps 10 minutes while nothing happens and 15 s from
// a death until the ranks resumed, so a run costs seconds.
//
//	go test ./jobs/ -run '^$' -bench BenchmarkRunSurvivesFailures -benchtime 1x
func BenchmarkRunSurvivesFailures(b *testing.B) {
	for _, o := range []struct {
		name, accel string
		gpus        int
	}{{"h100.8x.vm", "H100_80GB", 8}, {"a100.4x.slow", "A100_80GB", 4}} {
		b.Run("offer="+o.name, func(b *testing.B) {
			for range b.N {
				benchRun(b, o.accel, o.gpus)
			}
		})
	}
}

func benchRun(b *testing.B, accel string, gpus int) {
	ctx := context.Background()
	w := newRunWorldOn(b, modelstest.Open(b, "sqlite"), runBenchCloud)
	if _, err := w.store.Deposit(ctx, w.org.ID, 1_000_000*models.Micro, "bench-deposit", "bench"); err != nil {
		b.Fatal(err)
	}
	if err := w.store.DB().Model(&models.Org{}).Where("id = ?", w.org.ID).Update("max_machines", 64).Error; err != nil {
		b.Fatal(err)
	}
	cmd := sim.TrainProgram + " 2000 60"
	r := w.submit(models.RunSpec{Accelerator: accel, Nodes: 8, GPUsPerNode: gpus, VolumeGB: 1000, Command: cmd,
		ResumeCommand: cmd + " --resume", CheckpointDir: "ckpt", CheckpointSeconds: 60, RestartBudget: 20})
	for i := 0; i < 120 && w.run(r.ID).Status == models.RunLaunching; i++ {
		w.step(15 * time.Second)
	}
	if st := w.run(r.ID).Status; st != models.RunRunning {
		b.Fatalf("run %s: %s\n%s", st, w.run(r.ID).Message, w.events(r.ClusterID))
	}
	c := w.cluster(r.ClusterID)
	handedOver := *c.ReadyAt
	end := handedOver.Add(24 * time.Hour)
	var resume, detect []time.Duration
	replacedHealthy := 0
	for k := 0; ; k++ {
		next := handedOver.Add(time.Duration(k+1) * 2 * time.Hour)
		for w.clock.Now().Add(10 * time.Minute).Before(next) {
			w.step(10 * time.Minute)
		}
		if !next.Before(end) {
			break
		}
		w.step(next.Sub(w.clock.Now()))
		before, _ := w.store.NodesFor(ctx, c.ID)
		rank := 1 + k%7 // node-0 too would do; a worker is the common case
		killed := w.clock.Now()
		if ok, err := w.cloud.KillNow(c.GroupName(), rank); !ok || err != nil {
			b.Fatalf("kill %d: %v %v (run %s)\n%s", k, ok, err, w.run(r.ID).Status, w.events(c.ID))
		}
		gen := w.run(r.ID).Generation
		for i := 0; i < 160 && w.run(r.ID).Generation == gen; i++ {
			w.step(15 * time.Second)
		}
		run := w.run(r.ID)
		if run.Generation == gen || run.Status != models.RunRunning {
			b.Fatalf("kill %d: not resumed: %s %s\n%s", k, run.Status, run.Message, w.events(c.ID))
		}
		ints, _ := w.store.RunInterruptions(ctx, w.org.ID, r.ID)
		last := ints[len(ints)-1]
		detect = append(detect, last.DetectedAt.Sub(killed))
		resume = append(resume, last.ResumedAt.Sub(killed))
		after, _ := w.store.NodesFor(ctx, c.ID)
		for i := range after {
			if i != rank && after[i].ProviderNodeID != before[i].ProviderNodeID {
				replacedHealthy++
			}
		}
	}
	if w.clock.Now().Before(end) {
		w.step(end.Sub(w.clock.Now()))
	}
	bill, err := w.store.RunBill(ctx, w.run(r.ID), w.clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(resume)
	slices.Sort(detect)
	p90 := resume[(len(resume)*9+9)/10-1]
	b.ReportMetric(float64(bill.ETTRPermille)/10, "ettr_%")
	b.ReportMetric(p90.Minutes(), "death_to_resumed_p90_min")
	b.ReportMetric(resume[len(resume)-1].Minutes(), "death_to_resumed_max_min")
	b.ReportMetric(detect[len(detect)-1].Seconds(), "detect_dead_max_s")
	b.ReportMetric(float64(replacedHealthy), "healthy_reprovisioned")
	b.ReportMetric(float64(len(resume)), "kills")
	if replacedHealthy != 0 {
		b.Errorf("%d healthy machines re-provisioned", replacedHealthy)
	}
}
