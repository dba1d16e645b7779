package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// MachineAgent is the cluster agent running on one simulated machine.
type MachineAgent interface {
	Step(ctx context.Context) error
}

// Machine is what an agent needs to know about the machine it runs on.
type Machine struct {
	Group, NodeID, Name string
	Index               int
	PrivateIP           string
	// Token is the group's bootstrap token (cdb_…) when the placement gave
	// one, else the machine's own node token.
	ServerURL, Token string
	Exec             providers.Executor
	// Workload is what the placement asked every machine to run (N3): a
	// real cloud writes it for the start-up script, here it goes to the agent.
	Workload providers.Workload
}

// AgentFactory starts the agent of one machine (`clusterdeck agent --server
// URL --token T` on a real one).
type AgentFactory func(m Machine) MachineAgent

// agentRun is one agent due for a step.
type agentRun struct {
	label string // "group/node-i"
	id    string // machine id
	epoch int
	m     Machine
	agent MachineAgent // nil until started
}

// StepAgents steps, once, the agent of every machine that is running now, in
// group-name then index order. Agents start lazily on a machine's first
// running step, from the placement's AgentBootstrap; a restarted machine
// gets a fresh agent. Machines of terminated groups and agent_silent
// machines run none. Step errors are joined, each naming its machine. Calls
// are serialised; Step is called without any lock held. With a database
// (WithDB) only the instance holding the agent lease steps them; another
// one returns at once, keeping no agent of its own.
func (c *Cloud) StepAgents(ctx context.Context) error {
	if c.factory == nil {
		return nil
	}
	c.stepMu.Lock()
	defer c.stepMu.Unlock()
	mine, err := c.takeAgentLease(ctx)
	if err != nil {
		return fmt.Errorf("sim: agent lease: %w", err)
	}
	if !mine {
		c.mu.Lock()
		clear(c.agents) // another instance runs them: ours would be stale
		c.mu.Unlock()
		return nil
	}
	runs, err := c.dueAgents(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range runs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if r.agent == nil {
			r.agent = c.factory(r.m)
			c.keepAgent(r)
		}
		if r.agent == nil {
			continue
		}
		if err := r.agent.Step(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.label, err))
		}
	}
	return errors.Join(errs...)
}

// dueAgents lists the machines whose agent steps now.
func (c *Cloud) dueAgents(ctx context.Context) (_ []agentRun, err error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	defer c.close(&err)
	now := c.now()
	names := make([]string, 0, len(c.groups))
	for name, g := range c.groups {
		if !g.terminated {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var runs []agentRun
	for _, name := range names {
		g := c.groups[name]
		for _, n := range g.nodes {
			if n.agentSilent || !n.running(now) || !n.silentAt.IsZero() && !now.Before(n.silentAt) {
				continue
			}
			r := agentRun{label: name + "/" + n.name(), id: n.id, epoch: n.agentEpoch, m: c.machine(n)}
			if slot, ok := c.agents[n.id]; ok && slot.epoch == n.agentEpoch {
				r.agent = slot.agent
			}
			runs = append(runs, r)
		}
	}
	due := make(map[string]bool, len(runs))
	for _, r := range runs {
		due[r.id] = true
	}
	maps.DeleteFunc(c.agents, func(id string, _ agentSlot) bool { return !due[id] }) // stopped machines' agents end
	return runs, nil
}

// machine describes node n to its agent. Callers hold c.mu.
func (c *Cloud) machine(n *node) Machine {
	m := Machine{
		Group:     n.g.name,
		NodeID:    n.id,
		Name:      n.name(),
		Index:     n.index,
		PrivateIP: n.privateIP(),
		ServerURL: n.g.agent.ServerURL,
		Exec:      &executor{c: c, group: n.g.name, id: n.id},
		Workload:  n.g.workload,
	}
	switch {
	case n.g.agent.Token != "":
		// One start-up script for the whole group: the agent claims its
		// rank with the bootstrap token and its machine id (NodeID).
		m.Token = n.g.agent.Token
	case n.index < len(n.g.agent.Tokens):
		m.Token = n.g.agent.Tokens[n.index]
	}
	return m
}

// keepAgent stores a newly started agent; the next step drops it when the
// machine rebooted (new epoch) or is no longer running.
func (c *Cloud) keepAgent(r agentRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.agents[r.id] = agentSlot{epoch: r.epoch, agent: r.agent}
}

// Run steps the agents (StepAgents) at once and then every interval of wall
// time until ctx is done, logging step errors. It is for development
// servers; tests call StepAgents with their own clock.
// before, when set, runs ahead of each round (a shared clock loads its time).
// With a database (WithDB) the agent lease lasts 7½ intervals: an instance
// that dies is taken over that long after its last round.
func (c *Cloud) Run(ctx context.Context, every time.Duration, before ...func(context.Context) error) error {
	if every <= 0 {
		return fmt.Errorf("sim: run: interval must be positive, got %s", every)
	}
	c.stepMu.Lock()
	c.every = every
	c.stepMu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, f := range before {
			if f == nil {
				continue
			}
			if err := f(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("sim: before agent round", "provider", c.name, "err", err)
			}
		}
		if err := c.StepAgents(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("sim: agent step failed", "provider", c.name, "err", err)
		}
		select {
		case <-ctx.Done():
			c.stepMu.Lock()
			c.releaseAgentLease(context.WithoutCancel(ctx))
			c.stepMu.Unlock()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Executor returns the executor of machine index of a live group, as its
// agent would get it.
func (c *Cloud) Executor(groupName string, index int) (_ providers.Executor, err error) {
	if err := c.open(context.Background()); err != nil {
		return nil, err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated || index < 0 || index >= len(g.nodes) {
		return nil, c.errorf(providers.ErrNotFound, "Executor", "not-found", "",
			"machine %d of group %q not found", index, groupName)
	}
	return &executor{c: c, group: groupName, id: g.nodes[index].id}, nil
}
