package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// OP1: POST /v1/agent/claim trades the cluster's bootstrap token for the
// claiming machine's node token, once per rank; every refusal has its code.
func TestAgentClaim(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("c@example.com", "Claims")
		cl := launchFor(t, app, acc, "claims")
		token := models.BootstrapToken(cl)
		claim := func(tok, body string) (int, map[string]any) {
			return apiJSON(t, app, "POST", "/v1/agent/claim", tok, body)
		}
		code0 := func(body map[string]any) any {
			e, _ := body["error"].(map[string]any)
			return e["code"]
		}
		if code, body := claim(token, `{"machineId":"i-0","hostname":"h0"}`); code != http.StatusConflict || code0(body) != "not_placed" {
			t.Errorf("before the placement: %d %v", code, body)
		}
		if err := app.store.MarkPlaced(ctx, cl.ID, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0"}, {Rank: 1, ProviderNodeID: "i-1"}}); err != nil {
			t.Fatal(err)
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		for _, bad := range []string{"", models.AgentToken(cl, nodes[0]), token + "0", "cdb_cl_nope_00"} {
			if code, body := claim(bad, `{"machineId":"i-0"}`); code != http.StatusUnauthorized || code0(body) != "unauthorized" {
				t.Errorf("token %q: %d %v, want 401 unauthorized", bad, code, body)
			}
		}
		if code, body := claim(token, `{"machineId":"i-7","hostname":"h7"}`); code != http.StatusForbidden || code0(body) != "unknown_machine" {
			t.Errorf("a machine not in the group: %d %v", code, body)
		}
		if code, body := claim(token, `not json`); code != http.StatusBadRequest {
			t.Errorf("bad body: %d %v", code, body)
		}
		code, body := claim(token, `{"machineId":"i-1","hostname":"h1","privateIp":"192.168.4.2"}`)
		if code != http.StatusOK || body["node"] != "node-1" || body["rank"].(float64) != 1 || body["cluster"] != cl.ID {
			t.Fatalf("claim of i-1: %d %v", code, body)
		}
		nodeToken, _ := body["token"].(string)
		if nodeToken != models.AgentToken(cl, nodes[1]) {
			t.Fatalf("the claim answered token %q, want node-1's", nodeToken)
		}
		// The node token works for every other endpoint, as node-1; the
		// bootstrap token does not.
		code, body = apiJSON(t, app, "POST", "/v1/agent/checkin", nodeToken, `{"hostname":"h1","version":"1"}`)
		if code != http.StatusOK || body["node"] != "node-1" {
			t.Fatalf("checkin with the claimed token: %d %v", code, body)
		}
		peers := body["peers"].([]any)
		if addr := peers[1].(map[string]any)["address"]; addr != "192.168.4.2" {
			t.Errorf("node-1's address in the peers = %v, want the agent's reported 192.168.4.2", addr)
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/agent/heartbeat", token, `{}`); code != http.StatusUnauthorized {
			t.Errorf("heartbeat with the bootstrap token: %d, want 401", code)
		}
		// node-1 is bound to i-1: another machine reporting node-1's
		// address is refused, i-1 itself gets its token again.
		if code, body := claim(token, `{"hostname":"intruder","privateIp":"192.168.4.2"}`); code != http.StatusConflict || code0(body) != "rank_claimed" {
			t.Errorf("second claim of node-1 by another machine: %d %v", code, body)
		}
		if code, body := claim(token, `{"machineId":"i-1"}`); code != http.StatusOK || body["token"] != nodeToken {
			t.Errorf("i-1 again: %d %v", code, body)
		}
		// node-0's agent reporting node-1's address is refused (L4 c: a
		// machine would reach itself); with its own mesh port it is told
		// apart, and its peers dial that port.
		token0 := models.AgentToken(cl, nodes[0])
		code, body = apiJSON(t, app, "POST", "/v1/agent/checkin", token0, `{"hostname":"h0","version":"1","privateIp":"192.168.4.2"}`)
		if code != http.StatusConflict || code0(body) != "address_taken" {
			t.Errorf("node-0 checking in with node-1's address: %d %v", code, body)
		}
		code, body = apiJSON(t, app, "POST", "/v1/agent/checkin", token0, `{"hostname":"h0","version":"1","privateIp":"192.168.4.2","meshPort":7000}`)
		if code != http.StatusOK {
			t.Fatalf("node-0 with its own mesh port: %d %v", code, body)
		}
		if p0 := body["peers"].([]any)[0].(map[string]any); p0["address"] != "192.168.4.2" || p0["port"] != float64(7000) {
			t.Errorf("node-0 in the peers: %v", p0)
		}
		app.store.RequestTerminate(ctx, acc.org.ID, cl.ID, "test")
		if code, body := claim(token, `{"machineId":"i-0"}`); code != http.StatusGone || code0(body) != "cluster_ended" {
			t.Errorf("after terminate: %d %v", code, body)
		}
	})
}
