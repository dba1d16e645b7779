package cloudkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
)

// serve answers the scripted statuses in turn (then 200 {"ok": true}) on
// loopback, counting the requests.
func serve(t *testing.T, statuses ...int) (*cloudkit.Client, *fakekit.Clock, *int) {
	t.Helper()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" {
			fakekit.JSON(w, http.StatusUnauthorized, map[string]string{"error": "no key"})
			return
		}
		n++
		if n <= len(statuses) {
			if statuses[n-1] == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "30")
			}
			fakekit.JSON(w, statuses[n-1], map[string]string{"error": "scripted"})
			return
		}
		fakekit.JSON(w, http.StatusOK, map[string]bool{"ok": true})
	}))
	t.Cleanup(srv.Close)
	clk := fakekit.NewClock()
	c := cloudkit.NewClient("test", srv.URL+"/", srv.Client(), clk.Now, clk.Sleep, 0, 0)
	c.Auth = func(h http.Header) { h.Set("X-Key", "k") }
	c.Refusal = func(op string, status int, body []byte) *providers.Error {
		class := providers.ErrValidation
		switch {
		case status == http.StatusTooManyRequests:
			class = providers.ErrRateLimited
		case status >= 500:
			class = providers.ErrTransient
		}
		return &providers.Error{Class: class, Code: "c" + op}
	}
	c.Once = func(method, _ string) bool { return method == http.MethodPost }
	return c, clk, &n
}

// The loop retries transient failures with doubling backoff, waits out a
// 429's Retry-After, and never resends a create after a transient failure
// (OP1).
func TestClientRetries(t *testing.T) {
	ctx := context.Background()
	c, clk, n := serve(t, 503, 429, 502)
	var out struct{ OK bool }
	if err := c.Do(ctx, "List", http.MethodGet, "/things", nil, &out); err != nil || !out.OK || *n != 4 {
		t.Fatalf("after three failures: %v, %+v, %d requests", err, out, *n)
	}
	if want := []time.Duration{2 * time.Second, 30 * time.Second, 8 * time.Second}; !slices.Equal(clk.Slept(), want) {
		t.Errorf("waits %v, want %v", clk.Slept(), want)
	}

	c, _, n = serve(t, 503)
	err := c.Do(ctx, "Create", http.MethodPost, "/things", map[string]int{"n": 1}, &out)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.ErrTransient || pe.Provider != "test" || pe.Op != "Create" ||
		pe.Code != "cCreate" || pe.Message != "Service Unavailable" || *n != 1 {
		t.Fatalf("a create's transient failure must come back unretried: %v (%d requests)", err, *n)
	}

	c, _, n = serve(t, 400)
	if err := c.Do(ctx, "List", http.MethodGet, "/things", nil, nil); !errors.Is(err, providers.ErrValidation) || *n != 1 {
		t.Fatalf("a refusal is not retried: %v (%d requests)", err, *n)
	}
}

// The checks every placement passes, in their order (V4).
func TestCheck(t *testing.T) {
	req := providers.PlaceRequest{GroupName: "cl_1", OfferID: "x.r1", Location: "r1", Count: 2,
		Agent: providers.AgentBootstrap{Tokens: []string{"a", "b"}}}
	ok := cloudkit.Offer{Parsed: true, Form: "<type>.<region>", Sold: "r1", MaxName: 8}
	if err := cloudkit.Check("test", "Place", "Test", req, ok); err != nil {
		t.Fatal(err)
	}
	refusal := cloudkit.Invalid("test", "Place", "r1", "own rule")
	for _, tt := range []struct {
		name  string
		req   func(*providers.PlaceRequest)
		offer func(*cloudkit.Offer)
		class error
		want  string
	}{
		{"form", nil, func(o *cloudkit.Offer) { o.Parsed = false }, providers.ErrValidation, "is not <type>.<region>"},
		{"elsewhere", nil, func(o *cloudkit.Offer) { o.Sold = "r2" }, providers.ErrValidation, "is sold in r2"},
		{"disabled", nil, func(o *cloudkit.Offer) { o.Disabled = "r1 is off" }, providers.ErrValidation, "r1 is off"},
		{"count", func(r *providers.PlaceRequest) { r.Count = 0 }, nil, providers.ErrValidation, "at least one machine"},
		{"no name", func(r *providers.PlaceRequest) { r.GroupName = "" }, nil, providers.ErrValidation, "group name is required"},
		{"long name", func(r *providers.PlaceRequest) { r.GroupName = "cl_12345" }, nil, providers.ErrValidation, "at most 8 characters"},
		{"tokens", func(r *providers.PlaceRequest) { r.Agent.Tokens = r.Agent.Tokens[:1] }, nil, providers.ErrValidation, "1 agent tokens for 2 machines"},
		{"own", nil, func(o *cloudkit.Offer) { o.Refusal = refusal }, providers.ErrValidation, "own rule"},
		{"volume", func(r *providers.PlaceRequest) { r.Volume = &providers.Volume{} }, nil, providers.ErrUnsupported, "Test cannot attach"},
	} {
		r, o := req, ok
		if tt.req != nil {
			tt.req(&r)
		}
		if tt.offer != nil {
			tt.offer(&o)
		}
		err := cloudkit.Check("test", "Place", "Test", r, o)
		if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %v with %q", tt.name, err, tt.class, tt.want)
		}
	}
}

type machine struct {
	group, name, where string
	dead               bool
}

var fleet = cloudkit.Fleet[machine]{Provider: "test",
	Group: func(m machine) string { return m.group },
	Rank:  func(m machine) (int, bool) { return cloudkit.Rank("", m.name) },
	Alive: func(m machine) bool { return !m.dead },
	Node: func(m machine, i int) providers.Node {
		n := providers.Node{ID: m.name + "@" + m.where, Index: i, State: providers.NodeRunning}
		if m.dead {
			n.State = providers.NodeTerminated
		}
		return n
	},
	Location: func(m machine) string { return m.where }}

// A group is assembled by rank; a rank placed again after a rollback shows
// the live machine (R1); a retried placement adopts the live ranks and
// refuses a machine that is not part of it.
func TestFleet(t *testing.T) {
	all := []machine{{group: "g", name: cloudkit.MemberName("g", 1), where: "r1", dead: true},
		{group: "g", name: "g-1", where: "r1"}, {group: "g", name: "g-0", where: "r1"},
		{group: "g", name: "g-x", where: "r1"}, {name: "other-0"}}
	by := fleet.ByGroup(all)
	g := fleet.Describe([]string{"g", "missing"}, by)
	if len(g) != 1 || g["g"].Location != "r1" || len(g["g"].Nodes) != 2 || g["g"].Nodes[0].Index != 0 ||
		g["g"].Nodes[1].State != providers.NodeRunning {
		t.Fatalf("described %+v", g)
	}
	have, err := fleet.Adopt(by["g"], 3, func(machine) bool { return true }, nil)
	if err != nil || len(have) != 2 {
		t.Fatalf("adopted %v, %v", have, err)
	}
	conflict := cloudkit.Conflict("test", "Place", "r1", "not ours")
	if _, err := fleet.Adopt(by["g"], 1, func(machine) bool { return true }, func(machine, int) error { return conflict }); err != conflict {
		t.Fatalf("rank 1 of a group of 1: %v", err)
	}
}

// A failed placement is rolled back with its own context, even when the
// caller's is done, and a failed rollback is joined to the failure.
func TestRolledBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	failure := errors.New("placement failed")
	var rolled string
	err := cloudkit.RolledBack(ctx, "test", "g", failure, func(ctx context.Context, group string) error {
		rolled = group
		return ctx.Err()
	})
	if err != failure || rolled != "g" {
		t.Fatalf("rolled back %q: %v", rolled, err)
	}
	err = cloudkit.RolledBack(context.Background(), "test", "g", failure, func(context.Context, string) error { return errors.New("gone wrong") })
	if !errors.Is(err, failure) || !strings.Contains(err.Error(), "test: roll back group g: gone wrong") {
		t.Fatalf("a failed rollback: %v", err)
	}
}

// What a placement keeps (L3, L7): the caller's deadline, a transient or
// rate-limited answer, or anything unclassified leave the upstream's
// answer open, and nothing made so far is rolled back; a refusal rolls back.
func TestUndecided(t *testing.T) {
	refusal := func(class error) error { return &providers.Error{Class: class, Provider: "x", Op: "place"} }
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("list: %w", context.Canceled), true},
		{refusal(providers.ErrTransient), true},
		{refusal(providers.ErrRateLimited), true},
		{errors.New("unclassified"), true},
		{refusal(providers.ErrNoCapacity), false},
		{refusal(providers.ErrValidation), false},
		{refusal(providers.ErrQuota), false},
		{refusal(providers.ErrUnsupported), false},
		{refusal(providers.ErrAuth), false},
	} {
		if got := cloudkit.Undecided(tc.err); got != tc.want {
			t.Errorf("Undecided(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
