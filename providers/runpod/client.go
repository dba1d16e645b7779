package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/httpx"
)

// client speaks the HTTP side: Bearer authentication, problem bodies, the
// documented per-user rate-limit windows, and retries of transient failures.
type client struct {
	base    string // e.g. https://api.runpod.io (paths carry /v2)
	key     string
	http    *http.Client
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	retries int
	backoff time.Duration

	// RunPod announces every window's remaining requests on every answer
	// (RateLimit: "minute";r=0;t=12, ...); when one is spent, nothing is
	// sent until it resets.
	mu          sync.Mutex
	pausedUntil time.Time
}

// do sends one request, retrying rate limits and transient failures with
// backoff (a create only on rate limits: after a transient failure it may
// have happened, and the caller reconciles by name), and decodes a 2xx
// answer into out.
func (c *client) do(ctx context.Context, op, method, path string, in, out any) error {
	create := method == http.MethodPost && (path == pathPods || path == pathClusters)
	delay := c.backoff
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, op, method, path, in, out)
		if err == nil {
			return nil
		}
		var pe *providers.Error
		if !errors.As(err, &pe) || attempt >= c.retries || !retryable(pe.Class) || (create && pe.Class == providers.ErrTransient) {
			return err
		}
		if err := c.sleep(ctx, httpx.Wait(delay, pe.RetryAfter)); err != nil {
			return err
		}
		delay = httpx.NextBackoff(delay)
	}
}

func retryable(class error) bool {
	return class == providers.ErrTransient || class == providers.ErrRateLimited
}

func (c *client) once(ctx context.Context, op, method, path string, in, out any) error {
	c.mu.Lock()
	wait := c.pausedUntil.Sub(c.now())
	c.mu.Unlock()
	if wait > 0 {
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("runpod %s: encode request: %w", op, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("runpod %s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: err.Error()}
	}
	defer resp.Body.Close()
	c.noteLimits(resp.Header.Get("RateLimit"))
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "read answer: " + err.Error()}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "decode answer: " + err.Error()}
		}
		return nil
	}
	var p Problem
	_ = json.Unmarshal(data, &p) // a proxy's HTML page is classified by status alone
	e := &providers.Error{Class: classify(op, resp.StatusCode, p.Detail), Provider: Name, Op: op,
		Code: strconv.Itoa(resp.StatusCode), Message: p.Detail}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if len(p.Errors) > 0 {
		e.Message += ": " + strings.Join(p.Errors, "; ")
	}
	if e.Class == providers.ErrRateLimited {
		e.RetryAfter = httpx.RetryAfter(resp.Header.Get("Retry-After"), c.now())
		c.pause(e.RetryAfter)
	}
	return e
}

var windowRe = regexp.MustCompile(`"?([a-z]+)"?\s*;\s*r=(\d+)\s*;\s*t=(\d+)`)

// noteLimits reads the RateLimit header: a window with no request left
// pauses every request until it resets.
func (c *client) noteLimits(h string) {
	for _, m := range windowRe.FindAllStringSubmatch(h, -1) {
		if m[2] == "0" {
			t, _ := strconv.Atoi(m[3])
			c.pause(time.Duration(t) * time.Second)
		}
	}
}

func (c *client) pause(d time.Duration) {
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
