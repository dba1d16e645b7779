package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// PlaceNode reserves one machine of a live group's offer at index: the
// group's size adds a machine (L10); the index of a machine that is not
// live (gone, stopped, failed or released) puts a new machine in its slot
// with the same name and interconnect address (X5), and the old one is
// released (back to stock unless its host was faulty). It takes one machine
// of stock, or refuses taking nothing. Node faults scripted for index (for
// this group, offer or location) hit the new machine as they would a
// placement's; a refusal fault refuses it. A retry with the same agent
// token returns the machine placed before.
func (c *Cloud) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (_ providers.Node, err error) {
	const op = "PlaceNode"
	if err := ctx.Err(); err != nil {
		return providers.Node{}, err
	}
	if err := c.open(ctx); err != nil {
		return providers.Node{}, err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated {
		return providers.Node{}, c.errorf(providers.ErrNotFound, op, "not-found", req.Location, "group %q not found", groupName)
	}
	s := g.offer
	bad := func(format string, args ...any) error {
		return c.errorf(providers.ErrValidation, op, "invalid-parameters", s.loc.ID, format, args...)
	}
	switch {
	case req.OfferID != s.cfg.ID || req.Location != s.loc.ID:
		return providers.Node{}, bad("group %q is %s in %s, not %s in %s", groupName, s.cfg.ID, s.loc.ID, req.OfferID, req.Location)
	case len(req.Agent.Tokens) > 1:
		return providers.Node{}, bad("%d agent tokens for one machine", len(req.Agent.Tokens))
	case index < 0 || index > len(g.nodes):
		return providers.Node{}, bad("index %d is outside the group's %d machines (add at %d)", index, len(g.nodes), len(g.nodes))
	}
	if price := c.offer(s).MachineHourUSD(); req.AboveCeiling(price) {
		return providers.Node{}, providers.AboveCeiling(c.Name(), op, s.loc.ID, "offer "+req.OfferID, price, req.MaxMachineHourUSD)
	}
	token := ""
	if len(req.Agent.Tokens) == 1 {
		token = req.Agent.Tokens[0]
	}
	now := c.now()
	var old *node
	if index < len(g.nodes) {
		old = g.nodes[index]
		if token != "" && index < len(g.agent.Tokens) && g.agent.Tokens[index] == token && !old.released {
			return c.view(g, now).Nodes[index], nil // a retry: the machine placed before
		}
		if st, _ := old.state(now); st == providers.NodeRunning || st == providers.NodePending || st == providers.NodeRestarting {
			return providers.Node{}, bad("machine %s at index %d is %s: only a machine that is gone, stopped or failed is replaced", old.id, index, st)
		}
	}
	if f := c.takeFault(isRefusal, s, groupName, 1); f != nil {
		return providers.Node{}, c.refusal(f, req)
	}
	if err := c.take(s, 1); err != nil {
		return providers.Node{}, err
	}
	if old != nil && !old.released && !old.unrecoverable && !old.dies {
		s.free++ // the old machine goes back; a faulty host does not
	}
	slot := fmt.Sprintf("%s/node-%d", g.name, index)
	k := c.gens[slot]
	c.gens[slot] = k + 1
	jitter := time.Duration(c.fraction("jitter", g.name, g.gen, index, "place", k) * 0.2 * float64(s.boot)).Truncate(time.Second)
	var also []*node
	if old != nil {
		also = []*node{old} // never the host of the machine it replaces
	}
	n := &node{
		g:         g,
		index:     index,
		host:      c.freeHost(s, req.Avoid, also),
		id:        "sim-" + c.hexID(16, "node", g.name, g.gen, index, "place", k),
		bootAt:    now.Add(s.boot + jitter),
		installed: map[string]time.Time{},
	}
	if old != nil {
		g.nodes[index] = n
	} else {
		g.nodes = append(g.nodes, n)
	}
	if token != "" {
		for len(g.agent.Tokens) <= index {
			g.agent.Tokens = append(g.agent.Tokens, "")
		}
		g.agent.Tokens[index] = token
	}
	c.applyPlacementFaults(n)
	return c.view(g, now).Nodes[index], nil
}

// ReleaseNode releases one machine and returns it to stock (unless its
// host was faulty). The last machine of the group leaves the group; one in
// the middle leaves its slot released (NodeTerminated) for a replacement.
func (c *Cloud) ReleaseNode(ctx context.Context, groupName, nodeID string) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated {
		return nil
	}
	i := slices.IndexFunc(g.nodes, func(n *node) bool { return n.id == nodeID })
	if i < 0 || g.nodes[i].released {
		return nil
	}
	n := g.nodes[i]
	if !n.unrecoverable && !n.dies {
		g.offer.free++
	}
	n.released = true
	n.agentEpoch++
	if i == len(g.nodes)-1 && i > 0 {
		g.nodes = g.nodes[:i]
		if len(g.agent.Tokens) > i {
			g.agent.Tokens = g.agent.Tokens[:i]
		}
	}
	return nil
}

// applyPlacementFaults scripts every matching placement-time fault aimed
// at n's index onto a machine placed alone, consuming one use of each.
// Callers hold c.mu.
func (c *Cloud) applyPlacementFaults(n *node) {
	g := n.g
	for i := 0; i < len(c.faults); i++ {
		f := c.faults[i]
		if !scriptedAtPlacement(f.Kind) || f.Node != n.index || !f.matches(g.offer, g.name, n.index+1) {
			continue
		}
		n.script(f.Fault)
		before := len(c.faults)
		c.use(i)
		if len(c.faults) < before {
			i--
		}
	}
}
