package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// N3, V4: a heartbeat is one use case in one
// transaction. A heartbeat whose mounts report is refused keeps nothing
// of itself: not the node's liveness, not the start command's state it
// carried alongside; the same heartbeat made valid keeps both and gets
// the node's orders back.
func TestHeartbeatIsOneTransaction(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("hb@example.com", "Beats")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "hb", Software: "none", StartCommand: "python serve.py"}})
		if err != nil {
			t.Fatal(err)
		}
		cl = makeJoined(t, app, cl, true)
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		agent := models.AgentToken(cl, nodes[1])
		kept := func() (bool, int) {
			t.Helper()
			var n models.ClusterNode
			if err := app.db.Where("id = ?", nodes[1].ID).First(&n).Error; err != nil {
				t.Fatal(err)
			}
			starts, err := app.store.NodeStarts(ctx, acc.org.ID, cl.ID)
			if err != nil {
				t.Fatal(err)
			}
			return n.HeartbeatAt != nil, len(starts)
		}
		if alive, starts := kept(); alive || starts != 0 {
			t.Fatalf("before any heartbeat: alive %v, %d start states", alive, starts)
		}
		start := `"start":{"state":"running","startedAt":"2026-12-01T10:00:00Z"}`
		code, res := apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, `{`+start+`,"mounts":{"state":"mounted","startedAt":"2026-12-01T10:00:00Z"}}`)
		if e, _ := res["error"].(map[string]any); code != http.StatusBadRequest || e["message"] != "mounts: state \"mounted\" needs endedAt." {
			t.Fatalf("a mounts report without its end: %d %v", code, res)
		}
		if alive, starts := kept(); alive || starts != 0 {
			t.Errorf("a refused heartbeat kept part of itself: alive %v, %d start states", alive, starts)
		}
		code, res = apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, `{`+start+`,"mounts":{"state":"mounting","startedAt":"2026-12-01T10:00:00Z"}}`)
		if code != http.StatusOK || res["start"] != nil {
			t.Fatalf("a valid heartbeat: %d %v", code, res)
		}
		if alive, starts := kept(); !alive || starts != 1 {
			t.Errorf("a valid heartbeat: alive %v, %d start states", alive, starts)
		}
	})
}

// X15: a heartbeat's GPU samples are kept; a malformed or
// oversized report is refused with a clear 400 and the heartbeat keeps
// nothing (not its liveness, not a single point).
func TestHeartbeatGPUReport(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("gpu@example.com", "GPUs")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "gpu", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		cl = makeJoined(t, app, cl, true)
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		agent := models.AgentToken(cl, nodes[0])
		at := app.store.Now().Format(time.RFC3339)
		sample := func(util string) string {
			return `{"at":"` + at + `","index":0,"uuid":"GPU-a","utilizationPct":` + util + `,"memoryUsedMiB":1000,"memoryTotalMiB":81559,` +
				`"temperatureC":50,"powerW":null,"smClockMHz":1980,"eccUncorrectedVolatile":0,"throttleReasons":0}`
		}
		points := func() int64 {
			var n int64
			app.db.Model(&models.GPUPoint{}).Count(&n)
			return n
		}
		for body, msg := range map[string]string{
			`{"gpu":{"samples":[` + sample("140") + `]}}`:                                      "gpu: samples[0]: utilization 140 outside 0..100.",
			`{"gpu":{"samples":[` + sample(`"busy"`) + `]}}`:                                   "Send JSON: {start, mounts, gpu} (or an empty body).",
			`{"gpu":{"samples":[` + strings.Repeat(sample("5")+",", 512) + sample("5") + `]}}`: "gpu: 513 samples in one heartbeat, at most 512.",
		} {
			code, res := apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, body)
			if e, _ := res["error"].(map[string]any); code != http.StatusBadRequest || e["message"] != msg {
				t.Fatalf("%.60s…: %d %v, want 400 %q", body, code, res, msg)
			}
		}
		var n models.ClusterNode
		app.db.Where("id = ?", nodes[0].ID).First(&n)
		if points() != 0 || n.HeartbeatAt != nil {
			t.Fatalf("a refused report kept %d points, heartbeat %v", points(), n.HeartbeatAt)
		}
		if code, res := apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, `{"gpu":{"samples":[`+sample("55")+`]}}`); code != http.StatusOK {
			t.Fatalf("a valid report: %d %v", code, res)
		}
		s, err := app.store.GPUSeriesFor(ctx, acc.org.ID, cl.ID, models.GPUWindowHour)
		if err != nil || points() != 1 || *s.Nodes[0].GPUs[0].Now.UtilPct != 55 || s.Nodes[0].GPUs[0].Now.PowerW != nil {
			t.Fatalf("kept %d points, series %+v, %v", points(), s.Nodes[0], err)
		}
	})
}
