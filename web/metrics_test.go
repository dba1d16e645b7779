package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
)

// OP3: /metrics reports the shared gauges in the Prometheus text format, to
// loopback scrapers or to holders of METRICS_TOKEN only.
func TestMetrics(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("m@example.com", "Metered")
		cl := launchFor(t, app, acc, "metered")
		makeJoined(t, app, cl, true)
		launchFor(t, app, acc, "second")
		app.store.RecordJobRun(ctx, "catalog", testNow, testNow.Add(time.Second), nil)
		app.store.EnqueueMail(ctx, models.Mail{Key: "k1", To: "a@example.com", Subject: "s", Text: "t"})
		app.get("/no/such/page") // a 4xx for the per-process counter

		local := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		local.RemoteAddr = "127.0.0.1:9100"
		rec := app.do(local)
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Fatalf("%d %s", rec.Code, rec.Header().Get("Content-Type"))
		}
		body := rec.Body.String()
		for _, want := range []string{
			`clusterdeck_clusters{status="ready"} 1`,
			`clusterdeck_clusters{status="provisioning"} 1`,
			`clusterdeck_clusters{status="failed"} 0`,
			`clusterdeck_mail_outbox{state="pending"} 1`,
			`clusterdeck_catalog_offers{provider="sim"} 1`,
			`clusterdeck_job_runs_total{job="catalog"} 1`,
			"# TYPE clusterdeck_job_failures_total counter",
			`clusterdeck_http_responses_total{class="4xx"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q:\n%s", want, body)
			}
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
