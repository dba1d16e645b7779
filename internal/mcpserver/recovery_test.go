package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// R3, R5 through the tools: set_recovery sets the policy (the
// same call twice is the same policy; bad arguments are tool errors naming
// them); recover_cluster is refused with nothing_to_recover while every
// machine is up, and on a cluster degraded by a machine going down (the
// simulated cloud's goes_down, seen by the health job) asks for one
// attempt, which the recovery job makes. Another organisation's cluster
// is not found to either tool.
func TestRecoveryTools(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "recover-me")

		refused(t, cs, "recover_cluster", map[string]any{"cluster_id": id}, "nothing_to_recover", "nothing to recover")
		policy := map[string]any{"cluster_id": id, "mode": "restart", "max_attempts": 4, "cooldown_minutes": 7}
		for range 2 { // idempotent: the same answer twice
			r := ok(t, cs, "set_recovery", policy)
			rec, _ := r.data["recovery"].(map[string]any)
			if rec["mode"] != "restart" || rec["maxAttempts"] != 4.0 || rec["cooldownMinutes"] != 7.0 ||
				!strings.Contains(r.text, "up to 4 attempts per episode, 7 minutes apart") {
				t.Fatalf("set_recovery: %s", r.text)
			}
		}
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			for field, bad := range map[string]any{"mode": "sometimes", "max_attempts": 11, "cooldown_minutes": 0} {
				args := map[string]any{"cluster_id": id, "mode": "off", "max_attempts": 3, "cooldown_minutes": 5}
				args[field] = bad
				if r := callTool(t, cs, "set_recovery", args); !r.isError || !strings.Contains(r.text, field) {
					t.Errorf("%s: set_recovery %s=%v: error %v %s", w.name, field, bad, r.isError, r.text)
				}
			}
			if r := callTool(t, cs, "set_recovery", map[string]any{"cluster_id": id, "mode": "off"}); !r.isError || !strings.Contains(r.text, "max_attempts") {
				t.Errorf("%s: set_recovery without max_attempts: %s", w.name, r.text)
			}
		}
		if cl, _ := d.store.ClusterForOrg(context.Background(), d.org.ID, id); cl.Policy() != (models.RecoveryPolicy{Mode: "restart", MaxAttempts: 4, CooldownMinutes: 7}) {
			t.Errorf("refused calls changed the policy: %+v", cl.Policy())
		}

		rival := d.signup("rival@example.com", "Rival Labs", 100)
		rcs := mustConnect(t, ways[1], d, rival.key)
		refused(t, rcs, "set_recovery", map[string]any{"cluster_id": id, "mode": "off", "max_attempts": 1, "cooldown_minutes": 1}, "not_found")
		refused(t, rcs, "recover_cluster", map[string]any{"cluster_id": id}, "not_found")

		// A machine goes down; off, so nothing restarts it until asked.
		ok(t, cs, "set_recovery", map[string]any{"cluster_id": id, "mode": "off", "max_attempts": 3, "cooldown_minutes": 5})
		if err := d.cloud.Inject(sim.Fault{Kind: sim.FaultGoesDown, Group: id, Node: 1}); err != nil {
			t.Fatal(err)
		}
		status := ""
		for n := 0; n < 5 && status != "degraded"; n++ {
			d.healthPass()
			status = str(ok(t, cs, "get_cluster", map[string]any{"cluster_id": id}).data["status"])
		}
		g := ok(t, cs, "get_cluster", map[string]any{"cluster_id": id})
		if status != "degraded" || !strings.Contains(g.text, "recover_cluster") {
			t.Fatalf("after goes_down: %s", g.text)
		}
		r := ok(t, cs, "recover_cluster", map[string]any{"cluster_id": id})
		if rec, _ := r.data["recovery"].(map[string]any); rec["recoverNowRequested"] != true || !strings.Contains(r.text, "one attempt starts now") {
			t.Fatalf("recover_cluster: %s", r.text)
		}
		for n := 0; n < 5 && status != "ready"; n++ {
			d.healthPass()
			g = ok(t, cs, "get_cluster", map[string]any{"cluster_id": id})
			status = str(g.data["status"])
		}
		rec, _ := g.data["recovery"].(map[string]any)
		// The episode is over (attempts count again from 0); the attempt's outcome stays.
		if status != "ready" || rec["lastAttemptAt"] == nil || !strings.Contains(str(rec["outcomes"]), "node-1 outcome:restarted") ||
			!strings.Contains(g.text, "recover now") {
			t.Errorf("after recover_cluster: %s", g.text)
		}
	})
}

// L10 through the tools: add_worker admits one more machine, which the
// join job places and the agent joins; get_cluster then lists three ready
// machines. Another organisation's cluster is not found.
func TestAddWorkerTool(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "grow-me")
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		refused(t, mustConnect(t, ways[1], d, rival.key), "add_worker", map[string]any{"cluster_id": id}, "not_found")

		r := ok(t, cs, "add_worker", map[string]any{"cluster_id": id})
		if r.data["nodeCount"] != 3.0 || !strings.Contains(r.text, "Worker node-2 admitted") {
			t.Fatalf("add_worker: %s", r.text)
		}
		refused(t, cs, "add_worker", map[string]any{"cluster_id": id}, "join_in_progress")
		var nodes []any
		for n := 0; n < 15; n++ {
			d.tick()
			nodes, _ = ok(t, cs, "get_cluster", map[string]any{"cluster_id": id}).data["nodes"].([]any)
			if len(nodes) == 3 && nodes[2].(map[string]any)["status"] == "ready" {
				return
			}
		}
		t.Fatalf("node-2 did not join: %v", nodes)
	})
}

// B6 through the tools: resume_cluster is refused with not_stopped on a
// running cluster; on a stopped one it asks for the resume (the same call
// twice is the same resume); another organisation's cluster is not found.
func TestResumeTool(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "resume-me")
		refused(t, cs, "resume_cluster", map[string]any{"cluster_id": id}, "not_stopped")
		if _, err := d.store.RequestStop(ctx, d.org.ID, id, models.StopByBudget, "budget reached"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.store.MarkStopped(ctx, id); err != nil {
			t.Fatal(err)
		}
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		refused(t, mustConnect(t, ways[1], d, rival.key), "resume_cluster", map[string]any{"cluster_id": id}, "not_found")
		var first any
		for i := range 2 {
			r := ok(t, cs, "resume_cluster", map[string]any{"cluster_id": id})
			if r.data["status"] != "stopped" || r.data["resumeRequestedAt"] == nil || !strings.Contains(r.text, "every machine starts again") {
				t.Fatalf("resume_cluster: %s", r.text)
			}
			if i == 1 && r.data["resumeRequestedAt"] != first {
				t.Errorf("a second call changed the resume: %v then %v", first, r.data["resumeRequestedAt"])
			}
			first = r.data["resumeRequestedAt"]
		}
	})
}

// B6 through the tools: stop_cluster stops a ready cluster (the same call
// twice is the same stop, reason customer), is refused with not_running
// once it is stopping no more but stopped, with stop_unsupported and the
// provider's reason where machines cannot stop, and is not found for
// another organisation; resume_cluster then starts it again.
func TestStopTool(t *testing.T) {
	lambdaCannotStop := func(s *models.Settings) { // as main sets it from the providers (B6)
		s.StopRefusals = map[string]string{"lambda": "This cloud cannot stop a machine: terminate the cluster to end its billing."}
	}
	eachDeckSet(t, lambdaCannotStop, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "stop-me")
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		refused(t, mustConnect(t, ways[1], d, rival.key), "stop_cluster", map[string]any{"cluster_id": id}, "not_found")
		var first any
		for i := range 2 {
			r := ok(t, cs, "stop_cluster", map[string]any{"cluster_id": id})
			if r.data["stopReason"] != "customer" || r.data["stopRequestedAt"] == nil || !strings.Contains(r.text, "every machine is being stopped") {
				t.Fatalf("stop_cluster: %s", r.text)
			}
			if i == 1 && r.data["stopRequestedAt"] != first {
				t.Errorf("a second call changed the stop: %v then %v", first, r.data["stopRequestedAt"])
			}
			first = r.data["stopRequestedAt"]
		}
		if _, err := d.store.MarkStopped(ctx, id); err != nil {
			t.Fatal(err)
		}
		refused(t, cs, "stop_cluster", map[string]any{"cluster_id": id}, "not_running")
		if r := ok(t, cs, "resume_cluster", map[string]any{"cluster_id": id}); r.data["resumeRequestedAt"] == nil {
			t.Fatalf("resume_cluster after stop_cluster: %s", r.text)
		}
		other := d.readyCluster(cs, "cannot-stop")
		if err := d.store.DB().Model(&models.Cluster{}).Where("id = ?", other).Update("provider", "lambda").Error; err != nil {
			t.Fatal(err)
		}
		refused(t, cs, "stop_cluster", map[string]any{"cluster_id": other}, "stop_unsupported", "cannot stop a machine")
		if cl, _ := d.store.ClusterByID(ctx, other); cl.StopRequestedAt != nil {
			t.Fatal("a refused stop changed the cluster")
		}
	})
}
