// Package sim is a simulated GPU cloud that behaves like a real one: a
// catalog of offers per location with stock that placements consume and
// terminations return, machines that boot on an injected clock, in-process
// cluster agents, scripted install and check output shaped like the real
// tools' output, and scriptable faults.
//
// It is the default provider (OP1) and the one every end-to-end test runs
// against. Nothing in it sleeps: time comes from WithClock, randomness from
// WithSeed, and agents advance only when StepAgents (or Run) is called.
//
// A typical test:
//
//	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
//	c := sim.New(sim.DefaultConfig(), sim.WithClock(func() time.Time { return now }), sim.WithSeed(1))
//	c.Inject(sim.Fault{Kind: sim.FaultNeverBoots, Node: 1})
//	g, err := c.PlaceGroup(ctx, providers.PlaceRequest{...})
//	now = now.Add(20 * time.Minute)
//	g, err = c.DescribeGroup(ctx, g.Name)
package sim
