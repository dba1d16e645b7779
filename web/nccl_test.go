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

// L4: what each node's nvidia-smi showed at check-in is on the
// cluster page and in the API, node by node.
func TestNodeGPUsShown(t *testing.T) {
	o := loadOpenAPI(t)
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("gpus@example.com", "GPUs")
		tok := apiKeyFor(t, app, acc)
		cl := launchFor(t, app, acc, "gpus") // 2 × 8 H100_80GB
		if err := app.store.MarkPlaced(ctx, cl.ID, []models.PlacedNode{{Rank: 0, PrivateIP: "10.77.0.1"}, {Rank: 1, PrivateIP: "10.77.0.2"}}); err != nil {
			t.Fatal(err)
		}
		cl, _ = app.store.ClusterForOrg(ctx, acc.org.ID, cl.ID)
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		smi := "index, name, memory.total [MiB], driver_version\n" + strings.Repeat("0, NVIDIA H100 80GB HBM3, 81559 MiB, 550.90.07\n", 8)
		body, _ := json.Marshal(map[string]any{"hostname": "node-1", "privateIp": "10.77.0.2", "version": "1", "nvidiaSmi": smi})
		if rec, _ := o.call(t, app, "POST", "/v1/agent/checkin", models.AgentToken(cl, nodes[1]), string(body)); rec.Code != 200 {
			t.Fatalf("check-in: %d %s", rec.Code, rec.Body)
		}
		const want = "8 × NVIDIA H100 80GB HBM3 (81559 MiB), driver 550.90.07"
		_, got := o.call(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, tok, "")
		ns, _ := got["nodes"].([]any)
		if len(ns) != 2 || ns[1].(map[string]any)["gpus"] != want || ns[0].(map[string]any)["gpus"] != nil {
			t.Errorf("API nodes: %v", ns)
		}
		d := doc(t, app.login(acc).get("/clusters/"+cl.ID))
		if got := d.Find(`[data-node=node-1] [data-testid=node-gpus]`).Text(); got != want {
			t.Errorf("page node-1 GPUs: %q", got)
		}
		if step := d.Find(`[data-node=node-1] [data-step=agent]`).AttrOr("data-state", ""); step != "done" {
			t.Errorf("node-1's agent step is %q after a matching check-in", step)
		}
	})
}
