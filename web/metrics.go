package web

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// requestCounts counts this process's HTTP answers by status class, for
// /metrics (one process's view; the database gauges are shared).
type requestCounts struct{ byClass [6]atomic.Int64 }

func (r *requestCounts) add(status int) {
	if i := status / 100; i >= 1 && i <= 5 {
		r.byClass[i].Add(1)
	}
}

// countRequests records every answer's status class.
func (h *handler) countRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status = classify(err).Status
		}
		h.requests.add(status)
		return err
	}
}

// metrics is GET /metrics in the Prometheus text format (OP3). With
// METRICS_TOKEN set it needs that bearer token; without one it answers
// loopback clients only.
func (h *handler) metrics(c echo.Context) error {
	if !h.metricsAllowed(c) {
		return echo.NewHTTPError(http.StatusForbidden, "Metrics need the METRICS_TOKEN bearer token, or a request from this machine.")
	}
	g, err := h.Store.MetricsGauges(c.Request().Context())
	if err != nil {
		return err
	}
	var b strings.Builder
	now := h.Store.Now()
	gauge := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	counter := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	}
	gauge("clusterdeck_clusters", "Clusters by status.")
	for _, st := range []models.ClusterStatus{models.StatusProvisioning, models.StatusInstalling, models.StatusReady,
		models.StatusDegraded, models.StatusStopped, models.StatusFailed, models.StatusTerminated} {
		fmt.Fprintf(&b, "clusterdeck_clusters{status=%q} %d\n", st, g.ClustersByStatus[st])
	}
	gauge("clusterdeck_mail_outbox", "Mails in the outbox by state.")
	fmt.Fprintf(&b, "clusterdeck_mail_outbox{state=\"pending\"} %d\n", g.MailPending)
	fmt.Fprintf(&b, "clusterdeck_mail_outbox{state=\"failed\"} %d\n", g.MailFailed)
	gauge("clusterdeck_catalog_offers", "Offers stored per provider.")
	for _, ch := range g.Catalog {
		fmt.Fprintf(&b, "clusterdeck_catalog_offers{provider=%q} %d\n", ch.Provider, ch.Offers)
	}
	gauge("clusterdeck_catalog_age_seconds", "Seconds since each provider's catalog was refreshed.")
	for _, ch := range g.Catalog {
		fmt.Fprintf(&b, "clusterdeck_catalog_age_seconds{provider=%q} %.0f\n", ch.Provider, ch.CatalogAge(now).Seconds())
	}
	jobs := g.Jobs
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	counter("clusterdeck_job_runs_total", "Job ticks run, across instances.")
	for _, j := range jobs {
		fmt.Fprintf(&b, "clusterdeck_job_runs_total{job=%q} %d\n", j.Name, j.Runs)
	}
	counter("clusterdeck_job_failures_total", "Job ticks that failed, across instances.")
	for _, j := range jobs {
		fmt.Fprintf(&b, "clusterdeck_job_failures_total{job=%q} %d\n", j.Name, j.Failures)
	}
	gauge("clusterdeck_job_last_run_timestamp_seconds", "When each job last ran (Unix time).")
	for _, j := range jobs {
		fmt.Fprintf(&b, "clusterdeck_job_last_run_timestamp_seconds{job=%q} %d\n", j.Name, j.StartedAt.Unix())
	}
	counter("clusterdeck_http_responses_total", "HTTP responses of this process by status class.")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "clusterdeck_http_responses_total{class=\"%dxx\"} %d\n", i, h.requests.byClass[i].Load())
	}
	c.Response().Header().Set(echo.HeaderContentType, "text/plain; version=0.0.4; charset=utf-8")
	return c.String(http.StatusOK, b.String())
}

func (h *handler) metricsAllowed(c echo.Context) bool {
	if tok := h.Config.MetricsToken; tok != "" {
		sent, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
		return ok && subtle.ConstantTimeCompare([]byte(sent), []byte(tok)) == 1
	}
	ip := net.ParseIP(c.RealIP())
	return ip != nil && ip.IsLoopback()
}
