// Package fakekit is the server scaffolding the clouds' fakes share
// (providers/lambda/fake, providers/runpod/fake, providers/shadeform/fake):
// the lock, request counts, scripted faults, a per-minute rate-limit
// window, JSON answers and strict request decoding, and the tests' clock.
// Each fake keeps only its cloud: its paths, its error bodies, its state.
// It is test support and imports nothing of ours.
package fakekit

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault is a scripted answer to the next request on Method and Path; it
// is used once.
type Fault struct {
	Method string // empty: any method
	// Path is matched as a prefix, or whole when Exact; with a "*" it is
	// a pattern (path.Match: "/instances/*/delete").
	Path       string
	Exact      bool
	Status     int    // 0 with Slow: the request is answered as usual, slowly
	RetryAfter string // Retry-After header, if any
	// Slow moves the test's clock before the answer: the answer took that
	// long (a slow cloud, without a wall-clock wait).
	Slow func()
	// Apply carries the request out before answering the fault: the
	// answer is lost, the effect is not (a create that did happen).
	Apply bool
	// After lets this many matching requests through first.
	After int
	// Body writes the cloud's error body with status; nil sends a page
	// that is not the API's (a proxy's).
	Body func(w http.ResponseWriter, status int)
}

func (f Fault) matches(method, path string) bool {
	if f.Method != "" && f.Method != method {
		return false
	}
	if strings.Contains(f.Path, "*") {
		ok, _ := pathpkg.Match(f.Path, path)
		return ok
	}
	if f.Exact {
		return path == f.Path
	}
	return strings.HasPrefix(path, f.Path)
}

// Base is embedded in a fake: its lock, which ServeHTTP and every method
// of the fake hold, the requests counted, the faults scripted and the
// rate-limit window. The methods in capitals that do not lock are called
// by the fake under its lock.
type Base struct {
	sync.Mutex
	requests map[string]int
	faults   []Fault
	window   time.Time
	used     int
	tooMany  int
}

// Queue queues scripted answers.
func (b *Base) Queue(f ...Fault) {
	b.Lock()
	defer b.Unlock()
	b.faults = append(b.faults, f...)
}

// Requests counts the requests made to "METHOD /path" (path without query).
func (b *Base) Requests(methodPath string) int {
	b.Lock()
	defer b.Unlock()
	return b.requests[methodPath]
}

// TooMany counts the 429 answers the fake's rate limits sent (not scripted faults).
func (b *Base) TooMany() int {
	b.Lock()
	defer b.Unlock()
	return b.tooMany
}

// Count counts one request (under the lock).
func (b *Base) Count(method, path string) {
	if b.requests == nil {
		b.requests = map[string]int{}
	}
	b.requests[method+" "+path]++
}

// RefusedTooMany counts one 429 answer of the fake's own rate limits (under the lock).
func (b *Base) RefusedTooMany() { b.tooMany++ }

// Window books a request in the per-minute window (under the lock):
// what is left of it and the seconds until it resets, or false (a 429 is
// counted) when the window is spent.
func (b *Base) Window(now time.Time, perMinute int) (left, reset int, ok bool) {
	if now.Sub(b.window) >= time.Minute {
		b.window, b.used = now, 0
	}
	reset = int((b.window.Add(time.Minute).Sub(now) + time.Second - 1) / time.Second)
	if b.used >= perMinute {
		b.tooMany++
		return 0, reset, false
	}
	b.used++
	return perMinute - b.used, reset, true
}

// Scripted answers the request with the first fault that matches it, if
// any is due (under the lock): route carries the request out first when
// the fault applies it. A fault that is only Slow moves the clock and
// lets the request through (false). A matching fault with After left lets this
// request through (false) and counts down.
func (b *Base) Scripted(w http.ResponseWriter, method, path string, route func(http.ResponseWriter)) bool {
	for k, f := range b.faults {
		if !f.matches(method, path) {
			continue
		}
		if f.After > 0 {
			b.faults[k].After--
			return false
		}
		b.faults = slices.Delete(b.faults, k, k+1)
		if f.Slow != nil {
			f.Slow()
		}
		if f.Status == 0 {
			return false // only slow: answered as usual
		}
		if f.Apply {
			route(Discard{})
		}
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		if f.Body == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(f.Status)
			_, _ = w.Write([]byte("<html>upstream error</html>"))
			return true
		}
		f.Body(w, f.Status)
		return true
	}
	return false
}

// Discard is an answer nobody reads (a fault's applied request).
type Discard struct{}

func (Discard) Header() http.Header         { return http.Header{} }
func (Discard) Write(b []byte) (int, error) { return len(b), nil }
func (Discard) WriteHeader(int)             {}

// JSON answers v as JSON with status (no body when v is nil).
func JSON(w http.ResponseWriter, status int, v any) { Reply(w, "application/json", status, v) }

// Reply answers v as JSON of contentType with status (no body when v is nil).
func Reply(w http.ResponseWriter, contentType string, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// Decode reads a JSON body strictly: unknown fields are refused, as a
// request the published schema does not describe would be.
func Decode(r *http.Request, v any) error {
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r.Body)
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Clock is the tests' time: Sleep moves it instead of waiting, and
// records every wait asked for. WithTimeout gives a context whose deadline
// is on this clock, as a job tick's is on the wall's.
type Clock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
	timed []*deadlineCtx // contexts waiting for the clock to reach their deadline
}

// NewClock starts at 2 March 2026, 09:00 UTC.
func NewClock() *Clock { return NewClockAt(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)) }

// NewClockAt starts at t. A test whose contexts carry deadlines on this
// clock (WithTimeout) starts it ahead of the wall: a dialer compares a
// context's deadline with the wall's time.
func NewClockAt(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Sleep moves the clock by d (unless ctx is done) and records the wait. A
// wait past the deadline of a context from WithTimeout ends at the
// deadline with its error, as a timer honouring ctx would.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	// The deadline is ctx's own (context.WithoutCancel keeps the values, not the deadline).
	dc, ok := ctx.Value(clockKey{c}).(*deadlineCtx)
	if dl, has := ctx.Deadline(); ok && (!has || !dl.Equal(dc.at)) {
		ok = false
	}
	if ok && !c.t.Add(d).Before(dc.at) {
		c.slept = append(c.slept, dc.at.Sub(c.t))
		c.t = dc.at
		c.expire()
		c.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		return context.DeadlineExceeded // a child of dc hears of it a moment later
	}
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	c.expire()
	return nil
}

// Advance moves the clock by d without recording a wait.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.expire()
}

// Slept is every wait so far.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// WithTimeout is context.WithTimeout on this clock: the context's
// deadline is d from the clock's now, and it is done (DeadlineExceeded)
// once the clock reaches it, by Advance, Sleep or a fake's slow answer.
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	at := c.t.Add(d)
	if p, ok := parent.Value(clockKey{c}).(*deadlineCtx); ok && p.at.Before(at) {
		at = p.at // as context.WithDeadline: never later than the parent's
	}
	dc := &deadlineCtx{Context: parent, clk: c, at: at, done: make(chan struct{})}
	c.timed = append(c.timed, dc)
	c.expire()
	c.mu.Unlock()
	stop := context.AfterFunc(parent, func() { dc.end(parent.Err()) })
	return dc, func() { stop(); dc.end(context.Canceled) }
}

// expire ends every context whose deadline the clock reached (under the lock).
func (c *Clock) expire() {
	keep := c.timed[:0]
	for _, dc := range c.timed {
		if !c.t.Before(dc.at) {
			dc.end(context.DeadlineExceeded)
			continue
		}
		keep = append(keep, dc)
	}
	c.timed = keep
}

type clockKey struct{ c *Clock }

// deadlineCtx is a context whose deadline is on a Clock.
type deadlineCtx struct {
	context.Context
	clk  *Clock
	at   time.Time
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

func (d *deadlineCtx) Deadline() (time.Time, bool) { return d.at, true }
func (d *deadlineCtx) Done() <-chan struct{}       { return d.done }

func (d *deadlineCtx) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

func (d *deadlineCtx) Value(k any) any {
	if k == (clockKey{d.clk}) {
		return d
	}
	return d.Context.Value(k)
}

func (d *deadlineCtx) end(err error) {
	d.once.Do(func() {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
		close(d.done)
	})
}
