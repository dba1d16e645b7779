package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// reportGPUs stores minutes of 8-GPU samples for every node of cl through
// the telemetry store, node rank r at util(r).
func reportGPUs(t *testing.T, app *testApp, cl models.Cluster, minutes int, util func(rank int) int) {
	t.Helper()
	ctx := context.Background()
	nodes, err := app.store.NodesFor(ctx, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := app.clock.Now()
	for m := minutes; m >= 0; m-- {
		at := now.Add(-time.Duration(m) * time.Minute)
		for _, n := range nodes {
			u, used, total, temp, power := util(n.Rank), 40000+m*100, 81559, 60+n.Rank, 300+m
			var samples []models.GPUSample
			for g := range 8 {
				samples = append(samples, models.GPUSample{At: at, Index: g, UUID: "GPU-" + n.Name + string(rune('a'+g)),
					UtilPct: &u, MemUsedMiB: &used, MemTotalMiB: &total, TempC: &temp, PowerW: &power})
			}
			if err := app.store.RecordGPUReport(ctx, cl, n, models.GPUReport{Samples: samples}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// X15, A3, A4: GET …/metrics answers the stored series
// per machine and GPU with the cluster's utilization and a summary; a bad
// window is a 422 naming it; another organisation's cluster is 404.
func TestGPUMetricsAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		other := apiKeyFor(t, app, app.signupAccount("eve@example.com", "Other"))
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		reportGPUs(t, app, cl, 30, func(rank int) int { return 40 + 40*rank })
		path := "/v1/gpu/clusters/" + cl.ID + "/metrics"

		code, out := apiJSON(t, app, http.MethodGet, path+"?window=2h", tok, "")
		if fields, _ := out["error"].(map[string]any)["fields"].(map[string]any); code != http.StatusUnprocessableEntity || fields["window"] == nil {
			t.Fatalf("bad window: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, http.MethodGet, path, other, ""); code != http.StatusNotFound {
			t.Fatalf("another org: %d", code)
		}
		for _, w := range []string{"", "?window=1h", "?window=24h", "?window=30d"} {
			code, out = apiJSON(t, app, http.MethodGet, path+w, tok, "")
			if code != http.StatusOK {
				t.Fatalf("%s: %d %v", w, code, out)
			}
		}
		code, out = apiJSON(t, app, http.MethodGet, path+"?window=1h", tok, "")
		nodes := out["nodes"].([]any)
		gpus := nodes[1].(map[string]any)["gpus"].([]any)
		if len(nodes) != 2 || len(gpus) != 8 || len(gpus[0].(map[string]any)["points"].([]any)) < 30 || out["stepSeconds"] != float64(60) {
			t.Fatalf("series: %v", out)
		}
		cu := out["clusterUtilization"].([]any)
		if last := cu[len(cu)-1].(map[string]any); last["utilizationPct"] != float64(60) {
			t.Errorf("cluster utilization %v, want the mean of 40 and 80", last)
		}
		if s := out["summary"].(string); !strings.HasPrefix(s, "16 GPUs on 2 of 2 machines reporting: 60 % now") || !strings.Contains(s, "no hardware errors") {
			t.Errorf("summary %q", s)
		}
	})
}

// X15: the Overview charts each machine's utilization and
// memory (SVG with its numbers in words), temperature and power now, and
// the cluster's utilization over the hour and the day; before any report
// it says why there is nothing to chart.
func TestGPUPanelOnPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		c := app.login(owner)
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		d := doc(t, c.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=gpu-empty]`).Length() != 1 {
			t.Fatal("no telemetry yet: the panel should say so")
		}
		reportGPUs(t, app, cl, 30, func(rank int) int { return 90 * (1 - rank) })
		d = doc(t, c.get("/clusters/"+cl.ID))
		rows := d.Find(`[data-testid=gpu-row]`)
		if rows.Length() != 2 || d.Find(`[data-testid=gpu-cluster-spark] svg`).Length() != 2 {
			t.Fatalf("rows %d", rows.Length())
		}
		r0 := d.Find(`[data-testid=gpu-row][data-node=node-0]`)
		if got := r0.Find(`[data-testid=gpu-util-now]`).Text(); got != "90 %" {
			t.Errorf("node-0 now %q", got)
		}
		if got := r0.Find(`[data-testid=gpu-temp]`).Text(); got != "60 °C" {
			t.Errorf("temp %q", got)
		}
		if got := r0.Find(`[data-testid=gpu-power]`).Text(); got != "2.4 kW" {
			t.Errorf("power %q", got)
		}
		if got := r0.Find(`svg title`).First().Text(); got != "GPU utilization of node-0, last hour: now 90 %" {
			t.Errorf("title %q", got)
		}
		if got := d.Find(`[data-testid=gpu-row][data-node=node-1] [data-testid=gpu-util-now]`).Text(); got != "0 %" {
			t.Errorf("node-1 now %q", got)
		}
	})
}

// TestAbuseGPUMetricsRate (X15, X19): GET …/metrics is rate-limited per
// API key (GPUMetricsBurst, then GPUMetricsPerMinute) and per
// organisation across its keys, refused with 429 and Retry-After before
// any query, and another organisation's key is not affected.
func TestAbuseGPUMetricsRate(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppWith(t, db, func(d *Deps) { d.AgentLimitClock = d.Store.Now })
		ctx := context.Background()
		acc := app.signupAccount("metrics-rate@example.com", "Rate")
		other := app.signupAccount("metrics-calm@example.com", "Calm")
		cl, oc := launchFor(t, app, acc, "polled"), launchFor(t, app, other, "calm")
		tok, otherTok := apiKeyFor(t, app, acc), apiKeyFor(t, app, other)
		get := func(key, id string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "/v1/gpu/clusters/"+id+"/metrics?window=24h", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			return app.do(req)
		}
		for i := range GPUMetricsBurst {
			if rec := get(tok, cl.ID); rec.Code != http.StatusOK {
				t.Fatalf("metrics %d: %d %s", i+1, rec.Code, rec.Body)
			}
		}
		rec := get(tok, cl.ID)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "this credential") {
			t.Fatalf("metrics past the key's burst: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		if rec := get(otherTok, oc.ID); rec.Code != http.StatusOK {
			t.Fatalf("another organisation's key: %d", rec.Code)
		}
		// The organisation's share: its other keys together stop at its burst.
		spent := GPUMetricsBurst
		for k := 0; spent < gpuMetricsOrgBurst; k++ {
			_, key, err := app.store.CreateAPIKey(ctx, acc.org.ID, acc.env.ID, acc.user.ID, fmt.Sprintf("k%d", k))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < GPUMetricsBurst && spent < gpuMetricsOrgBurst; i++ {
				if rec := get(key, cl.ID); rec.Code != http.StatusOK {
					t.Fatalf("key %d, request %d (%d of the organisation's): %d", k, i, spent+1, rec.Code)
				}
				spent++
			}
		}
		_, fresh, _ := app.store.CreateAPIKey(ctx, acc.org.ID, acc.env.ID, acc.user.ID, "fresh")
		if rec := get(fresh, cl.ID); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "this organisation") {
			t.Fatalf("a fresh key past the organisation's burst: %d %s", rec.Code, rec.Body)
		}
		app.clock.Advance(time.Second) // GPUMetricsPerMinute refills one a second
		if rec := get(tok, cl.ID); rec.Code != http.StatusOK {
			t.Fatalf("after Retry-After: %d", rec.Code)
		}
	})
}
