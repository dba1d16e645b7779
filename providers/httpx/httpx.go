// Package httpx holds the HTTP plumbing every cloud adapter shares (OP1):
// an own client whose every phase is bounded, the Retry-After header, a
// sleeper that honours the context and the backoff between retries of
// transient failures. It imports nothing of ours but providers.
package httpx

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxBackoff caps the delay between two retries.
const MaxBackoff = 60 * time.Second

// NewClient is an adapter's own client: every phase of a request is bounded
// so that a stalled upstream cannot hold a job's lease.
func NewClient() *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 45 * time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   2,
		},
	}
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Sleep is the real sleeper: it waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NextBackoff doubles a retry delay up to MaxBackoff.
func NextBackoff(d time.Duration) time.Duration {
	if d *= 2; d > MaxBackoff {
		return MaxBackoff
	}
	return d
}

// Wait is how long to wait before the next attempt: the backoff, or longer
// when the upstream asked for it (Retry-After).
func Wait(backoff, retryAfter time.Duration) time.Duration {
	return max(backoff, retryAfter)
}
