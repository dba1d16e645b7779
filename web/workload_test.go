package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// N3 on the agent protocol, the API and the page: no start order before the
// cluster is ready; then the order (user, node env, publish) until the agent
// reports a state; the state (and the exit) shows per node in the API and on
// the page, and the connections list the ports.
func TestStartCommandStateShown(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("w@example.com", "Workloads")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "wl", Software: "none", StartCommand: "python serve.py", Ports: []int{8888},
				Env: map[string]string{"HF_HOME": "/data"}}})
		if err != nil {
			t.Fatal(err)
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		agent := models.AgentToken(cl, nodes[1])
		beat := func(body string) (int, map[string]any) {
			t.Helper()
			return apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, body)
		}
		if code, res := beat(`{}`); code != 200 || res["start"] != nil {
			t.Fatalf("heartbeat before ready: %d %v", code, res)
		}
		node1 := func() map[string]any {
			t.Helper()
			_, j := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, tok, "")
			return j["nodes"].([]any)[1].(map[string]any)["startCommand"].(map[string]any)
		}
		if st := node1(); st["state"] != "waiting" {
			t.Errorf("before ready: %v", st)
		}

		cl = makeJoined(t, app, cl, true)
		code, res := beat(`{}`)
		order, _ := res["start"].(map[string]any)
		if code != 200 || order == nil || order["user"] != "ubuntu" || order["publish"] != true {
			t.Fatalf("heartbeat once ready: %d %v", code, res)
		}
		if env := order["env"].(map[string]any); env["NODE_RANK"] != "1" || env["MASTER_ADDR"] != "10.77.0.1" || env["NNODES"] != "2" {
			t.Errorf("order env %v", env)
		}
		running := `{"start":{"state":"running","startedAt":"2026-12-01T10:00:00.123456789Z"}}`
		if code, res := beat(running); code != 200 || res["start"] != nil {
			t.Errorf("heartbeat with a state: %d %v (the order again)", code, res)
		}
		beat(running) // the same state again: no second event
		if st := node1(); st["state"] != "running" || st["startedAt"] != "2026-12-01T10:00:00.123456Z" || st["exitCode"] != nil {
			t.Errorf("running: %v", st)
		}
		if code, _ := beat(`{"start":{"state":"exited","startedAt":"2026-12-01T10:00:00.123456789Z"}}`); code != http.StatusBadRequest {
			t.Errorf("an exit without its code: %d", code)
		}
		beat(`{"start":{"state":"exited","startedAt":"2026-12-01T10:00:00.123456789Z","exitCode":3,"endedAt":"2026-12-01T10:05:00Z"}}`)
		beat(running) // a late running report does not undo the exit
		if st := node1(); st["state"] != "exited" || st["exitCode"] != float64(3) || st["endedAt"] != "2026-12-01T10:05:00Z" {
			t.Errorf("exited: %v", st)
		}
		events, _ := app.store.EventsFor(ctx, cl.ID)
		var started, exited int
		for _, e := range events {
			started += strings.Count(e.Message, "node-1's start command started")
			exited += strings.Count(e.Message, "node-1's start command exited with code 3")
		}
		if started != 1 || exited != 1 {
			t.Errorf("%d start and %d exit events, want 1 each", started, exited)
		}

		d := doc(t, app.login(acc).get("/clusters/"+cl.ID))
		row := d.Find(`[data-testid=node-row][data-node=node-1] [data-testid=node-start]`)
		if st, _ := row.Attr("data-state"); st != "exited" || !strings.Contains(row.Text(), "exited with code 3 at 10:05:00") {
			t.Errorf("node-1's start on the page: %q %q", st, row.Text())
		}
		if st, _ := d.Find(`[data-testid=node-row][data-node=node-0] [data-testid=node-start]`).Attr("data-state"); st != "waiting" {
			t.Errorf("node-0's start on the page: %q", st)
		}
		d = doc(t, app.login(acc).get("/clusters/"+cl.ID+"?tab=connect"))
		port := d.Find(`[data-testid=connect-port][data-port="8888"]`)
		if pub, _ := port.Attr("data-published"); pub != "true" || !strings.Contains(port.Text(), "n1.example.net:8888") {
			t.Errorf("connections panel port: %q %q", pub, port.Text())
		}
		if !strings.Contains(d.Find(`[data-testid=start-command]`).Text(), "python serve.py") {
			t.Error("the connections panel does not show the start command")
		}
		_, conn := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/connections", tok, "")
		raw, _ := json.Marshal(conn["ports"])
		if want := `[{"addresses":["n0.example.net:8888","n1.example.net:8888"],"note":"Open between the nodes and published on every node's public address.","port":8888,"published":true,"tunnel":"ssh -N -L 8888:localhost:8888 -p 22 ubuntu@n0.example.net"}]`; string(raw) != want {
			t.Errorf("connections ports = %s\nwant %s", raw, want)
		}
	})
}

// S1: the kubeconfig offered is only ever node-0's. When node-0's
// install printed none, nothing is offered (no made-up file with a
// placeholder CA): the API answers 409 and the page says it is not
// available yet.
func TestNoKubeconfigUntilNodeZeroReportsIt(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("kc@example.com", "Kube")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "k", Software: "kubernetes"}})
		if err != nil {
			t.Fatal(err)
		}
		cl = makeJoined(t, app, cl, true)
		run, err := app.store.SoftwareRunFor(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.store.AddSoftwareTasks(ctx, cl, run.Attempt, []models.NewSoftwareTask{{Kind: models.TaskInstall, Rank: 0,
			Role: "control-plane", Payload: models.TaskPayload{Script: "kubeadm init"}}}); err != nil {
			t.Fatal(err)
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		agent := models.AgentToken(cl, nodes[0])
		_, hb := apiJSON(t, app, "POST", "/v1/agent/heartbeat", agent, `{}`)
		task, _ := hb["task"].(map[string]any)
		if task == nil {
			t.Fatalf("no install task: %v", hb)
		}
		if code, res := apiJSON(t, app, "POST", "/v1/agent/tasks/"+task["id"].(string), agent, `{"ok":true,"output":"[init] ok\nYour Kubernetes control-plane has initialized successfully!\n"}`); code != 200 {
			t.Fatalf("install result: %d %v", code, res)
		}
		code, res := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/kubeconfig", tok, "")
		if e, _ := res["error"].(map[string]any); code != http.StatusConflict || e["code"] != "kubeconfig_not_ready" {
			t.Errorf("kubeconfig after an install that printed none: %d %v", code, res)
		}
		browser := app.login(acc)
		d := doc(t, browser.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=kubeconfig]`).Length() != 0 || !strings.Contains(d.Find(`[data-testid=kubeconfig-pending]`).Text(), "not available yet") {
			t.Error("the page offers a kubeconfig node-0 did not report, or does not say it is not available yet")
		}
		if rec := browser.get("/clusters/" + cl.ID + "/kubeconfig"); rec.Code != http.StatusConflict || strings.Contains(rec.Body.String(), "kind: Config") {
			t.Errorf("page download: %d", rec.Code)
		}
	})
}
