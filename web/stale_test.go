package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// staleCluster is a ready cluster with a start command running on every
// node and each machine's 8 GPUs reporting 94 % at 72 °C for a few minutes.
func staleCluster(t testing.TB, app *testApp, acc account, name string) models.Cluster {
	t.Helper()
	return reportingCluster(t, app, acc, name, 94, 3)
}

// reportingCluster is a ready cluster with a start command running on
// every node and each machine's 8 GPUs at util % for the last minutes.
func reportingCluster(t testing.TB, app *testApp, acc account, name string, util, minutes int) models.Cluster {
	t.Helper()
	ctx := context.Background()
	cl := readyFor(t, app, acc, name)
	if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("start_command", "python train.py").Error; err != nil {
		t.Fatal(err)
	}
	cl, _ = app.store.ClusterByID(ctx, cl.ID)
	nodes, _ := app.store.NodesFor(ctx, cl.ID)
	for _, n := range nodes {
		if err := app.store.RecordStart(ctx, cl, n, models.StartReport{State: models.StartRunning, StartedAt: app.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for range minutes {
		app.clock.Advance(time.Minute)
		for _, n := range nodes {
			util, temp, power, mem, total := util, 72, 600, 70000, 81559
			var samples []models.GPUSample
			for g := range 8 {
				samples = append(samples, models.GPUSample{At: app.clock.Now().Add(-10 * time.Second), Index: g, UUID: n.Name + string(rune('a'+g)),
					UtilPct: &util, TempC: &temp, PowerW: &power, MemUsedMiB: &mem, MemTotalMiB: &total})
			}
			if err := app.store.RecordGPUReport(ctx, cl, n, models.GPUReport{Samples: samples}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cl
}

// X15, N3, X5: every "now" on the cluster page and in the API is the
// machine's present state or says when it was last seen. A running
// cluster shows its GPUs now and its start command running; once its
// budget stopped it, no figure says now (the cluster's "94 % last seen
// HH:MM", each machine's "–", errors "unknown (last seen …)"), the start
// command is unknown (never "running since") on the page and in the API,
// and the metrics API has no "now" value. A machine down in a running
// cluster says its errors are unknown, not "no errors"; a replacement not
// placed yet shows none of the old machine's steps as done.
func TestStaleFiguresSayLastSeen(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		browser := app.login(owner)
		cl := staleCluster(t, app, owner, "train")

		d := doc(t, browser.get("/clusters/"+cl.ID))
		if got := d.Find(`[data-testid=gpu-cluster-spark]`).First().Text(); !strings.Contains(got, "94 % now") {
			t.Fatalf("running cluster: %q", got)
		}
		if got := d.Find(`[data-testid=node-start]`).First().Text(); !strings.Contains(got, "running since") {
			t.Fatalf("running start command: %q", got)
		}

		if _, err := app.store.RequestStop(ctx, owner.org.ID, cl.ID, models.StopByBudget, "budget reached"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.MarkStopped(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		d = doc(t, browser.get("/clusters/"+cl.ID))
		if got := d.Find(`[data-testid=gpu-cluster-spark]`).First().Text(); strings.Contains(got, "now") || !strings.Contains(got, "94 % last seen "+app.clock.Now().Add(-time.Minute).Format("15:04")) {
			t.Errorf("stopped cluster's utilization: %q", got)
		}
		d.Find(`[data-testid=gpu-row]`).Each(func(_ int, r *goquery.Selection) {
			if u, tp, e := r.Find(`[data-testid=gpu-util-now]`).Text(), r.Find(`[data-testid=gpu-temp]`).Text(), r.Find(`[data-testid=gpu-errors]`).Text(); u != "–" || strings.Contains(tp, "72") ||
				!strings.HasPrefix(e, "unknown (last seen ") {
				t.Errorf("stopped machine: util %q temp %q errors %q", u, tp, e)
			}
		})
		d.Find(`[data-testid=node-start]`).Each(func(_ int, s *goquery.Selection) {
			if got := s.Text(); strings.Contains(got, "running since") || !strings.Contains(got, "unknown, the machine is stopped") {
				t.Errorf("stopped node's start command: %q", got)
			}
		})
		code, out := apiJSON(t, app, http.MethodGet, "/v1/gpu/clusters/"+cl.ID, tok, "")
		nodes, _ := out["nodes"].([]any)
		for _, n := range nodes {
			sc, _ := n.(map[string]any)["startCommand"].(map[string]any)
			if code != http.StatusOK || sc["state"] != "unknown" || !strings.Contains(sc["error"].(string), "is stopped") {
				t.Errorf("API start command of a stopped node: %d %v", code, sc)
			}
		}
		code, out = apiJSON(t, app, http.MethodGet, "/v1/gpu/clusters/"+cl.ID+"/metrics", tok, "")
		if s, _ := out["summary"].(string); code != http.StatusOK || strings.Contains(s, "% now") {
			t.Errorf("metrics summary of a stopped cluster: %d %q", code, s)
		}
		for _, n := range out["nodes"].([]any) {
			for _, g := range n.(map[string]any)["gpus"].([]any) {
				if now := g.(map[string]any)["now"]; now != nil {
					t.Fatalf("metrics of a stopped cluster: now %v", now)
				}
			}
		}

		// A machine down in a running cluster; a replacement not placed yet.
		live := staleCluster(t, app, owner, "live")
		app.db.Model(&models.Cluster{}).Where("id = ?", live.ID).Update("status", models.StatusDegraded)
		app.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", live.ID).Updates(map[string]any{"status": models.NodeDown, "down_since": app.clock.Now()})
		d = doc(t, browser.get("/clusters/"+live.ID))
		row := d.Find(`[data-testid=gpu-row][data-node=node-1]`)
		if e := row.Find(`[data-testid=gpu-errors]`).Text(); e == "no errors" || !strings.HasPrefix(e, "unknown (last seen ") {
			t.Errorf("down machine's errors: %q", e)
		}
		if e := d.Find(`[data-testid=gpu-row][data-node=node-0] [data-testid=gpu-errors]`).Text(); e != "no errors" {
			t.Errorf("running machine's errors: %q", e)
		}
		app.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", live.ID).Updates(map[string]any{"status": models.NodeJoining,
			"join_kind": "replace", "join_placed_at": nil})
		d = doc(t, browser.get("/clusters/"+live.ID))
		d.Find(`[data-testid=node-row][data-node=node-1] [data-testid=node-step]`).Each(func(_ int, s *goquery.Selection) {
			if st, _ := s.Attr("data-state"); st == "done" {
				t.Errorf("the replacement shows the old machine's step %q as done", strings.TrimSpace(s.Text()))
			}
		})
	})
}
