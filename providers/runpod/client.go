package runpod

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// newClient configures the shared request loop for RunPod: Bearer
// authentication, RFC 9457 problem bodies, a create (pod or Instant
// Cluster) never resent after a transient failure (the caller reconciles
// by name), and the documented per-user rate-limit windows.
func newClient(cfg Config) *cloudkit.Client {
	c := cloudkit.NewClient(Name, cfg.BaseURL, cfg.HTTPClient, cfg.Now, cfg.Sleep, cfg.Retries, cfg.Backoff)
	c.Auth = func(h http.Header) { h.Set("Authorization", "Bearer "+cfg.APIKey) }
	c.Refusal = refusal
	c.Once = func(method, path string) bool {
		return method == http.MethodPost && (path == pathPods || path == pathClusters)
	}
	c.Pacer = &windows{now: c.Now, sleep: c.Sleep, reserve: cfg.Reserve}
	return c
}

// refusal reads a problem body (a proxy's HTML page is classified by
// status alone); its code is the status.
func refusal(op string, status int, body []byte) *providers.Error {
	var p Problem
	_ = json.Unmarshal(body, &p)
	e := &providers.Error{Class: classify(op, status, p.Detail), Code: strconv.Itoa(status), Message: cmp.Or(p.Detail, http.StatusText(status))}
	if len(p.Errors) > 0 {
		e.Message += ": " + strings.Join(p.Errors, "; ")
	}
	return e
}

// windows paces by what RunPod announces: every window's remaining
// requests on every answer (RateLimit: "minute";r=0;t=12, ...); when one
// is spent, or a 429 says how long to wait, nothing is sent until then.
// The last reserve requests of a window are kept for releases
// (cloudkit.Urgent): once a window has no more left, every other request
// waits for it to reset, so terminates go first when the budget is short.
type windows struct {
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	reserve int

	mu          sync.Mutex
	pausedUntil time.Time
	lowUntil    time.Time // the reserve is reached until then
}

// Wait sleeps out a pause, and a request that releases nothing the
// reserve's too.
func (c *windows) Wait(ctx context.Context, _, _ string) error {
	c.mu.Lock()
	until := c.pausedUntil
	if !cloudkit.IsUrgent(ctx) && c.lowUntil.After(until) {
		until = c.lowUntil
	}
	wait := until.Sub(c.now())
	c.mu.Unlock()
	if wait > 0 {
		return c.sleep(ctx, wait)
	}
	return nil
}

// Answered notes the windows, and pauses every request for a 429's Retry-After.
func (c *windows) Answered(h http.Header, refusal *providers.Error) {
	c.noteLimits(h.Get("RateLimit"))
	if refusal != nil && refusal.Class == providers.ErrRateLimited {
		c.pause(refusal.RetryAfter)
	}
}

// Retry waits the backoff's wait.
func (c *windows) Retry(_, _ string, _ *providers.Error, wait time.Duration) time.Duration {
	return wait
}

var windowRe = regexp.MustCompile(`"?([a-z]+)"?\s*;\s*r=(\d+)\s*;\s*t=(\d+)`)

// noteLimits reads the RateLimit header: a window with no request left
// pauses every request until it resets, one with no more than the
// reserve left every request but a release's.
func (c *windows) noteLimits(h string) {
	for _, m := range windowRe.FindAllStringSubmatch(h, -1) {
		left, _ := strconv.Atoi(m[2])
		t, _ := strconv.Atoi(m[3])
		reset := time.Duration(t) * time.Second
		if left == 0 {
			c.pause(reset)
		}
		if left <= c.reserve && reset > 0 {
			c.mu.Lock()
			if until := c.now().Add(reset); until.After(c.lowUntil) {
				c.lowUntil = until
			}
			c.mu.Unlock()
		}
	}
}

func (c *windows) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now().Add(d); t.After(c.pausedUntil) {
		c.pausedUntil = t
	}
}

// capacityRe matches the capacity refusal's wording: RunPod's 400 carries
// no machine code for it, only the human detail.
var capacityRe = regexp.MustCompile(`(?i)no longer any instances available|not enough (free )?(gpus|capacity|instances)|no (gpu|instances?|machines?) available|insufficient (capacity|resources)|out of (stock|capacity)`)

// classify maps a status and its detail onto the provider-neutral classes
// (the spec's retry table).
func classify(op string, status int, detail string) error {
	switch {
	case status == http.StatusBadRequest && capacityRe.MatchString(detail):
		return providers.ErrNoCapacity
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return providers.ErrValidation
	case status == http.StatusPaymentRequired:
		return providers.ErrQuota
	case status == http.StatusUnauthorized:
		return providers.ErrAuth
	case status == http.StatusForbidden && op == opPlace:
		return providers.ErrQuota // the account cannot use this pool: another offer may do
	case status == http.StatusForbidden:
		return providers.ErrAuth
	case status == http.StatusNotFound:
		if op == opPlace {
			return providers.ErrValidation // an unknown GPU type or data center named in the create
		}
		return providers.ErrNotFound
	case status == http.StatusConflict:
		if op == opStop {
			return providers.ErrValidation // not a valid action in the pod's status
		}
		return providers.ErrTransient // e.g. a restart while the pod starts: later it may work
	case status == http.StatusTooManyRequests:
		return providers.ErrRateLimited
	case status == http.StatusRequestTimeout, status >= 500:
		return providers.ErrTransient
	}
	return providers.ErrValidation
}
