package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// bootAll places a group of count machines and moves the clock past their boot.
func bootAll(t *testing.T, c *Cloud, clk *fakeClock, group string, count int) {
	t.Helper()
	place(t, c, group, offCounted, count)
	clk.Advance(time.Hour)
	for i, st := range states(describe(t, c, group)) {
		if st != providers.NodeRunning {
			t.Fatalf("node %d is %s after boot", i, st)
		}
	}
}

// R1–R5: goes_down stops a live machine at once (or After), and a restart
// brings it back in place with the same address.
func TestFaultGoesDownAndRestart(t *testing.T) {
	c, clk := newTestCloud(t)
	ctx := context.Background()
	bootAll(t, c, clk, "g1", 3)
	if err := c.Inject(Fault{Kind: FaultGoesDown, Group: "g1", Node: 1, After: Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if st := states(describe(t, c, "g1"))[1]; st != providers.NodeRunning {
		t.Fatalf("down before After: %s", st)
	}
	clk.Advance(time.Minute)
	g := describe(t, c, "g1")
	if g.Nodes[1].State != providers.NodeStopped || g.Nodes[0].State != providers.NodeRunning {
		t.Fatalf("states %v", states(g))
	}
	if len(c.Faults()) != 0 {
		t.Errorf("a fault that hit a live group stays queued: %+v", c.Faults())
	}
	if err := c.RestartNode(ctx, "g1", g.Nodes[1].ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	after := describe(t, c, "g1").Nodes[1]
	if after.State != providers.NodeRunning || after.PrivateIP != g.Nodes[1].PrivateIP || after.ID != g.Nodes[1].ID {
		t.Errorf("after restart: %+v", after)
	}
}

// unrecoverable stops the machine and every restart is ErrUnrecoverable;
// restart_fails fails exactly Count restarts with ErrTransient.
func TestFaultUnrecoverableAndRestartFails(t *testing.T) {
	c, clk := newTestCloud(t)
	ctx := context.Background()
	bootAll(t, c, clk, "g1", 2)
	if err := c.Inject(Fault{Kind: FaultUnrecoverable, Group: "g1", Node: 0},
		Fault{Kind: FaultRestartFails, Group: "g1", Node: 1, Count: 2}); err != nil {
		t.Fatal(err)
	}
	g := describe(t, c, "g1")
	if g.Nodes[0].State != providers.NodeFailed {
		t.Fatalf("unrecoverable machine reads %s", g.Nodes[0].State)
	}
	for range 2 {
		wantClass(t, c.RestartNode(ctx, "g1", g.Nodes[0].ID), providers.ErrUnrecoverable)
	}
	for range 2 {
		wantClass(t, c.RestartNode(ctx, "g1", g.Nodes[1].ID), providers.ErrTransient)
	}
	if err := c.RestartNode(ctx, "g1", g.Nodes[1].ID); err != nil {
		t.Errorf("third restart after two scripted failures: %v", err)
	}
}

// heartbeats_stop silences a running machine's agent; a restart starts a fresh one.
func TestFaultHeartbeatsStop(t *testing.T) {
	var steps int
	c, clk := newTestCloud(t, WithAgents(func(m Machine) MachineAgent {
		return agentFunc(func(context.Context) error {
			if m.Index == 1 {
				steps++
			}
			return nil
		})
	}))
	ctx := context.Background()
	bootAll(t, c, clk, "g1", 2)
	if err := c.StepAgents(ctx); err != nil || steps != 1 {
		t.Fatalf("steps %d err %v", steps, err)
	}
	if err := c.Inject(Fault{Kind: FaultHeartbeatsStop, Group: "g1", Node: 1}); err != nil {
		t.Fatal(err)
	}
	_ = c.StepAgents(ctx)
	if steps != 1 || describe(t, c, "g1").Nodes[1].State != providers.NodeRunning {
		t.Fatalf("silent agent stepped (%d) or machine not running", steps)
	}
	if err := c.RestartNode(ctx, "g1", describe(t, c, "g1").Nodes[1].ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	_ = c.StepAgents(ctx)
	if steps != 2 {
		t.Errorf("after a restart the agent steps again: %d", steps)
	}
}

type agentFunc func(context.Context) error

func (f agentFunc) Step(ctx context.Context) error { return f(ctx) }

// describe_delay holds Count describe calls for Delay, or until the
// caller gives up; DescribeGroups answers many groups in one call.
func TestFaultDescribeDelayAndDescribeGroups(t *testing.T) {
	c, clk := newTestCloud(t)
	bootAll(t, c, clk, "g1", 2)
	place(t, c, "g2", offCounted, 2)
	if err := c.Inject(Fault{Kind: FaultDescribeDelay, Delay: Duration(time.Hour), Count: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.DescribeGroups(ctx, []string{"g1"}); !errors.Is(err, providers.ErrTransient) {
		t.Fatalf("delayed describe: %v", err)
	}
	got, err := c.DescribeGroups(context.Background(), []string{"g1", "g2", "nope"})
	if err != nil || len(got) != 2 || len(got["g1"].Nodes) != 2 || got["g2"].Name != "g2" {
		t.Fatalf("DescribeGroups: %v %+v", err, got)
	}
	if _, ok := got["nope"]; ok {
		t.Error("an unknown group is answered")
	}
}
