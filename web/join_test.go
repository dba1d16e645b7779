package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

func addWorkerCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-worker", map[string]any{"status": models.StatusReady, "ready_at": f.app.clock.Now()})
	return func() int { return f.api(http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/workers", "") },
		func() bool { return f.clusterNow(t, cl.ID).Nodes == 3 }
}

func replaceNodeCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-replace", map[string]any{"status": models.StatusDegraded, "ready_at": f.app.clock.Now()})
	f.app.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", cl.ID).Update("status", models.NodeDown)
	return func() int {
			return f.api(http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/nodes/1/replace", `{"confirm":true}`)
		},
		func() bool { return f.clusterNow(t, cl.ID).Joins == 1 }
}

// L10 through the router: a worker on a ready cluster answers 202 with the
// cluster counting it and its node joining; a second while it joins is
// 409 join_in_progress; a cluster that is not ready is 409 not_ready; the
// machine quota refuses it like a launch (403) and nothing changes.
func TestAddWorkerAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		cl := launchFor(t, app, owner, "train")
		path := "/v1/gpu/clusters/" + cl.ID + "/workers"

		code, out := apiJSON(t, app, http.MethodPost, path, tok, "")
		if code != http.StatusConflict || out["error"].(map[string]any)["code"] != "not_ready" {
			t.Fatalf("worker on a provisioning cluster: %d %v", code, out)
		}
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		if _, err := app.store.SetOrgQuota(context.Background(), owner.org.ID, 2, 1000); err != nil {
			t.Fatal(err)
		}
		code, out = apiJSON(t, app, http.MethodPost, path, tok, "")
		if code != http.StatusForbidden || out["error"].(map[string]any)["code"] != "quota_exceeded" {
			t.Fatalf("worker over the quota: %d %v", code, out)
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.Nodes != 2 {
			t.Fatalf("a refused worker changed the cluster: %d machines", got.Nodes)
		}
		if _, err := app.store.SetOrgQuota(context.Background(), owner.org.ID, 64, 1000); err != nil {
			t.Fatal(err)
		}
		code, out = apiJSON(t, app, http.MethodPost, path, tok, "")
		nodes, _ := out["nodes"].([]any)
		if code != http.StatusAccepted || out["nodeCount"] != float64(3) || len(nodes) != 3 ||
			nodes[2].(map[string]any)["status"] != "joining" || nodes[2].(map[string]any)["name"] != "node-2" {
			t.Fatalf("add worker: %d %v", code, out)
		}
		code, out = apiJSON(t, app, http.MethodPost, path, tok, "")
		if code != http.StatusConflict || out["error"].(map[string]any)["code"] != "join_in_progress" {
			t.Fatalf("second worker while one joins: %d %v", code, out)
		}
	})
}

// X5 through the router: replacing a machine that is not down is 409
// not_replaceable; without confirm the answer is the machine-hour price and
// nothing changes; a mistyped confirm is 422; confirmed, 202 and the node
// reads joining.
func TestReplaceNodeAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusDegraded, "ready_at": app.clock.Now()})
		path := func(rank string) string { return "/v1/gpu/clusters/" + cl.ID + "/nodes/" + rank + "/replace" }

		code, out := apiJSON(t, app, http.MethodPost, path("1"), tok, `{"confirm":true}`)
		if code != http.StatusConflict || out["error"].(map[string]any)["code"] != "not_replaceable" {
			t.Fatalf("replace a machine that is not down: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, http.MethodPost, path("7"), tok, ""); code != http.StatusNotFound {
			t.Errorf("replace node-7 of 2: %d, want 404", code)
		}
		// The address is the one the provider or the agent reported (OP1);
		// nothing is assumed at launch, so the test records one.
		app.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", cl.ID).
			Updates(map[string]any{"status": models.NodeDown, "private_ip": "10.77.0.2"})
		code, out = apiJSON(t, app, http.MethodPost, path("1"), tok, "")
		want := models.DecimalUSD(cl.MachineHour)
		if code != http.StatusOK || out["usdPerMachineHour"] != want || out["node"] != "node-1" || out["address"] != "10.77.0.2" {
			t.Fatalf("preview: %d %v, want %s per machine-hour", code, out, want)
		}
		if code, _ := apiJSON(t, app, http.MethodPost, path("1"), tok, `{"confirm":"yes"}`); code != http.StatusUnprocessableEntity {
			t.Errorf("mistyped confirm: %d, want 422", code)
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.Joins != 0 {
			t.Fatalf("an unconfirmed replacement changed the cluster")
		}
		code, out = apiJSON(t, app, http.MethodPost, path("1"), tok, `{"confirm":true}`)
		nodes, _ := out["nodes"].([]any)
		if code != http.StatusAccepted || len(nodes) != 2 || nodes[1].(map[string]any)["status"] != "joining" {
			t.Fatalf("confirmed replace: %d %v", code, out)
		}
	})
}

// L10, X5 on the cluster page: a ready cluster offers "Add worker" with the
// machine-hour price in its confirm; the button adds node-2 (joining); a
// down machine offers "Replace" with the price, which needs the confirm.
func TestJoinButtonsOnTheClusterPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		c := app.login(owner)
		cl := launchFor(t, app, owner, "train")
		price := "$" + models.DecimalUSD(cl.MachineHour) + "/h"
		if body := c.get("/clusters/" + cl.ID).Body.String(); strings.Contains(body, `data-testid="add-worker"`) {
			t.Fatal("a provisioning cluster offers Add worker")
		}
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		body := c.get("/clusters/" + cl.ID).Body.String()
		if !strings.Contains(body, `data-testid="add-worker"`) || !strings.Contains(body, "Add node-2: one more machine of this offer in the same location at "+price) {
			t.Fatalf("ready cluster page lacks Add worker with %s", price)
		}
		if rec := c.post("/clusters/"+cl.ID+"/workers", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("add worker from the page: %d %s", rec.Code, rec.Body.String())
		}
		body = c.get("/clusters/" + cl.ID).Body.String()
		if !strings.Contains(body, `data-node="node-2" data-status="joining"`) || strings.Contains(body, `data-testid="add-worker"`) {
			t.Fatal("after Add worker: node-2 is not joining, or the page still offers another")
		}

		other := launchFor(t, app, owner, "other")
		app.db.Model(&models.Cluster{}).Where("id = ?", other.ID).Updates(map[string]any{"status": models.StatusDegraded, "ready_at": app.clock.Now()})
		app.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 0", other.ID).Update("status", models.NodeDown)
		body = c.get("/clusters/" + other.ID).Body.String()
		if !strings.Contains(body, `data-testid="replace-node" data-node="node-0"`) || !strings.Contains(body, "Replace node-0 with a new machine of the same offer, same name and address, at "+price) {
			t.Fatal("a down machine is not offered for replacement with its price")
		}
		if rec := c.post("/clusters/"+other.ID+"/nodes/0/replace", nil); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("replace without the confirm: %d, want 422", rec.Code)
		}
		if rec := c.post("/clusters/"+other.ID+"/nodes/0/replace", url.Values{"confirm": {"1"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("confirmed replace from the page: %d", rec.Code)
		}
		if n, _ := app.store.NodesFor(context.Background(), other.ID); n[0].Status != models.NodeJoining {
			t.Errorf("node-0 after replace: %s", n[0].Status)
		}
	})
}
