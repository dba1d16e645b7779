package lambda

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/httpx"
)

// Documented pacing of the Lambda Cloud API v1: requests are "generally
// limited to one request per second", and /instance-operations/launch to
// "one request per 12 seconds, or five requests per minute".
const (
	RequestInterval = time.Second
	LaunchInterval  = 12 * time.Second
)

// apiError is the documented error envelope's payload:
// {"error": {"code": ..., "message": ..., "suggestion": ...}}.
type apiError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// client speaks the HTTP side: authentication, the {"data": …} envelope,
// pacing, error classification and retries of transient failures.
type client struct {
	base    string // e.g. https://cloud.lambda.ai (paths carry /api/v1)
	key     string
	http    *http.Client
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	retries int           // attempts after the first, for transient failures only
	backoff time.Duration // first retry delay; doubles up to httpx.MaxBackoff

	requestEvery, launchEvery time.Duration // RequestInterval and LaunchInterval unless configured

	// pace spaces requests so that at most one leaves per RequestInterval
	// and one launch per LaunchInterval (per account; one adapter per
	// process).
	pace       sync.Mutex
	booked     []time.Time // send times of requests booked within the last RequestInterval or ahead
	nextLaunch time.Time
}

// wait books the next free slot for a request (a launch when launch is
// set) and sleeps until it. Slots are booked under the lock and waited for
// outside it, so a launch waiting its 12 s does not hold up the describe
// calls meanwhile: they take the free slots around it, every request
// RequestInterval away from every other.
func (c *client) wait(ctx context.Context, launch bool) error {
	c.pace.Lock()
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
	c.pace.Unlock()
	if d := at.Sub(now); d > 0 {
		return c.sleep(ctx, d)
	}
	return nil
}

// holdLaunches pushes the next launch back by d: the upstream said it was too early.
func (c *client) holdLaunches(d time.Duration) {
	c.pace.Lock()
	defer c.pace.Unlock()
	if t := c.now().Add(d); t.After(c.nextLaunch) {
		c.nextLaunch = t
	}
}

// do sends one request, retrying transient failures and rate limits with
// backoff, and decodes the "data" member of a 2xx answer into out.
func (c *client) do(ctx context.Context, op, method, path string, in, out any) error {
	launch := path == "/api/v1/instance-operations/launch"
	delay := c.backoff
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, op, method, path, launch, in, out)
		if err == nil {
			return nil
		}
		var pe *providers.Error
		if !errors.As(err, &pe) || attempt >= c.retries || !retryable(pe.Class) || (launch && pe.Class == providers.ErrTransient) {
			// A launch is not blindly resent after a transient failure: it may
			// have been carried out. The caller reconciles by name first.
			return err
		}
		wait := httpx.Wait(delay, pe.RetryAfter)
		if launch && pe.Class == providers.ErrRateLimited {
			if wait < c.launchEvery {
				wait = c.launchEvery
			}
			c.holdLaunches(wait)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
		delay = httpx.NextBackoff(delay)
	}
}

func retryable(class error) bool {
	return class == providers.ErrTransient || class == providers.ErrRateLimited
}

// once sends one request.
func (c *client) once(ctx context.Context, op, method, path string, launch bool, in, out any) error {
	if err := c.wait(ctx, launch); err != nil {
		return err
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("lambda %s: encode request: %w", op, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("lambda %s: %w", op, err)
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
		// Connection refused, reset, timeouts: the request may or may not
		// have arrived. The message is the transport's, which never holds
		// the Authorization header.
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "read answer: " + err.Error()}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		env := struct {
			Data json.RawMessage `json:"data"`
		}{}
		if err := json.Unmarshal(data, &env); err != nil || len(env.Data) == 0 {
			return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op,
				Message: fmt.Sprintf("answer %d is not a {\"data\": …} envelope", resp.StatusCode)}
		}
		if err := json.Unmarshal(env.Data, out); err != nil {
			return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "decode answer: " + err.Error()}
		}
		return nil
	}
	var env struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(data, &env) // a non-JSON error (a proxy's 502 page) is classified by status alone
	e := &providers.Error{Class: classify(op, resp.StatusCode, env.Error.Code, env.Error.Message), Provider: Name, Op: op,
		Code: env.Error.Code, Message: env.Error.Message}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if env.Error.Suggestion != "" {
		e.Message += " (" + env.Error.Suggestion + ")"
	}
	if e.Class == providers.ErrRateLimited {
		e.RetryAfter = httpx.RetryAfter(resp.Header.Get("Retry-After"), c.now())
	}
	return e
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
