package web

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X4: the NCCL check reaches node-0 through the agent protocol, and what
// it measured is shown on the cluster page and in the API beside what the
// interconnect advertises, with a warning when it is far below; every
// request and answer is checked against the OpenAPI document.
func TestNCCLCheckShown(t *testing.T) {
	fixture, err := os.ReadFile("../models/nodespec/testdata/nccl_all_reduce_perf_2node_16x_h100_sweep.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := loadOpenAPI(t)
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("nccl@example.com", "Fabric")
		tok := apiKeyFor(t, app, acc)
		cl := makeJoined(t, app, launchFor(t, app, acc, "fabric"), true) // 2 × 8 H100 on InfiniBand, ready
		c := app.login(acc)
		if doc(t, c.get("/clusters/"+cl.ID)).Find(`[data-testid=nccl]`).Length() != 0 {
			t.Error("an NCCL panel before the check was planned")
		}
		if err := app.store.PlanNCCLCheck(ctx, cl, "mpirun -np 16 all_reduce_perf\n"); err != nil {
			t.Fatal(err)
		}
		if st := doc(t, c.get("/clusters/"+cl.ID)).Find(`[data-testid=nccl]`).AttrOr("data-state", ""); st != "pending" {
			t.Errorf("panel state %q, want pending", st)
		}

		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		head := models.AgentToken(cl, nodes[0])
		rec, hb := o.call(t, app, "POST", "/v1/agent/heartbeat", head, `{}`)
		task, _ := hb["task"].(map[string]any)
		if rec.Code != 200 || task["kind"] != "nccl" || task["script"] != "mpirun -np 16 all_reduce_perf\n" {
			t.Fatalf("node-0 heartbeat: %d %v", rec.Code, hb)
		}
		result, _ := json.Marshal(map[string]any{"ok": true, "output": string(fixture)})
		if rec, out := o.call(t, app, "POST", "/v1/agent/tasks/"+task["id"].(string), head, string(result)); rec.Code != 200 || out["status"] != "measured" {
			t.Fatalf("result: %d %v", rec.Code, out)
		}

		// InfiniBand: 8 × 400 Gbit/s per node, 2 nodes, 16 ranks: 750 GB/s expected; 338.82 measured.
		rec, got := o.call(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, tok, "")
		n, _ := got["nccl"].(map[string]any)
		if rec.Code != 200 || n["status"] != "measured" || n["busBandwidthGBps"] != 338.82 || n["expectedBusBandwidthGBps"] != 750.0 ||
			n["advertisedGbpsPerNode"] != 3200.0 || n["percentOfExpected"] != 45.0 || !strings.Contains(n["warning"].(string), "45 %") {
			t.Errorf("API nccl: %d %v", rec.Code, n)
		}
		d := doc(t, c.get("/clusters/"+cl.ID))
		if got := strings.Join(strings.Fields(d.Find(`[data-testid=nccl-measured]`).Text()), " "); got != "338.8 GB/s bus bandwidth (45 % of expected)" {
			t.Errorf("page measured: %q", got)
		}
		if got := d.Find(`[data-testid=nccl-expected]`).Text(); got != "750.0 GB/s expected from InfiniBand at 3.2 Tbit/s per node" {
			t.Errorf("page expected: %q", got)
		}
		if d.Find(`[data-testid=nccl-warning]`).Length() != 1 {
			t.Error("no warning at 45 % of the expectation")
		}

		other := app.signupAccount("other@example.com", "Others")
		if rec, _ := o.call(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, apiKeyFor(t, app, other), ""); rec.Code != 404 {
			t.Errorf("another organisation: %d", rec.Code)
		}
	})
}
