package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// OP3: /metrics reports the shared gauges and this process's request
// latencies in the Prometheus text format, to loopback scrapers or to
// holders of METRICS_TOKEN only.
func TestMetrics(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("m@example.com", "Metered")
		cl := launchFor(t, app, acc, "metered") // each launch deposits $500 first
		makeJoined(t, app, cl, true)
		launchFor(t, app, acc, "second")
		app.store.RecordJobRun(ctx, "catalog", testNow, testNow.Add(time.Second), errors.New("upstream down"))
		app.store.RecordJobRun(ctx, "provision", testNow, testNow.Add(time.Second), nil)
		app.store.EnqueueMail(ctx, models.Mail{Key: "k1", To: "a@example.com", Subject: "s", Text: "t"})
		app.get("/no/such/page")
		app.get("/no/such/page")
		app.get("/invites/not-a-token") // a 404 from a real route keeps its pattern
		app.get("/offers")
		util, used, total := 80, 40000, 81559 // OP3: the cluster's two GPUs reported
		for gpu, at := range []int64{testNow.Unix() / 60 * 60, testNow.Unix()/60*60 - 60} {
			u := util - 20*gpu // GPU 0 at 80 %, GPU 1 at 60 %
			app.db.Create(&models.GPUPoint{ClusterID: cl.ID, GPU: gpu, At: at, N: 1, Util: &u, MemUsed: &used, MemTotal: &total})
		}
		old := 5 // a point too old to be "now"
		app.db.Create(&models.GPUPoint{ClusterID: cl.ID, GPU: 0, At: testNow.Unix()/60*60 - 3600, N: 1, Util: &old})
		for _, secs := range []int{240, 1200} { // X2: two repairs
			secs := secs
			if err := app.db.Create(&models.MachineFault{Provider: "sim", Machine: "h1", Kind: models.FaultDied, At: testNow,
				RepairSeconds: &secs}).Error; err != nil {
				t.Fatal(err)
			}
		}

		fams := scrape(t, app)
		if f := fams["clusterdeck_machine_repair_seconds"]; f == nil || f.GetMetric()[0].GetHistogram().GetSampleSum() != 1440 ||
			f.GetMetric()[0].GetHistogram().GetBucket()[1].GetUpperBound() != 300 || f.GetMetric()[0].GetHistogram().GetBucket()[1].GetCumulativeCount() != 1 {
			t.Errorf("time to repair histogram: %v", f)
		}
		for _, tc := range []struct {
			name   string
			labels string
			want   float64
		}{
			{"clusterdeck_clusters", `status=ready`, 1},
			{"clusterdeck_clusters", `status=provisioning`, 1},
			{"clusterdeck_clusters", `status=failed`, 0},
			{"clusterdeck_mail_outbox", `state=pending`, 1},
			{"clusterdeck_catalog_offers", `provider=sim`, 1},
			{"clusterdeck_catalog_age_seconds", `provider=sim`, 0},
			{"clusterdeck_job_last_run_timestamp_seconds", `job_name=catalog`, float64(testNow.Unix())},
			{"clusterdeck_job_last_run_failed", `job_name=catalog`, 1},
			{"clusterdeck_job_last_run_failed", `job_name=provision`, 0},
			{"clusterdeck_ledger_entries", `kind=deposit,status=completed`, 2},
			{"clusterdeck_ledger_usd", `kind=deposit,status=completed`, 1000},
			{"clusterdeck_http_request_duration_seconds", `route=unmatched,method=GET,code=404`, 2},
			{"clusterdeck_http_request_duration_seconds", `route=/invites/:token,method=GET,code=404`, 1},
			{"clusterdeck_http_request_duration_seconds", `route=/offers,method=GET,code=200`, 1},
			{"clusterdeck_cluster_gpu_utilization_ratio", `cluster=` + cl.ID, 0.7},
			{"clusterdeck_cluster_gpu_memory_used_bytes", `cluster=` + cl.ID, 2 * 40000 << 20},
			{"clusterdeck_cluster_gpu_memory_total_bytes", `cluster=` + cl.ID, 2 * 81559 << 20},
			{"clusterdeck_cluster_gpus_reporting", `cluster=` + cl.ID, 2},
			{"clusterdeck_fleet_gpu_utilization_ratio", ``, 0.7},
			{"clusterdeck_machine_repair_seconds", ``, 2},
		} {
			got, ok := sample(fams, tc.name, tc.labels)
			if !ok {
				t.Errorf("no %s{%s} in the exposition", tc.name, tc.labels)
			} else if got != tc.want {
				t.Errorf("%s{%s} = %v, want %v", tc.name, tc.labels, got, tc.want)
			}
		}
		if _, ok := sample(fams, "clusterdeck_http_request_duration_seconds", `route=/no/such/page,method=GET,code=404`); ok {
			t.Error("an unmatched path became a route label")
		}

		if rec := app.get("/metrics"); rec.Code != http.StatusForbidden {
			t.Errorf("from another machine without a token: %d, want 403", rec.Code)
		}
		withToken := New(Deps{Config: Config{MetricsToken: "s3cret"}, Store: app.store, Static: static.FS,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		for _, tc := range []struct {
			auth string
			want int
		}{{"", 403}, {"Bearer wrong", 403}, {"Bearer s3cret", 200}} {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.RemoteAddr = "127.0.0.1:9100"
			req.Header.Set("Authorization", tc.auth)
			rec := httptest.NewRecorder()
			withToken.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("token %q: %d, want %d", tc.auth, rec.Code, tc.want)
			}
		}
	})
}

// The registry passed in Deps is the one /metrics serves, so main can hand
// the same registry to the jobs.
func TestMetricsServesTheGivenRegistry(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "clusterdeck_from_elsewhere_total", Help: "A metric another package registered."})
	reg.MustRegister(c)
	c.Add(3)
	app.e = New(Deps{Store: app.store, Static: static.FS, Metrics: reg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got, ok := sample(scrape(t, app), "clusterdeck_from_elsewhere_total", ""); !ok || got != 3 {
		t.Errorf("clusterdeck_from_elsewhere_total = %v (present %v), want 3", got, ok)
	}
}

// scrape fetches /metrics from loopback and parses the text exposition.
func scrape(t *testing.T, app *testApp) map[string]*dto.MetricFamily {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.RemoteAddr = "127.0.0.1:9100"
	rec := app.do(req)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %s\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample returns the value of the series of name whose labels are exactly
// labels ("k=v,k=v"): a gauge's or counter's value, a histogram's count.
func sample(fams map[string]*dto.MetricFamily, name, labels string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != canonicalLabels(labels) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// canonicalLabels sorts "k=v" pairs by name, as the exposition does.
func canonicalLabels(labels string) string {
	if labels == "" {
		return ""
	}
	parts := strings.Split(labels, ",")
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// OP3: event streams, long polls and MCP waits are left out of the
// request-latency histogram (they last as long as the client, and pinned
// its quantiles at the top bucket) while plain requests of the same routes
// count; webhook deliveries are counted and timed by outcome (X8).
func TestMetricsLeaveOutWaitsAndTimeWebhooks(t *testing.T) {
	db := openSQLite(t)
	reg := prometheus.NewRegistry()
	jm, err := jobs.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	app := newTestAppSet(t, db, loopbackWebhooks, func(d *Deps) { d.Metrics = reg })
	acc := app.signupAccount("waits@example.com", "Waiters")
	tok := apiKeyFor(t, app, acc)
	cl := makeJoined(t, app, launchFor(t, app, acc, "waited"), false)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	call := func(method, path, accept, body string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		if accept == "text/event-stream" { // read the first event, then hang up
			buf := make([]byte, 4096)
			var got string
			for !strings.Contains(got, "data: ") {
				n, err := resp.Body.Read(buf)
				if err != nil {
					t.Fatalf("the stream: %v", err)
				}
				got += string(buf[:n])
			}
			return got
		}
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	call("GET", "/v1/events", "application/json", "")        // timed
	call("GET", "/v1/events?wait=5", "application/json", "") // a long poll (an event is there: it answers at once)
	call("GET", "/v1/events", "text/event-stream", "")       // a stream
	if got, _ := sample(scrape(t, app), "clusterdeck_http_request_duration_seconds", `route=/v1/events,method=GET,code=200`); got != 1 {
		t.Errorf("/v1/events timed %v times, want 1 (the plain page)", got)
	}
	call("POST", "/mcp", "application/json, text/event-stream", // timed
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_events","arguments":{}}}`)
	if out := call("POST", "/mcp", "application/json, text/event-stream",
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_cluster","arguments":{"cluster_id":%q,"timeout_seconds":5}}}`, cl.ID)); !strings.Contains(out, "ready") {
		t.Fatalf("wait_for_cluster: %s", out)
	}

	// One delivery attempt of each outcome, the last one going through.
	rcv := newReceiver(t)
	var ep api.Webhook
	app.apiJSON(http.MethodPost, "/v1/webhooks", tok, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, rcv.url("/m")), http.StatusCreated, &ep)
	rcv.secrets["/m"] = []string{ep.Secret}
	job := webhookJob(app.store, "metrics")
	job.Metrics = jm
	for _, mode := range []string{"fail", "hang", "ok"} {
		// A test event is tried once (a failed one is not retried), so
		// each outcome gets its own.
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", tok, "", http.StatusAccepted, nil)
		rcv.mode.Store(mode)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(5 * time.Hour) // past the backoff
	}

	fams := scrape(t, app)
	for _, tc := range []struct {
		name, labels string
		want         float64
	}{
		{"clusterdeck_http_request_duration_seconds", `route=/mcp,method=POST,code=200`, 1},
		{"clusterdeck_webhook_deliveries_total", `outcome=ok`, 1},
		{"clusterdeck_webhook_deliveries_total", `outcome=http_error`, 1},
		{"clusterdeck_webhook_deliveries_total", `outcome=no_answer`, 1},
		{"clusterdeck_webhook_delivery_duration_seconds", `outcome=ok`, 1},
		{"clusterdeck_webhook_delivery_duration_seconds", `outcome=http_error`, 1},
		{"clusterdeck_webhook_delivery_duration_seconds", `outcome=no_answer`, 1},
	} {
		if got, ok := sample(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	// The timed-out attempt took the sender's timeout: it sits above 0.25 s.
	for _, m := range fams["clusterdeck_webhook_delivery_duration_seconds"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "no_answer" && m.GetHistogram().GetSampleSum() < 0.25 {
			t.Errorf("no_answer took %v s, want the 0.3 s timeout", m.GetHistogram().GetSampleSum())
		}
	}
	if len(rcv.events()) != 1 || len(rcv.problems()) != 0 {
		t.Errorf("delivered %d, problems %v", len(rcv.events()), rcv.problems())
	}
}
