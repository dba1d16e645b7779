package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// A1: an attempt is counted before its password is checked, so 40
// parallel wrong log-ins for one account (real HTTP, real router) check at
// most as many passwords as the throttle lets through before it slows the
// account, and the right password right after is refused too.
func TestLoginThrottleHoldsUnderConcurrency(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		srv := httptest.NewServer(app.e)
		defer srv.Close()
		post := formPoster(t, srv)
		const n = 40
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = post("/login", url.Values{"email": {acc.user.Email}, "password": {"wrong password " + strings.Repeat("x", i)}})
			}()
		}
		wg.Wait()
		checked, refused := 0, 0
		for _, c := range codes {
			switch c {
			case http.StatusUnprocessableEntity:
				checked++
			case http.StatusTooManyRequests:
				refused++
			default:
				t.Errorf("unexpected status %d", c)
			}
		}
		if checked > models.AccountThrottle.SlowAfter || checked+refused != n {
			t.Errorf("%d passwords checked, %d refused; want at most %d checked (the throttle's burst)",
				checked, refused, models.AccountThrottle.SlowAfter)
		}
		if code := post("/login", url.Values{"email": {acc.user.Email}, "password": {testPassword}}); code != http.StatusTooManyRequests {
			t.Errorf("the right password right after the burst: %d, want 429", code)
		}
	})
}

// formPoster fetches a page over real HTTP (session and CSRF token) and
// returns a function that POSTs forms with that session, concurrently safe,
// without following redirects or keeping new cookies.
func formPoster(t *testing.T, srv *httptest.Server) func(path string, form url.Values) int {
	t.Helper()
	res, err := http.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookies []string
	token := ""
	for _, ck := range res.Cookies() {
		cookies = append(cookies, ck.Name+"="+ck.Value)
		if ck.Name == csrfCookie {
			token = ck.Value
		}
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(path string, form url.Values) int {
		form.Set("_csrf", token)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
		res, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
}

// A2: log-out ends the session on the server: a copy of the
// cookie taken before stops working; other sessions go on, and "log out
// everywhere" still ends them.
func TestLogoutEndsTheSessionServerSide(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		laptop, phone := app.login(acc), app.login(acc)
		stolen := cloneJar(laptop)
		if rec := laptop.post("/logout", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("logout: %d", rec.Code)
		}
		if rec := stolen.get("/settings"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/login") {
			t.Errorf("a copy of the logged-out cookie: GET /settings = %d (Location %q), want a redirect to /login", rec.Code, location(rec))
		}
		if rec := phone.get("/settings"); rec.Code != http.StatusOK {
			t.Fatalf("the other session after log-out on the laptop: %d", rec.Code)
		}
		if rec := phone.post("/settings/sessions/revoke", nil); rec.Code >= 400 {
			t.Fatalf("log out everywhere: %d", rec.Code)
		}
		other := app.login(acc)
		if rec := app.login(acc).post("/settings/sessions/revoke", nil); rec.Code >= 400 {
			t.Fatalf("log out everywhere: %d", rec.Code)
		}
		if rec := other.get("/settings"); rec.Code != http.StatusSeeOther {
			t.Errorf("a session after log out everywhere: %d", rec.Code)
		}
	})
}

func cloneJar(c *client) *client {
	out := c.app.client()
	for k, v := range c.jar {
		ck := *v
		out.jar[k] = &ck
	}
	return out
}

// A1: the CSRF token is the session's, not whatever _csrf cookie the
// browser holds: a planted cookie with the same form value is refused.
func TestCSRFTokenBoundToSession(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		victim := app.login(acc)
		planted := strings.Repeat("A", 43)
		victim.jar[csrfCookie] = &http.Cookie{Name: csrfCookie, Value: planted}
		rec := victim.post("/settings/profile", url.Values{"name": {"Mallory was here"}, "_csrf": {planted}})
		if rec.Code != http.StatusForbidden {
			t.Errorf("planted _csrf cookie and form value: %d, want 403", rec.Code)
		}
		// The API's session path checks the same token.
		req := httptest.NewRequest(http.MethodPost, "/v1/quote-requests", strings.NewReader("{}"))
		req.Header.Set("X-CSRF-Token", planted)
		req.Header.Set("Content-Type", "application/json")
		if rec := victim.do(req); rec.Code != http.StatusForbidden {
			t.Errorf("API with a planted token: %d, want 403", rec.Code)
		}
		// The real token still works.
		fresh := app.login(acc)
		if rec := fresh.post("/settings/profile", url.Values{"name": {"Ada"}}); rec.Code >= 400 {
			t.Errorf("the session's own token: %d", rec.Code)
		}
	})
}

// A3: a key made for one environment does not reach another
// environment's quotes and clusters (the route walk covers every :id route;
// this covers a quote handed to a launch and the terminate leaving no trace).
func TestAPIKeyActsInItsEnvironmentOnly(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		cl := launchFor(t, app, acc, "train")
		prod, err := app.store.CreateEnvironment(ctx, acc.org.ID, "prod")
		if err != nil {
			t.Fatal(err)
		}
		_, prodKey, err := app.store.CreateAPIKey(ctx, acc.org.ID, prod.ID, acc.user.ID, "prod-ci")
		if err != nil {
			t.Fatal(err)
		}
		defaultKey := apiKeyFor(t, app, acc)
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", defaultKey, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		if code != http.StatusCreated {
			t.Fatalf("quote: %d %v", code, q)
		}
		launch := fmt.Sprintf(`{"quoteId":%q,"name":"sneaky"}`, q["id"])
		if code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", prodKey, launch, "Idempotency-Key", "k"); code != http.StatusNotFound {
			t.Errorf("launch with the default environment's quote through prod's key: %d %v", code, body)
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/gpu/clusters/"+cl.ID+"/terminate", prodKey, ""); code != http.StatusNotFound {
			t.Errorf("terminate through prod's key: %d", code)
		}
		if code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters", prodKey, ""); code != http.StatusOK || len(body["clusters"].([]any)) != 0 {
			t.Errorf("list through prod's key: %d %v", code, body)
		}
		if got, _ := app.store.ClusterForOrg(ctx, acc.org.ID, cl.ID); got.TerminateRequestedAt != nil {
			t.Errorf("the cluster was asked to terminate through another environment's key")
		}
		if code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, defaultKey, ""); code != http.StatusOK {
			t.Errorf("the cluster through its own environment's key: %d %v", code, body)
		}
	})
}

// A4, API2: JSON field names are exact; unknown, repeated
// and mistyped fields are 422s naming the API's field, never a Go type; a
// zero price ceiling is refused.
func TestStrictJSONBodies(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		cases := []struct{ body, field, want string }{
			{`{"accelerator":"H100_80GB","Nodes":2,"gpusPerNode":8}`, "Nodes", "not a field"},
			{`{"accelerator":"H100_80GB","nodes":2,"nodes":3,"gpusPerNode":8}`, "nodes", "twice"},
			{`{"accelerator":"H100_80GB","nodez":2,"gpusPerNode":8}`, "nodez", "not a field"},
			{`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGB":1}}`, "storage.persistentGB", "not a field"},
			{`{"accelerator":"H100_80GB","nodes":"two","gpusPerNode":8}`, "nodes", "whole number"},
			{`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"maxHourlyPrice":"0"}`, "maxHourlyPrice", "more than 0"},
			{`{"accelerator":"H100_80GB\u0000","nodes":2,"gpusPerNode":8}`, "accelerator", "NUL"},
		}
		for _, tc := range cases {
			req := httptest.NewRequest("POST", "/v1/gpu/clusters/quote", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := app.do(req)
			var out struct {
				Error struct {
					Message string            `json:"message"`
					Fields  map[string]string `json:"fields"`
				} `json:"error"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(out.Error.Fields[tc.field], tc.want) {
				t.Errorf("%s: %d %s; want 422 with %s: …%s…", tc.body, rec.Code, rec.Body, tc.field, tc.want)
			}
			for _, goName := range []string{"Go ", "quoteBody", "struct", "type int", "*"} {
				if strings.Contains(rec.Body.String(), goName) {
					t.Errorf("%s: the error names Go's %q: %s", tc.body, goName, rec.Body)
				}
			}
		}
	})
}

// A1: answers that carry secrets are never stored by a
// cache, and the cluster page masks the customer's environment values until
// the reader reveals them.
func TestSecretsAreNotCachedAndMasked(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "conn", Software: "none", Env: map[string]string{"HF_TOKEN": "hf_SeCrEt42"}}})
		if err != nil {
			t.Fatal(err)
		}
		makeJoined(t, app, cl, true)
		browser := app.login(acc)
		page := browser.get("/clusters/" + cl.ID + "?tab=connect")
		if page.Code != http.StatusOK {
			t.Fatalf("cluster page: %d", page.Code)
		}
		d := doc(t, page)
		if masked := d.Find("[data-testid=env-masked]").Text(); strings.Contains(masked, "hf_SeCrEt42") ||
			!strings.Contains(masked, "HF_TOKEN="+maskedEnvText) || !strings.Contains(masked, "MASTER_ADDR=") {
			t.Errorf("masked environment block:\n%s", masked)
		}
		if d.Find("details[data-testid=env-reveal]:not([open]) [data-testid=env-block]").Length() != 1 {
			t.Errorf("the clear values are not behind a closed reveal")
		}
		keyPage := browser.post("/settings/api-keys", url.Values{"name": {"ci"}, "environment": {acc.env.ID}})
		answers := map[string]*httptest.ResponseRecorder{
			"cluster page":         page,
			"new API key":          keyPage,
			"settings":             browser.get("/settings"),
			"API connections":      app.apiGet("/v1/gpu/clusters/"+cl.ID+"/connections", tok),
			"API cluster with env": app.apiGet("/v1/gpu/clusters/"+cl.ID, tok),
		}
		for what, rec := range answers {
			if rec.Code >= 400 || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s: %d, Cache-Control %q; want no-store", what, rec.Code, rec.Header().Get("Cache-Control"))
			}
		}
	})
}

// A1: development routes answer loopback clients that name a
// loopback host, and refuse what a browser marks as cross-site (DNS
// rebinding, a page of another site posting to the developer's server).
func TestDevRoutesRefuseRebindingAndCrossSite(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	try := func(method, target string, headers ...string) int {
		req := httptest.NewRequest(method, target, strings.NewReader("minutes=5"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "127.0.0.1:5555"
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return app.do(req).Code
	}
	for _, host := range []string{"http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"} {
		if code := try("GET", host+"/dev/clock"); code != http.StatusOK {
			t.Errorf("GET %s/dev/clock: %d", host, code)
		}
	}
	refused := []struct {
		name, method, target string
		headers              []string
	}{
		{"rebound Host", "GET", "http://evil.example:8080/dev/mailbox", nil},
		{"rebound Host, POST", "POST", "http://attacker.example/dev/clock", nil},
		{"cross-site POST", "POST", "http://127.0.0.1:8080/dev/clock", []string{"Sec-Fetch-Site", "cross-site"}},
		{"same-site other port", "POST", "http://127.0.0.1:8080/dev/jobs/provision/run", []string{"Sec-Fetch-Site", "same-site"}},
		{"foreign Origin", "POST", "http://127.0.0.1:8080/dev/clock", []string{"Origin", "http://evil.example"}},
	}
	for _, tc := range refused {
		if code := try(tc.method, tc.target, tc.headers...); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, code)
		}
	}
	if code := try("POST", "http://localhost:8080/dev/clock", "Origin", "http://localhost:8080", "Sec-Fetch-Site", "same-origin"); code == http.StatusForbidden {
		t.Errorf("a same-origin POST from the developer's browser: %d", code)
	}
}

// A1: sign-up is throttled per address like log-in, even
// under concurrency, and common passwords are refused with a clear message.
func TestSignupThrottledAndCommonPasswordsRefused(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		c := app.client()
		rec := c.post("/signup", url.Values{"email": {"ada@example.com"}, "name": {"Ada"}, "password": {"password12"}})
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "too common") {
			t.Errorf("password12: %d, want 422 saying it is too common", rec.Code)
		}
		srv := httptest.NewServer(app.e)
		defer srv.Close()
		post := formPoster(t, srv)
		const n = 30
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = post("/signup", url.Values{"email": {fmt.Sprintf("user%d@example.com", i)}, "name": {"U"},
					"password": {"plum river 0427"}})
			}()
		}
		wg.Wait()
		created := 0
		for _, code := range codes {
			switch code {
			case http.StatusSeeOther:
				created++
			case http.StatusTooManyRequests:
			default:
				t.Errorf("sign-up answered %d", code)
			}
		}
		if created > models.SignupThrottle.SlowAfter {
			t.Errorf("%d parallel sign-ups from one address created %d accounts; want at most %d", n, created, models.SignupThrottle.SlowAfter)
		}
	})
}

// X12: reloading a launch page or retrying a launch straight
// from an offer reuses the organisation's valid quote instead of writing a
// new one each time, and long-expired unused quotes are pruned.
func TestLaunchPagesReuseQuotes(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		var offerIDs []string
		if err := app.db.Table("offers").Pluck("id", &offerIDs).Error; err != nil || len(offerIDs) != 1 {
			t.Fatalf("offers: %v %v", offerIDs, err)
		}
		quotes := func() int64 {
			var n int64
			if err := app.db.Table("quotes").Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		browser := app.login(acc)
		page := "/clusters/new?offer=" + url.QueryEscape(offerIDs[0]) + "&nodes=2"
		for range 5 {
			if rec := browser.get(page); rec.Code != http.StatusOK {
				t.Fatalf("launch page: %d", rec.Code)
			}
		}
		tok := apiKeyFor(t, app, acc)
		launch := fmt.Sprintf(`{"offerId":%q,"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"name":"x"}`, offerIDs[0])
		for i := range 5 { // no balance: priced, refused, and retried
			if code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", fmt.Sprint("k", i)); code != http.StatusPaymentRequired {
				t.Fatalf("launch from the offer without balance: %d %v, want 402", code, body)
			}
		}
		if n := quotes(); n != 1 {
			t.Errorf("5 views of a launch page and 5 launches from the offer wrote %d quotes, want 1", n)
		}
		app.clock.Advance(models.QuoteTTL / 2)
		browser.get(page)
		if n := quotes(); n != 2 {
			t.Errorf("after half the lock a view makes a fresh quote: %d quotes, want 2", n)
		}
		app.clock.Advance(models.QuotePruneAfter + models.QuoteTTL + time.Minute)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20))) // the catalog stays fresh
		browser.get(page)
		if n := quotes(); n != 1 {
			t.Errorf("long-expired unused quotes are not pruned: %d quotes, want 1", n)
		}
	})
}

// X19: log shipping is rate-limited per node: past the burst
// a request is refused whole with 429 and a Retry-After after which it
// fits; another node is not affected.
func TestAgentLogShippingIsRateLimited(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		cl := launchFor(t, app, acc, "train")
		nodes, _ := app.store.NodesFor(context.Background(), cl.ID)
		lines := make([]map[string]string, 500)
		for i := range lines {
			lines[i] = map[string]string{"text": fmt.Sprint("line ", i)}
		}
		body, _ := json.Marshal(map[string]any{"lines": lines})
		ship := func(node models.ClusterNode) *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "/v1/agent/logs", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+models.AgentToken(cl, node))
			return app.do(req)
		}
		for i := range AgentLogBurst / 500 {
			if rec := ship(nodes[0]); rec.Code != http.StatusNoContent {
				t.Fatalf("request %d within the burst: %d %s", i, rec.Code, rec.Body)
			}
		}
		rec := ship(nodes[0])
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "25" {
			t.Fatalf("past the burst: %d, Retry-After %q; want 429 after 25 s", rec.Code, rec.Header().Get("Retry-After"))
		}
		if rec := ship(nodes[1]); rec.Code != http.StatusNoContent {
			t.Errorf("another node: %d", rec.Code)
		}
		app.clock.Advance(25 * time.Second)
		if rec := ship(nodes[0]); rec.Code != http.StatusNoContent {
			t.Errorf("after Retry-After: %d", rec.Code)
		}
	})
}
