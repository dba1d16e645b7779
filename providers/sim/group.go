package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// group is every machine of one placement.
type group struct {
	name         string
	gen          int // how many groups of this name were placed before it
	offer        *offerState
	agent        providers.AgentBootstrap
	workload     providers.Workload // what every machine runs (N3)
	placedAt     time.Time
	terminated   bool
	terminatedAt time.Time
	nodes        []*node
}

// node is one simulated machine and the faults scripted onto it.
type node struct {
	g            *group
	index        int
	id           string
	bootAt       time.Time // when it first reads running
	restartUntil time.Time // restarting until then

	neverBoots      bool
	dies            bool
	dieAfter        time.Duration // after bootAt
	agentSilent     bool
	peerUnreachable bool
	checkFails      []string  // software whose check reports this node unhealthy ("" = all)
	gpuMissing      bool      // nvidia-smi lists one GPU fewer than the offer has
	ncclSlow        bool      // the NCCL check measures a fraction of the fabric
	eccErrors       bool      // uncorrectable ECC errors and an Xid 48 on GPU 1 (X13)
	stressFails     bool      // dcgmi diag -r 1 fails
	slowLink        bool      // its link to the fabric runs at slowLinkShare
	downAt          time.Time // stopped from then until restarted (zero = never)
	unrecoverable   bool      // every restart is refused
	silentAt        time.Time // the agent stops from then until restarted (zero = never)
	// GPU hardware faults (X15): from then until restarted, GPU
	// eccGPU reads uncorrectable ECC errors, the kernel logs XID xidCode
	// for GPU xidGPU, GPU dropGPU is off the bus (zero = never).
	eccAt, xidAt, dropAt    time.Time
	eccGPU, xidGPU, dropGPU int
	xidCode                 int

	host string // the physical host it runs on (providers.Node.Host): freed when it is released or its group ends

	stopped  bool // stopped by StopNode until started again
	released bool // released alone by ReleaseNode (its slot waits for a replacement)

	installed  map[string]time.Time // software → when its install succeeded
	agentEpoch int                  // bumped when the machine reboots, so a stale agent is not kept
	ran        []Ran                // the workload steps its agent ran, oldest first
}

// newGroup creates the machines of a placement that already took stock and
// scripts the matching node faults onto them. Callers hold c.mu.
func (c *Cloud) newGroup(s *offerState, req providers.PlaceRequest, now time.Time) *group {
	gen := c.gens[req.GroupName]
	c.gens[req.GroupName] = gen + 1
	g := &group{
		name:     req.GroupName,
		gen:      gen,
		offer:    s,
		placedAt: now,
		agent: providers.AgentBootstrap{
			ServerURL: req.Agent.ServerURL,
			Token:     req.Agent.Token,
			Tokens:    append([]string(nil), req.Agent.Tokens...),
		},
		workload: req.Workload(),
	}
	for i := range req.Count {
		// Up to 20% jitter per machine, whole seconds, fixed by the seed.
		jitter := time.Duration(c.fraction("jitter", g.name, gen, i) * 0.2 * float64(s.boot)).Truncate(time.Second)
		n := &node{
			g:         g,
			index:     i,
			id:        "sim-" + c.hexID(16, "node", g.name, gen, i),
			host:      c.freeHost(s, req.Avoid, g.nodes),
			bootAt:    now.Add(s.boot + jitter),
			installed: map[string]time.Time{},
		}
		g.nodes = append(g.nodes, n)
	}
	c.applyNodeFaults(g)
	return g
}

// state is the machine's provider-side state at t, with a message.
func (n *node) state(t time.Time) (providers.NodeState, string) {
	switch {
	case n.g.terminated:
		return providers.NodeTerminated, "terminated"
	case n.released:
		return providers.NodeTerminated, "released"
	case n.dies && !t.Before(n.bootAt.Add(n.dieAfter)):
		return providers.NodeTerminated, "instance no longer exists upstream"
	case n.neverBoots || t.Before(n.bootAt):
		return providers.NodePending, "booting"
	case t.Before(n.restartUntil):
		return providers.NodeRestarting, "rebooting"
	case !n.downAt.IsZero() && !t.Before(n.downAt) && n.unrecoverable:
		return providers.NodeFailed, "host hardware fault"
	case !n.downAt.IsZero() && !t.Before(n.downAt):
		return providers.NodeStopped, "instance stopped"
	case n.stopped:
		return providers.NodeStopped, "stopped by request"
	default:
		return providers.NodeRunning, ""
	}
}

// running reports whether the machine is up at t.
func (n *node) running(t time.Time) bool {
	st, _ := n.state(t)
	return st == providers.NodeRunning
}

// name is the node's cluster name (N1).
func (n *node) name() string { return fmt.Sprintf("node-%d", n.index) }

// privateIP is the node's interconnect address (N1).
func (n *node) privateIP() string { return fmt.Sprintf("10.77.0.%d", n.index+1) }

// view renders a group as of now. Callers hold c.mu.
func (c *Cloud) view(g *group, now time.Time) providers.Group {
	out := providers.Group{Provider: c.name, Name: g.name, Location: g.offer.loc.ID}
	for _, n := range g.nodes {
		st, msg := n.state(now)
		host := ""
		if g.offer.loc.Gateway == "" {
			host = fmt.Sprintf("%s-%s.sim.clusterdeck.test", g.offer.loc.ID, n.id)
		}
		out.Nodes = append(out.Nodes, providers.Node{
			ID:         n.id,
			Index:      n.index,
			State:      st,
			PublicHost: host,
			SSHPort:    22,
			SSHUser:    "ubuntu",
			PrivateIP:  n.privateIP(),
			Message:    msg,
			Host:       n.host,
		})
	}
	return out
}

// freeHost is the lowest-numbered host of the offer's location that no
// live machine occupies (nor one of also, placed in the same call) and
// that the request does not avoid (quarantined lemons, X2).
// Stock is counted apart: hosts only name machines, so the same host comes
// back to the next placement after its machine is released. Callers hold
// c.mu.
func (c *Cloud) freeHost(s *offerState, avoid []string, also []*node) string {
	taken := map[string]bool{}
	for _, a := range avoid {
		taken[a] = true
	}
	for _, n := range also {
		taken[n.host] = true
	}
	for _, g := range c.groups {
		if g.terminated || g.offer != s {
			continue
		}
		for _, n := range g.nodes {
			if !n.released {
				taken[n.host] = true
			}
		}
	}
	// The default catalog's offer ids start with their location's: the
	// host names it once ("us-east-1-h100.8x.ib.vm-h03", U*).
	base := strings.TrimPrefix(s.cfg.ID, s.loc.ID+".")
	for k := 0; ; k++ {
		if h := fmt.Sprintf("%s-%s-h%02d", s.loc.ID, base, k); !taken[h] {
			return h
		}
	}
}
