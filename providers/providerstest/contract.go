// Package providerstest is the contract every providers.Provider passes
// alike (OP1): the simulated cloud and each real adapter against its fake
// run the same cases, so the jobs can rely on one behaviour.
package providerstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Env is one fresh provider and what the contract needs to drive it.
type Env struct {
	Provider providers.Provider
	// OfferID and Location name an offer with at least Free (≥ 2) machines
	// free in Location.
	OfferID, Location string
	Free              int
	// Advance moves the provider's clock (machines boot with it).
	Advance func(time.Duration)
	// Boot is long enough for a placed machine to be running.
	Boot time.Duration
	// FailMidway scripts the next placement to fail after part of the group
	// was placed (a provider that places a group in one call may refuse it
	// as a whole).
	FailMidway func(t *testing.T)
	// Stops says whether the upstream can stop a machine and start it
	// again; one that cannot refuses StopNode with ErrUnsupported.
	Stops bool
	// Volumes says whether the provider attaches a persistent volume to a
	// group's head (PlaceRequest.Volume, V4); one that cannot refuses a
	// placement with one with ErrUnsupported, placing nothing.
	Volumes bool
	// PlacesNodes says whether the upstream can add one machine to a placed
	// group (L10); one that cannot refuses PlaceNode with ErrUnsupported.
	PlacesNodes bool
	// GroupBound says the machines of a group placed with one upstream
	// call are released only together (RunPod's Instant Clusters): then
	// ReleaseNode of one of them is ErrUnsupported and leaves it running,
	// and so is RestartNode (the upstream manages its members whole).
	GroupBound bool
	// Delay sets how long the upstream's machines stay in each state it
	// lists on their way (booting, a cluster member's rank and address
	// unassigned, a restart under way, deleting); nil for a provider
	// whose states do not take time of their own.
	Delay func(d time.Duration)
	// Upset scripts the upstream's next answers to one operation to go
	// wrong the way a cloud's do (see Upset); Waited is how long the
	// provider has slept so far (on the test's clock). Both nil for a
	// provider with no upstream answers to upset (the simulated cloud).
	Upset  func(t *testing.T, u Upset)
	Waited func() time.Duration
}

// Op is one kind of upstream call, as every cloud has it.
type Op string

// The upstream calls an Upset aims at.
const (
	OpCreate  Op = "create"  // the call that places machines: a launch, a pod, a cluster
	OpList    Op = "list"    // the call that lists or reads machines
	OpDelete  Op = "delete"  // the call that terminates a machine or a cluster
	OpRestart Op = "restart" // the call that restarts a machine
)

// Upset is how the upstream's next answer to Op goes wrong (one of Lost,
// RetryAfter, Slow), after After answers to it went through; Times
// repeats it (0 is once).
type Upset struct {
	Op    Op
	After int
	Times int
	// Lost: the request is carried out, its answer lost (a proxy's 502
	// page): the create went through, the reply did not.
	Lost bool
	// RetryAfter: refused with 429 "too many requests", Retry-After in seconds.
	RetryAfter time.Duration
	// Slow: the request is carried out and answered, and the answer takes
	// this long (on the test's clock: the fake moves it, nothing sleeps).
	Slow time.Duration
}

// N is how many answers the upset takes.
func (u Upset) N() int { return max(u.Times, 1) }

// Request is a placement of n machines of the env's offer.
func (e Env) Request(group string, n int) providers.PlaceRequest {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("agt_%s_%d", group, i)
	}
	return providers.PlaceRequest{GroupName: group, OfferID: e.OfferID, Location: e.Location, Count: n,
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcontract contract@test"},
		Agent:   providers.AgentBootstrap{ServerURL: "https://deck.example.com", Token: "cdb_" + group + "_contract", Tokens: tokens}}
}

// Case is one thing every provider must survive: Why says it for the
// reader, Run checks it on a fresh Env.
type Case struct {
	Name, Why string
	Run       func(t *testing.T, e Env)
}

// Run runs every case of the contract, each on a fresh Env.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(t, newEnv(t)) })
	}
}

var ctx = context.Background()

// Cases is the contract: what "a provider" must survive, the way the
// clouds really answer. Read it as the list of what the jobs may rely on:
// each case's Name and Why say it; the first ones are the provider's own
// answers (refusals, idempotence, what it can and cannot do), the later
// ones the upstream's (states that take time, answers lost after the
// fact, rate limits, slowness), which each fake plays through Env.Delay
// and Env.Upset on the test's clock.
var Cases = []Case{
	{Name: "capacity refusal leaves nothing",
		Why: "asked for more machines than are free, the provider refuses with ErrNoCapacity and holds none of them",
		Run: func(t *testing.T, e Env) {
			_, err := e.Provider.PlaceGroup(ctx, e.Request("cl_big", e.Free+1))
			if !errors.Is(err, providers.ErrNoCapacity) {
				t.Fatalf("%d machines of %d free: want ErrNoCapacity, got %v", e.Free+1, e.Free, err)
			}
			gone(t, e, "cl_big")
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_fits", e.Free)); err != nil {
				t.Fatalf("the refusal must hold no machines: placing all %d free: %v", e.Free, err)
			}
		}},
	{Name: "validation refusal",
		Why: "an unknown offer or no machine is ErrValidation, and nothing is placed",
		Run: func(t *testing.T, e Env) {
			req := e.Request("cl_bad", 1)
			req.OfferID = "no-such-offer"
			if _, err := e.Provider.PlaceGroup(ctx, req); !errors.Is(err, providers.ErrValidation) {
				t.Fatalf("unknown offer: want ErrValidation, got %v", err)
			}
			req = e.Request("cl_bad", 1)
			req.Count = 0
			if _, err := e.Provider.PlaceGroup(ctx, req); !errors.Is(err, providers.ErrValidation) {
				t.Fatalf("no machines: want ErrValidation, got %v", err)
			}
			gone(t, e, "cl_bad")
		}},
	{Name: "price ceiling refusal leaves nothing",
		Why: "a price above the quote's ceiling is the typed ErrPriceAboveCeiling (an ErrValidation, not a capacity refusal), nothing placed",
		Run: func(t *testing.T, e Env) {
			req := e.Request("cl_dear", 1)
			req.MaxMachineHourUSD = 1 // one micro-dollar per machine-hour: below any price
			_, err := e.Provider.PlaceGroup(ctx, req)
			var pe *providers.Error
			if !errors.Is(err, providers.ErrPriceAboveCeiling) || !errors.Is(err, providers.ErrValidation) || !errors.As(err, &pe) ||
				pe.Code != providers.CodePriceAboveCeiling || !strings.Contains(pe.Message, "above the ceiling of 1 ") {
				t.Fatalf("price above the ceiling: want the typed ErrPriceAboveCeiling (an ErrValidation), got %v", err)
			}
			if errors.Is(err, providers.ErrNoCapacity) || errors.Is(providers.AboveCeiling("x", "op", "l", "o", 2, 1), providers.ErrNoCapacity) {
				t.Fatal("a price refusal is not a capacity refusal")
			}
			gone(t, e, "cl_dear")
			req.MaxMachineHourUSD = 1_000_000 * 1_000_000 // a million dollars: above any price
			if _, err := e.Provider.PlaceGroup(ctx, req); err != nil {
				t.Fatalf("price below the ceiling: %v", err)
			}
		}},
	{Name: "partial placement rolled back",
		Why: "refused for capacity mid-group (the catalog said yes, a later create found none): what was placed is terminated, ErrNoCapacity",
		Run: func(t *testing.T, e Env) {
			e.FailMidway(t)
			_, err := e.Provider.PlaceGroup(ctx, e.Request("cl_half", 2))
			if !errors.Is(err, providers.ErrNoCapacity) {
				t.Fatalf("want ErrNoCapacity, got %v", err)
			}
			gone(t, e, "cl_half")
		}},
	{Name: "placement is idempotent on the group name",
		Why: "a retried placement adopts the group's machines instead of placing more",
		Run: func(t *testing.T, e Env) {
			a, err := e.Provider.PlaceGroup(ctx, e.Request("cl_twice", 2))
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Provider.PlaceGroup(ctx, e.Request("cl_twice", 2))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Nodes) != 2 || len(b.Nodes) != 2 || a.Nodes[0].ID != b.Nodes[0].ID || a.Nodes[1].ID != b.Nodes[1].ID {
				t.Fatalf("a retry placed other machines: %+v then %+v", a.Nodes, b.Nodes)
			}
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_rest", e.Free-2)); err != nil {
				t.Fatalf("the retry took more machines: %v", err)
			}
		}},
	{Name: "terminate of a missing group is success",
		Why: "terminate is idempotent: an unknown or already terminated group is success",
		Run: func(t *testing.T, e Env) {
			if err := e.Provider.TerminateGroup(ctx, "cl_never"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
					t.Fatalf("terminate %d: %v", i+1, err)
				}
			}
		}},
	{Name: "describe after terminate",
		Why: "describe answers several groups in one call; a terminated group shows no live machine, the others are untouched",
		Run: func(t *testing.T, e Env) {
			for _, g := range []string{"cl_1", "cl_2"} {
				if _, err := e.Provider.PlaceGroup(ctx, e.Request(g, 1)); err != nil {
					t.Fatal(err)
				}
			}
			e.Advance(e.Boot)
			gs, err := e.Provider.DescribeGroups(ctx, []string{"cl_1", "cl_2", "cl_never"})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := gs["cl_never"]; ok || len(gs) != 2 {
				t.Fatalf("groups %v", gs)
			}
			for name, g := range gs {
				if len(g.Nodes) != 1 || g.Nodes[0].State != providers.NodeRunning || g.Name != name {
					t.Fatalf("%s booted: %+v", name, g)
				}
			}
			if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
				t.Fatal(err)
			}
			gone(t, e, "cl_1")
			if g, err := e.Provider.DescribeGroup(ctx, "cl_2"); err != nil || g.Nodes[0].State != providers.NodeRunning {
				t.Fatalf("the other group: %+v %v", g, err)
			}
		}},
	{Name: "restart of a running machine",
		Why: "a restart brings the machine back to running; an unknown machine is ErrNotFound; a member of a group the upstream manages whole is refused (ErrUnsupported)",
		Run: func(t *testing.T, e Env) {
			g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			err = e.Provider.RestartNode(ctx, "cl_1", g.Nodes[1].ID)
			switch {
			case e.GroupBound && !errors.Is(err, providers.ErrUnsupported):
				t.Fatalf("a member of a group the upstream manages whole: want ErrUnsupported, got %v", err)
			case !e.GroupBound && err != nil:
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			g, err = e.Provider.DescribeGroup(ctx, "cl_1")
			if err != nil || g.Nodes[1].State != providers.NodeRunning || g.Nodes[0].State != providers.NodeRunning {
				t.Fatalf("after the restart: %+v %v", g, err)
			}
			if err := e.Provider.RestartNode(ctx, "cl_1", "no-such-machine"); !errors.Is(err, providers.ErrNotFound) {
				t.Fatalf("unknown machine: want ErrNotFound, got %v", err)
			}
		}},
	{Name: "a rate-limited list is waited out",
		Why: "a 429 on a list is waited out for its Retry-After, then retried",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return // no upstream rate limit to honour
			}
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
				t.Fatal(err)
			}
			before := e.Waited()
			e.Upset(t, Upset{Op: OpList, RetryAfter: 45 * time.Second})
			gs, err := e.Provider.DescribeGroups(ctx, []string{"cl_1"})
			if err != nil || len(gs["cl_1"].Nodes) != 1 {
				t.Fatalf("a rate-limited describe is retried after the wait: %v %v", gs, err)
			}
			if w := e.Waited() - before; w < 45*time.Second {
				t.Fatalf("waited %v before retrying; the upstream asked for 45s", w)
			}
		}},
	{Name: "placement with a volume",
		Why: "a provider that cannot attach a persistent volume refuses such a placement (ErrUnsupported) before placing anything",
		Run: func(t *testing.T, e Env) {
			req := e.Request("cl_vol", 2)
			req.Volume = &providers.Volume{ID: "vol_contract", Name: "ckpt", SizeGB: 100}
			g, err := e.Provider.PlaceGroup(ctx, req)
			if !e.Volumes {
				if !errors.Is(err, providers.ErrUnsupported) {
					t.Fatalf("a provider that attaches no volume refuses: want ErrUnsupported, got %v", err)
				}
				gone(t, e, "cl_vol")
				return
			}
			if err != nil || len(g.Nodes) != 2 {
				t.Fatalf("placement with a volume: %+v %v", g, err)
			}
		}},
	{Name: "stop, then restart starts the machine",
		Why: "stop and start where the cloud can; elsewhere StopNode is ErrUnsupported",
		Run: func(t *testing.T, e Env) {
			g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1))
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			err = e.Provider.StopNode(ctx, "cl_1", g.Nodes[0].ID)
			if !e.Stops {
				if !errors.Is(err, providers.ErrUnsupported) {
					t.Fatalf("a provider that cannot stop refuses: want ErrUnsupported, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			if g, err = e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || g.Nodes[0].State != providers.NodeStopped {
				t.Fatalf("after stop: %+v %v", g, err)
			}
			if err := e.Provider.RestartNode(ctx, "cl_1", g.Nodes[0].ID); err != nil {
				t.Fatalf("restart of a stopped machine: %v", err)
			}
			e.Advance(e.Boot)
			if g, err = e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || g.Nodes[0].State != providers.NodeRunning {
				t.Fatalf("after the restart: %+v %v", g, err)
			}
		}},
	{Name: "release one machine leaves the others",
		Why: "releasing one machine is idempotent and leaves the rest running; a group placed as one refuses it",
		Run: func(t *testing.T, e Env) {
			g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			if e.GroupBound {
				if err := e.Provider.ReleaseNode(ctx, "cl_1", g.Nodes[1].ID); !errors.Is(err, providers.ErrUnsupported) {
					t.Fatalf("a machine of a group placed as one is released only with it: want ErrUnsupported, got %v", err)
				}
				if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 2 || g.Nodes[1].State != providers.NodeRunning {
					t.Fatalf("a refused release leaves the machine: %+v %v", g, err)
				}
				return
			}
			for range 2 { // a second release of the same machine is success
				if err := e.Provider.ReleaseNode(ctx, "cl_1", g.Nodes[1].ID); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Provider.ReleaseNode(ctx, "cl_1", "no-such-machine"); err != nil {
				t.Fatalf("unknown machine: %v", err)
			}
			if err := e.Provider.ReleaseNode(ctx, "cl_never", g.Nodes[0].ID); err != nil {
				t.Fatalf("unknown group: %v", err)
			}
			e.Advance(e.Boot)
			g, err = e.Provider.DescribeGroup(ctx, "cl_1")
			if err != nil {
				t.Fatal(err)
			}
			running := 0
			for _, n := range g.Nodes {
				if n.State == providers.NodeRunning {
					running++
					if n.Index != 0 {
						t.Errorf("machine %d still runs after its release: %+v", n.Index, g.Nodes)
					}
				}
			}
			if running != 1 {
				t.Errorf("machine 0 must keep running alone: %+v", g.Nodes)
			}
		}},
	{Name: "place one more machine",
		Why: "adding a machine to a placed group where the cloud can (L10); elsewhere ErrUnsupported, nothing added",
		Run: func(t *testing.T, e Env) {
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 1)); err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			req := e.Request("cl_1", 2)
			req.Agent.Tokens = req.Agent.Tokens[1:]
			n, err := e.Provider.PlaceNode(ctx, "cl_1", 1, req)
			if !e.PlacesNodes {
				if !errors.Is(err, providers.ErrUnsupported) {
					t.Fatalf("a provider that cannot add a machine refuses: want ErrUnsupported, got %v", err)
				}
				if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 1 {
					t.Fatalf("a refused placement adds nothing: %+v %v", g, err)
				}
				return
			}
			if err != nil || n.Index != 1 {
				t.Fatalf("place node 1: %+v %v", n, err)
			}
			e.Advance(e.Boot)
			if g, err := e.Provider.DescribeGroup(ctx, "cl_1"); err != nil || len(g.Nodes) != 2 || g.Nodes[1].State != providers.NodeRunning {
				t.Fatalf("after placing node 1: %+v %v", g, err)
			}
		}},
	{Name: "machines boot through the cloud's states",
		Why: "right after a placement the cloud lists the machines booting (without addresses; RunPod's cluster members first without rank and address): they read pending, never failed or running, and running once booted",
		Run: func(t *testing.T, e Env) {
			if g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2)); err != nil || len(g.Nodes) != 2 {
				t.Fatalf("placement: %+v %v", g, err)
			}
			g, err := e.Provider.DescribeGroup(ctx, "cl_1")
			if err != nil || len(g.Nodes) != 2 {
				t.Fatalf("describe while booting: %+v %v", g, err)
			}
			for _, n := range g.Nodes {
				if n.State != providers.NodePending {
					t.Errorf("machine %d while booting: %s, want pending", n.Index, n.State)
				}
			}
			e.Advance(e.Boot)
			running(t, e, "cl_1", 2)
		}},
	{Name: "a cloud slower than a placement's patience",
		Why: "every state on the way takes 10 minutes (booting, ranks and addresses unassigned, deleting): a placement may say transient while the cloud is not done, and the next tries adopt what it made; nothing is rolled back or placed twice, and the machines run once booted and are free again once deleted",
		Run: func(t *testing.T, e Env) {
			if e.Delay == nil {
				return
			}
			const slow = 10 * time.Minute
			e.Delay(slow)
			g, err := placeTicks(e, "cl_1", 2)
			if err != nil || len(g.Nodes) != 2 || g.Nodes[0].ID == g.Nodes[1].ID {
				t.Fatalf("placement on a slow cloud: %+v %v", g, err)
			}
			e.Advance(slow + e.Boot)
			running(t, e, "cl_1", 2)
			if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
				t.Fatal(err)
			}
			gone(t, e, "cl_1")
			e.Advance(slow + e.Boot)
			if _, err := placeTicks(e, "cl_2", e.Free); err != nil {
				t.Fatalf("the deleted machines are not free again: %v", err)
			}
		}},
	{Name: "a lost create answer places nothing twice",
		Why: "the create went through and its answer was lost (a 502 after the fact): the provider finds what it made instead of creating it again; it may say transient, and the retry adopts it",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return // no upstream answer to lose
			}
			e.Upset(t, Upset{Op: OpCreate, Lost: true})
			placeOnce(t, e, "cl_lost", 2)
		}},
	{Name: "a lost create answer mid-group",
		Why: "the second machine's create went through and its answer was lost (a cloud placing a group in one call has no second create): the placement finds it, keeps the first, and places nothing twice",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return
			}
			e.Upset(t, Upset{Op: OpCreate, After: 1, Lost: true})
			placeOnce(t, e, "cl_lost", 2)
		}},
	{Name: "a rate-limited create is waited out",
		Why: "a 429 on a create says it was not carried out: it is sent again after its Retry-After, and the group is placed once",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return // no upstream rate limit
			}
			before := e.Waited()
			e.Upset(t, Upset{Op: OpCreate, RetryAfter: 30 * time.Second})
			placeOnce(t, e, "cl_paced", 2)
			if w := e.Waited() - before; w < 30*time.Second {
				t.Errorf("waited %v before creating again; the upstream asked for 30s", w)
			}
		}},
	{Name: "slow answers",
		Why: "every answer takes long (40 s each, on the test's clock): the placement still holds, what counts time (pacing, members awaited) counts it, and nothing is placed twice or rolled back",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return // no upstream answers
			}
			e.Upset(t, Upset{Op: OpCreate, Slow: 40 * time.Second, Times: 4})
			e.Upset(t, Upset{Op: OpList, Slow: 40 * time.Second, Times: 12})
			placeOnce(t, e, "cl_slow", 2)
			e.Advance(e.Boot)
			running(t, e, "cl_slow", 2)
		}},
	{Name: "a restart under way is not a failure",
		Why: "right after a restart the machine is busy (Lambda's vm-action-in-progress): it reads restarting, pending or running, never failed; a second restart meanwhile is success or transient; once booted it runs",
		Run: func(t *testing.T, e Env) {
			if e.GroupBound {
				return // its members are not restarted (see the restart case)
			}
			g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			if err := e.Provider.RestartNode(ctx, "cl_1", g.Nodes[1].ID); err != nil {
				t.Fatal(err)
			}
			busy(t, e, "cl_1", 1)
			if err := e.Provider.RestartNode(ctx, "cl_1", g.Nodes[1].ID); err != nil && !errors.Is(err, providers.ErrTransient) {
				t.Errorf("a restart while one is under way: %v, want success or transient", err)
			}
			e.Advance(e.Boot)
			running(t, e, "cl_1", 2)
		}},
	{Name: "a lost restart answer is success",
		Why: "the restart was carried out and its answer lost: the restart happened, so RestartNode is success (a retry that finds it under way says so), not a failure recovery would act on",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil || e.GroupBound {
				return
			}
			g, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2))
			if err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			e.Upset(t, Upset{Op: OpRestart, Lost: true})
			if err := e.Provider.RestartNode(ctx, "cl_1", g.Nodes[1].ID); err != nil {
				t.Errorf("a restart whose answer was lost: %v", err)
			}
			busy(t, e, "cl_1", 1)
			e.Advance(e.Boot)
			running(t, e, "cl_1", 2)
		}},
	{Name: "a terminating group reads gone",
		Why: "terminate returns while the cloud is still deleting (Shadeform's deleting, Lambda's terminating): describe then shows no live machine, terminate again is success, and the machines are free again once gone",
		Run: func(t *testing.T, e Env) {
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2)); err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
				t.Fatal(err)
			}
			gone(t, e, "cl_1")
			if err := e.Provider.TerminateGroup(ctx, "cl_1"); err != nil {
				t.Fatalf("terminate while deleting: %v", err)
			}
			e.Advance(e.Boot)
			gone(t, e, "cl_1")
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_2", e.Free)); err != nil {
				t.Fatalf("the terminated machines are not free again: %v", err)
			}
		}},
	{Name: "a lost terminate answer leaves nothing",
		Why: "the delete was carried out and its answer lost: terminate is success (at the latest when retried) and nothing is left running",
		Run: func(t *testing.T, e Env) {
			if e.Upset == nil {
				return
			}
			if _, err := e.Provider.PlaceGroup(ctx, e.Request("cl_1", 2)); err != nil {
				t.Fatal(err)
			}
			e.Advance(e.Boot)
			e.Upset(t, Upset{Op: OpDelete, Lost: true})
			err := e.Provider.TerminateGroup(ctx, "cl_1")
			if errors.Is(err, providers.ErrTransient) {
				err = e.Provider.TerminateGroup(ctx, "cl_1")
			}
			if err != nil {
				t.Fatalf("terminate after a lost answer: %v", err)
			}
			gone(t, e, "cl_1")
		}},
}

// gone requires that the group holds no live machine: unknown upstream, or
// every machine terminated.
func gone(t *testing.T, e Env, group string) {
	t.Helper()
	g, err := e.Provider.DescribeGroup(context.Background(), group)
	if errors.Is(err, providers.ErrNotFound) {
		return
	}
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	for _, n := range g.Nodes {
		if n.State != providers.NodeTerminated {
			t.Fatalf("group %s left machine %s %s behind", group, n.ID, n.State)
		}
	}
}

// placeOnce places n machines as group (retrying once after a transient
// answer, as the next job tick would) and requires that exactly n were
// taken: the rest of the free machines can still be placed.
func placeOnce(t *testing.T, e Env, group string, n int) {
	t.Helper()
	g, err := e.Provider.PlaceGroup(ctx, e.Request(group, n))
	if errors.Is(err, providers.ErrTransient) {
		g, err = e.Provider.PlaceGroup(ctx, e.Request(group, n))
	}
	if err != nil || len(g.Nodes) != n {
		t.Fatalf("placing %s: %+v %v", group, g, err)
	}
	ids := map[string]bool{}
	for _, m := range g.Nodes {
		ids[m.ID] = true
	}
	if len(ids) != n {
		t.Fatalf("placing %s: %d distinct machines, want %d: %+v", group, len(ids), n, g.Nodes)
	}
	if rest := e.Free - n; rest > 0 {
		if _, err := e.Provider.PlaceGroup(ctx, e.Request(group+"_rest", rest)); err != nil {
			t.Fatalf("%s took more than its %d machines: the other %d cannot be placed: %v", group, n, rest, err)
		}
	}
}

// running requires group's n machines running.
func running(t *testing.T, e Env, group string, n int) {
	t.Helper()
	g, err := e.Provider.DescribeGroup(ctx, group)
	if err != nil || len(g.Nodes) != n {
		t.Fatalf("describe %s: %+v %v", group, g, err)
	}
	for _, m := range g.Nodes {
		if m.State != providers.NodeRunning {
			t.Errorf("%s machine %d: %s, want running", group, m.Index, m.State)
		}
	}
}

// busy requires group's machine i under way after a restart: restarting,
// pending or (already) running, not failed or gone.
func busy(t *testing.T, e Env, group string, i int) {
	t.Helper()
	g, err := e.Provider.DescribeGroup(ctx, group)
	if err != nil || len(g.Nodes) <= i {
		t.Fatalf("describe %s: %+v %v", group, g, err)
	}
	switch st := g.Nodes[i].State; st {
	case providers.NodeRestarting, providers.NodePending, providers.NodeRunning:
	default:
		t.Errorf("%s machine %d right after a restart: %s, want restarting", group, i, st)
	}
}

// placeTicks places n machines as group the way the provision job does on
// a slow cloud: a transient answer is tried again on the next tick (a
// minute later), for at most half an hour.
func placeTicks(e Env, group string, n int) (providers.Group, error) {
	g, err := e.Provider.PlaceGroup(ctx, e.Request(group, n))
	for tick := 0; errors.Is(err, providers.ErrTransient) && tick < 30; tick++ {
		e.Advance(time.Minute)
		g, err = e.Provider.PlaceGroup(ctx, e.Request(group, n))
	}
	return g, err
}
