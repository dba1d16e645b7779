package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/gorm"
)

// API5 with API1: every REST exchange the MCP tools make in process is
// one the OpenAPI document describes. The tools' handler is mounted over
// the validating router here, so each call of each tool (successes and
// refusals) is checked against the document like any other /v1 exchange.
func TestMCPToolsSpeakTheDocumentedAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("mcp@example.com", "Agents")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		member := app.joinAccount(acc, "member@example.com", models.RoleMember)
		mtok := apiKeyFor(t, app, account{user: member.user, org: acc.org, env: acc.env, role: models.RoleMember})
		srv := httptest.NewServer(mcpserver.Handler(validating(t, app.e), func(r *http.Request) string {
			if r.URL.Query().Get("as") == "member" {
				return mtok
			}
			return tok
		}))
		t.Cleanup(srv.Close)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		call := func(name string, args map[string]any, wantError bool) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError != wantError {
				t.Fatalf("%s(%v): %v %+v", name, args, err, res)
			}
			return res
		}
		field := func(res *mcp.CallToolResult, k string) string {
			return fmt.Sprint(res.StructuredContent.(map[string]any)[k])
		}
		call("list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "include_community": true}, false)
		if got := field(call("list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "sort": "gpu_price"}, false), "count"); got == "0" {
			t.Errorf("list_offers sorted by gpu_price lists nothing")
		}
		call("list_offers", map[string]any{"nodes": 2, "sort": "cheapest"}, true) // O3: the sort is checked
		// X2: each offer's track record, sortable, named in the answer.
		// X2, X13: with the ring its verification measured.
		app.launchRecordRing("h100x8", 2, 8, 368, 400)
		res := call("list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "sort": "track_record"}, false)
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Best track record at this size (last 30 days): sim:h100x8 in Loc us-east, 1 of 1 recent launch succeeded · ready in 8 min, ring 368 GB/s (92 % of line rate).") {
			t.Errorf("list_offers text %q", text)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		for _, want := range []string{`"launchesStarted":1`, `"launchesReady":1`, `"ready":1`, `"busBwGBpsMedian":368`, `"busBwGBpsWorst":368`,
			`"lineRateGBps":400`, `"percentOfLineRateMedian":92`} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("list_offers structured answer lacks %s: %s", want, raw)
			}
		}
		qid := field(call("quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "persistent_gb": 100}, false), "id")
		call("quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "max_hourly_price": "1"}, true)
		launch := map[string]any{"quote_id": qid, "software": "slurm", "env": map[string]string{"HF_TOKEN": "x"}, "ports": []int{8888}}
		id := field(call("launch_cluster", launch, false), "id")
		call("launch_cluster", launch, false)
		call("launch_cluster", map[string]any{"quote_id": qid, "name": "Not A Name"}, true)
		call("list_clusters", nil, false)
		call("get_cluster", map[string]any{"cluster_id": id}, false)
		call("cluster_connections", map[string]any{"cluster_id": id}, true) // not_connectable while provisioning
		call("cluster_logs", map[string]any{"cluster_id": id}, false)
		call("set_recovery", map[string]any{"cluster_id": id, "mode": "restart", "max_attempts": 3, "cooldown_minutes": 5}, false)
		call("set_recovery", map[string]any{"cluster_id": "cl_nope", "mode": "off", "max_attempts": 3, "cooldown_minutes": 5}, true)
		call("recover_cluster", map[string]any{"cluster_id": id}, true) // nothing_to_recover: no machine is down
		call("quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "private_offer_id": "po_nope"}, true)
		call("terminate_cluster", map[string]any{"cluster_id": id}, false)
		call("request_quote", map[string]any{"accelerator": "H100_80GB", "nodes": 32, "gpus_per_node": 8,
			"start_date": app.clock.Now().AddDate(0, 0, 3).Format("2006-01-02"), "duration_days": 30}, false)
		call("get_balance", nil, false)
		call("billing_usage", map[string]any{"month": app.clock.Now().Format("2006-01")}, false)
		call("billing_usage", nil, false)
		call("billing_usage", map[string]any{"month": "November"}, true)
		ms, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "?as=member", MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		for _, name := range []string{"get_balance", "billing_usage"} { // B1: forbidden to a member's key
			if res, err := ms.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil || !res.IsError ||
				!strings.Contains(fmt.Sprint(res.StructuredContent), "forbidden") {
				t.Fatalf("member %s: %v %+v", name, err, res)
			}
		}
	})
}

// /mcp is for API keys only, and answers like the API: JSON errors, 401
// for a dashboard session, 405 for anything but POST.
func TestMCPEndpoint(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		tok := apiKeyFor(t, app, app.signupAccount("mcp@example.com", "Agents"))
		for _, tc := range []struct {
			method, auth string
			status       int
			code         string
		}{
			{http.MethodPost, "", http.StatusUnauthorized, `"unauthorized"`},
			{http.MethodPost, "Bearer cdk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", http.StatusUnauthorized, `"invalid_api_key"`},
			{http.MethodGet, "", http.StatusUnauthorized, `"unauthorized"`},
			{http.MethodGet, "Bearer " + tok, http.StatusMethodNotAllowed, `"method_not_allowed"`},
			{http.MethodDelete, "Bearer " + tok, http.StatusMethodNotAllowed, `"method_not_allowed"`},
		} {
			req := httptest.NewRequest(tc.method, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := app.do(req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.code) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
				t.Errorf("%s /mcp (%q): %d %s %s", tc.method, tc.auth, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		}
	})
}

// API5: one POST to /mcp is one JSON-RPC message. A batch (a
// JSON array of 1,000 tool calls, which the SDK runs for clients of older
// protocol versions) is refused with a JSON-RPC error before any tool runs,
// and a body over the message limit is refused too; a single call still
// works.
func TestMCPRefusesBatches(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		tok := apiKeyFor(t, app, app.signupAccount("mcp@example.com", "Agents"))
		post := func(body string, header ...string) *httptest.ResponseRecorder {
			t.Helper()
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			return app.do(req)
		}
		call := func(id int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_clusters","arguments":{}}}`, id)
		}
		calls := make([]string, 1000)
		for i := range calls {
			calls[i] = call(i + 1)
		}
		batch := "[" + strings.Join(calls, ",") + "]"
		before := app.sql.n.Load()
		for _, version := range []string{"", "2025-03-26"} { // older versions: the SDK itself would run the batch
			rec := post(" \n"+batch, "Mcp-Protocol-Version", version)
			var got struct {
				ID    any `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusBadRequest ||
				got.Error.Code != -32600 || got.ID != nil || !strings.Contains(got.Error.Message, "Batch") || rec.Body.Len() > 1024 {
				t.Errorf("a batch of 1,000 calls (version %q): %d %.300s", version, rec.Code, rec.Body)
			}
		}
		if n := app.sql.n.Load() - before; n > 10 {
			t.Errorf("a refused batch ran %d SQL statements", n)
		}
		if rec := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_clusters","arguments":{"x":"` +
			strings.Repeat("a", mcpserver.MaxMessageBytes) + `"}}}`); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), `"code":-32600`) {
			t.Errorf("a message over the limit: %d %.300s", rec.Code, rec.Body)
		}
		if rec := post(call(7), "Mcp-Protocol-Version", "2025-03-26"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":7`) {
			t.Errorf("one call: %d %.500s", rec.Code, rec.Body)
		}
	})
}

// API5: /mcp validates Origin as the MCP specification requires
// of servers (DNS rebinding): an Origin other than BASE_URL's or an allowed
// one is 403 with a JSON-RPC error, even with a valid key; no Origin (a
// program, not a page) and the allowed ones pass.
func TestMCPChecksOrigin(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppWith(t, db, func(d *Deps) {
			d.Config.BaseURL = "https://deck.example.com"
			d.Config.MCPOrigins = []string{"http://localhost:6274"}
		})
		tok := apiKeyFor(t, app, app.signupAccount("mcp@example.com", "Agents"))
		for _, tc := range []struct {
			origin []string
			status int
		}{
			{nil, http.StatusOK},
			{[]string{"https://deck.example.com"}, http.StatusOK},
			{[]string{"https://DECK.example.com:443"}, http.StatusOK},
			{[]string{"http://localhost:6274"}, http.StatusOK},
			{[]string{"https://evil.example"}, http.StatusForbidden},
			{[]string{"http://deck.example.com"}, http.StatusForbidden}, // another scheme is another origin
			{[]string{"https://deck.example.com:8443"}, http.StatusForbidden},
			{[]string{"http://localhost:6275"}, http.StatusForbidden},
			{[]string{"null"}, http.StatusForbidden},
			{[]string{""}, http.StatusForbidden},
			{[]string{"https://deck.example.com", "https://evil.example"}, http.StatusForbidden},
		} {
			for _, method := range []string{http.MethodPost, http.MethodGet} {
				req := httptest.NewRequest(method, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+tok)
				for _, o := range tc.origin {
					req.Header.Add("Origin", o)
				}
				rec := app.do(req)
				want := tc.status
				if method == http.MethodGet && want == http.StatusOK {
					want = http.StatusMethodNotAllowed
				}
				if rec.Code != want || (want == http.StatusForbidden && !strings.Contains(rec.Body.String(), `"code":-32600`)) {
					t.Errorf("%s Origin %q: %d %.300s, want %d", method, tc.origin, rec.Code, rec.Body, want)
				}
			}
		}
	})
}

// TestAbuseMCPWaitEndsWhenTheClientLeaves: wait_for_cluster calls whose clients
// hung up end at once and give back their long polls' slots, instead of
// running on to their timeout (A4, X16).
func TestAbuseMCPWaitEndsWhenTheClientLeaves(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("mcp@example.com", "Agents")
		tok := apiKeyFor(t, app, acc)
		cl := launchFor(t, app, acc, "waiting") // provisioning: never ready here
		srv := httptest.NewServer(app.e)
		t.Cleanup(srv.Close)
		t.Cleanup(srv.CloseClientConnections) // first: a wait that runs on must not hold Close
		stream := func() int {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
			}
			return resp.StatusCode
		}
		var cancels []context.CancelFunc
		for i := range MaxStreamsPerKey {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for_cluster","arguments":{"cluster_id":%q,"timeout_seconds":900}}}`, i+1, cl.ID)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			go func() {
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		deadline := time.Now().Add(30 * time.Second)            // a bound for a hung test, not a wait
		for app.h.streams.held(acc.org.ID) < MaxStreamsPerKey { // every wait is in its long poll
			if time.Now().After(deadline) {
				t.Fatalf("the waits hold %d slots, want %d", app.h.streams.held(acc.org.ID), MaxStreamsPerKey)
			}
			runtime.Gosched()
		}
		if code := stream(); code != http.StatusTooManyRequests {
			t.Fatalf("a stream beside %d waits: %d", MaxStreamsPerKey, code)
		}
		for _, cancel := range cancels {
			cancel() // the agents hang up
		}
		deadline = time.Now().Add(10 * time.Second) // well under a long poll's 25 s
		for app.h.streams.held(acc.org.ID) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d waits still hold their slots after their clients left", app.h.streams.held(acc.org.ID))
			}
			runtime.Gosched()
		}
		if code := stream(); code != http.StatusOK {
			t.Fatalf("a stream after the waits ended: %d", code)
		}
	})
}
