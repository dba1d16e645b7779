package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"golang.org/x/term"
)

// topTicker makes the ticks of "clusters top" (tests replace it with their
// own channel, so a refresh is a send, not a sleep).
// isTerminal reports whether w is a terminal: only there does top clear
// the screen between frames.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var topTicker = func(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// top is `gpu clusters top ID [--window 1h] [--interval 5s] [--once]`
// (X15): a table per machine of what its GPUs are doing now, refreshed
// like top until interrupted; --once prints it once.
func (c *gpuCLI) top(args []string) error {
	fs := c.flagSet("top", "clusters top ID [--interval 5s] [--window 1h|24h|30d] [--once]")
	interval := fs.Duration("interval", 5*time.Second, "how often to refresh")
	window := fs.String("window", "1h", "the window of the mean column: 1h, 24h or 30d")
	once := fs.Bool("once", false, "print the table once and exit")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	if *interval < time.Second {
		return usageError("--interval is at least 1s")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	tty := isTerminal(c.stdout)
	frames := 0
	frame := func(clear bool) error {
		m, err := sdk.GPUMetrics(c.ctx, id, *window)
		if err != nil {
			return err
		}
		w, err := sdk.GPUWatch(c.ctx, id)
		if err != nil {
			return err
		}
		switch {
		case clear && tty:
			fmt.Fprint(c.stdout, "\x1b[H\x1b[2J") // home and clear, like top
		case frames > 0:
			fmt.Fprintln(c.stdout) // not a terminal (a file, a pipe): frames one after another, no control codes
		}
		frames++
		printTop(c.stdout, m, w)
		return nil
	}
	if *once || c.json {
		if c.json {
			var raw []byte
			if _, err := sdk.GPUMetrics(c.ctx, id, *window, client.Raw(&raw)); err != nil {
				return err
			}
			c.printRaw(raw)
			return nil
		}
		return frame(false)
	}
	ticks, stop := topTicker(*interval)
	defer stop()
	if err := frame(true); err != nil {
		return err
	}
	for {
		select {
		case <-c.ctx.Done():
			return nil
		case _, ok := <-ticks:
			if !ok {
				return nil
			}
			if err := frame(true); err != nil {
				if c.ctx.Err() != nil {
					return nil // interrupted mid-refresh
				}
				return err
			}
		}
	}
}

// printTop is one frame: the summary, then a row per machine.
func printTop(out io.Writer, m api.GPUMetrics, w api.GPUWatch) {
	fmt.Fprintf(out, "%s  %s\n", m.Cluster, m.To.Format("15:04:05 MST"))
	fmt.Fprintln(out, m.Summary)
	if w.Stall.Current != nil {
		fmt.Fprintln(out, "STALLED: "+*w.Stall.Current)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "NODE\tGPUS\tUTIL\tMEAN %s\tMEMORY\tTEMP\tPOWER\tERRORS\t\n", m.Window)
	for _, n := range m.Nodes {
		var util, used, total, hottest, watts, count, sum, points int
		for _, g := range n.GPUs {
			for _, p := range g.Points {
				if p.UtilPct != nil {
					sum, points = sum+*p.UtilPct, points+1
				}
			}
			v := g.Now
			if v == nil || v.UtilPct == nil {
				continue
			}
			util, count = util+*v.UtilPct, count+1
			if v.MemUsedMiB != nil && v.MemTotalMiB != nil {
				used, total = used+*v.MemUsedMiB, total+*v.MemTotalMiB
			}
			if v.TempC != nil && *v.TempC > hottest {
				hottest = *v.TempC
			}
			if v.PowerW != nil {
				watts += *v.PowerW
			}
		}
		cells := []string{n.Name, fmt.Sprint(len(n.GPUs)), "–", "–", "–", "–", "–", errorsCell(n)}
		if count > 0 {
			cells[2] = fmt.Sprintf("%d %%", (util+count/2)/count)
			cells[4] = fmt.Sprintf("%d/%d GiB", used/1024, total/1024)
			cells[5] = fmt.Sprintf("%d °C", hottest)
			cells[6] = fmt.Sprintf("%d W", watts)
		}
		if points > 0 {
			cells[3] = fmt.Sprintf("%d %%", (sum+points/2)/points)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\n"+w.Summary)
}

func errorsCell(n api.GPUMetricsNode) string {
	switch {
	case n.Fault != "":
		return "FAULT"
	case n.NoSMI != "":
		return "no nvidia-smi"
	case len(n.XIDs) > 0:
		return fmt.Sprintf("%d XID", len(n.XIDs))
	}
	return "none"
}

// watchFlags are the stall and idle flags of "clusters gpu-watch" and of
// "clusters launch" (X15).
type watchFlags struct {
	stall, idle, action                      string
	stallMinutes, threshold, hours, graceMin int
}

func (f *watchFlags) register(fs *flag.FlagSet, launch bool) {
	if !launch {
		fs.StringVar(&f.stall, "stall", "", "on or off: mail and log an event when some machines' GPUs idle while others stay busy")
		fs.IntVar(&f.stallMinutes, "stall-minutes", 0, "how long a stall must last before the alert (2–60; default 10)")
		fs.StringVar(&f.idle, "idle", "", "on or off: the idle rule (off by default)")
	}
	fs.IntVar(&f.hours, "idle-hours", 0, "when every GPU has been idle this many hours (1–24), mail the owners (turns the idle rule on)")
	fs.IntVar(&f.threshold, "idle-threshold", 0, "a GPU below this utilization percent is idle (1–50; default 5)")
	fs.StringVar(&f.action, "idle-action", "", "after the mail: mail (default), stop or terminate")
	fs.IntVar(&f.graceMin, "idle-grace-minutes", 0, "minutes from the warning mail to the stop or terminate (10–1440; default 60)")
}

// body is the flags as an API body; set names the flags given.
func (f *watchFlags) body(set map[string]bool, launch bool) (*api.GPUWatchBody, error) {
	onOff := func(name, v string) (*bool, error) {
		switch v {
		case "on":
			return new(true), nil
		case "off":
			return new(false), nil
		}
		return nil, usageError("--" + name + " is on or off")
	}
	var b api.GPUWatchBody
	if set["stall"] || set["stall-minutes"] {
		b.Stall = &api.StallWatchBody{}
		if set["stall"] {
			v, err := onOff("stall", f.stall)
			if err != nil {
				return nil, err
			}
			b.Stall.Enabled = v
		}
		if set["stall-minutes"] {
			b.Stall.Minutes = &f.stallMinutes
		}
	}
	idle := &api.IdleWatchBody{}
	any := false
	if set["idle"] {
		v, err := onOff("idle", f.idle)
		if err != nil {
			return nil, err
		}
		idle.Enabled, any = v, true
	}
	if set["idle-hours"] {
		idle.Hours, any = &f.hours, true
		if launch || !set["idle"] {
			idle.Enabled = new(true)
		}
	}
	if set["idle-threshold"] {
		idle.ThresholdPct, any = &f.threshold, true
	}
	if set["idle-action"] {
		idle.Action, any = &f.action, true
	}
	if set["idle-grace-minutes"] {
		idle.GraceMinutes, any = &f.graceMin, true
	}
	if any {
		if launch && idle.Enabled == nil {
			return nil, usageError("the idle flags need --idle-hours N to turn the idle rule on")
		}
		b.Idle = idle
	}
	if b.Stall == nil && b.Idle == nil {
		return nil, nil
	}
	return &b, nil
}

// gpuWatch is `gpu clusters gpu-watch ID [flags]` (X15): with no flag it
// shows the stall alert and the idle rule; flags change what they name.
func (c *gpuCLI) gpuWatch(args []string) error {
	fs := c.flagSet("gpu-watch", "clusters gpu-watch ID [--stall on|off] [--stall-minutes N] [--idle on|off] [--idle-hours N] [--idle-threshold PCT] [--idle-action mail|stop|terminate] [--idle-grace-minutes N]")
	var f watchFlags
	f.register(fs, false)
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	body, err := f.body(setFlags(fs), false)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var w api.GPUWatch
	var raw []byte
	if body == nil {
		w, err = sdk.GPUWatch(c.ctx, id, client.Raw(&raw))
	} else {
		w, err = sdk.SetGPUWatch(c.ctx, id, *body, client.Raw(&raw))
	}
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	fmt.Fprintln(c.stdout, w.Summary)
	if w.Stall.Current != nil {
		fmt.Fprintln(c.stdout, "Stalled now: "+*w.Stall.Current)
	}
	if w.Idle.IdleSince != nil {
		fmt.Fprintf(c.stdout, "Every GPU idle since %s.\n", fmtTimePtr(w.Idle.IdleSince))
	}
	if w.Idle.ActionAt != nil {
		fmt.Fprintf(c.stdout, "The cluster will be %s at %s unless a GPU gets to work.\n", map[string]string{"stop": "stopped", "terminate": "terminated"}[w.Idle.Action], fmtTimePtr(w.Idle.ActionAt))
	}
	return nil
}
