package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/providers"
)

// MountsStep is the step an agent runs to mount V4's folders: /shared from
// node-0 over NFS and the volume (see providers/agent.MountsScript).
const MountsStep = "mounts"

// Volume is the persistent volume the group was placed with (nil for none),
// as the placement request carried it.
func (c *Cloud) Volume(groupName string) (v *providers.Volume) {
	var err error
	if err = c.open(context.Background()); err != nil {
		c.log.Error("sim: volume", "error", err)
		return nil
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.workload.Volume == nil {
		return nil
	}
	cp := *g.workload.Volume
	return &cp
}

// mounts plays V4 on this machine: what exportfs, mount and rsync report.
// The head exports /shared to its peers and, on vm and bare_metal, syncs
// the volume attached at placement into /shared/volume; a container's head
// shows the volume at /volume; the others mount /shared from the head.
func (e *executor) mounts(ctx context.Context, script string) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return "", err
	}
	n := e.n
	n.ran = append(n.ran, Ran{At: now, Step: MountsStep, Script: script})
	shared := n.g.offer.cfg.MachineKind == providers.VM || n.g.offer.cfg.MachineKind == providers.BareMetal
	head := n.g.nodes[0].privateIP()
	vol := n.g.workload.Volume
	var b strings.Builder
	switch {
	case n.index == 0 && shared:
		for _, p := range n.g.nodes[1:] {
			fmt.Fprintf(&b, "exporting %s:/shared\n", p.privateIP())
		}
		if vol != nil {
			fmt.Fprintf(&b, "volume %s (%d GB) mounted on /mnt/clusterdeck-volume\n", vol.Name, vol.SizeGB)
			fmt.Fprintf(&b, "sent 4,096 bytes  received 35 bytes: /mnt/clusterdeck-volume/ -> /shared/volume/\n")
		}
	case shared:
		fmt.Fprintf(&b, "%s:/shared on /shared type nfs4 (rw,relatime,vers=4.2)\n", head)
	case n.index == 0 && vol != nil:
		fmt.Fprintf(&b, "volume %s (%d GB) mounted on /volume\n", vol.Name, vol.SizeGB)
	}
	return b.String(), nil
}

var _ providers.StepStarter = (*executor)(nil)

// StartStep runs step at once, as Run does (a simulated step takes no
// time), and returns it as a process that has ended by its first Poll.
func (e *executor) StartStep(ctx context.Context, step, script string) (providers.Process, error) {
	out, err := e.Run(ctx, step, script)
	p := &endedStep{exit: &providers.Exit{At: e.c.now()}}
	if out = strings.TrimRight(out, "\n"); out != "" {
		p.lines = strings.Split(out, "\n")
	}
	if err != nil {
		p.exit.Code, p.exit.Err = -1, err.Error()
	}
	return p, nil
}

// endedStep is a step that ran to its end.
type endedStep struct {
	lines []string
	exit  *providers.Exit
}

// Poll returns the step's output and its end, once.
func (p *endedStep) Poll() ([]string, *providers.Exit) {
	lines, exit := p.lines, p.exit
	p.lines, p.exit = nil, nil
	return lines, exit
}
