package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// The agent runs the command the server knows how to read.
func TestAgentRunsTheGPUQuery(t *testing.T) {
	if agent.GPUQuery != nodespec.GPUQuery {
		t.Errorf("agent runs %q, the server reads %q", agent.GPUQuery, nodespec.GPUQuery)
	}
}

// L4: at check-in every node's nvidia-smi is read against the
// offer. Matching GPUs are kept per node; a node short of a GPU fails the
// cluster at once, naming the node and what it has, long before the agent
// step's deadline.
func TestGPUCheckAtCheckIn(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.runUntil(w.launch("H100_80GB", 3, 8).ID, models.StatusReady, 10*time.Minute, 30*time.Second)
		if c.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		checks, err := w.store.GPUChecks(ctx, w.org.ID, c.ID)
		if err != nil || len(checks) != 3 {
			t.Fatalf("GPU checks: %v, %+v", err, checks)
		}
		for i, ch := range checks {
			if ch.Rank != i || ch.Mismatch != "" || ch.Summary != "8 × NVIDIA H100 80GB HBM3 (81559 MiB), driver 550.90.07" {
				t.Errorf("node-%d: %+v", i, ch)
			}
		}
		if other, _ := w.store.GPUChecks(ctx, "org_other", c.ID); len(other) != 0 {
			t.Errorf("another organisation reads %d GPU checks", len(other))
		}

		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultGPUMissing, Node: 1}); err != nil {
			t.Fatal(err)
		}
		bad := w.launch("H100_80GB", 3, 8)
		bad = w.runUntil(bad.ID, models.StatusFailed, 10*time.Minute, 30*time.Second)
		if bad.Status != models.StatusFailed || bad.LastError != "gpu_mismatch:node-1" {
			t.Fatalf("status %s lastError %q\n%s", bad.Status, bad.LastError, w.events(bad.ID))
		}
		want := "node-1 does not have the GPUs of its offer: nvidia-smi lists 7 GPUs (7 × NVIDIA H100 80GB HBM3 (81559 MiB), driver 550.90.07), the offer promises 8 × H100 80GB."
		if ev := w.events(bad.ID); !strings.Contains(ev, "status|failed|node-1|agent|"+want) {
			t.Errorf("no failure event saying %q:\n%s", want, ev)
		}
		if waited := bad.EndedAt.Sub(*bad.PlacedAt); waited > 5*time.Minute {
			t.Errorf("failed %s after placement: it waited for a deadline", waited)
		}
	})
}
