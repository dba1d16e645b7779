package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// WebhookAnswer is a receiver's answer: its status and the start of its body.
type WebhookAnswer struct {
	Status  int
	Excerpt string
}

// WebhookPoster makes one outbound request (main adapts
// providers/webhookout to it): no redirects, a bounded time, a bounded
// answer and, in production, public addresses only.
type WebhookPoster interface {
	Post(ctx context.Context, url string, header http.Header, body []byte) (WebhookAnswer, error)
}

// Webhooks sends the webhook outbox (X8): it claims endpoints with due
// deliveries (one runner per endpoint at a time, across instances), POSTs
// each endpoint's deliveries in order per cluster, signed, and records
// every attempt. A failure makes the cluster's later events wait for the
// retry; no database transaction is open during a request.
type Webhooks struct {
	Store     *models.Store
	Poster    WebhookPoster
	BaseURL   string        // for the "endpoint paused" mail
	Holder    string        // claim owner (default "webhooks")
	Endpoints int           // endpoints per tick (default 20)
	Batch     int           // deliveries per endpoint per tick (default 200)
	Parallel  int           // endpoints sent to at once (default 8)
	Timeout   time.Duration // per request (default 10s)
	// Linger is how long a tick waits for its endpoints before it returns
	// and leaves the slow ones to finish in the background, still holding
	// their claims, so that the next tick (5 s later) serves everyone
	// else's events instead of waiting on one tenant's slow receivers
	// (A4). 0 waits for every endpoint (tests); main sets 2 s.
	Linger time.Duration
	// Metrics counts and times every delivery attempt by outcome (nil: not).
	Metrics *Metrics

	background sync.WaitGroup // sends that outlived their tick
}

// Wait waits for the sends that outlived their tick (at shutdown).
func (j *Webhooks) Wait() { j.background.Wait() }

// Name implements Job.
func (j *Webhooks) Name() string { return "webhooks" }

// Run implements Job.
func (j *Webhooks) Run(ctx context.Context) error {
	holder := j.Holder
	if holder == "" {
		holder = "webhooks"
	}
	eps, claim, err := j.Store.ClaimWebhookEndpoints(ctx, holder, max(j.Endpoints, 0)+20*btoi(j.Endpoints <= 0), models.WebhookClaimTTL)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, max(j.Parallel, 0)+8*btoi(j.Parallel <= 0))
	var mu sync.Mutex
	var errs []error
	done := make(chan struct{}, len(eps))
	// A send that outlives the tick keeps going on its own bounded timeout.
	sendCtx := context.WithoutCancel(ctx)
	if j.Linger <= 0 {
		sendCtx = ctx
	}
	for _, w := range eps {
		j.background.Add(1)
		go func() {
			defer j.background.Done()
			defer func() { done <- struct{}{} }()
			sem <- struct{}{}
			defer func() { <-sem }()
			err := j.endpoint(sendCtx, w)
			if rerr := j.Store.ReleaseWebhookEndpoint(context.WithoutCancel(ctx), w.ID, claim); rerr != nil {
				err = errors.Join(err, rerr)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("webhook endpoint %s: %w", w.ID, err))
				mu.Unlock()
			}
		}()
	}
	var linger <-chan time.Time
	if j.Linger > 0 {
		t := time.NewTimer(j.Linger)
		defer t.Stop()
		linger = t.C
	}
	for range eps {
		select {
		case <-done:
		case <-linger:
			return nil // the slow ones finish in the background; their errors are in their attempts
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// slowWebhook is an answer slow enough that the endpoint's other due
// deliveries wait for a later tick, so that a slow receiver never holds a
// sender for long.
const slowWebhook = 2 * time.Second

// endpoint sends one claimed endpoint's due deliveries, one at a time.
func (j *Webhooks) endpoint(ctx context.Context, w models.WebhookEndpoint) error {
	batch, timeout := j.Batch, j.Timeout
	if batch <= 0 {
		batch = 200
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	due, err := j.Store.DueWebhookDeliveries(ctx, w, batch)
	if err != nil {
		return err
	}
	start := time.Now()
	blocked := map[string]bool{}
	for _, d := range due {
		if blocked[d.ClusterID] {
			continue // an earlier event of this cluster failed: keep the order
		}
		if ctx.Err() != nil || time.Since(start) > models.WebhookClaimTTL/2 {
			return nil // the rest next tick, while the claim still holds
		}
		r := j.send(ctx, w, d, timeout)
		paused, err := j.Store.RecordWebhookAttempt(context.WithoutCancel(ctx), w, d, r, j.BaseURL)
		if err != nil {
			return err
		}
		if paused {
			return nil
		}
		if r.Duration > slowWebhook {
			return nil // a slow receiver gives its claim back after each slow answer: the rest next tick
		}
		if !r.OK() {
			blocked[d.ClusterID] = true
			if r.Status == 0 {
				return nil // no answer at all: the receiver is down, try its other clusters next tick
			}
		}
	}
	return nil
}

// send POSTs one delivery, signed with the endpoint's secrets.
func (j *Webhooks) send(ctx context.Context, w models.WebhookEndpoint, d models.WebhookDelivery, timeout time.Duration) models.WebhookResult {
	body := []byte(d.Body)
	secrets, err := j.Store.WebhookSecrets(w)
	if err != nil { // never sent unsigned: a failed attempt that says why
		r := models.WebhookResult{Err: err.Error()}
		j.Metrics.webhookSent(r)
		return r
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Clusterdeck-Webhooks/1")
	// t= is the wall clock's, never a development server's fake clock: a
	// receiver checks it against its own clock (docs/api.md: 300 s tolerance).
	now := time.Now()
	h.Set("Clusterdeck-Signature", models.WebhookSignature(secrets, now, body))
	// The Standard Webhooks form of the same signature, for stock verifiers (X8).
	h.Set("Webhook-Id", d.EventID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("Webhook-Signature", models.StandardWebhookSignature(secrets, d.EventID, now, body))
	h.Set("Idempotency-Key", d.EventID)
	h.Set("Clusterdeck-Event-Id", d.EventID)
	h.Set("Clusterdeck-Event-Type", d.Type)
	h.Set("Clusterdeck-Delivery-Attempt", strconv.Itoa(d.Attempts+1))
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	a, err := j.Poster.Post(sctx, w.URL, h, body)
	r := models.WebhookResult{Status: a.Status, Duration: time.Since(t0), Excerpt: a.Excerpt}
	if err != nil {
		r.Status, r.Err = 0, err.Error()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(sctx.Err(), context.DeadlineExceeded) {
			r.Err = "timed out after " + timeout.String()
		}
	}
	j.Metrics.webhookSent(r)
	return r
}

// PruneWebhookLog forgets the webhook delivery log older than 30 days.
type PruneWebhookLog struct{ Store *models.Store }

// Name implements Job.
func (j *PruneWebhookLog) Name() string { return "webhook-log-prune" }

// Run implements Job.
func (j *PruneWebhookLog) Run(ctx context.Context) error {
	_, err := j.Store.PruneWebhookLog(ctx)
	return err
}
