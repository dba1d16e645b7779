package shadeform_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	"github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

// A placement runs inside a job tick with a deadline (30 s kicked, 2
// minutes scheduled). A minute of 429s with Retry-After outlasts a kicked
// tick: the placement answers ErrTransient and keeps what it created,
// never deletes it, and sends no create in the tick's last CreateRoom; the
// next tick adopts the machines by tag and creates the rest, none twice
// (L3, L7).
func TestPlaceGroupCallerDeadline(t *testing.T) {
	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 8
	for range 3 {
		e.fake.Inject(fake.Fault{Method: "POST", Path: "/instances/create", After: 2, Status: 429,
			ErrorCode: "RATE_LIMITED", Error: "too many requests", RetryAfter: "20"})
	}
	tick := func(d time.Duration) (providers.Group, error) {
		ctx, cancel := e.clk.WithTimeout(context.Background(), d)
		defer cancel()
		return e.cloud.PlaceGroup(ctx, request("cl_dl", "lambdalabs", "us-east-1", 8))
	}
	_, err := tick(30 * time.Second)
	if !errors.Is(err, providers.ErrTransient) {
		t.Fatalf("out of the kicked tick's time: want ErrTransient, got %v", err)
	}
	kept := len(e.fake.Live())
	if kept == 0 || kept == 8 || kept != len(e.fake.Creates()) {
		t.Fatalf("after the kicked tick: %d machines live of %d created, want some kept and none deleted", kept, len(e.fake.Creates()))
	}
	// A tick that leaves less than CreateRoom sends no create.
	posts := e.fake.Requests("POST /instances/create")
	if _, err := tick(shadeform.CreateRoom - time.Second); !errors.Is(err, providers.ErrTransient) ||
		e.fake.Requests("POST /instances/create") != posts {
		t.Fatalf("a tick with no room for a create: %v, %d creates sent", err, e.fake.Requests("POST /instances/create")-posts)
	}
	e.clk.Advance(5 * time.Second)
	g, err := tick(2 * time.Minute)
	if err != nil || len(g.Nodes) != 8 {
		t.Fatalf("the next tick: %v, %d nodes", err, len(g.Nodes))
	}
	if n := len(e.fake.Creates()); n != 8 || len(e.fake.Live()) != 8 {
		t.Fatalf("%d creates, %d live for 8 machines", n, len(e.fake.Live()))
	}
}
