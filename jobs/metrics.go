package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/prometheus/client_golang/prometheus"
)

// Job outcomes, as the outcome label of the job metrics.
const (
	outcomeOK      = "ok"
	outcomeError   = "error"
	outcomeSkipped = "skipped" // another instance held the lease
)

// Metrics is this process's view of its job ticks and provider calls (OP3),
// registered on the registry the server exposes at /metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	runs           *prometheus.CounterVec
	durations      *prometheus.HistogramVec
	providerErrors *prometheus.CounterVec
	webhookSends   *prometheus.CounterVec
	webhookLatency *prometheus.HistogramVec
}

// Webhook delivery outcomes (X8): a 2xx answer, another answer, or none
// (refused, timed out, or not sent because the secret does not open).
const (
	webhookOK        = "ok"
	webhookHTTPError = "http_error"
	webhookNoAnswer  = "no_answer"
)

// webhookOutcome names r's outcome.
func webhookOutcome(r models.WebhookResult) string {
	switch {
	case r.OK():
		return webhookOK
	case r.Status != 0:
		return webhookHTTPError
	}
	return webhookNoAnswer
}

// webhookSent counts one delivery attempt and times it by outcome.
func (m *Metrics) webhookSent(r models.WebhookResult) {
	if m == nil {
		return
	}
	o := webhookOutcome(r)
	m.webhookSends.WithLabelValues(o).Inc()
	m.webhookLatency.WithLabelValues(o).Observe(r.Duration.Seconds())
}

// NewMetrics registers the job and provider metrics on reg. The job's
// label is job_name: Prometheus's own job label (the scrape job) would
// rename a metric's job to exported_job.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clusterdeck_job_runs_total",
			Help: "Job ticks of this process by job and outcome (ok, error, skipped: another instance held the lease).",
		}, []string{"job_name", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clusterdeck_job_duration_seconds",
			Help:    "Duration of the job ticks this process ran, by job and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"job_name", "outcome"}),
		providerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clusterdeck_provider_errors_total",
			Help: "Failed provider calls made by the jobs, by provider, operation and error class.",
		}, []string{"provider", "op", "class"}),
		webhookSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clusterdeck_webhook_deliveries_total",
			Help: "Webhook delivery attempts this process made, by outcome (ok: a 2xx answer; http_error: another answer; no_answer: refused, timed out or not sent).",
		}, []string{"outcome"}),
		webhookLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clusterdeck_webhook_delivery_duration_seconds",
			Help:    "Time from sending a webhook delivery to its receiver's answer (or the give-up), by outcome.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10},
		}, []string{"outcome"}),
	}
	for _, o := range []string{webhookOK, webhookHTTPError, webhookNoAnswer} { // visible at zero
		m.webhookSends.WithLabelValues(o)
		m.webhookLatency.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.runs, m.durations, m.providerErrors, m.webhookSends, m.webhookLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// scheduled makes a job's series visible at zero before its first tick.
func (m *Metrics) scheduled(job string) {
	if m != nil {
		m.runs.WithLabelValues(job, outcomeOK)
		m.runs.WithLabelValues(job, outcomeError)
	}
}

func (m *Metrics) ran(job, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(job, outcome).Inc()
	if outcome != outcomeSkipped {
		m.durations.WithLabelValues(job, outcome).Observe(d.Seconds())
	}
}

// instrument wraps every provider so that each failed call is counted.
func (m *Metrics) instrument(reg providers.Registry) providers.Registry {
	if m == nil {
		return reg
	}
	out := make(providers.Registry, len(reg))
	for name, p := range reg {
		out[name] = countedProvider{Provider: p, errs: m.providerErrors}
	}
	return out
}

// ErrorClass names the class of a provider error for the class label: the
// sentinel it wraps (providers/provider.go), a timeout, or "unclassified".
func ErrorClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{providers.ErrNoCapacity, "no_capacity"},
		{providers.ErrValidation, "validation"},
		{providers.ErrQuota, "quota"},
		{providers.ErrTransient, "transient"},
		{providers.ErrNotFound, "not_found"},
		{providers.ErrUnrecoverable, "unrecoverable"},
		{providers.ErrAuth, "auth"},
		{providers.ErrRateLimited, "rate_limited"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "unclassified"
}

// countedProvider counts a provider's failed calls and changes nothing else.
type countedProvider struct {
	providers.Provider
	errs *prometheus.CounterVec
}

func (p countedProvider) count(op string, err error) error {
	if err != nil {
		p.errs.WithLabelValues(p.Name(), op, ErrorClass(err)).Inc()
	}
	return err
}

func (p countedProvider) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	o, err := p.Provider.ListOffers(ctx)
	return o, p.count("ListOffers", err)
}

func (p countedProvider) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	g, err := p.Provider.PlaceGroup(ctx, req)
	return g, p.count("PlaceGroup", err)
}

func (p countedProvider) DescribeGroup(ctx context.Context, name string) (providers.Group, error) {
	g, err := p.Provider.DescribeGroup(ctx, name)
	return g, p.count("DescribeGroup", err)
}

func (p countedProvider) DescribeGroups(ctx context.Context, names []string) (map[string]providers.Group, error) {
	g, err := p.Provider.DescribeGroups(ctx, names)
	return g, p.count("DescribeGroups", err)
}

func (p countedProvider) RestartNode(ctx context.Context, group, node string) error {
	return p.count("RestartNode", p.Provider.RestartNode(ctx, group, node))
}

func (p countedProvider) StopNode(ctx context.Context, group, node string) error {
	return p.count("StopNode", p.Provider.StopNode(ctx, group, node))
}

func (p countedProvider) TerminateGroup(ctx context.Context, group string) error {
	return p.count("TerminateGroup", p.Provider.TerminateGroup(ctx, group))
}

func (p countedProvider) PlaceNode(ctx context.Context, group string, index int, req providers.PlaceRequest) (providers.Node, error) {
	n, err := p.Provider.PlaceNode(ctx, group, index, req)
	return n, p.count("PlaceNode", err)
}

func (p countedProvider) ReleaseNode(ctx context.Context, group, node string) error {
	return p.count("ReleaseNode", p.Provider.ReleaseNode(ctx, group, node))
}
