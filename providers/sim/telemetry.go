package sim

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// GPU telemetry the simulated machines print (X15). The agent runs
// GPUSampleStep (nvidia-smi --query-gpu=index,uuid,utilization.gpu,
// memory.used,memory.total,temperature.gpu,power.draw,clocks.sm,
// ecc.errors.uncorrected.volatile.total,clocks_throttle_reasons.active
// --format=csv,noheader,nounits) and XIDStep (the kernel log's XID lines).
const (
	GPUSampleStep = "gpu-sample"
	XIDStep       = "xid"
)

// GPU load a start command declares: a comment line "# sim: gpus=busy"
// (the default while the start command runs), "# sim: gpus=idle" (it runs
// but leaves the GPUs alone, like a forgotten notebook) or "# sim:
// gpus=stalled node=N" (machine N stops working while its peers spin at
// 100 % with flat memory and power: a collective waiting on a dead rank;
// N defaults to the last machine). Machines with no start command running
// are idle. The comment is a no-op on a real machine.
const (
	GPUsBusy    = "busy"
	GPUsIdle    = "idle"
	GPUsStalled = "stalled"
)

var gpuDecl = regexp.MustCompile(`(?m)^\s*#\s*sim:\s*gpus=(busy|idle|stalled)(?:\s+node=(\d+))?`)

// gpuLoad is what the start command declares: its mode and, when
// stalled, the machine that stalls (-1 = the last).
func gpuLoad(script string) (mode string, stalled int) {
	m := gpuDecl.FindStringSubmatch(script)
	if m == nil {
		return GPUsBusy, -1
	}
	stalled = -1
	if m[2] != "" {
		stalled, _ = strconv.Atoi(m[2])
	}
	return m[1], stalled
}

// bootStart is when the machine's current boot began. Callers hold c.mu.
func (n *node) bootStart() time.Time {
	if n.restartUntil.After(n.bootAt) {
		return n.restartUntil
	}
	return n.bootAt
}

// workloadRunning reports whether machine n's start command runs at now:
// it was started in this boot and has not ended. Callers hold c.mu.
func (n *node) workloadRunning(now time.Time) bool {
	boot := n.bootStart()
	for i := len(n.ran) - 1; i >= 0; i-- {
		r := n.ran[i]
		if r.Step != "start" && !strings.HasPrefix(r.Step, "start-") { // start-N: a run's restart (X17)
			continue
		}
		if r.At.Before(boot) {
			return false
		}
		p := &process{}
		p.play(r.Script, r.At)
		return p.end == nil || now.Before(p.end.At)
	}
	return false
}

// gpuSample plays GPUSampleStep: one line per GPU of the offer, shaped by
// the workload and the machine's GPU faults.
func (e *executor) gpuSample(ctx context.Context) (_ string, err error) {
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
	cfg := n.g.offer.cfg
	m, ok := gpuModels[cfg.Accelerator]
	if !ok {
		m = simGPU{memMiB: 81920}
	}
	mode := GPUsIdle
	if n.workloadRunning(now) {
		var stalled int
		mode, stalled = gpuLoad(n.g.workload.StartCommand)
		if mode == GPUsStalled {
			if stalled < 0 {
				stalled = len(n.g.nodes) - 1
			}
			if n.index != stalled {
				mode = "spinning" // its peers wait in a collective: 100 %, flat
			}
		}
	}
	minute := now.Unix() / 60
	var b strings.Builder
	for i := range cfg.GPUsPerNode {
		if n.gpuMissing && i == cfg.GPUsPerNode-1 || !n.dropAt.IsZero() && !now.Before(n.dropAt) && i == n.dropGPU {
			continue // off the bus
		}
		jitter := c.fraction("gpu", n.id, i, minute) // the same within a minute, steady across runs
		util, mem, power, temp, clock, throttle := 0, 1, 70, 34, 345, 0x1
		switch mode {
		case GPUsBusy:
			util = 90 + int(jitter*10)
			mem = m.memMiB * (70 + int(jitter*10)) / 100
			power, temp, clock, throttle = 520+int(jitter*120), 62+int(jitter*12), 1980, 0
		case "spinning":
			util, mem, power, temp, clock, throttle = 100, m.memMiB*3/4, 400, 58, 1980, 0
		case GPUsStalled:
			util, mem, power, temp, clock, throttle = 0, m.memMiB*3/4, 115, 41, 1980, 0
		}
		ecc := 0
		if !n.eccAt.IsZero() && !now.Before(n.eccAt) && i == n.eccGPU {
			ecc = 2
		}
		fmt.Fprintf(&b, "%d, %s, %d, %d, %d, %d, %.2f, %d, %d, 0x%016X\n",
			i, n.gpuUUID(c, i), util, mem, m.memMiB, temp, float64(power)+math.Round(jitter*100)/100, clock, ecc, throttle)
	}
	return b.String(), nil
}

// gpuUUID is GPU i's stable UUID on machine n. Callers hold c.mu.
func (n *node) gpuUUID(c *Cloud, i int) string {
	h := c.hexID(32, "gpu-uuid", n.id, i)
	return fmt.Sprintf("GPU-%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// xidMessages are the kernel's words after the XID number for the codes
// the simulator prints (shaped like NVIDIA's catalogue examples).
var xidMessages = map[int]string{
	48:  "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.",
	74:  "NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
	79:  "GPU has fallen off the bus.",
	94:  "Contained: SM (0x1). RST: No, D-RST: No",
	95:  "Uncontained: FBHUB. RST: Yes, D-RST: No",
	119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL).",
}

// xid plays XIDStep: the kernel log's XID line once a gpu_xid fault hit.
func (e *executor) xid(ctx context.Context) (_ string, err error) {
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
	if n.xidAt.IsZero() || now.Before(n.xidAt) {
		return "", nil
	}
	msg, ok := xidMessages[n.xidCode]
	if !ok {
		msg = "Ch 00000010"
	}
	since := n.xidAt.Sub(n.bootStart()).Seconds()
	return fmt.Sprintf("[%12.6f] NVRM: Xid (PCI:0000:%02x:00): %d, pid=4711, name=python3, %s\n",
		since, 0x18+n.xidGPU*0x10, n.xidCode, msg), nil
}
