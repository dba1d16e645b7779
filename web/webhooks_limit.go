package web

import (
	"math"
	"net/http"
	"strconv"
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

// webhookSendLimits are the endpoint and organisation buckets.
// They are the agents' bucket limiters (agent_limit.go) at a minute's
// rates.
type webhookSendLimits struct{ endpoint, org *logLimiter }

func newWebhookSendLimits(now func() time.Time) *webhookSendLimits {
	perMinute := func(n float64, burst int) *logLimiter {
		return &logLimiter{now: now, every: rate.Limit(n / 60), burst: burst, buckets: map[string]*nodeBucket{}}
	}
	return &webhookSendLimits{endpoint: perMinute(WebhookSendsPerMinute, WebhookSendBurst),
		org: perMinute(WebhookOrgSendsPerMinute, webhookOrgSendBurst)}
}

// allow takes a send for the endpoint of org; an error is the 429 to
// answer, with Retry-After set.
func (l *webhookSendLimits) allow(c echo.Context, orgID, endpointID string) error {
	scope := "this endpoint: at most " + strconv.Itoa(WebhookSendsPerMinute) + " a minute after a burst of " + strconv.Itoa(WebhookSendBurst)
	d := l.endpoint.wait(endpointID, 1)
	if d == 0 {
		if d = l.org.wait(orgID, 1); d > 0 { // the endpoint's token is spent: the refusal counts against it too
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
