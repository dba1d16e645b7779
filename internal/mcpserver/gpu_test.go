package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X15 through the tools: cluster_gpu_metrics returns
// the summary and one line per machine from the telemetry the simulated
// machines' agents reported; a bad
// window is a tool error naming it; set_gpu_watch opts in to the idle rule;
// launch_cluster takes idle_hours; another organisation's cluster is not
// found.
func TestGPUTools(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "gpus")
		r := ok(t, cs, "cluster_gpu_metrics", map[string]any{"cluster_id": id})
		// The simulated machines' agents sent their GPUs with their
		// heartbeats while the cluster came up.
		if !strings.Contains(r.text, "16 GPUs on 2 of 2 machines reporting: ") || !strings.Contains(r.text, "node-1: 8 GPUs at ") ||
			!strings.Contains(r.text, "no hardware errors") || !strings.Contains(r.text, "Stall alerts after 10 minutes; idle rule off.") {
			t.Fatalf("cluster_gpu_metrics: %s", r.text)
		}
		if r := callTool(t, cs, "cluster_gpu_metrics", map[string]any{"cluster_id": id, "window": "2h"}); !r.isError || !strings.Contains(r.text, "window") {
			t.Errorf("bad window: %s", r.text)
		}
		r = ok(t, cs, "set_gpu_watch", map[string]any{"cluster_id": id, "idle_rule": true, "idle_hours": 3, "idle_action": "stop"})
		if !strings.Contains(r.text, "below 5 % for 3 h: mail a warning, then stop the cluster 60 minutes later") {
			t.Fatalf("set_gpu_watch: %s", r.text)
		}
		if r := callTool(t, cs, "set_gpu_watch", map[string]any{"cluster_id": id, "idle_hours": 30}); !r.isError || !strings.Contains(r.text, "idle.hours") {
			t.Errorf("bad idle_hours: %s", r.text)
		}
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		rcs := mustConnect(t, ways[1], d, rival.key)
		refused(t, rcs, "cluster_gpu_metrics", map[string]any{"cluster_id": id}, "not_found")
		refused(t, rcs, "set_gpu_watch", map[string]any{"cluster_id": id, "idle_rule": false}, "not_found")

		qid := str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
		launched := str(ok(t, cs, "launch_cluster", map[string]any{"quote_id": qid, "name": "idle-opt-in", "idle_hours": 4, "idle_action": "terminate"}).data["id"])
		w, err := d.store.GPUWatchFor(ctx, d.org.ID, launched)
		if p := w.Policy(); err != nil || !p.IdleOn || p.IdleHours != 4 || p.IdleAction != models.IdleTerminate {
			t.Fatalf("launched with %+v (%v)", p, err)
		}
	})
}
