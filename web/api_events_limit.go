package web

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// Long-lived requests are bounded (A4, X16, X19): event streams and long
// polls of /v1/events (which MCP's wait_for_cluster and wait tools use)
// and the API's log streams held at once by one
// API key (or signed-in person) and by one organisation, together. One
// more gets 429 with Retry-After; each ends when its client goes. The
// counts live in this instance's memory.
const (
	MaxStreamsPerKey = 10
	MaxStreamsPerOrg = 40
	streamRetryAfter = 5 // seconds
)

// streamLimits counts the long-lived requests in flight per key and org.
type streamLimits struct {
	mu       sync.Mutex
	key, org map[string]int
	maxKey   int
	maxOrg   int
}

func newStreamLimits() *streamLimits {
	return &streamLimits{key: map[string]int{}, org: map[string]int{}, maxKey: MaxStreamsPerKey, maxOrg: MaxStreamsPerOrg}
}

// acquire takes a slot for p, or returns the 429 to answer; release gives
// the slot back.
func (l *streamLimits) acquire(c echo.Context, p *Principal) (release func(), err error) {
	key := p.APIKeyID
	if key == "" {
		key = "user:" + p.UserID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	scope := ""
	switch {
	case l.key[key] >= l.maxKey:
		scope = "this API key holds " + strconv.Itoa(l.maxKey)
	case l.org[p.Org.ID] >= l.maxOrg:
		scope = "this organisation holds " + strconv.Itoa(l.maxOrg)
	}
	if scope != "" {
		c.Response().Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		return nil, &APIError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: "Too many open streams (events, logs) and waits: " + scope + " at once; close one or try again later.",
			Extra:   map[string]any{"retryAfter": streamRetryAfter, "maxPerKey": l.maxKey, "maxPerOrg": l.maxOrg}}
	}
	l.key[key]++
	l.org[p.Org.ID]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.key[key]--; l.key[key] <= 0 {
			delete(l.key, key)
		}
		if l.org[p.Org.ID]--; l.org[p.Org.ID] <= 0 {
			delete(l.org, p.Org.ID)
		}
	}, nil
}

// held is how many slots the organisation holds (tests).
func (l *streamLimits) held(orgID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.org[orgID]
}
