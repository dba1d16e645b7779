package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// apiKeyFor creates an API key in acc's environment.
func apiKeyFor(t testing.TB, app *testApp, acc account) string {
	t.Helper()
	_, tok, err := app.store.CreateAPIKey(context.Background(), acc.org.ID, acc.env.ID, acc.user.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// apiJSON calls the API with a JSON body and decodes the answer.
func apiJSON(t testing.TB, app *testApp, method, path, token, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := app.do(req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil && rec.Body.Len() > 0 {
		t.Fatalf("%s %s: not JSON (%d): %s", method, path, rec.Code, rec.Body)
	}
	return rec.Code, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func clusterCount(t testing.TB, app *testApp) int64 {
	var n int64
	app.db.Model(&models.Cluster{}).Count(&n)
	return n
}

// Q1–Q4 over the API: the quote's body, no_capacity with reason and shape, validation.
func TestAPIQuote(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("q@example.com", "Quoters")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))

		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok,
			`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGb":1000},"maxHourlyPrice":"100"}`)
		if code != http.StatusCreated {
			t.Fatalf("quote: %d %v", code, q)
		}
		// 2×8×2.49 + 2×500×0.0001 + 1000×0.000137 = 39.84 + 0.1 + 0.137
		if q["usdPerHour"] != "40.077" || q["maxHourlyPrice"] != "100.00" || q["expiresAt"] == nil || q["availability"] != "high" {
			t.Errorf("quote body: %v", q)
		}
		if items := q["lineItems"].([]any); len(items) != 3 {
			t.Errorf("line items: %v", items)
		}

		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":30,"gpusPerNode":8}`)
		e := body["error"].(map[string]any)
		shape, _ := e["shape"].(map[string]any)
		if code != http.StatusConflict || e["code"] != "no_capacity" || e["reason"] != "no_location_with_n_nodes" ||
			shape["nodes"].(float64) != 30 || len(e["advice"].([]any)) == 0 {
			t.Errorf("no_capacity: %d %v", code, body)
		}
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"maxHourlyPrice":"5"}`)
		if code != http.StatusConflict || body["error"].(map[string]any)["reason"] != "above_max_hourly_price" {
			t.Errorf("ceiling: %d %v", code, body)
		}

		for _, bad := range []struct{ body, field string }{
			{`{"accelerator":"H100_80GB","nodes":1,"gpusPerNode":8}`, "nodes"},
			{`{"accelerator":"H100_80GB","nodes":65,"gpusPerNode":8}`, "nodes"},
			{`{"accelerator":"TPU","nodes":2,"gpusPerNode":8}`, "accelerator"},
			{`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":9}`, "gpusPerNode"},
			{`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"maxHourlyPrice":"lots"}`, "maxHourlyPrice"},
		} {
			code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, bad.body)
			fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[bad.field] == nil {
				t.Errorf("%s: %d %v", bad.body, code, body)
			}
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodez":2}`); code != http.StatusUnprocessableEntity {
			t.Errorf("unknown field: %d, want 422", code)
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", "cdk_nope", `{}`); code != http.StatusUnauthorized {
			t.Errorf("bad key: %d", code)
		}
	})
}

// L1, L2, Q5 over the API: idempotent launch, price_changed, quota and balance refusals.
func TestAPILaunch(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("l@example.com", "Launchers")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		quote := func(body string) string {
			code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, body)
			if code != http.StatusCreated {
				t.Fatalf("quote: %d %v", code, q)
			}
			return q["id"].(string)
		}
		qid := quote(`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		launch := fmt.Sprintf(`{"quoteId":%q,"name":"train","env":{"HF_TOKEN":"x"},"ports":[8888]}`, qid)

		// L2: no balance → a 402-style refusal that says how much to add; nothing created.
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "k1")
		e := body["error"].(map[string]any)
		if code != http.StatusPaymentRequired || e["code"] != "insufficient_balance" || e["shortfall"] != "39.94" {
			t.Fatalf("zero balance: %d %v", code, body)
		}
		// Three $39.94/h clusters are launched below: L2 counts the ones already live.
		app.store.Deposit(context.Background(), acc.org.ID, 130*models.Micro, "dep", "test")

		code, first := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "k1")
		if code != http.StatusCreated || first["status"] != "provisioning" || len(first["nodes"].([]any)) != 2 {
			t.Fatalf("launch: %d %v", code, first)
		}
		code, again := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "k1")
		if code != http.StatusOK || again["id"] != first["id"] {
			t.Errorf("same key and body: %d, id %v vs %v", code, again["id"], first["id"])
		}
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, strings.Replace(launch, "train", "other", 1), "Idempotency-Key", "k1")
		if code != http.StatusConflict || errCode(body) != "idempotency_key_reused" {
			t.Errorf("same key, other body: %d %v", code, body)
		}

		// Q5: a repeated priced field with another value → price_changed with old and new.
		q2 := quote(`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"nodes":3}`, q2))
		e = body["error"].(map[string]any)
		if code != http.StatusConflict || e["code"] != "price_changed" || e["reason"] != "field:nodes" ||
			e["old"].(map[string]any)["usdPerHour"] != "39.94" || e["new"].(map[string]any)["usdPerHour"] != "59.91" {
			t.Errorf("changed field: %d %v", code, body)
		}
		// The same priced value repeated is fine (workload fields never change the price).
		code, _ = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"nodes":2,"gpusPerNode":8,"name":"same-shape","startCommand":"python serve.py"}`, q2))
		if code != http.StatusCreated {
			t.Errorf("repeating priced fields unchanged: %d", code)
		}
		// An expired quote.
		q3 := quote(`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		app.clock.Advance(models.QuoteTTL + time.Second)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q}`, q3))
		if code != http.StatusConflict || body["error"].(map[string]any)["reason"] != "expired" || body["error"].(map[string]any)["new"] == nil {
			t.Errorf("expired: %d %v", code, body)
		}

		// L2: quotas count every machine and every GPU.
		app.store.SetOrgQuota(context.Background(), acc.org.ID, 5, 100)
		q4 := quote(`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q}`, q4))
		if code != http.StatusForbidden || errCode(body) != "quota_exceeded" {
			t.Errorf("quota: %d %v", code, body)
		}

		// A4: bad workload input → 422 with fields, nothing created.
		before := clusterCount(t, app)
		q5 := quote(`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		app.store.SetOrgQuota(context.Background(), acc.org.ID, 64, 512)
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"env":{"NODE_RANK":"3"},"ports":[0]}`, q5))
		fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
		if code != http.StatusUnprocessableEntity || fields["env"] == nil || fields["ports"] == nil || clusterCount(t, app) != before {
			t.Errorf("bad workload: %d %v", code, body)
		}
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"sshKeyIds":["sk_not_mine"]}`, q5))
		if code != http.StatusUnprocessableEntity || clusterCount(t, app) != before {
			t.Errorf("another's SSH key: %d %v", code, body)
		}
		// L1 straight from an offer.
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, `{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"name":"from-offer"}`)
		if code != http.StatusCreated || body["offerId"] != "sim:h100x8" {
			t.Errorf("launch from an offer: %d %v", code, body)
		}

		// List, get, terminate (L7).
		rec := app.apiGet("/v1/gpu/clusters", tok)
		var list struct{ Clusters []map[string]any }
		json.Unmarshal(rec.Body.Bytes(), &list)
		if rec.Code != 200 || len(list.Clusters) != 3 {
			t.Errorf("list: %d %d", rec.Code, len(list.Clusters))
		}
		id := first["id"].(string)
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters/"+id+"/terminate", tok, ``)
		if code != http.StatusAccepted || body["terminateRequestedAt"] == nil {
			t.Errorf("terminate: %d %v", code, body)
		}
		rec = app.apiGet("/v1/gpu/clusters/"+id, tok)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "Terminate requested") {
			t.Errorf("get after terminate: %d %s", rec.Code, rec.Body)
		}
		if acts := strings.Join(app.auditActions(acc.org.ID), ","); !strings.Contains(acts, "cluster.launch") || !strings.Contains(acts, "cluster.terminate") {
			t.Errorf("audit log lacks launch/terminate: %s", acts)
		}
	})
}

// The dashboard's launch: the locked price and its expiry, then the
// workload form, double-submit proof (X12), and field errors (A4).
func TestLaunchFromDashboard(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("d@example.com", "Dashboarders")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(context.Background(), acc.org.ID, 100*models.Micro, "dep", "test")
		c := app.login(acc)

		rec := c.get("/clusters/new?offer=sim:h100x8&nodes=2")
		if rec.Code != 200 {
			t.Fatalf("launch page: %d %s", rec.Code, rec.Body)
		}
		d := doc(t, rec)
		if got := d.Find(`[data-testid=quote-price]`).Text(); got != "$39.94/h" {
			t.Errorf("locked price %q", got)
		}
		// L7: the launch page is the question before billing: its button names the price.
		if got := strings.Join(strings.Fields(d.Find(`[data-testid=launch-submit]`).Text()), " "); !strings.HasSuffix(got, "· $39.94/h") {
			t.Errorf("the launch button reads %q, want the price", got)
		}
		if !strings.Contains(d.Find(`[data-testid=quote-expiry]`).Text(), "Price locked until") {
			t.Error("no expiry shown")
		}
		if got := d.Find(`[data-testid=balance-after-hour]`).Text(); got != "$60.06" {
			t.Errorf("balance after one hour %q", got)
		}
		form := url.Values{
			"quote_id":   {d.Find(`input[name=quote_id]`).AttrOr("value", "")},
			"form_token": {d.Find(`input[name=form_token]`).AttrOr("value", "")},
			"name":       {"Bad Name"}, "software": {"none"}, "env": {"NOT A LINE"}, "ports": {"http"},
		}
		rec = c.post("/clusters", form)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad form: %d", rec.Code)
		}
		d = doc(t, rec)
		for _, f := range []string{"env", "ports"} {
			if d.Find(`[data-testid=problem-`+f+`]`).Length() != 1 {
				t.Errorf("no problem shown for %s", f)
			}
		}
		if d.Find(`#name`).AttrOr("value", "") != "Bad Name" || clusterCount(t, app) != 0 {
			t.Error("typed input not kept, or a cluster was created")
		}
		form.Set("env", "HF_TOKEN=abc")
		form.Set("ports", "8888")
		rec = c.post("/clusters", form)
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid=problem-name]`).Length() != 1 {
			t.Fatalf("bad name: %d", rec.Code)
		}
		form.Set("name", "my-train")
		rec = c.post("/clusters", form)
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/clusters/cl_") {
			t.Fatalf("launch: %d %s", rec.Code, location(rec))
		}
		// A second submit of the same form starts nothing and says so.
		rec = c.post("/clusters", form)
		if rec.Code != 200 || !strings.Contains(doc(t, rec).Find(`[data-testid=already-launched]`).Text(), "Already launched as my-train") {
			t.Errorf("second submit: %d %s", rec.Code, rec.Body)
		}
		// A second tab with the same locked price (another form token) lands on it too.
		form.Set("form_token", "another-tab-token-0123456789")
		rec = c.post("/clusters", form)
		if rec.Code != 200 || !strings.Contains(doc(t, rec).Find(`[data-testid=already-launched]`).Text(), "Already launched as my-train") {
			t.Errorf("second tab: %d %s", rec.Code, rec.Body)
		}
		if clusterCount(t, app) != 1 {
			t.Errorf("%d clusters after a double submit", clusterCount(t, app))
		}
		// The launch page reuses its quote across tabs (X12): a
		// tab that launches another workload starts a second cluster at the
		// same locked price (X12 is per form and per workload).
		form.Set("form_token", "third-tab-token-0123456789ab")
		form.Set("name", "my-eval")
		rec = c.post("/clusters", form)
		if rec.Code != http.StatusSeeOther || clusterCount(t, app) != 2 {
			t.Fatalf("another workload from another tab: %d, %d clusters", rec.Code, clusterCount(t, app))
		}
		var prices []int64
		app.store.DB().Raw("SELECT usd_per_hour FROM clusters ORDER BY created_at").Scan(&prices)
		if len(prices) != 2 || prices[0] != prices[1] {
			t.Errorf("locked prices of the two clusters: %v", prices)
		}
	})
}

// makeJoined moves a launched cluster through placement and every node step to joined.
func makeJoined(t testing.TB, app *testApp, cl models.Cluster, publicHosts bool) models.Cluster {
	t.Helper()
	ctx := context.Background()
	var placed []models.PlacedNode
	for i := 0; i < cl.Nodes; i++ {
		host := ""
		if publicHosts {
			host = fmt.Sprintf("n%d.example.net", i)
		}
		placed = append(placed, models.PlacedNode{Rank: i, ProviderNodeID: fmt.Sprintf("m%d", i), PrivateIP: fmt.Sprintf("10.77.0.%d", i+1),
			PublicHost: host, User: "ubuntu", SSHPort: 22})
	}
	if err := app.store.MarkPlaced(ctx, cl.ID, placed); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < cl.Nodes; i++ {
		for _, step := range models.ProvisionSteps {
			if _, err := app.store.MarkNodeStep(ctx, cl.ID, i, step, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := app.store.MarkJoined(ctx, cl.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// L11, X3: the cluster page shows each node's steps against their deadlines
// and polls itself while starting; htmx gets only the live part.
func TestClusterPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("p@example.com", "Pagers")
		cl := launchFor(t, app, acc, "pager")
		c := app.login(acc)
		ctx := context.Background()
		app.store.MarkPlaced(ctx, cl.ID, []models.PlacedNode{{Rank: 0, PrivateIP: "10.77.0.1"}, {Rank: 1, PrivateIP: "10.77.0.2"}})
		app.store.MarkNodeStep(ctx, cl.ID, 0, models.StepRunning, "up")
		app.clock.Advance(time.Minute)

		rec := c.get("/clusters/" + cl.ID)
		if rec.Code != 200 {
			t.Fatalf("%d", rec.Code)
		}
		d := doc(t, rec)
		if d.Find(`#cluster-live[hx-trigger]`).Length() != 1 {
			t.Error("a starting cluster's page does not poll")
		}
		steps := map[string]string{}
		d.Find(`[data-node=node-0] [data-testid=node-step]`).Each(func(_ int, s *goquery.Selection) {
			steps[s.AttrOr("data-step", "")] = s.AttrOr("data-state", "") + " " + strings.TrimSpace(s.Text())
		})
		if !strings.HasPrefix(steps["reserved"], "done") || !strings.HasPrefix(steps["booting"], "done") ||
			!strings.HasPrefix(steps["agent"], "active") || !strings.HasPrefix(steps["mesh"], "waiting") {
			t.Errorf("node-0 steps: %v", steps)
		}
		// The active step says when the cluster gives up on it, not a countdown read as an ETA (O3).
		placed, _ := app.store.ClusterByID(ctx, cl.ID)
		agentDeadline := placed.StepDeadline(models.StepAgent)
		if dl := d.Find(`[data-node=node-0] [data-step=agent] [data-testid=step-deadline]`).Text(); dl != "gives up at "+agentDeadline.Format("15:04:05") {
			t.Errorf("deadline on the active step: %q", dl)
		}
		part := c.get("/clusters/"+cl.ID, "HX-Request", "true")
		if strings.Contains(part.Body.String(), "<!doctype") || doc(t, part).Find(`#cluster-live`).Length() != 1 {
			t.Error("htmx poll should get only #cluster-live")
		}
		// Terminate from the page with htmx: the live part comes back, saying billing stopped.
		rec = c.post("/clusters/"+cl.ID+"/terminate", nil, "HX-Request", "true")
		if rec.Code != 200 || doc(t, rec).Find(`[data-testid=terminating]`).Length() != 1 {
			t.Errorf("terminate: %d %s", rec.Code, rec.Body)
		}
		// The list shows the cluster as terminating while it ends.
		rec = c.get("/clusters")
		if doc(t, rec).Find(`#cluster-`+cl.ID+` [data-testid=status-badge]`).AttrOr("data-status", "") != "terminating" {
			t.Errorf("list row: %s", rec.Body)
		}
	})
}

// L4: a failed cluster's page says nothing was billed and offers what can start now.
func TestFailedClusterOffersAlternatives(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("f@example.com", "Failers")
		cl := launchFor(t, app, acc, "failer")
		if _, err := app.store.FailCluster(context.Background(), cl.ID, models.ParseLastError("provider_rejected:no_capacity"), "", "reserved", "no room", nil); err != nil {
			t.Fatal(err)
		}
		d := doc(t, app.login(acc).get("/clusters/"+cl.ID))
		if !strings.Contains(d.Find(`[data-testid=last-error]`).Text(), "nothing was billed") {
			t.Error("failure not explained")
		}
		if d.Find(`[data-testid=alternatives] a`).Length() == 0 {
			t.Error("no alternatives that can start now")
		}
		if d.Find(`#cluster-live[hx-trigger]`).Length() != 0 || d.Find(`[data-testid=terminate]`).Length() != 0 {
			t.Error("a failed cluster (every machine already released) neither polls nor offers terminate")
		}
		// L7: the API still accepts terminate, and nothing changes or lingers.
		tok := apiKeyFor(t, app, acc)
		if code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/"+cl.ID+"/terminate", tok, ""); code != http.StatusAccepted || body["status"] != "failed" {
			t.Errorf("terminate a failed cluster: %d %v", code, body)
		}
		if left, _ := app.store.ClustersToTerminate(context.Background()); len(left) != 0 {
			t.Errorf("a failed cluster waits for termination forever: %v", left)
		}
	})
}

// N2–N5, L9: connections with public addresses and through a gateway; the
// env is identical on every node but NODE_RANK.
func TestConnections(t *testing.T) {
	for _, gateway := range []bool{false, true} {
		t.Run(fmt.Sprintf("gateway=%v", gateway), func(t *testing.T) {
			eachApp(t, func(t *testing.T, app *testApp) {
				acc := app.signupAccount("c@example.com", "Connectors")
				tok := apiKeyFor(t, app, acc)
				o := testOffer("h100x8", "us-east", 8, 2_490_000, intp(20))
				if gateway {
					o.PublicIPs, o.Gateway = false, "jump@gw.us-east.example:2222"
				}
				app.seedOffers(o)
				app.store.Deposit(context.Background(), acc.org.ID, 500*models.Micro, "dep", "t")
				q, _ := app.store.CreateQuote(context.Background(), acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 3, GPUsPerNode: 8})
				cl, _, err := app.store.LaunchCluster(context.Background(), models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Workload: models.Workload{Name: "conn", Software: "none", Env: map[string]string{"HF_TOKEN": "x y"}}})
				if err != nil {
					t.Fatal(err)
				}
				if code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/connections", tok, ""); code != http.StatusConflict {
					t.Errorf("connections before the machines are up: %d %v", code, body)
				}
				makeJoined(t, app, cl, !gateway)
				code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/connections", tok, "")
				if code != 200 {
					t.Fatalf("%d %v", code, body)
				}
				nodes := body["nodes"].([]any)
				for i, n := range nodes {
					n := n.(map[string]any)
					ssh := n["ssh"].(string)
					if n["address"] != fmt.Sprintf("10.77.0.%d", i+1) {
						t.Errorf("node %d address %v", i, n["address"])
					}
					if gateway && !strings.Contains(ssh, "-J jump@gw.us-east.example:2222") {
						t.Errorf("node %d behind a gateway: %q", i, ssh)
					}
					if !gateway && (strings.Contains(ssh, "-J") || !strings.Contains(ssh, fmt.Sprintf("n%d.example.net", i))) {
						t.Errorf("node %d with a public address: %q", i, ssh)
					}
				}
				env := body["env"].(map[string]any)
				if env["MASTER_ADDR"] != "10.77.0.1" || env["NODE_RANK"] != "0" || env["HF_TOKEN"] != "x y" || env["WORLD_SIZE"] != "24" {
					t.Errorf("env: %v", env)
				}
				cmds := map[string]string{}
				for _, c := range body["commands"].([]any) {
					c := c.(map[string]any)
					cmds[c["name"].(string)] = c["command"].(string)
				}
				if !strings.Contains(cmds["torchrun"], "--nnodes=3") || !strings.Contains(cmds["nccl-all-reduce"], "-np 24") ||
					cmds["mpirun"] == "" || cmds["deepspeed"] == "" {
					t.Errorf("commands: %v", cmds)
				}
				if !strings.Contains(body["hostfile"].(string), "node-2 slots=8") || !strings.Contains(body["readiness"].(string), "infrastructure") ||
					!strings.Contains(body["mallocHint"].(string), "MALLOC_ARENA_MAX=1") {
					t.Errorf("hostfile/readiness/malloc: %v", body)
				}
				// The page shows the same with copy buttons.
				d := doc(t, app.login(acc).get("/clusters/"+cl.ID+"?tab=connect"))
				if d.Find(`[data-testid=connect] [data-copy]`).Length() < 6 || d.Find(`[data-testid=connect-node] [data-copy]`).Length() != 3 {
					t.Error("connect panel incomplete: every node's SSH command has its copy button")
				}
			})
		})
	}
}

// N6: logs stored in order, bounded per node, streamed, and only to the
// cluster's own organisation.
func TestLogs(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("g@example.com", "Loggers")
		other := app.signupAccount("o@example.com", "Others")
		tok, otherTok := apiKeyFor(t, app, acc), apiKeyFor(t, app, other)
		cl := launchFor(t, app, acc, "logger")
		var lines []models.LogInput
		for i := 0; i < models.MaxLogLinesPerNode+150; i++ {
			lines = append(lines, models.LogInput{At: testNow, Text: fmt.Sprintf("line %04d", i)})
		}
		for i := 0; i < len(lines); i += 400 {
			if err := app.store.AppendNodeLogs(ctx, cl, 1, lines[i:min(i+400, len(lines))]); err != nil {
				t.Fatal(err)
			}
		}
		app.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: testNow, Text: "head says hi"}})

		code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/logs?node=1&follow=false", tok, "")
		got := body["lines"].([]any)
		if code != 200 || len(got) != models.MaxLogLinesPerNode {
			t.Fatalf("stored lines: %d, %d (want the last %d)", code, len(got), models.MaxLogLinesPerNode)
		}
		if got[0].(map[string]any)["text"] != "line 0150" || got[len(got)-1].(map[string]any)["text"] != "line 2149" {
			t.Errorf("kept the wrong lines or out of order: first %v last %v", got[0], got[len(got)-1])
		}
		_, body = apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/logs?follow=false", tok, "")
		if l := body["lines"].([]any); len(l) != 1 || l[0].(map[string]any)["text"] != "head says hi" {
			t.Errorf("rank 0 by default: %v", body)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/logs?node=7&follow=false", tok, ""); code != 422 {
			t.Errorf("node out of range: %d", code)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID+"/logs?follow=false", otherTok, ""); code != 404 {
			t.Errorf("another org's logs: %d, want 404", code)
		}

		// Streamed: the backlog, then new lines in order as they arrive.
		srv := httptest.NewServer(validating(t, app.e))
		defer srv.Close()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+"/v1/gpu/clusters/"+cl.ID+"/logs?node=0", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
		}
		events := make(chan string, 10)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					events <- data
				}
			}
			close(events)
		}()
		next := func() string {
			select {
			case e := <-events:
				return e
			case <-sctx.Done():
				t.Fatal("stream stalled")
			}
			return ""
		}
		if e := next(); !strings.Contains(e, "head says hi") {
			t.Errorf("backlog: %s", e)
		}
		app.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{Text: "second"}, {Text: "third"}})
		if a, b := next(), next(); !strings.Contains(a, `"second"`) || !strings.Contains(b, `"third"`) {
			t.Errorf("followed lines out of order: %s / %s", a, b)
		}
	})
}

// The agent protocol's auth: a node's token acts as that node only, a
// forged or unknown token is refused, and nothing works after terminate.
func TestAgentAuth(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("a@example.com", "Agents")
		cl := launchFor(t, app, acc, "agents")
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		post := func(path, token string) (int, map[string]any) {
			return apiJSON(t, app, "POST", path, token, `{"hostname":"h","privateIp":"10.77.0.2","version":"1"}`)
		}
		code, body := post("/v1/agent/checkin", models.AgentToken(cl, nodes[1]))
		if code != 200 || body["node"] != "node-1" || body["rank"].(float64) != 1 || len(body["peers"].([]any)) != 2 {
			t.Fatalf("checkin: %d %v", code, body)
		}
		n1, _ := app.store.NodesFor(ctx, cl.ID)
		if n1[1].AgentAt == nil || n1[0].AgentAt != nil {
			t.Error("node-1's token must check in node-1 and only node-1")
		}
		forged := "cdn_" + nodes[0].ID + "_" + strings.Split(models.AgentToken(cl, nodes[1]), "_")[3]
		for _, bad := range []string{"", "cdk_api_key_not_agent", forged, "cdn_nd_nope_00"} {
			if code, _ := post("/v1/agent/checkin", bad); code != http.StatusUnauthorized {
				t.Errorf("token %q: %d, want 401", bad, code)
			}
		}
		app.store.RequestTerminate(ctx, acc.org.ID, cl.ID, "test")
		if code, _ := post("/v1/agent/heartbeat", models.AgentToken(cl, nodes[1])); code != http.StatusGone {
			t.Errorf("after terminate: %d, want 410", code)
		}
	})
}

// An API key launches with its creator's SSH keys; another user's key id is refused.
func TestAPILaunchWithSSHKeys(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("k@example.com", "Keyholders")
		mate := app.joinAccount(acc, "mate@example.com", models.RoleMember)
		tok := apiKeyFor(t, app, acc)
		mine, err := app.store.AddSSHKey(ctx, acc.org.ID, acc.user.ID, "laptop", testSSHKey(t, "k@laptop"))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := app.store.AddSSHKey(ctx, acc.org.ID, mate.user.ID, "desk", testSSHKey(t, "mate@desk"))
		if err != nil {
			t.Fatal(err)
		}
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 100*models.Micro, "dep", "t")
		launch := func(keyID string) (int, map[string]any) {
			return apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(
				`{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"sshKeyIds":[%q]}`, keyID))
		}
		if code, body := launch(theirs.ID); code != http.StatusUnprocessableEntity {
			t.Errorf("another user's SSH key: %d %v", code, body)
		}
		code, body := launch(mine.ID)
		if code != http.StatusCreated {
			t.Fatalf("own SSH key: %d %v", code, body)
		}
		cl, _ := app.store.ClusterForOrg(ctx, acc.org.ID, body["id"].(string))
		if keys := cl.SSHKeys(); len(keys) != 1 || keys[0] != mine.PublicKey {
			t.Errorf("installed keys %v", keys)
		}
	})
}

// API2, Q4, O6: a quote on a stale catalog answers 409
// no_capacity catalog_stale, whose message and advice say to try again
// shortly, never to change the shape (the answer is validated against the
// document like every /v1 exchange).
func TestAPIQuoteOnStaleCatalog(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		tok := apiKeyFor(t, app, app.signupAccount("stale@example.com", "Stale"))
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.clock.Advance(models.OfferFreshness + time.Minute)
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		e, _ := body["error"].(map[string]any)
		advice := fmt.Sprint(e["advice"])
		if code != http.StatusConflict || e["reason"] != models.CatalogStaleReason || !strings.Contains(fmt.Sprint(e["message"]), "refreshed") ||
			!strings.Contains(advice, "Try again") || strings.Contains(advice, "GPUs per machine") {
			t.Errorf("quote on a stale catalog: %d %v", code, body)
		}
		// The dashboard's launch page says the same.
		acc := app.signupAccount("stale-page@example.com", "Stale pages")
		rec := app.login(acc).get("/clusters/new?offer=sim:h100x8&nodes=2")
		if page := rec.Body.String(); rec.Code != http.StatusConflict || !strings.Contains(page, "being refreshed") || strings.Contains(page, "Pick another") {
			t.Errorf("launch page on a stale catalog: %d %.500s", rec.Code, page)
		}
	})
}
