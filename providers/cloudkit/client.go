// Package cloudkit is what the real cloud adapters share (OP1), so that a
// contract fix lands once: the request loop (pacing, Retry-After, error
// classification, retries of transient failures, a create never resent
// blindly), the per-group lock, the reconciling create, the rollback of a
// partly placed group, the checks every placement passes, and the
// assembly of a group from a cloud's machines. Each adapter configures it
// with how its cloud differs: its paths, its authentication header, its
// error envelope and the classes it maps onto, its machine states. It
// imports nothing of ours but providers and providers/httpx.
package cloudkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/httpx"
)

// Pacer spaces a cloud's requests beyond the retries' backoff (its
// documented rate limits). Every method may be called concurrently.
type Pacer interface {
	// Wait is called before every attempt; it sleeps until the request may leave.
	Wait(ctx context.Context, method, path string) error
	// Answered is called after every answer; refusal is nil on success.
	Answered(h http.Header, refusal *providers.Error)
	// Retry is how long to wait before resending after refusal, given
	// the backoff's wait (the longer of the backoff and Retry-After).
	Retry(method, path string, refusal *providers.Error, wait time.Duration) time.Duration
}

// Client speaks a cloud's HTTP side. The exported fields are its
// configuration, set before its first request; it is then safe for
// concurrent use.
type Client struct {
	Provider string // the provider's Name, on every error
	BaseURL  string // paths are appended to it
	// Auth sets the request's authentication header (never logged).
	Auth    func(h http.Header)
	HTTP    *http.Client
	Now     func() time.Time
	Sleep   func(context.Context, time.Duration) error
	Retries int           // attempts after the first, for transient failures and rate limits only
	Backoff time.Duration // first retry delay; doubles up to httpx.MaxBackoff

	// Decode reads a 2xx answer's body into out (not called when out is
	// nil); an error is the answer's fault (ErrTransient). Default JSON.
	Decode func(status int, body []byte, out any) error
	// Refusal reads an error answer: its envelope (a body that is not one,
	// a proxy's page, is classified by status alone) mapped onto the
	// neutral classes, with the cloud's code and message. Provider, Op and
	// RetryAfter are filled in by the loop.
	Refusal func(op string, status int, body []byte) *providers.Error
	// Once says a request is not resent after a transient failure: a
	// create may have been carried out, and the caller reconciles by name.
	Once func(method, path string) bool
	// Pacer, when set, spaces the requests as the cloud documents.
	Pacer Pacer
}

// NewClient is a Client with the defaults of every adapter's Config:
// an own HTTP client with timeouts, the real clock, four retries (a
// negative count: none) starting at two seconds.
func NewClient(provider, baseURL string, hc *http.Client, now func() time.Time,
	sleep func(context.Context, time.Duration) error, retries int, backoff time.Duration) *Client {
	if hc == nil {
		hc = httpx.NewClient()
	}
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = httpx.Sleep
	}
	return &Client{Provider: provider, BaseURL: strings.TrimRight(baseURL, "/"), HTTP: hc, Now: now, Sleep: sleep,
		Retries: Retries(retries), Backoff: FirstBackoff(backoff)}
}

// Retries is a configured retry count with its default: 0 is 4, a negative count none.
func Retries(n int) int {
	switch {
	case n == 0:
		return 4
	case n < 0:
		return 0
	}
	return n
}

// FirstBackoff is a configured first retry delay with its default of 2 s.
func FirstBackoff(d time.Duration) time.Duration {
	if d <= 0 {
		return 2 * time.Second
	}
	return d
}

// JSON is the default Decode: the body is the value (a 204 has none).
func JSON(status int, body []byte, out any) error {
	if status == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// Do sends one request, retrying transient failures and rate limits with
// backoff (honouring Retry-After), and decodes a 2xx answer into out.
func (c *Client) Do(ctx context.Context, op, method, path string, in, out any) error {
	once := c.Once != nil && c.Once(method, path)
	delay := c.Backoff
	for attempt := 0; ; attempt++ {
		err := c.send(ctx, op, method, path, in, out)
		if err == nil {
			return nil
		}
		var pe *providers.Error
		if !errors.As(err, &pe) || attempt >= c.Retries || !retryable(pe.Class) || (once && pe.Class == providers.ErrTransient) {
			return err
		}
		wait := httpx.Wait(delay, pe.RetryAfter)
		if c.Pacer != nil {
			wait = c.Pacer.Retry(method, path, pe, wait)
		}
		if err := c.Sleep(ctx, wait); err != nil {
			return err
		}
		delay = httpx.NextBackoff(delay)
	}
}

func retryable(class error) bool {
	return class == providers.ErrTransient || class == providers.ErrRateLimited
}

// send sends one request.
func (c *Client) send(ctx context.Context, op, method, path string, in, out any) error {
	if c.Pacer != nil {
		if err := c.Pacer.Wait(ctx, method, path); err != nil {
			return err
		}
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", c.Provider, op, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.Provider, op, err)
	}
	if c.Auth != nil {
		c.Auth(req.Header)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Connection refused, reset, timeouts: the request may or may not
		// have arrived. The message is the transport's, which never holds
		// the authentication header.
		return c.fail(op, providers.ErrTransient, err.Error())
	}
	defer resp.Body.Close()
	e := c.answer(op, resp, out)
	if c.Pacer != nil {
		c.Pacer.Answered(resp.Header, e)
	}
	if e != nil {
		return e
	}
	return nil
}

// answer reads an answer: nil on success, else the neutral error.
func (c *Client) answer(op string, resp *http.Response, out any) *providers.Error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return c.fail(op, providers.ErrTransient, "read answer: "+err.Error())
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		decode := c.Decode
		if decode == nil {
			decode = JSON
		}
		if err := decode(resp.StatusCode, data, out); err != nil {
			return c.fail(op, providers.ErrTransient, err.Error())
		}
		return nil
	}
	e := c.Refusal(op, resp.StatusCode, data)
	e.Provider, e.Op = c.Provider, op
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if e.Class == providers.ErrRateLimited {
		e.RetryAfter = httpx.RetryAfter(resp.Header.Get("Retry-After"), c.Now())
	}
	return e
}

func (c *Client) fail(op string, class error, message string) *providers.Error {
	return &providers.Error{Class: class, Provider: c.Provider, Op: op, Message: message}
}

// urgentKey marks a context whose requests release machines.
type urgentKey struct{}

// Urgent marks ctx's requests as a release's (terminate, release of a
// machine): a pacer that keeps a reserve of the cloud's request budget
// lets them spend it, so that a short budget never keeps a machine
// billing (L7).
func Urgent(ctx context.Context) context.Context { return context.WithValue(ctx, urgentKey{}, true) }

// IsUrgent reports whether ctx's requests release machines.
func IsUrgent(ctx context.Context) bool { v, _ := ctx.Value(urgentKey{}).(bool); return v }
