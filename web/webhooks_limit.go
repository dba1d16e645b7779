package web

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Sending a test event and redelivering are rate-limited (A4, X8): per
// endpoint WebhookSendsPerMinute with a burst of WebhookSendBurst, and per
// organisation WebhookOrgSendsPerMinute in all, so neither can flood a
// receiver or the delivery queue. The buckets live in this instance's
// memory, like the agent logs' (agent_limit.go).
const (
	WebhookSendsPerMinute    = 6
	WebhookSendBurst         = 10
	WebhookOrgSendsPerMinute = 30
	webhookOrgSendBurst      = 40
)

// keyLimiter holds one token bucket per key; buckets unused for an hour
// are dropped.
type keyLimiter struct {
	now     func() time.Time
	limit   rate.Limit
	burst   int
	mu      sync.Mutex
	buckets map[string]*keyBucket
	swept   time.Time
}

type keyBucket struct {
	lim  *rate.Limiter
	used time.Time
}

func newKeyLimiter(now func() time.Time, perMinute float64, burst int) *keyLimiter {
	return &keyLimiter{now: now, limit: rate.Limit(perMinute / 60), burst: burst, buckets: map[string]*keyBucket{}}
}

// reserve takes one token from key's bucket: the reservation (to cancel
// if another limit refuses), or how long until a token is there.
func (l *keyLimiter) reserve(key string) (*rate.Reservation, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Hour {
		for k, b := range l.buckets {
			if now.Sub(b.used) > time.Hour {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &keyBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return nil, time.Hour
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, d
	}
	return r, 0
}

// webhookSendLimits are the endpoint and organisation buckets.
type webhookSendLimits struct{ endpoint, org *keyLimiter }

func newWebhookSendLimits(now func() time.Time) *webhookSendLimits {
	return &webhookSendLimits{endpoint: newKeyLimiter(now, WebhookSendsPerMinute, WebhookSendBurst),
		org: newKeyLimiter(now, WebhookOrgSendsPerMinute, webhookOrgSendBurst)}
}

// allow takes a send for the endpoint of org; an error is the 429 to
// answer, with Retry-After set.
func (l *webhookSendLimits) allow(c echo.Context, orgID, endpointID string) error {
	scope := "this endpoint: at most " + strconv.Itoa(WebhookSendsPerMinute) + " a minute after a burst of " + strconv.Itoa(WebhookSendBurst)
	r, d := l.endpoint.reserve(endpointID)
	if d == 0 {
		if _, d = l.org.reserve(orgID); d > 0 {
			r.CancelAt(l.endpoint.now()) // the endpoint's token goes back
			scope = "this organisation: at most " + strconv.Itoa(WebhookOrgSendsPerMinute) + " a minute across its endpoints"
		}
	}
	if d == 0 {
		return nil
	}
	secs := int(math.Ceil(max(d, time.Second).Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return &APIError{Status: http.StatusTooManyRequests, Code: "too_many_requests",
		Message: "Too many test events and redeliveries for " + scope + "; try again in " + strconv.Itoa(secs) + " s.",
		Extra:   map[string]any{"retryAfter": secs}}
}
