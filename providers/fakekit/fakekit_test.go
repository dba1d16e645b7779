package fakekit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/fakekit"
)

type server struct {
	fakekit.Base
	clk     *fakekit.Clock
	applied int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Lock()
	defer s.Unlock()
	s.Count(r.Method, r.URL.Path)
	if _, reset, ok := s.Window(s.clk.Now(), 3); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(reset))
		fakekit.JSON(w, http.StatusTooManyRequests, nil)
		return
	}
	route := func(w http.ResponseWriter) { s.applied++; fakekit.JSON(w, http.StatusOK, map[string]bool{"ok": true}) }
	if s.Scripted(w, r.Method, r.URL.Path, route) {
		return
	}
	route(w)
}

// Faults match by method and path prefix (or whole path), let After
// requests through, apply the request when asked, and are used once; the
// minute window refuses past its quota until it resets.
func TestScaffolding(t *testing.T) {
	s := &server{clk: fakekit.NewClock()}
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s.Queue(fakekit.Fault{Method: "POST", Path: "/things", After: 1, Status: 409, Apply: true,
		Body: func(w http.ResponseWriter, status int) { fakekit.JSON(w, status, map[string]string{"error": "busy"}) }},
		fakekit.Fault{Path: "/other", Exact: true, Status: 502})
	if code, _ := get("GET", "/things/1"); code != 200 {
		t.Errorf("another method: %d", code)
	}
	if code, _ := get("POST", "/things/1"); code != 200 {
		t.Errorf("the request After lets through: %d", code)
	}
	if code, body := get("POST", "/things/2"); code != 409 || body != "{\"error\":\"busy\"}\n" || s.applied != 3 {
		t.Errorf("the fault: %d %q, %d applied", code, body, s.applied)
	}
	s.clk.Advance(time.Minute)
	if code, _ := get("GET", "/other/x"); code != 200 {
		t.Errorf("an exact path is not a prefix: %d", code)
	}
	if code, body := get("GET", "/other"); code != 502 || body != "<html>upstream error</html>" {
		t.Errorf("a proxy's page: %d %q", code, body)
	}
	if code, _ := get("GET", "/other"); code != 200 {
		t.Errorf("a fault is used once: %d", code)
	}
	if code, _ := get("GET", "/other"); code != 429 || s.TooMany() != 1 || s.Requests("GET /other") != 3 {
		t.Errorf("the fourth request of the minute: %d, %d refused, %d counted", code, s.TooMany(), s.Requests("GET /other"))
	}
	s.clk.Advance(time.Minute)
	if code, _ := get("GET", "/other"); code != 200 {
		t.Errorf("a new minute: %d", code)
	}
}

// A slow fault moves the test's clock and answers as usual; a pattern
// path matches one segment per "*" and nothing else.
func TestSlowAndPattern(t *testing.T) {
	s := &server{clk: fakekit.NewClock()}
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(path string) int {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	start := s.clk.Now()
	s.Queue(fakekit.Fault{Method: "POST", Path: "/instances/*/delete", Slow: func() { s.clk.Advance(40 * time.Second) }})
	if code := post("/instances/create"); code != 200 || s.clk.Now() != start {
		t.Errorf("the pattern matched another path: %d, clock moved %v", code, s.clk.Now().Sub(start))
	}
	if code := post("/instances/i-1/delete"); code != 200 || s.applied != 2 || s.clk.Now().Sub(start) != 40*time.Second {
		t.Errorf("slow answer: %d, applied %d, clock moved %v; want 200, carried out, 40s", code, s.applied, s.clk.Now().Sub(start))
	}
	if post("/instances/i-1/delete"); s.clk.Now().Sub(start) != 40*time.Second {
		t.Error("a fault is used once")
	}
}

// A context from the clock's WithTimeout has its deadline on the clock:
// it is done once the clock reaches it (Advance or Sleep), a Sleep past it
// stops at it with DeadlineExceeded, and cancel or the parent end it too.
func TestClockDeadline(t *testing.T) {
	clk := fakekit.NewClockAt(time.Date(2031, 1, 6, 9, 0, 0, 0, time.UTC))
	start := clk.Now()
	ctx, cancel := clk.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(start.Add(30*time.Second)) {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if err := clk.Sleep(ctx, 20*time.Second); err != nil || ctx.Err() != nil {
		t.Fatalf("a wait within the deadline: %v, ctx %v", err, ctx.Err())
	}
	if err := clk.Sleep(ctx, 20*time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past the deadline: %v", err)
	}
	if got := clk.Now().Sub(start); got != 30*time.Second {
		t.Errorf("the wait past the deadline ended %v after the start, want 30s", got)
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("the context is not done at its deadline")
	}
	other, stop := clk.WithTimeout(context.Background(), time.Minute)
	clk.Advance(59 * time.Second)
	if other.Err() != nil {
		t.Fatal("done before its deadline")
	}
	clk.Advance(time.Second)
	if !errors.Is(other.Err(), context.DeadlineExceeded) {
		t.Errorf("Advance to the deadline: %v", other.Err())
	}
	stop()
	outer, stopOuter := clk.WithTimeout(context.Background(), 30*time.Second)
	inner, stopInner := clk.WithTimeout(outer, 2*time.Minute)
	if a, b := deadline(outer), deadline(inner); !a.Equal(b) {
		t.Errorf("a child's deadline %v is later than its parent's %v", b, a)
	}
	stopInner()
	stopOuter()
	// Cleaning up after the deadline has its own time (context.WithoutCancel).
	if err := clk.Sleep(context.WithoutCancel(ctx), time.Minute); err != nil {
		t.Errorf("a wait without the deadline: %v", err)
	}
	parent, cancelParent := context.WithCancel(context.Background())
	child, stopChild := clk.WithTimeout(parent, time.Hour)
	defer stopChild()
	cancelParent()
	<-child.Done()
	if !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("parent canceled: %v", child.Err())
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
