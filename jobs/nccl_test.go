package jobs_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// untilMeasured ticks a ready cluster until its NCCL check has an answer.
func (w *world) untilMeasured(id string) models.NCCLCheck {
	w.t.Helper()
	for end := w.clock.Now().Add(5 * time.Minute); w.clock.Now().Before(end); {
		w.clock.Advance(30 * time.Second)
		w.tick()
		ch, err := w.store.NCCLCheckFor(context.Background(), w.org.ID, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if ch != nil && (ch.Status == models.NCCLMeasured || ch.Status == models.NCCLFailed) {
			return *ch
		}
	}
	w.t.Fatalf("no NCCL result\n%s", w.events(id))
	return models.NCCLCheck{}
}

// X4: after ready, node-0's agent runs the all-reduce the connections
// panel shows across every GPU, once; the bus bandwidth parsed from its
// output is stored on the cluster beside what the interconnect
// advertises, and a fabric far below it is flagged.
func TestNCCLCheckAfterReady(t *testing.T) {
	tests := []struct {
		name       string
		accel      string
		gpus       int
		software   string
		fault      *sim.Fault
		advertised int     // Gbit/s per node
		expected   float64 // GB/s
		percent    [2]int  // the simulated fabric's published range
		warning    bool
	}{
		// 3 × 8 H100 with 8 × 400 Gbit/s NICs: B = 400 GB/s, 24 ranks:
		// 400·3·23/(24·2) = 575 GB/s; beyond two machines NCCL's default
		// algorithm is a ring, 46–48 GB/s per NIC: 368–384 GB/s, 64–66 %.
		{"infiniband", "H100_80GB", 8, "none", nil, 3200, 575, [2]int{63, 67}, false},
		// 3 × 4 A100 on the Ethernet overlay: held to its floor, 0.1 GB/s;
		// the overlay carries 1–2 Gbit/s, 0.125–0.25 GB/s.
		{"ethernet", "A100_80GB", 4, "slurm", nil, 2, 0.1, [2]int{125, 250}, false},
		// Half speed (NVIDIA/nccl issue 2409: 216–231 of 400 GB/s): 37–40 %.
		{"slow fabric", "H100_80GB", 8, "none", &sim.Fault{Kind: sim.FaultNCCLSlow}, 3200, 575, [2]int{37, 41}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				ctx := context.Background()
				w := newWorld(t, db)
				w.nccl = &jobs.NCCLCheck{Store: w.store}
				if tt.fault != nil {
					if err := w.cloud.Inject(*tt.fault); err != nil {
						t.Fatal(err)
					}
				}
				c := w.launchWith(tt.accel, 3, tt.gpus, tt.software)
				if ch, _ := w.store.NCCLCheckFor(ctx, w.org.ID, c.ID); ch != nil {
					t.Fatalf("a check before ready: %+v", ch)
				}
				if c = w.runUntil(c.ID, models.StatusReady, 40*time.Minute, 30*time.Second); c.Status != models.StatusReady {
					t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
				}
				ch := w.untilMeasured(c.ID)
				if w.cluster(c.ID).Status != models.StatusReady {
					t.Fatalf("the check ran on a %s cluster", w.cluster(c.ID).Status)
				}
				if ch.Status != models.NCCLMeasured || ch.AdvertisedGbps != tt.advertised ||
					ch.ExpectedBusBW < tt.expected-1e-9 || ch.ExpectedBusBW > tt.expected+1e-9 ||
					ch.Percent < tt.percent[0] || ch.Percent > tt.percent[1] || (ch.Warning != "") != tt.warning {
					t.Fatalf("check %s: busbw %.2f of %.3f GB/s (%d %%), advertised %d, warning %q\n%s",
						ch.Status, ch.BusBW, ch.ExpectedBusBW, ch.Percent, ch.AdvertisedGbps, ch.Warning, ch.Output)
				}
				if !strings.Contains(ch.Script, "all_reduce_perf -b 8 -e") || !strings.Contains(ch.Script, "-np "+strconv.Itoa(3*tt.gpus)) {
					t.Errorf("not the connections panel's command across every GPU:\n%s", ch.Script)
				}
				if ev := w.events(c.ID); !strings.Contains(ev, "info|ready|node-0||NCCL all-reduce across") {
					t.Errorf("no event with the measurement:\n%s", ev)
				}
				// Once: more ticks plan nothing and hand nothing out again.
				w.run(40*time.Minute, 5*time.Minute)
				if again, _ := w.store.NCCLCheckFor(ctx, w.org.ID, c.ID); again.TaskID != ch.TaskID || again.Status != ch.Status ||
					strings.Count(w.events(c.ID), "NCCL all-reduce across") != 1 {
					t.Errorf("the check ran again: %+v\n%s", again, w.events(c.ID))
				}
				if other, _ := w.store.NCCLCheckFor(ctx, "org_other", c.ID); other != nil {
					t.Error("another organisation reads the check")
				}
			})
		})
	}
}

// X4 over the agent protocol: only node-0 of the cluster gets and answers
// the check, a failed run is stored as failed with an error event, and
// answering again changes nothing.
func TestNCCLTaskProtocol(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.runUntil(w.launch("H100_80GB", 2, 8).ID, models.StatusReady, 10*time.Minute, 30*time.Second)
		other := w.runUntil(w.launch("H100_80GB", 2, 8).ID, models.StatusReady, 10*time.Minute, 30*time.Second)
		if err := (&jobs.NCCLCheck{Store: w.store}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if code, body := w.post(w.token(c, 1), "/v1/agent/heartbeat", struct{}{}); code != 200 || !strings.Contains(body, `"task":null`) {
			t.Errorf("node-1 heartbeat: %d %s, want no task", code, body)
		}
		code, body := w.post(w.token(c, 0), "/v1/agent/heartbeat", struct{}{})
		if code != 200 || !strings.Contains(body, `"kind":"nccl"`) || !strings.Contains(body, `"software":"nccl-tests"`) ||
			!strings.Contains(body, "all_reduce_perf") {
			t.Fatalf("node-0 heartbeat: %d %s", code, body)
		}
		ch, _ := w.store.NCCLCheckFor(ctx, w.org.ID, c.ID)
		if ch.Status != models.NCCLSent {
			t.Fatalf("after hand-out: %s", ch.Status)
		}
		failed := map[string]any{"ok": false, "output": "mpirun: command not found\nexit status 127"}
		for _, tok := range []string{w.token(c, 1), w.token(other, 0)} {
			if code, _ := w.post(tok, "/v1/agent/tasks/"+ch.TaskID, failed); code != 404 {
				t.Errorf("another node answering: %d, want 404", code)
			}
		}
		if code, body := w.post(w.token(c, 0), "/v1/agent/tasks/"+ch.TaskID, failed); code != 200 || !strings.Contains(body, `"status":"failed"`) {
			t.Fatalf("node-0's result: %d %s", code, body)
		}
		ok := map[string]any{"ok": true, "output": "# Avg bus bandwidth : 300\n"}
		if code, body := w.post(w.token(c, 0), "/v1/agent/tasks/"+ch.TaskID, ok); code != 200 || !strings.Contains(body, `"status":"failed"`) {
			t.Errorf("answering again: %d %s, want the recorded failure", code, body)
		}
		ch, _ = w.store.NCCLCheckFor(ctx, w.org.ID, c.ID)
		ev := w.events(c.ID)
		if ch.Status != models.NCCLFailed || ch.BusBW != 0 || !strings.Contains(ch.Summary, "mpirun: command not found") ||
			!strings.Contains(ev, "error|ready|node-0||The NCCL check did not measure the interconnect") || w.cluster(c.ID).Status != models.StatusReady {
			t.Errorf("stored %+v\n%s", ch, ev)
		}
	})
}
