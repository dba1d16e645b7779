package lambda

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// Documented pacing of the Lambda Cloud API v1: requests are "generally
// limited to one request per second", and /instance-operations/launch to
// "one request per 12 seconds, or five requests per minute".
const (
	RequestInterval = time.Second
	LaunchInterval  = 12 * time.Second
)

// Slack is added to each interval, a share of it: requests booked exactly
// an interval apart arrive closer when the earlier one travelled longer,
// and Lambda answers 429. At the documented intervals requests leave
// 1.25 s apart (a quarter more), launches 13 s apart (a twelfth more).
const (
	requestSlackShare = 4  // RequestInterval / 4
	launchSlackShare  = 12 // LaunchInterval / 12
)

// apiError is the documented error envelope's payload:
// {"error": {"code": ..., "message": ..., "suggestion": ...}}.
type apiError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// newClient configures the shared request loop for Lambda: Bearer
// authentication, the {"data": …} envelope, the {"error": …} envelope and
// its codes, a launch never resent after a transient failure (the caller
// reconciles by name first), and the documented pacing.
func newClient(cfg Config) *cloudkit.Client {
	c := cloudkit.NewClient(Name, cfg.BaseURL, cfg.HTTPClient, cfg.Now, cfg.Sleep, cfg.Retries, cfg.Backoff)
	c.Auth = func(h http.Header) { h.Set("Authorization", "Bearer "+cfg.APIKey) }
	c.Decode, c.Refusal = data, refusal
	// A launch or a restart may have been carried out when its answer is
	// lost: it is not resent blindly (the caller looks first).
	c.Once = func(_, path string) bool { return path == pathLaunch || path == pathRestart }
	c.Pacer = newPacer(cfg, c.Now, c.Sleep)
	return c
}

// data decodes the "data" member of a 2xx answer into out.
func data(status int, body []byte, out any) error {
	env := struct {
		Data json.RawMessage `json:"data"`
	}{}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		return fmt.Errorf("answer %d is not a {\"data\": …} envelope", status)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// refusal reads the error envelope (a non-JSON error, a proxy's 502 page,
// is classified by status alone); the suggestion joins the message.
func refusal(op string, status int, body []byte) *providers.Error {
	var env struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	e := &providers.Error{Class: classify(op, status, env.Error.Code, env.Error.Message), Code: env.Error.Code,
		Message: cmp.Or(env.Error.Message, http.StatusText(status))}
	if env.Error.Suggestion != "" {
		e.Message += " (" + env.Error.Suggestion + ")"
	}
	return e
}

// pacer spaces requests so that at most one leaves per RequestInterval
// and one launch per LaunchInterval, each with its slack (per account;
// one adapter per process).
type pacer struct {
	now                       func() time.Time
	sleep                     func(context.Context, time.Duration) error
	requestEvery, launchEvery time.Duration // the intervals (RequestInterval, LaunchInterval unless configured) with their slack

	mu         sync.Mutex
	booked     []time.Time // send times of requests booked within the last RequestInterval or ahead
	nextLaunch time.Time
}

// Wait books the request's slot and sleeps until it.
func (c *pacer) Wait(ctx context.Context, _, path string) error {
	return c.wait(ctx, path == pathLaunch)
}

// Answered: Lambda announces no budget on its answers.
func (c *pacer) Answered(http.Header, *providers.Error) {}

// Retry holds every launch back after a launch was refused as too early:
// at least LaunchInterval, longer when Retry-After says so.
func (c *pacer) Retry(_, path string, refusal *providers.Error, wait time.Duration) time.Duration {
	if path == pathLaunch && refusal.Class == providers.ErrRateLimited {
		wait = max(wait, c.launchEvery)
		c.holdLaunches(wait)
	}
	return wait
}

// wait books the next free slot for a request (a launch when launch is
// set) and sleeps until it. Slots are booked under the lock and waited for
// outside it, so a launch waiting its 12 s does not hold up the describe
// calls meanwhile: they take the free slots around it, every request
// RequestInterval away from every other.
func (c *pacer) wait(ctx context.Context, launch bool) error {
	c.mu.Lock()
	now := c.now()
	kept := c.booked[:0]
	for _, b := range c.booked {
		if now.Sub(b) < c.requestEvery {
			kept = append(kept, b)
		}
	}
	c.booked = kept
	at := now
	if launch && c.nextLaunch.After(at) {
		at = c.nextLaunch
	}
	for moved := true; moved; {
		moved = false
		for _, b := range c.booked {
			if d := at.Sub(b); d > -c.requestEvery && d < c.requestEvery {
				at, moved = b.Add(c.requestEvery), true
			}
		}
	}
	c.booked = append(c.booked, at)
	if launch {
		c.nextLaunch = at.Add(c.launchEvery)
	}
	c.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		return c.sleep(ctx, d)
	}
	return nil
}

// newPacer paces cfg's intervals with their slack.
func newPacer(cfg Config, now func() time.Time, sleep func(context.Context, time.Duration) error) *pacer {
	return &pacer{now: now, sleep: sleep, requestEvery: cfg.RequestInterval + cfg.RequestInterval/requestSlackShare,
		launchEvery: cfg.LaunchInterval + cfg.LaunchInterval/launchSlackShare}
}

// launchIn is how long a launch booked now would wait for its slot.
func (c *pacer) launchIn() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.nextLaunch.Sub(c.now()))
}

// holdLaunches pushes the next launch back by d: the upstream said it was too early.
func (c *pacer) holdLaunches(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now().Add(d); t.After(c.nextLaunch) {
		c.nextLaunch = t
	}
}

// classify maps a documented error code (or, without one, the HTTP status)
// onto the provider-neutral classes. Clients must branch on code, never on
// message or suggestion (Lambda Cloud API v1) — except for the provider/
// family, see upstream.
func classify(op string, status int, code, message string) error {
	switch code {
	case "instance-operations/launch/insufficient-capacity":
		return providers.ErrNoCapacity
	case "global/quota-exceeded":
		return providers.ErrQuota
	case "global/invalid-parameters", "instance-operations/launch/file-system-in-wrong-region", "global/duplicate":
		return providers.ErrValidation
	case "global/object-does-not-exist":
		if op == opLaunch {
			return providers.ErrValidation // an unknown SSH key, image or file system named in the request
		}
		return providers.ErrNotFound
	case "global/not-found":
		return providers.ErrNotFound
	case "global/invalid-api-key", "global/account-inactive", "global/invalid-address", "global/forbidden":
		return providers.ErrAuth
	case "global/conflict":
		return providers.ErrTransient // e.g. a restart while the machine boots: later it may work
	}
	if rest, ok := strings.CutPrefix(code, "provider/"); ok {
		return upstream(rest, message)
	}
	switch {
	case status == http.StatusTooManyRequests:
		return providers.ErrRateLimited
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return providers.ErrAuth
	case status == http.StatusNotFound:
		return providers.ErrNotFound
	case status == http.StatusConflict, status == http.StatusRequestTimeout, status >= 500:
		return providers.ErrTransient
	}
	return providers.ErrValidation
}

// upstream classifies a provider/ error: the description says these come
// from Lambda's upstream services and include "network outages or
// connectivity issues", "service unavailability" and "quota limitations or
// resource exhaustion", but documents one code only
// (provider/internal-unavailable). The code's rest and, as it publishes no
// others, the message decide: a quota is ErrQuota and an exhausted resource
// or missing capacity ErrNoCapacity — refused at once, not retried as an
// outage — and everything else (outages, unavailability) ErrTransient.
func upstream(code, message string) error {
	text := strings.ToLower(code + " " + message)
	switch {
	case strings.Contains(text, "quota"):
		return providers.ErrQuota
	case strings.Contains(text, "capacity"), strings.Contains(text, "exhaust"), strings.Contains(text, "insufficient"),
		strings.Contains(text, "out of stock"), strings.Contains(text, "out-of-stock"):
		return providers.ErrNoCapacity
	}
	return providers.ErrTransient
}
