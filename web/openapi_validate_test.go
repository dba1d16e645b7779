package web

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Every /v1 request the tests send through testApp and every answer the
// server gives are validated against the OpenAPI document by kin-openapi's
// openapi3filter (API1): an answer the document does not describe
// (status, header or body) fails the test that got it, and so does a
// request the document refuses but the server accepted. TestMain then
// checks that the whole suite exercised every /v1 operation with a 2xx.

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && wholeSuite() {
		if missing := contract.unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test got a 2xx answer, validated against the OpenAPI document, from:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// wholeSuite reports a run of every test (no -run, -skip or -short), the
// only run that can promise every operation was exercised.
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// contract is the document loaded once for the whole test binary.
var contract = &apiContract{ok: map[string]bool{}}

type apiContract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
	mu     sync.Mutex
	ok     map[string]bool // "METHOD /path" that answered 2xx and validated
}

func (v *apiContract) load() error {
	v.once.Do(func() {
		raw, err := static.FS.Open("openapi.json")
		if err != nil {
			v.err = err
			return
		}
		defer raw.Close()
		data, err := io.ReadAll(raw)
		if err != nil {
			v.err = err
			return
		}
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.FileBodyDecoder)
		// application/yaml: kin-openapi's own YAML decoder, so a kubeconfig is checked as the mapping the document says
		if v.doc, v.err = openapi3.NewLoader().LoadFromData(data); v.err != nil {
			return
		}
		if v.err = v.doc.Validate(context.Background()); v.err != nil {
			return
		}
		v.router, v.err = gorillamux.NewRouter(v.doc)
	})
	return v.err
}

// unexercised lists the document's operations no test got a valid 2xx from.
func (v *apiContract) unexercised() []string {
	if v.load() != nil {
		return []string{"(the document did not load)"}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var missing []string
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			if key := method + " " + path; !v.ok[key] {
				missing = append(missing, key)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// exchange is one request as sent and the answer as received.
type exchange struct {
	method, target string
	header         http.Header
	body           []byte
	status         int
	respHeader     http.Header
	respBody       []byte
}

// check validates one exchange; t gets the disagreements.
func (v *apiContract) check(t testing.TB, x exchange) {
	t.Helper()
	if !strings.HasPrefix(x.target, "/v1/") {
		return
	}
	if err := v.load(); err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	req := httptest.NewRequest(x.method, x.target, bytes.NewReader(x.body))
	req.Header = x.header.Clone()
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return // not an operation of the document: TestOpenAPICoversEveryRoute answers for the routes
	}
	what := fmt.Sprintf("%s %s → %d", x.method, x.target, x.status)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && x.status < 400 {
		t.Errorf("%s: the server accepted a request the OpenAPI document refuses:\n%v\nbody: %s", what, err, x.body)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.status, Header: x.respHeader,
		Body: io.NopCloser(bytes.NewReader(x.respBody)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: the answer disagrees with the OpenAPI document:\n%v\nbody: %.2000s", what, err, x.respBody)
		return
	}
	if x.status/100 == 2 {
		v.mu.Lock()
		v.ok[route.Method+" "+route.Path] = true
		v.mu.Unlock()
	}
}

// validating wraps h: every /v1 exchange through it is checked against
// the document (for servers the tests start, such as the agents').
func validating(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		tw := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(tw, r)
		contract.check(t, exchange{method: r.Method, target: r.URL.RequestURI(), header: r.Header, body: body,
			status: tw.status, respHeader: w.Header(), respBody: tw.buf.Bytes()})
	})
}

// teeWriter keeps a copy of what it writes; it flushes for event streams.
type teeWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	buf    bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.wrote = true
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The software routes, validated like every other exchange: a Kubernetes
// cluster's node-0 gets its install task with a heartbeat, answers it with
// the kubeconfig, which the customer downloads; a failed install is retried
// (S1, L6).
func TestOpenAPISoftwareExchanges(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("k8s@example.com", "Kube Org")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "k8s-deposit", "test")
		want := func(code int, method, target, token, body string) map[string]any {
			t.Helper()
			got, out := apiJSON(t, app, method, target, token, body)
			if got != code {
				t.Fatalf("%s %s = %d, want %d: %v", method, target, got, code, out)
			}
			return out
		}
		launched := want(201, "POST", "/v1/gpu/clusters", tok, `{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"software":"kubernetes"}`)
		cl, err := app.store.ClusterForOrg(ctx, acc.org.ID, launched["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		cl = makeJoined(t, app, cl, true)
		run, err := app.store.SoftwareRunFor(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		err = app.store.AddSoftwareTasks(ctx, cl, run.Attempt, []models.NewSoftwareTask{{Kind: models.TaskInstall, Rank: 0, Role: "control-plane",
			Payload: models.TaskPayload{Script: "kubeadm init", Env: map[string]string{"POD_CIDR": "10.244.0.0/16"}}}})
		if err != nil {
			t.Fatal(err)
		}
		// Before node-0 reported its kubeconfig there is none to download,
		// and never a made-up one (S1).
		if e, _ := want(409, "GET", "/v1/gpu/clusters/"+cl.ID+"/kubeconfig", tok, "")["error"].(map[string]any); e["code"] != "kubeconfig_not_ready" {
			t.Errorf("kubeconfig before node-0 reported: %v", e)
		}
		browser := app.login(acc)
		if page := browser.get("/clusters/" + cl.ID); !strings.Contains(page.Body.String(), `data-testid="kubeconfig-pending"`) ||
			strings.Contains(page.Body.String(), `data-testid="kubeconfig"`) {
			t.Errorf("cluster page before node-0 reported: no 'not available yet', or a download link")
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		agent := models.AgentToken(cl, nodes[0])
		task, _ := want(200, "POST", "/v1/agent/heartbeat", agent, `{}`)["task"].(map[string]any)
		if task == nil || task["kind"] != "install" {
			t.Fatalf("heartbeat task: %v", task)
		}
		out := "[init] ok\n" + models.BlockBegin("KUBECONFIG") + "\napiVersion: v1\nkind: Config\n" + models.BlockEnd("KUBECONFIG") + "\n"
		body, _ := json.Marshal(map[string]any{"ok": true, "output": out})
		if res := want(200, "POST", "/v1/agent/tasks/"+task["id"].(string), agent, string(body)); res["status"] != "ok" {
			t.Errorf("task result: %v", res)
		}
		rec := app.get("/v1/gpu/clusters/"+cl.ID+"/kubeconfig", "Authorization", "Bearer "+tok)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "kind: Config") {
			t.Errorf("kubeconfig: %d %s", rec.Code, rec.Body)
		}
		// The stock generated Go client reads it as the YAML mapping the document says (API1).
		srv := httptest.NewServer(validating(t, app.e))
		defer srv.Close()
		gen := generatedClient(t, srv.URL, tok)
		if kc, err := gen.GetClusterKubeconfigWithResponse(ctx, cl.ID); err != nil || kc.YAML200 == nil || (*kc.YAML200)["kind"] != "Config" {
			t.Errorf("the generated client's kubeconfig: %v %+v", err, kc)
		}
		if page := browser.get("/clusters/" + cl.ID); !strings.Contains(page.Body.String(), `data-testid="kubeconfig"`) {
			t.Errorf("cluster page after node-0 reported: no download link")
		}
		if _, err := app.store.DegradeSoftware(ctx, cl.ID, run.Attempt, models.ParseLastError("install_failed:node-1"), "node-1", "node-1 failed", nil); err != nil {
			t.Fatal(err)
		}
		if res := want(202, "POST", "/v1/gpu/clusters/"+cl.ID+"/retry-install", tok, ""); res["status"] != "installing" {
			t.Errorf("retry install: %v", res)
		}
	})
}
