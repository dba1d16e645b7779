package web

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the registry /metrics exposes. main passes one registry to web
// and jobs, so each package registers its own metrics and neither imports the
// other; tests build their own.
type Metrics interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// httpMetrics times every answer of this process.
type httpMetrics struct {
	latency *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "clusterdeck_http_request_duration_seconds",
		Help:    "Time to answer HTTP requests in this process, by route pattern, method and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method", "code"})}
	reg.MustRegister(m.latency)
	return m
}

// knownMethods bounds the method label; anything else counts as "other".
var knownMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
	http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true}

// untimedKey marks a request the latency histogram leaves out.
const untimedKey = "metrics.untimed"

// untimed leaves c's request out of the request-latency histogram: an
// event or log stream, a long poll and an MCP wait last as long as the
// client or the wait, not as long as the server takes to answer, and
// would pin every quantile at the top bucket (OP3).
func untimed(c echo.Context) { c.Set(untimedKey, true) }

// timeRequests observes every answer's latency under its route pattern
// (echo's c.Path(), so /v1/gpu/clusters/:id is one series whatever the id).
// Requests no route matched share the route "unmatched".
func (h *handler) timeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if c.Get(untimedKey) == true {
			return err
		}
		status := c.Response().Status
		if err != nil {
			status = classify(err).Status
		}
		route := c.Path()
		if status == http.StatusNotFound && (route == "" || strings.HasSuffix(route, "*")) {
			route = "unmatched" // no route, or a group's catch-all: keep raw paths out of the labels
		}
		method := c.Request().Method
		if !knownMethods[method] {
			method = "other"
		}
		h.httpMetrics.latency.WithLabelValues(route, method, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

// metrics is GET /metrics in the Prometheus text format (OP3). With
// METRICS_TOKEN set it needs that bearer token; without one it answers
// direct requests from this machine (isLocal) in development, and in
// production only with METRICS_LOOPBACK=1 (OP5).
func (h *handler) metrics(c echo.Context) error {
	if !h.metricsAllowed(c) {
		if h.Config.Production && h.Config.MetricsToken == "" && !h.Config.MetricsLoopback {
			return echo.NewHTTPError(http.StatusForbidden, "Metrics need METRICS_TOKEN: set it and scrape with its bearer token.")
		}
		return echo.NewHTTPError(http.StatusForbidden, "Metrics need the METRICS_TOKEN bearer token, or a direct (not forwarded) request from this machine.")
	}
	h.metricsHandler.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (h *handler) metricsAllowed(c echo.Context) bool {
	if tok := h.Config.MetricsToken; tok != "" {
		sent, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
		return ok && subtle.ConstantTimeCompare([]byte(sent), []byte(tok)) == 1
	}
	if h.Config.Production && !h.Config.MetricsLoopback {
		return false
	}
	return isLocal(c.Request())
}

// newMetricsHandler registers the web metrics on reg and serves reg. Echo's
// gzip middleware compresses the answer, so promhttp does not.
func (h *handler) newMetricsHandler(reg Metrics) http.Handler {
	h.httpMetrics = newHTTPMetrics(reg)
	reg.MustRegister(storeCollector{store: h.Store})
	// A collector that fails (a query of the store) leaves its own series
	// out and the rest are still served: no one's data breaks the scrape.
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true, ErrorHandling: promhttp.ContinueOnError,
		ErrorLog: slog.NewLogLogger(h.Log.Handler(), slog.LevelError)})
}

// Labels never use job or instance: Prometheus attaches both to every
// scraped series (the scrape job and the target) and renames a metric's own
// to exported_job, so queries on them would match nothing; jobs are
// job_name (OP3).

// storeCollector reads the shared state from the database at scrape time, so
// every instance reports the same numbers (OP3, OP4).
type storeCollector struct{ store *models.Store }

var (
	descClusters = prometheus.NewDesc("clusterdeck_clusters",
		"Clusters by status.", []string{"status"}, nil)
	descMail = prometheus.NewDesc("clusterdeck_mail_outbox",
		"Mails in the outbox by state (pending, failed).", []string{"state"}, nil)
	descCatalogOffers = prometheus.NewDesc("clusterdeck_catalog_offers",
		"Offers stored per provider.", []string{"provider"}, nil)
	descCatalogAge = prometheus.NewDesc("clusterdeck_catalog_age_seconds",
		"Seconds since each provider's catalog was refreshed.", []string{"provider"}, nil)
	descJobLastRun = prometheus.NewDesc("clusterdeck_job_last_run_timestamp_seconds",
		"When each job last ran on any instance (Unix time).", []string{"job_name"}, nil)
	descJobLastFailed = prometheus.NewDesc("clusterdeck_job_last_run_failed",
		"1 when the last run of the job, on any instance, failed.", []string{"job_name"}, nil)
	descLedgerEntries = prometheus.NewDesc("clusterdeck_ledger_entries",
		"Ledger entries of every organisation by kind and status.", []string{"kind", "status"}, nil)
	descRepair = prometheus.NewDesc("clusterdeck_machine_repair_seconds",
		"Time to repair: from a machine declared down to its replacement joined, every repair so far.", nil, nil)
	descLedgerUSD = prometheus.NewDesc("clusterdeck_ledger_usd",
		"Sum of ledger entries of every organisation in US dollars (signed: usage is negative), by kind and status.", []string{"kind", "status"}, nil)
	// GPU usage per cluster (OP3): one series per cluster
	// whose GPUs reported in the last minutes, so the label set is the
	// clusters running now, never customers' jobs or processes.
	descClusterGPUUtil = prometheus.NewDesc("clusterdeck_cluster_gpu_utilization_ratio",
		"Mean GPU utilization (0-1) of a running cluster's GPUs, from their newest minute point.", []string{"cluster"}, nil)
	descClusterGPUMemUsed = prometheus.NewDesc("clusterdeck_cluster_gpu_memory_used_bytes",
		"GPU memory in use on a running cluster's GPUs.", []string{"cluster"}, nil)
	descClusterGPUMemTotal = prometheus.NewDesc("clusterdeck_cluster_gpu_memory_total_bytes",
		"GPU memory of a running cluster's GPUs.", []string{"cluster"}, nil)
	descClusterGPUs = prometheus.NewDesc("clusterdeck_cluster_gpus_reporting",
		"GPUs of a running cluster that reported in the last minutes.", []string{"cluster"}, nil)
	descFleetGPUUtil = prometheus.NewDesc("clusterdeck_fleet_gpu_utilization_ratio",
		"Mean GPU utilization (0-1) of every GPU that reported in the last minutes.", nil, nil)
	// OP1, Q2: the alarm on a provider billing above what a cluster cost
	// at launch (listed on /admin/prices).
	descBilledAbove = prometheus.NewDesc("clusterdeck_clusters_billed_above_launch_cost",
		"Clusters not ended whose provider says it bills more per machine-hour than the machine cost at launch.", nil, nil)
)

// clusterStatuses are reported even at zero, so alerts see the series.
var clusterStatuses = []models.ClusterStatus{models.StatusProvisioning, models.StatusInstalling, models.StatusVerifying, models.StatusReady,
	models.StatusDegraded, models.StatusStopped, models.StatusFailed, models.StatusTerminated}

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClusters, descMail, descCatalogOffers, descCatalogAge,
		descJobLastRun, descJobLastFailed, descLedgerEntries, descLedgerUSD, descRepair,
		descClusterGPUUtil, descClusterGPUMemUsed, descClusterGPUMemTotal, descClusterGPUs, descFleetGPUUtil, descBilledAbove} {
		ch <- d
	}
}

func (s storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := s.store.MetricsGauges(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descClusters, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, st := range clusterStatuses {
		gauge(descClusters, float64(g.ClustersByStatus[st]), string(st))
	}
	gauge(descMail, float64(g.MailPending), "pending")
	gauge(descMail, float64(g.MailFailed), "failed")
	now := s.store.Now()
	for _, c := range g.Catalog {
		gauge(descCatalogOffers, float64(c.Offers), c.Provider)
		gauge(descCatalogAge, c.CatalogAge(now).Seconds(), c.Provider)
	}
	for _, j := range g.Jobs {
		gauge(descJobLastRun, float64(j.StartedAt.Unix()), j.Name)
		failed := 0.0
		if j.Error != "" {
			failed = 1
		}
		gauge(descJobLastFailed, failed, j.Name)
	}
	for _, l := range g.Ledger {
		gauge(descLedgerEntries, float64(l.Entries), l.Kind, l.Status)
		gauge(descLedgerUSD, l.USD(), l.Kind, l.Status)
	}
	const mib = 1 << 20
	for _, u := range g.GPUs {
		gauge(descClusterGPUUtil, u.UtilPct/100, u.ClusterID)
		gauge(descClusterGPUMemUsed, float64(u.MemUsedMiB)*mib, u.ClusterID)
		gauge(descClusterGPUMemTotal, float64(u.MemTotalMiB)*mib, u.ClusterID)
		gauge(descClusterGPUs, float64(u.GPUs), u.ClusterID)
	}
	_, _, util := models.FleetGPUUsage(g.GPUs)
	gauge(descFleetGPUUtil, util/100)
	if n, err := s.store.LiveBilledAbove(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(descBilledAbove, err)
	} else {
		gauge(descBilledAbove, float64(n))
	}
	// X2: read from the database like the gauges, so every
	// instance reports every repair.
	if r, err := s.store.RepairTimes(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(descRepair, err)
	} else {
		ch <- prometheus.MustNewConstHistogram(descRepair, r.Count, r.Sum, r.Buckets)
	}
}
