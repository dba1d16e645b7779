package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// fakeAgents records the agents started and the steps they took.
type fakeAgents struct {
	started []Machine
	steps   []string // "group/node-i#agent", in call order
	fail    map[string]error
	onStep  func(m Machine)
}

type fakeAgent struct {
	f   *fakeAgents
	m   Machine
	seq int
}

func (a *fakeAgent) Step(ctx context.Context) error {
	key := a.m.Group + "/" + a.m.Name
	a.f.steps = append(a.f.steps, key+"#"+string(rune('0'+a.seq)))
	if a.f.onStep != nil {
		a.f.onStep(a.m)
	}
	return a.f.fail[key]
}

func (f *fakeAgents) factory(m Machine) MachineAgent {
	f.started = append(f.started, m)
	return &fakeAgent{f: f, m: m, seq: len(f.started) - 1}
}

func TestStepAgentsRunsOnlyRunningMachines(t *testing.T) {
	ctx := context.Background()
	agents := &fakeAgents{}
	c, clk := newTestCloud(t, WithAgents(agents.factory))
	mustInject(t, c, Fault{Kind: FaultNeverBoots, Group: "b", Node: 1})
	place(t, c, "b", offCt, 2)
	place(t, c, "a", offCt, 2)
	place(t, c, "slow", offBM, 1)

	if err := c.StepAgents(ctx); err != nil || len(agents.started) != 0 {
		t.Fatalf("before boot: err %v, started %+v", err, agents.started)
	}
	clk.Advance(2 * time.Minute) // containers up, bare metal still booting
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	wantSteps := []string{"a/node-0#0", "a/node-1#1", "b/node-0#2", "a/node-0#0", "a/node-1#1", "b/node-0#2"}
	if !slices.Equal(agents.steps, wantSteps) {
		t.Errorf("steps = %v, want %v", agents.steps, wantSteps)
	}
	if len(agents.started) != 3 {
		t.Fatalf("started %d agents, want 3 (lazily, once each)", len(agents.started))
	}
	m := agents.started[1]
	if m.Group != "a" || m.Name != "node-1" || m.Index != 1 || m.PrivateIP != "10.77.0.2" ||
		m.ServerURL != "http://clusterdeck.test" || m.Token != "a-token-b" || m.Exec == nil ||
		m.NodeID != describe(t, c, "a").Nodes[1].ID {
		t.Errorf("machine = %+v", m)
	}

	// A terminated group's agents stop.
	if err := c.TerminateGroup(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	agents.steps = nil
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(agents.steps, []string{"b/node-0#2"}) {
		t.Errorf("after terminating a: steps %v", agents.steps)
	}
}

func TestAgentSilent(t *testing.T) {
	agents := &fakeAgents{}
	c, clk := newTestCloud(t, WithAgents(agents.factory))
	mustInject(t, c, Fault{Kind: FaultAgentSilent, Node: 0, Count: 1})
	place(t, c, "g", offCt, 2)
	clk.Advance(time.Hour)
	if err := c.StepAgents(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(agents.started) != 1 || agents.started[0].Name != "node-1" {
		t.Errorf("started %+v, want only node-1", agents.started)
	}
	if got := states(describe(t, c, "g")); !allState(got, providers.NodeRunning) {
		t.Errorf("a silent agent's machine still runs: %v", got)
	}
}

func TestRestartGivesAFreshAgent(t *testing.T) {
	ctx := context.Background()
	agents := &fakeAgents{}
	c, clk := newTestCloud(t, WithAgents(agents.factory))
	g := place(t, c, "g", offCt, 1)
	clk.Advance(time.Hour)
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartNode(ctx, "g", g.Nodes[0].ID); err != nil {
		t.Fatal(err)
	}
	agents.steps = nil
	if err := c.StepAgents(ctx); err != nil || len(agents.steps) != 0 {
		t.Fatalf("restarting machine stepped: %v %v", agents.steps, err)
	}
	clk.Advance(time.Minute)
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if len(agents.started) != 2 || !slices.Equal(agents.steps, []string{"g/node-0#1"}) {
		t.Errorf("after reboot: started %d, steps %v", len(agents.started), agents.steps)
	}
}

func TestStepAgentsJoinsErrors(t *testing.T) {
	boom := errors.New("boom")
	agents := &fakeAgents{fail: map[string]error{"g/node-0": boom, "g/node-2": boom}}
	c, clk := newTestCloud(t, WithAgents(agents.factory))
	place(t, c, "g", offCt, 3)
	clk.Advance(time.Hour)
	err := c.StepAgents(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "g/node-0: boom") || !strings.Contains(err.Error(), "g/node-2: boom") {
		t.Errorf("StepAgents = %v", err)
	}
	if len(agents.steps) != 3 {
		t.Errorf("an error stopped the other agents: %v", agents.steps)
	}
}

func TestStepAgentsWithoutFactory(t *testing.T) {
	c, clk := newTestCloud(t)
	place(t, c, "g", offCt, 1)
	clk.Advance(time.Hour)
	if err := c.StepAgents(context.Background()); err != nil {
		t.Errorf("StepAgents without agents = %v", err)
	}
}

func TestRunStepsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	agents := &fakeAgents{onStep: func(Machine) { cancel() }}
	c, clk := newTestCloud(t, WithAgents(agents.factory))
	place(t, c, "g", offCt, 1)
	clk.Advance(time.Hour)
	// Run steps at once; the agent cancels, so Run returns without a tick.
	if err := c.Run(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	if len(agents.steps) != 1 {
		t.Errorf("steps = %v", agents.steps)
	}
	if err := c.Run(context.Background(), 0); err == nil {
		t.Error("Run accepted a zero interval")
	}
}
