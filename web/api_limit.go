package web

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// GPU metrics answers are rate-limited (X15, X19): each is a query over
// a window of every machine's minute points, so a tenant polling its
// 24-hour window in a loop must not take the database from the others.
// Per credential (an API key, or a signed-in person) GPUMetricsPerMinute
// after a burst of GPUMetricsBurst, and per organisation
// GPUMetricsOrgPerMinute across its credentials; one more is refused with
// 429 and Retry-After before the query runs. A dashboard polls far slower
// (a chart every 10 s or more). The buckets live in this instance's
// memory, like the agents' (agent_limit.go).
const (
	GPUMetricsPerMinute    = 60
	GPUMetricsBurst        = 20
	GPUMetricsOrgPerMinute = 240
	gpuMetricsOrgBurst     = 60
)

// readLimits are a per-credential and a per-organisation bucket for one
// costly read, with the words its 429 uses.
type readLimits struct {
	what             string
	perMinute, orgPM int
	key, org         *logLimiter
	hold             time.Duration
}

func newReadLimits(now func() time.Time, hold time.Duration, what string, perMinute, burst, orgPerMinute, orgBurst int) *readLimits {
	bucket := func(n, b int) *logLimiter {
		return &logLimiter{now: now, every: rate.Limit(float64(n) / 60), burst: b, buckets: map[string]*nodeBucket{}}
	}
	return &readLimits{what: what, perMinute: perMinute, orgPM: orgPerMinute,
		key: bucket(perMinute, burst), org: bucket(orgPerMinute, orgBurst), hold: hold}
}

// limit is the route's middleware, after the caller is authenticated.
func (l *readLimits) limit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principal(c)
		if p == nil {
			return next(c)
		}
		who := "key:" + p.APIKeyID
		if p.APIKeyID == "" {
			who = "user:" + p.UserID
		}
		scope := "this credential: at most " + strconv.Itoa(l.perMinute) + " a minute"
		d := l.key.wait(who, 1)
		if d == 0 {
			if d = l.org.wait(p.Org.ID, 1); d > 0 {
				scope = "this organisation: at most " + strconv.Itoa(l.orgPM) + " a minute across its keys and people"
			}
		}
		if d == 0 {
			return next(c)
		}
		secs := int(math.Ceil(max(d, time.Second).Seconds()))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		holdRefusal(c, min(d, l.hold))
		return &APIError{Status: http.StatusTooManyRequests, Code: "too_many_requests",
			Message: "Too many " + l.what + " requests for " + scope + "; try again in " + strconv.Itoa(secs) + " s.",
			Extra:   map[string]any{"retryAfter": secs}}
	}
}
