package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// The placement's workload reaches every machine's agent (N3), and a start
// command plays on the clock: lines, sleeps, an exit code; a program that
// does not end runs until its machine reboots.
func TestStartCommandPlaysOnTheClock(t *testing.T) {
	ctx := context.Background()
	var machines []Machine
	c, clk := newTestCloud(t, WithAgents(func(m Machine) MachineAgent { machines = append(machines, m); return nil }))
	req := request(c, "w", offCt, 2)
	req.StartCommand, req.Ports, req.Env = "echo up; sleep 30; echo 'bye'; exit 7", []int{8888}, map[string]string{"A": "1"}
	if _, err := c.PlaceGroup(ctx, req); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if len(machines) != 2 {
		t.Fatalf("%d agents started", len(machines))
	}
	for _, m := range machines {
		w := m.Workload
		if w.StartCommand != req.StartCommand || !slices.Equal(w.Ports, []int{8888}) || w.Env["A"] != "1" {
			t.Errorf("%s got workload %+v", m.Name, w)
		}
	}
	st := machines[1].Exec.(providers.Starter)
	p, err := st.Start(ctx, providers.Command{Step: "start", Script: req.StartCommand, User: "ubuntu", Env: map[string]string{"NODE_RANK": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if lines, exit := p.Poll(); !slices.Equal(lines, []string{"up"}) || exit != nil {
		t.Errorf("at start: %q %+v", lines, exit)
	}
	clk.Advance(29 * time.Second)
	if lines, exit := p.Poll(); len(lines) != 0 || exit != nil {
		t.Errorf("during the sleep: %q %+v", lines, exit)
	}
	clk.Advance(time.Second)
	lines, exit := p.Poll()
	if !slices.Equal(lines, []string{"bye"}) || exit == nil || exit.Code != 7 || !exit.At.Equal(clk.Now()) {
		t.Errorf("after the sleep: %q %+v", lines, exit)
	}
	if ran := c.Ran("w", 1); len(ran) != 1 || ran[0].User != "ubuntu" || ran[0].Env["NODE_RANK"] != "1" {
		t.Errorf("recorded %+v", ran)
	}

	server, err := st.Start(ctx, providers.Command{Step: "start", Script: "python -m http.server 8888"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if _, exit := server.Poll(); exit != nil {
		t.Errorf("a server ended by itself: %+v", exit)
	}
	if err := c.RestartNode(ctx, "w", machines[1].NodeID); err != nil {
		t.Fatal(err)
	}
	if _, exit := server.Poll(); exit == nil || exit.Code != -1 || exit.Err == "" {
		t.Errorf("a reboot did not end it: %+v", exit)
	}
}
