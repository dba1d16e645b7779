package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// GPU telemetry (X15): every GPUSampleEvery the agent samples every
// GPU with GPUSampleQuery and reads the kernel log's XID lines
// (XIDQuery); the samples and the new lines go with the next heartbeat.
const (
	GPUSampleEvery = 30 * time.Second
	// GPUSampleStep and XIDStep are the executor steps that run them.
	GPUSampleStep = "gpu-sample"
	XIDStep       = "xid"

	// GPUSampleQuery prints one CSV line per GPU, without header or units.
	GPUSampleQuery = "nvidia-smi --query-gpu=" + gpuFields + " --format=csv,noheader,nounits"
	gpuFields      = "index,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,clocks.sm," +
		"ecc.errors.uncorrected.volatile.total,clocks_throttle_reasons.active"
	// XIDQuery prints the kernel log's NVIDIA XID lines (the last 200).
	XIDQuery = "(dmesg 2>/dev/null || journalctl -k -o cat --no-pager 2>/dev/null) | grep -F 'NVRM: Xid' | tail -n 200"

	// MaxQueuedGPUSamples and MaxQueuedXIDLines bound what the agent
	// keeps while the server does not take it (the server's own limits
	// per heartbeat); the oldest go first.
	MaxQueuedGPUSamples = 512
	MaxQueuedXIDLines   = 64
)

// gpuColumns are GPUSampleQuery's columns in order; the aliases are the
// names a header may print for them (newer drivers say "clocks.current.sm"
// and "clocks_event_reasons.active").
var gpuColumns = [][]string{
	{"index"}, {"uuid"}, {"utilization.gpu"}, {"memory.used"}, {"memory.total"}, {"temperature.gpu"}, {"power.draw"},
	{"clocks.sm", "clocks.current.sm"}, {"ecc.errors.uncorrected.volatile.total"},
	{"clocks_throttle_reasons.active", "clocks_event_reasons.active"},
}

// ParseGPUSamples reads nvidia-smi --query-gpu CSV output taken at at:
// GPUSampleQuery's (no header, no units, its column order), or any
// --query-gpu output whose header names the columns (units are stripped).
// "[N/A]", "[Not Supported]" and other bracketed answers are unknown (nil),
// never zero; a line whose index is unknown or not a number is an error.
func ParseGPUSamples(out string, at time.Time) ([]agentapi.GPUSample, error) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out, "\r\n", "\n")), "\n")
	cols := make([]int, len(gpuColumns)) // field position of each column
	for i := range cols {
		cols[i] = i
	}
	if len(lines) > 0 && strings.Contains(lines[0], "index") && !startsWithDigit(lines[0]) {
		header := splitCSV(lines[0])
		for i, names := range gpuColumns {
			cols[i] = -1
			for j, h := range header {
				h, _, _ = strings.Cut(h, " [") // "memory.used [MiB]"
				for _, n := range names {
					if h == n {
						cols[i] = j
					}
				}
			}
		}
		if cols[0] < 0 {
			return nil, errors.New("nvidia-smi: the header names no index column")
		}
		lines = lines[1:]
	}
	var out2 []agentapi.GPUSample
	for n, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := splitCSV(line)
		get := func(col int) string {
			if p := cols[col]; p >= 0 && p < len(f) {
				return f[p]
			}
			return ""
		}
		idx := number(get(0))
		if idx == nil {
			return nil, fmt.Errorf("nvidia-smi line %d: no GPU index in %q", n+1, truncateLine(line))
		}
		s := agentapi.GPUSample{At: at.UTC(), Index: int(*idx), UUID: get(1)}
		if strings.HasPrefix(s.UUID, "[") {
			s.UUID = ""
		}
		s.UtilPct, s.MemUsedMiB, s.MemTotalMiB = intOf(get(2)), intOf(get(3)), intOf(get(4))
		s.TempC, s.PowerW, s.SMClockMHz = intOf(get(5)), intOf(get(6)), intOf(get(7))
		if v := number(get(8)); v != nil {
			e := int64(*v)
			s.ECCUncorrected = &e
		}
		if h := strings.TrimSpace(get(9)); strings.HasPrefix(h, "0x") {
			if v, err := strconv.ParseUint(h[2:], 16, 64); err == nil {
				t := int64(v & math.MaxInt64)
				s.Throttle = &t
			}
		}
		out2 = append(out2, s)
	}
	return out2, nil
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

func splitCSV(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

func truncateLine(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// number reads a value with or without its unit ("81559 MiB", "69.85 W",
// "100 %"); nil for "[N/A]", "[Not Supported]", "N/A" and the like.
func number(v string) *float64 {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func intOf(v string) *int {
	f := number(v)
	if f == nil || *f > math.MaxInt32 || *f < math.MinInt32 {
		return nil
	}
	n := int(math.Round(*f))
	return &n
}

// xidLine matches the kernel's XID report:
// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
var xidLine = regexp.MustCompile(`NVRM: Xid \([^)]*\): (\d+)`)

// ParseXID returns the XID number of a kernel log line, false when the
// line reports none.
func ParseXID(line string) (int, bool) {
	m := xidLine.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n > 0
}

// gpuState is what the agent keeps between heartbeats.
type gpuState struct {
	sampledAt  time.Time
	samples    []agentapi.GPUSample
	xids       []agentapi.XIDLine
	xidSeen    map[string]bool // lines read before (the kernel log repeats them)
	xidBase    bool            // the log was read once: lines from before the agent started are not news
	noSMI      string          // why sampling fails, "" = it works
	noSMISent  string          // the reason the server has
	sentCounts [2]int          // samples and XID lines in the heartbeat under way
}

// sampleGPUs samples when GPUSampleEvery passed since the last sample.
func (a *Agent) sampleGPUs(ctx context.Context) {
	now := a.cfg.Now()
	g := &a.gpu
	if !g.sampledAt.IsZero() && now.Sub(g.sampledAt) < GPUSampleEvery {
		return
	}
	g.sampledAt = now
	out, err := a.cfg.Exec.Run(ctx, GPUSampleStep, GPUSampleQuery)
	var samples []agentapi.GPUSample
	if err == nil {
		samples, err = ParseGPUSamples(out, now)
	}
	if err != nil {
		why := strings.TrimSpace(out)
		if i := strings.IndexByte(why, '\n'); i >= 0 {
			why = why[:i]
		}
		if why == "" || strings.Contains(err.Error(), why) {
			why = err.Error()
		} else {
			why += " (" + err.Error() + ")"
		}
		if g.noSMI != why {
			a.Log("cannot sample the GPUs: %s", why)
		}
		g.noSMI = why
	} else {
		g.noSMI = ""
		g.samples = append(g.samples, samples...)
		if n := len(g.samples) - MaxQueuedGPUSamples; n > 0 {
			g.samples = g.samples[n:]
		}
	}
	a.readXIDs(ctx, now)
}

// readXIDs queues the kernel log's XID lines not read before. The first
// read only learns what is there: lines from before the agent started
// belong to an earlier boot or were reported by an earlier agent.
func (a *Agent) readXIDs(ctx context.Context, now time.Time) {
	g := &a.gpu
	out, err := a.cfg.Exec.Run(ctx, XIDStep, XIDQuery)
	if err != nil {
		return // no kernel log to read: nothing to say
	}
	if g.xidSeen == nil {
		g.xidSeen = map[string]bool{}
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		code, ok := ParseXID(line)
		if !ok || g.xidSeen[line] {
			continue
		}
		g.xidSeen[line] = true
		if !g.xidBase {
			continue
		}
		if len(line) > 500 {
			line = line[:500]
		}
		a.Log("kernel: %s", line)
		g.xids = append(g.xids, agentapi.XIDLine{At: now.UTC(), Code: code, Text: line})
	}
	if n := len(g.xids) - MaxQueuedXIDLines; n > 0 {
		g.xids = g.xids[n:]
	}
	g.xidBase = true
}

// gpuReport is what the next heartbeat carries; nil when nothing.
func (a *Agent) gpuReport() *agentapi.GPUReport {
	g := &a.gpu
	r := &agentapi.GPUReport{Samples: g.samples, XIDs: g.xids}
	if g.noSMI != "" && g.noSMI != g.noSMISent {
		r.NoSMI = g.noSMI
	}
	g.sentCounts = [2]int{len(g.samples), len(g.xids)}
	if len(r.Samples) == 0 && len(r.XIDs) == 0 && r.NoSMI == "" {
		return nil
	}
	return r
}

// gpuSent drops what the server took (or refused: it never will take it).
func (a *Agent) gpuSent(r *agentapi.GPUReport) {
	if r == nil {
		return
	}
	g := &a.gpu
	g.samples = g.samples[min(g.sentCounts[0], len(g.samples)):]
	g.xids = g.xids[min(g.sentCounts[1], len(g.xids)):]
	if r.NoSMI != "" {
		g.noSMISent = r.NoSMI
	}
}
