package web

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Agent log shipping is rate-limited per node (N6): each node has
// a bucket of AgentLogBurst lines that refills at AgentLogLinesPerSecond. A
// request that does not fit is refused whole with 429 and Retry-After, which
// the agent honours by keeping its lines and waiting. Storage is bounded
// separately (MaxLogLinesPerNode). The buckets live in this instance's
// memory, so with several instances a node may ship that much to each.
const (
	AgentLogLinesPerSecond = 20
	AgentLogBurst          = 2000
)

// Heartbeats are rate-limited per node the same way (X19): a bucket of
// AgentHeartbeatBurst heartbeats refilling at AgentHeartbeatsPerSecond,
// ten times the agent's own pace (one every 10 s); one beyond it is
// refused with 429 and Retry-After and keeps nothing. The bucket is the
// node token's and is checked before the token is looked up or the body
// read, so a refused heartbeat costs the database nothing.
const (
	AgentHeartbeatsPerSecond = 1
	AgentHeartbeatBurst      = 10
)

// A heartbeat whose token this instance has not yet seen authenticate
// (a stranger: a new machine, an instance just started, or a made-up
// token) is limited per client address instead, AgentStrangerHeartbeats
// a second after a burst of AgentStrangerBurst, before the token is looked
// up. So tokens sprayed at random cost no database lookup beyond that
// pace, and never take a bucket in the nodes' limiter: a real machine's
// bucket is never dropped to make room for them. Once a heartbeat
// authenticates, its token is known and gets its own bucket.
const (
	AgentStrangerHeartbeats = 5
	AgentStrangerBurst      = 50
	maxKnownAgentTokens     = 100_000
)

// RefusalHold is the longest a request refused with 429 is held before
// the answer (at most its Retry-After): a client that ignores Retry-After
// and asks again at once is paced by its own connections instead of
// spinning the server; one that honours it is never held longer than it
// would wait anyway.
const RefusalHold = time.Second

// maxLimiterBuckets is how many buckets a limiter keeps before it drops
// the refilled ones early (strangers' addresses cost a bucket each; a
// refilled bucket dropped loses nothing).
const maxLimiterBuckets = 10_000

// logLimiter holds one bucket per node; buckets of nodes quiet for an hour
// are dropped.
type logLimiter struct {
	now     func() time.Time
	every   rate.Limit // refill per second
	burst   int
	mu      sync.Mutex
	buckets map[string]*nodeBucket
	swept   time.Time
}

type nodeBucket struct {
	lim  *rate.Limiter
	used time.Time
}

func newLogLimiter(now func() time.Time) *logLimiter {
	return &logLimiter{now: now, every: AgentLogLinesPerSecond, burst: AgentLogBurst, buckets: map[string]*nodeBucket{}}
}

// limitClock is the clock the agent limits refill on: the store's, moved
// on by wall time while it stands still (a development fake clock nobody
// advances must not starve the simulated agents); never backwards.
func limitClock(store func() time.Time) func() time.Time {
	var mu sync.Mutex
	var last, lastWall time.Time
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now, wall := store(), time.Now()
		if !last.IsZero() {
			if moved := last.Add(wall.Sub(lastWall)); moved.After(now) {
				now = moved
			}
		}
		last, lastWall = now, wall
		return now
	}
}

// wait reserves n lines for node: 0 when they may be stored now, else how
// long to wait before trying again (nothing is reserved then).
func (l *logLimiter) wait(node string, n int) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	idle := time.Hour
	if len(l.buckets) > maxLimiterBuckets && now.Sub(l.swept) > time.Second {
		idle = time.Duration(float64(l.burst) / float64(l.every) * float64(time.Second)) // refilled: forgetting it loses nothing
	}
	if now.Sub(l.swept) > idle || idle < time.Hour {
		for id, b := range l.buckets {
			if now.Sub(b.used) > idle {
				delete(l.buckets, id)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[node]
	if !ok {
		b = &nodeBucket{lim: rate.NewLimiter(l.every, l.burst)}
		l.buckets[node] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, max(n, 1))
	if !r.OK() {
		return time.Duration(math.MaxInt64)
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// limitLogs is the middleware on POST /v1/agent/logs (after agentAuth).
func (l *logLimiter) limitLogs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		c.Request().Body = io.NopCloser(bytes.NewReader(raw))
		var body struct {
			Lines []json.RawMessage `json:"lines"`
		}
		_ = json.Unmarshal(raw, &body) // a bad body is the handler's 400
		_, node := agentOf(c)
		if d := l.wait(node.ID, len(body.Lines)); d > 0 {
			secs := int(math.Ceil(min(d, time.Hour).Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return &APIError{Status: http.StatusTooManyRequests, Code: "too_many_requests",
				Message: "This node ships logs faster than " + strconv.Itoa(AgentLogLinesPerSecond) +
					" lines a second; keep the lines and send them again after Retry-After seconds.",
				Extra: map[string]any{"retryAfter": secs, "maxLinesPerNode": models.MaxLogLinesPerNode}}
		}
		return next(c)
	}
}

// heartbeatLimiter is the heartbeats' limit (X19): a bucket per known node
// token, and a bucket per client address for the tokens not known yet.
type heartbeatLimiter struct {
	nodes     *logLimiter // per node token this instance has seen authenticate
	strangers *logLimiter // per client address, for tokens it has not
	hold      time.Duration
	mu        sync.Mutex
	known     map[string]time.Time // token → last authenticated
	swept     time.Time
}

func newHeartbeatLimiter(now func() time.Time, hold time.Duration) *heartbeatLimiter {
	return &heartbeatLimiter{
		nodes:     &logLimiter{now: now, every: AgentHeartbeatsPerSecond, burst: AgentHeartbeatBurst, buckets: map[string]*nodeBucket{}},
		strangers: &logLimiter{now: now, every: AgentStrangerHeartbeats, burst: AgentStrangerBurst, buckets: map[string]*nodeBucket{}},
		hold:      hold, known: map[string]time.Time{},
	}
}

// isKnown says token authenticated on this instance in the last hour.
func (l *heartbeatLimiter) isKnown(token string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.known[token]
	return ok
}

// remember records that token authenticated; tokens quiet for an hour
// are forgotten (the set holds only real machines' tokens).
func (l *heartbeatLimiter) remember(token string) {
	now := l.nodes.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Hour || len(l.known) >= maxKnownAgentTokens {
		for t, at := range l.known {
			if now.Sub(at) > time.Hour {
				delete(l.known, t)
			}
		}
		l.swept = now
	}
	if len(l.known) < maxKnownAgentTokens {
		l.known[token] = now
	}
}

// limitHeartbeats is the middleware on POST /v1/agent/heartbeat, before
// agentAuth: one heartbeat a request, per node token (X19), or per client
// address while the token is a stranger. A request without a token goes
// on to agentAuth's 401.
func (l *heartbeatLimiter) limitHeartbeats(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, _ := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
		if token == "" || len(token) > 200 {
			return next(c)
		}
		known := l.isKnown(token)
		var d time.Duration
		if known {
			d = l.nodes.wait(token, 1)
		} else {
			d = l.strangers.wait(c.RealIP(), 1)
		}
		if d > 0 {
			secs := int(math.Ceil(min(d, time.Hour).Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			holdRefusal(c, min(d, l.hold))
			msg := "This node sends heartbeats faster than " + strconv.Itoa(AgentHeartbeatsPerSecond) + " a second"
			if !known {
				msg = "Too many heartbeats from this address with node tokens not seen yet (at most " +
					strconv.Itoa(AgentStrangerHeartbeats) + " a second)"
			}
			return &APIError{Status: http.StatusTooManyRequests, Code: "too_many_requests",
				Message: msg + "; send the next one after Retry-After seconds.",
				Extra:   map[string]any{"retryAfter": secs, "heartbeatBurst": AgentHeartbeatBurst}}
		}
		err := next(c)
		if !known && c.Get(agentNodeKey) != nil {
			l.remember(token)      // authenticated: its own bucket from now on,
			l.nodes.wait(token, 1) // which counts this heartbeat too
		}
		return err
	}
}

// holdRefusal waits d (RefusalHold at most) before a 429 is written, or
// until the client leaves.
func holdRefusal(c echo.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.Request().Context().Done():
	}
}
