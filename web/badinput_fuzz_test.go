package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// badInputTarget is one place a fuzzed string enters: a path id, a JSON
// field or name, a form field, a query parameter or a header.
type badInputTarget struct {
	name string
	req  func(f *badInputApp, s string) *http.Request
}

var badInputTargets = []badInputTarget{
	{"api cluster id", func(f *badInputApp, s string) *http.Request {
		return f.api("GET", "/v1/gpu/clusters/"+url.PathEscape(s), "")
	}},
	{"page cluster id", func(f *badInputApp, s string) *http.Request {
		return httptest.NewRequest("GET", "/clusters/"+url.PathEscape(s), nil)
	}},
	{"quote location", func(f *badInputApp, s string) *http.Request {
		return f.api("POST", "/v1/gpu/clusters/quote", `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"location":"`+s+`"}`)
	}},
	{"quote field name", func(f *badInputApp, s string) *http.Request {
		return f.api("POST", "/v1/gpu/clusters/quote", `{"`+s+`":2}`)
	}},
	{"launch quoteId", func(f *badInputApp, s string) *http.Request {
		return f.api("POST", "/v1/gpu/clusters", `{"quoteId":"`+s+`","name":"n"}`)
	}},
	{"launch image", func(f *badInputApp, s string) *http.Request {
		return f.api("POST", "/v1/gpu/clusters", `{"offerId":"`+f.offerID+`","nodes":2,"gpusPerNode":8,"image":"`+s+`","software":"none"}`)
	}},
	{"idempotency key", func(f *badInputApp, s string) *http.Request {
		r := f.api("POST", "/v1/gpu/clusters", `{"quoteId":"qt_nope"}`)
		r.Header.Set("Idempotency-Key", s)
		return r
	}},
	{"bearer", func(f *badInputApp, s string) *http.Request {
		r := httptest.NewRequest("GET", "/v1/gpu/clusters", nil)
		r.Header.Set("Authorization", "Bearer "+s)
		return r
	}},
	{"agent bearer", func(f *badInputApp, s string) *http.Request {
		r := httptest.NewRequest("POST", "/v1/agent/heartbeat", nil)
		r.Header.Set("Authorization", "Bearer "+s)
		return r
	}},
	{"quote request notes", func(f *badInputApp, s string) *http.Request {
		return f.api("POST", "/v1/quote-requests", `{"accelerator":"H100_80GB","nodes":16,"gpusPerNode":8,"startDate":"2027-01-04","durationDays":7,"notes":"`+s+`"}`)
	}},
	{"launch form image", func(f *badInputApp, s string) *http.Request {
		return f.form("/clusters", url.Values{"offer": {f.offerID}, "nodes": {"2"}, "image": {s}, "name": {"n"}})
	}},
	{"login form email", func(f *badInputApp, s string) *http.Request {
		return f.form("/login", url.Values{"email": {s}, "password": {"x"}})
	}},
	{"agent log line", func(f *badInputApp, s string) *http.Request {
		r := f.api("POST", "/v1/agent/logs", `{"lines":[{"text":"`+s+`"}]}`)
		r.Header.Set("Authorization", "Bearer "+f.nodeToken)
		return r
	}},
	{"agent peer error", func(f *badInputApp, s string) *http.Request {
		r := f.api("POST", "/v1/agent/peers", `{"reached":[],"unreachable":[{"address":"10.77.0.2","error":"`+s+`"}]}`)
		r.Header.Set("Authorization", "Bearer "+f.nodeToken)
		return r
	}},
	{"offers query", func(f *badInputApp, s string) *http.Request {
		return httptest.NewRequest("GET", "/offers?location="+url.QueryEscape(s), nil)
	}},
}

// badInputApp is one database's app with a signed-in browser and an API key.
type badInputApp struct {
	name    string
	app     *testApp
	browser *client
	token   string
	offerID string
	// nodeToken is node-0's agent token.
	nodeToken string
}

func (f *badInputApp) api(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+f.token)
	return r
}

func (f *badInputApp) form(path string, form url.Values) *http.Request {
	form.Set("_csrf", f.browser.cookie(csrfCookie))
	r := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func newBadInputApp(f *testing.F, dialect string) *badInputApp {
	app := newTestApp(f, modelstest.Open(f, dialect))
	acc := app.signupAccount("fuzz@example.com", "Fuzz Labs")
	cl := launchFor(f, app, acc, "fuzzed")
	q, err := app.store.QuoteForOrg(context.Background(), acc.org.ID, cl.QuoteID)
	if err != nil {
		f.Fatal(err)
	}
	nodes, err := app.store.NodesFor(context.Background(), cl.ID)
	if err != nil || len(nodes) == 0 {
		f.Fatalf("nodes: %v", err)
	}
	return &badInputApp{name: dialect, app: app, browser: app.login(acc), token: apiKeyFor(f, app, acc), offerID: q.OfferID,
		nodeToken: models.AgentToken(cl, nodes[0])}
}

// A4: invalid UTF-8 and NUL bytes anywhere a request carries
// text (ids, JSON fields and names, forms, queries, headers) never give a
// 5xx, on SQLite nor on PostgreSQL, and both answer with the same status.
// The seeds (the cases found on PostgreSQL) run in every `go test`.
func FuzzBadTextNeverFails(f *testing.F) {
	for i := range badInputTargets {
		for _, s := range []string{"ok", "\xff", "k\xff", "\x00", `\u0000`, "a\x00b", "cdn_\xff", "cdn_\xff_x", "qt_\xff"} {
			f.Add(uint8(i), s)
		}
	}
	apps := []*badInputApp{newBadInputApp(f, "sqlite")}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		apps = append(apps, newBadInputApp(f, "postgres"))
	}
	f.Fuzz(func(t *testing.T, target uint8, s string) {
		tg := badInputTargets[int(target)%len(badInputTargets)]
		codes := map[string]int{}
		for _, a := range apps {
			a.app.t, a.browser.t = t, t
			req := tg.req(a, s)
			if req.Method == http.MethodPost && !strings.HasPrefix(req.URL.Path, "/v1/") {
				req.Header.Set("X-CSRF-Token", a.browser.cookie(csrfCookie))
			}
			var rec *httptest.ResponseRecorder
			if strings.HasPrefix(req.URL.Path, "/v1/") {
				rec = a.app.do(req)
			} else {
				rec = a.browser.do(req)
			}
			if rec.Code >= 500 {
				t.Errorf("%s on %s with %q: %d\n%.300s", tg.name, a.name, s, rec.Code, rec.Body)
			}
			codes[a.name] = rec.Code
		}
		if len(codes) == 2 && codes["sqlite"] != codes["postgres"] {
			t.Errorf("%s with %q: SQLite %d, PostgreSQL %d", tg.name, s, codes["sqlite"], codes["postgres"])
		}
	})
}

// Agent text (log lines, peer errors) is cleaned before it is stored: a NUL
// or invalid UTF-8 from a node never fails the request on PostgreSQL.
func TestAgentTextIsCleaned(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		cl := launchFor(t, app, acc, "train")
		ctx := context.Background()
		err := app.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: testNow, Text: "step\x00 one \xff done"}})
		if err != nil {
			t.Fatalf("log line with NUL and invalid UTF-8: %v", err)
		}
	})
}
