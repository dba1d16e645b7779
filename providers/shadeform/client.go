package shadeform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/httpx"
)

// client speaks the HTTP side: the X-API-KEY header, the error body, and
// retries of transient failures and rate limits with backoff. Shadeform
// documents no rate limit; a 429 is honoured with its Retry-After.
type client struct {
	base    string // e.g. https://api.shadeform.ai/v1
	key     string
	http    *http.Client
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	retries int
	backoff time.Duration
}

// do sends one request, retrying transient failures (not a create's: it
// may have happened, the caller reconciles by name) and rate limits.
func (c *client) do(ctx context.Context, op, method, path string, in, out any) error {
	create := path == pathCreate
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
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("shadeform %s: encode request: %w", op, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("shadeform %s: %w", op, err)
	}
	req.Header.Set("X-API-KEY", c.key)
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "read answer: " + err.Error()}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil || len(bytes.TrimSpace(data)) == 0 {
			return nil // delete and restart answer an empty 200
		}
		if err := json.Unmarshal(data, out); err != nil {
			return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: op, Message: "decode answer: " + err.Error()}
		}
		return nil
	}
	var ae APIError
	_ = json.Unmarshal(data, &ae)
	e := &providers.Error{Class: classify(op, resp.StatusCode, ae), Provider: Name, Op: op, Code: ae.ErrorCode, Message: ae.Error}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if e.Class == providers.ErrRateLimited {
		e.RetryAfter = httpx.RetryAfter(resp.Header.Get("Retry-After"), c.now())
	}
	return e
}

// capacityRe: Shadeform documents no capacity code; its quickstart says to
// move on when an error "implies that the selected instance is out of capacity".
var capacityRe = regexp.MustCompile(`(?i)capacity|out of stock|not available|unavailable|no (instances|machines) available|sold out`)

// classify maps an error onto the provider-neutral classes. The published
// description documents no error statuses: this follows the observed
// INSUFFICIENT_FUNDS body and HTTP's meanings.
func classify(op string, status int, ae APIError) error {
	code := strings.ToUpper(ae.ErrorCode)
	switch {
	case strings.Contains(code, "FUNDS") || strings.Contains(code, "BALANCE") || strings.Contains(code, "QUOTA") || strings.Contains(code, "LIMIT_EXCEEDED"):
		return providers.ErrQuota
	case status == http.StatusTooManyRequests:
		return providers.ErrRateLimited
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return providers.ErrAuth
	case status == http.StatusRequestTimeout, status >= 500:
		return providers.ErrTransient
	case op == opPlace && (capacityRe.MatchString(code) || capacityRe.MatchString(ae.Error)):
		return providers.ErrNoCapacity
	case status == http.StatusPaymentRequired:
		return providers.ErrQuota
	case status == http.StatusConflict && op != opPlace:
		return providers.ErrTransient // e.g. a restart while the machine changes state: later it may work
	case status == http.StatusNotFound && op != opPlace:
		return providers.ErrNotFound
	}
	return providers.ErrValidation
}
