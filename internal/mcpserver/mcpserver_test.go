package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// API5: both ways in list the same tools, each with a one-line
// description, an object input schema that refuses unknown arguments, and
// annotations set truthfully.
func TestToolsListed(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		type hints struct{ readOnly, destructive, idempotent bool }
		want := map[string]hints{
			"list_offers": {readOnly: true}, "list_clusters": {readOnly: true}, "get_cluster": {readOnly: true},
			"cluster_connections": {readOnly: true}, "cluster_logs": {readOnly: true},
			"quote_cluster": {}, "request_quote": {},
			"launch_cluster":    {idempotent: true},
			"terminate_cluster": {destructive: true, idempotent: true},
			"set_recovery":      {idempotent: true},                                                // R3: the same policy twice is one policy
			"recover_cluster":   {},                                                                // R5: each call asks for one more attempt
			"add_worker":        {},                                                                // L10: each call asks for one more machine
			"resume_cluster":    {idempotent: true},                                                // B6: asking again while it resumes changes nothing
			"stop_cluster":      {idempotent: true},                                                // B6: asking again while it stops changes nothing
			"get_balance":       {readOnly: true, idempotent: true},                                // B1
			"billing_usage":     {readOnly: true},                                                  // B3
			"list_volumes":      {readOnly: true},                                                  // V1
			"create_volume":     {},                                                                // V2
			"delete_volume":     {destructive: true},                                               // V3
			"wait_for_cluster":  {readOnly: true},                                                  // X16: blocks until a status
			"submit_run":        {}, "get_run": {readOnly: true}, "wait_for_run": {readOnly: true}, // X17
			"list_events":         {readOnly: true},    // X16: the feed after a cursor
			"cluster_gpu_metrics": {readOnly: true},    // X15: what the GPUs are doing
			"set_gpu_watch":       {idempotent: true},  // X15: the same settings twice are one setting
			"get_verification":    {readOnly: true},    // X13: the hand-over report
			"verify_cluster":      {},                  // X13: each call runs the checks again
			"keep_cluster":        {idempotent: true},  // X13: keeping it twice keeps it
			"offer_availability":  {readOnly: true},    // X18: the calendar
			"reserve_capacity":    {},                  // X18: each call without a key books again
			"list_reservations":   {readOnly: true},    // X18
			"get_reservation":     {readOnly: true},    // X18
			"cancel_reservation":  {destructive: true}, // X18: the refund follows the terms
		}
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				h, known := want[tool.Name]
				if !known {
					t.Errorf("%s: unexpected tool %s", w.name, tool.Name)
					continue
				}
				if tool.Description == "" || strings.Contains(tool.Description, "\n") {
					t.Errorf("%s: %s's description is not one line: %q", w.name, tool.Name, tool.Description)
				}
				a := tool.Annotations
				if a == nil || a.Title == "" || a.ReadOnlyHint != h.readOnly || ((!h.readOnly || h.idempotent) && (a.DestructiveHint == nil ||
					*a.DestructiveHint != h.destructive || a.IdempotentHint != h.idempotent)) {
					t.Errorf("%s: %s annotations %+v, want %+v", w.name, tool.Name, a, h)
				}
				var schema map[string]any
				raw, _ := json.Marshal(tool.InputSchema)
				_ = json.Unmarshal(raw, &schema)
				if schema["type"] != "object" || schema["additionalProperties"] == nil {
					t.Errorf("%s: %s input schema %s", w.name, tool.Name, raw)
				}
			}
			if len(names) != len(want) {
				t.Errorf("%s: tools %v", w.name, names)
			}
			launch := toolSchema(t, res.Tools, "launch_cluster")
			if req := fmt.Sprint(launch["required"]); req != "[quote_id]" || !strings.Contains(fmt.Sprint(launch["properties"]), "idempotency_key") {
				t.Errorf("%s: launch_cluster schema %v", w.name, launch)
			}
			quote := toolSchema(t, res.Tools, "quote_cluster")
			if req := fmt.Sprint(quote["required"]); req != "[accelerator nodes gpus_per_node]" || !strings.Contains(fmt.Sprint(quote["properties"]), "private_offer_id") {
				t.Errorf("%s: quote_cluster schema %v", w.name, quote)
			}
			rec := toolSchema(t, res.Tools, "set_recovery")
			if req := fmt.Sprint(rec["required"]); req != "[cluster_id mode max_attempts cooldown_minutes]" ||
				!strings.Contains(fmt.Sprint(rec["properties"]), "enum:[restart off]") || !strings.Contains(fmt.Sprint(rec["properties"]), "maximum:120") {
				t.Errorf("%s: set_recovery schema %v", w.name, rec)
			}
			if req := fmt.Sprint(toolSchema(t, res.Tools, "recover_cluster")["required"]); req != "[cluster_id]" {
				t.Errorf("%s: recover_cluster requires %s", w.name, req)
			}
		}
	})
}

func toolSchema(t *testing.T, tools []*mcp.Tool, name string) map[string]any {
	t.Helper()
	i := slices.IndexFunc(tools, func(tool *mcp.Tool) bool { return tool.Name == name })
	if i < 0 {
		t.Fatalf("no tool %s", name)
	}
	var m map[string]any
	raw, _ := json.Marshal(tools[i].InputSchema)
	_ = json.Unmarshal(raw, &m)
	return m
}

// API5 as an agent uses it, both ways in: list offers, quote, launch, get
// until ready (the provision job and the simulated cloud's agents on a
// fake clock), connections, logs, terminate.
func TestAgentRun(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		for i, w := range ways {
			t.Run(w.name, func(t *testing.T) {
				cs := mustConnect(t, w, d, d.key)
				offers := ok(t, cs, "list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2})
				if offers.data["count"] != 1.0 || !strings.Contains(offers.text, "sim:h100.8x.vm") {
					t.Fatalf("list_offers: %s", offers.text)
				}
				q := ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "persistent_gb": 100})
				qid := str(q.data["id"])
				if !strings.HasPrefix(qid, "qt_") || q.data["usdPerHour"] == nil || !strings.Contains(q.text, "launch_cluster quote_id="+qid) {
					t.Fatalf("quote_cluster: %s", q.text)
				}
				name := fmt.Sprintf("agent-run-%d", i)
				l := ok(t, cs, "launch_cluster", map[string]any{"quote_id": qid, "name": name, "env": map[string]string{"HF_TOKEN": "hf_x"}})
				id := str(l.data["id"])
				if l.data["status"] != "provisioning" || !strings.Contains(l.text, "Launched "+id) {
					t.Fatalf("launch_cluster: %s", l.text)
				}

				status := ""
				for n := 0; n < 25 && status != "ready"; n++ {
					g := ok(t, cs, "get_cluster", map[string]any{"cluster_id": id})
					status = str(g.data["status"])
					if status != "provisioning" && status != "verifying" && status != "ready" { // verified before hand-over (X13)
						t.Fatalf("get_cluster: %s", g.text)
					}
					if status != "ready" && !strings.Contains(g.text, "call get_cluster again") {
						t.Errorf("a provisioning cluster's summary says nothing to do: %s", g.text)
					}
					d.tick()
				}
				if status != "ready" {
					t.Fatalf("cluster %s never became ready (%s)", id, status)
				}

				conn := ok(t, cs, "cluster_connections", map[string]any{"cluster_id": id})
				if nodes, _ := conn.data["nodes"].([]any); len(nodes) != 2 || !strings.Contains(conn.text, "Primary: ssh") {
					t.Errorf("cluster_connections: %s", conn.text)
				}

				cl, err := d.store.ClusterForOrg(context.Background(), d.org.ID, id)
				if err != nil {
					t.Fatal(err)
				}
				var lines []models.LogInput
				for n := 1; n <= 5; n++ {
					lines = append(lines, models.LogInput{At: d.clock.Now(), Text: fmt.Sprintf("rank one says %d", n)})
				}
				if err := d.store.AppendNodeLogs(context.Background(), cl, 1, lines); err != nil {
					t.Fatal(err)
				}
				logs := ok(t, cs, "cluster_logs", map[string]any{"cluster_id": id, "node": 1, "lines": 2})
				got, _ := logs.data["lines"].([]any)
				if len(got) != 2 || !strings.Contains(logs.text, "rank one says 4") || !strings.Contains(logs.text, "rank one says 5") ||
					strings.Contains(logs.text, "rank one says 3") {
					t.Errorf("cluster_logs node 1, last 2: %s", logs.text)
				}

				term := ok(t, cs, "terminate_cluster", map[string]any{"cluster_id": id})
				if term.data["terminateRequestedAt"] == nil {
					t.Errorf("terminate_cluster: %s", term.text)
				}
				for n := 0; n < 5 && status != "terminated"; n++ {
					d.tick()
					status = str(ok(t, cs, "get_cluster", map[string]any{"cluster_id": id}).data["status"])
				}
				if status != "terminated" {
					t.Errorf("after terminate_cluster: %s", status)
				}
				if list := ok(t, cs, "list_clusters", nil); !strings.Contains(list.text, id) {
					t.Errorf("list_clusters lacks %s: %s", id, list.text)
				}

				// Bigger than self-serve: request a quote (RQ1); the key's creator is the contact.
				rq := ok(t, cs, "request_quote", map[string]any{"accelerator": "H100_80GB", "nodes": 32, "gpus_per_node": 8, "fabric": "infiniband",
					"start_date": d.clock.Now().AddDate(0, 0, 7).Format("2006-01-02"), "duration_days": 30, "budget_per_hour": "900"})
				if !strings.HasPrefix(str(rq.data["id"]), "qr") || !strings.Contains(rq.text, "agent@example.com") || rq.data["fabric"] != "infiniband" {
					t.Errorf("request_quote: %s", rq.text)
				}
			})
		}
	})
}

// L1 through a tool: the same launch_cluster call repeated (an agent's
// retry) launches once, with or without an idempotency key of its own.
func TestLaunchRepeatedLaunchesOnce(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			before := d.clusterCount(d.org.ID)
			quote := func() string {
				return str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
			}
			for _, args := range []map[string]any{
				{"quote_id": quote(), "name": "retried-" + w.name, "env": map[string]string{"A": "1", "B": "2"}},
				{"quote_id": quote(), "idempotency_key": "agent-key-" + w.name},
			} {
				first := ok(t, cs, "launch_cluster", args)
				again := ok(t, cs, "launch_cluster", args)
				if first.data["id"] != again.data["id"] || !strings.Contains(again.text, "Already launched") {
					t.Errorf("%s: a repeated launch_cluster %v gave %v then %v:\n%s", w.name, args, first.data["id"], again.data["id"], again.text)
				}
			}
			if n := d.clusterCount(d.org.ID) - before; n != 2 {
				t.Errorf("%s: two launches called twice each made %d clusters", w.name, n)
			}
		}
	})
}

// A3 through the tools: another organisation's cluster id answers not
// found (and terminating it changes nothing); so does one of another
// environment of the same organisation, through that environment's key.
func TestToolsScopedLikeTheAPI(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cs := mustConnect(t, ways[0], d, d.key)
		qid := str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
		id := str(ok(t, cs, "launch_cluster", map[string]any{"quote_id": qid}).data["id"])

		other := d.signup("rival@example.com", "Rival Labs", 100)
		ctx := context.Background()
		staging, err := d.store.CreateEnvironment(ctx, d.org.ID, "staging")
		if err != nil {
			t.Fatal(err)
		}
		_, stagingKey, err := d.store.CreateAPIKey(ctx, d.org.ID, staging.ID, d.user.ID, "staging agent")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ways {
			for who, key := range map[string]string{"another organisation": other.key, "another environment": stagingKey} {
				rcs := mustConnect(t, w, d, key)
				for _, tool := range []string{"get_cluster", "cluster_connections", "cluster_logs", "terminate_cluster"} {
					r := refused(t, rcs, tool, map[string]any{"cluster_id": id}, "not_found")
					if strings.Contains(r.text, qid) {
						t.Errorf("%s, %s: %s leaks the cluster: %s", w.name, who, tool, r.text)
					}
				}
				if list := ok(t, rcs, "list_clusters", nil); strings.Contains(list.text, id) {
					t.Errorf("%s, %s: list_clusters shows %s", w.name, who, id)
				}
				refused(t, rcs, "launch_cluster", map[string]any{"quote_id": qid}, "")
			}
		}
		cl, err := d.store.ClusterForOrg(ctx, d.org.ID, id)
		if err != nil || cl.TerminateRequestedAt != nil {
			t.Errorf("the cluster was touched through other keys: %v %v", err, cl.TerminateRequestedAt)
		}
	})
}

// A revoked key is refused: /mcp answers 401 before any MCP, and the
// stdio tools get the API's invalid_api_key.
func TestRevokedKeyRefused(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		if _, err := d.store.RevokeAPIKey(ctx, d.org.ID, d.keyID); err != nil {
			t.Fatal(err)
		}
		if _, err := connectHTTP(t, d, d.key); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("/mcp with a revoked key: %v", err)
		}
		req, _ := http.NewRequest(http.MethodPost, d.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+d.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"invalid_api_key"`) {
			t.Errorf("POST /mcp with a revoked key: %d %s", resp.StatusCode, body)
		}
		if _, err := connectHTTP(t, d, ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("/mcp without a key: %v", err)
		}
		cs := mustConnect(t, ways[0], d, d.key)
		refused(t, cs, "list_clusters", nil, "invalid_api_key", "revoked")
	})
}

// Bad arguments are a clear tool error naming the argument, before or at
// the API; refusals carry the API's code and what to do (API2).
func TestBadArgumentsAndRefusals(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": "two", "gpus_per_node": 8}, "nodes"},
				{"quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2}, "gpus_per_node"},
				{"quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 3}, "gpus_per_node"},
				{"get_cluster", map[string]any{"cluster_id": "cl_x", "verbose": true}, "verbose"},
				{"get_cluster", map[string]any{}, "cluster_id"},
				{"launch_cluster", map[string]any{"quote_id": "qt_x", "software": "hadoop"}, "software"},
				{"cluster_logs", map[string]any{"cluster_id": "cl_x", "lines": 5000}, "lines"},
			} {
				r := callTool(t, cs, tc.tool, tc.args)
				if !r.isError || !strings.Contains(r.text, tc.want) {
					t.Errorf("%s: %s(%v) = error %v: %s", w.name, tc.tool, tc.args, r.isError, r.text)
				}
			}
			// The API's own validation, with its field errors.
			refused(t, cs, "quote_cluster", map[string]any{"accelerator": "TPU_V9", "nodes": 2, "gpus_per_node": 8}, "validation_failed", "accelerator")
			refused(t, cs, "get_cluster", map[string]any{"cluster_id": "cl_nope"}, "not_found")

			// no_capacity with reason and advice; insufficient balance with the amount to add.
			refused(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "max_hourly_price": "1"},
				"no_capacity", "reason: above_max_hourly_price", "advice: Raise the price ceiling.")
			refused(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 50, "gpus_per_node": 8}, "no_capacity", "reason:", "advice:")
		}
		poor := d.signup("poor@example.com", "Poor Co", 0)
		cs := mustConnect(t, ways[1], d, poor.key)
		qid := str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
		r := refused(t, cs, "launch_cluster", map[string]any{"quote_id": qid}, "insufficient_balance", "amount to add: $")
		if e, _ := r.data["error"].(map[string]any); e["shortfall"] == nil {
			t.Errorf("insufficient_balance without shortfall: %v", r.data)
		}
		// A quote past its time: price_changed with the old and the new.
		cs = mustConnect(t, ways[0], d, d.key)
		qid = str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
		d.clock.Advance(models.QuoteTTL + 1)
		if err := d.cat.Run(context.Background()); err != nil { // the catalog stays fresh
			t.Fatal(err)
		}
		refused(t, cs, "launch_cluster", map[string]any{"quote_id": qid}, "price_changed", "old price: $", "new price: $")
	})
}

// `clusterdeck mcp` needs an API key and an http(s) URL, and says so
// before speaking MCP.
func TestStdioCommandConfig(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{}, nil, "no API key"},
		{map[string]string{"CLUSTERDECK_API_KEY": "cdk_x", "CLUSTERDECK_API": "ftp://deck"}, nil, "not an http(s) URL"},
		{map[string]string{}, []string{"--key", "cdk_x", "extra"}, "takes no arguments"},
	} {
		err := mcpserver.Command(context.Background(), tc.args, func(k string) string { return tc.env[k] },
			io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.env, tc.args, err, tc.want)
		}
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
