package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// reportGPUs stores one minute of samples for each node of cl at util.

// topGlobals serialises the tests that swap topTicker and isTerminal.
var topGlobals sync.Mutex

func (d *deck) reportGPUs(t *testing.T, cl models.Cluster, util int) {
	t.Helper()
	ctx := context.Background()
	nodes, err := d.store.NodesFor(ctx, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	used, total, temp, power := 40960, 81920, 66, 350
	for _, n := range nodes {
		var samples []models.GPUSample
		for g := range 8 {
			samples = append(samples, models.GPUSample{At: d.store.Now(), Index: g, UtilPct: &util, MemUsedMiB: &used, MemTotalMiB: &total, TempC: &temp, PowerW: &power})
		}
		if err := d.store.RecordGPUReport(ctx, cl, n, models.GPUReport{Samples: samples}); err != nil {
			t.Fatal(err)
		}
	}
}

// X15, API3: "clusters top ID --once" prints a row per
// machine; without --once it refreshes on every tick (an injected ticker:
// no sleeping) until the command is cancelled; a bad window exits 1.
func TestCLITop(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)
		d.reportGPUs(t, cl, 81)

		out, errOut, code := d.gpu(t, "clusters", "top", cl.ID, "--once")
		if code != 0 || !strings.Contains(out, "16 GPUs on 2 of 2 machines reporting: 81 % now") {
			t.Fatalf("top --once: %d %s %s", code, out, errOut)
		}
		for _, node := range []string{"node-0", "node-1"} {
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, node) {
					line = l
				}
			}
			if f := strings.Fields(line); len(f) < 10 || f[1] != "8" || f[2] != "81" || f[6] != "320/640" || f[8] != "66" || !strings.HasSuffix(line, "none") {
				t.Errorf("%s row %q", node, line)
			}
		}
		if _, errOut, code := d.gpu(t, "clusters", "top", cl.ID, "--once", "--window", "2h"); code != 1 || !strings.Contains(errOut, "window") {
			t.Errorf("bad window: %d %s", code, errOut)
		}

		// topTicker and isTerminal are the package's: the two databases'
		// runs of this test take turns with them, or one's top would read
		// the other's ticks and both wait for ever.
		topGlobals.Lock()
		defer topGlobals.Unlock()
		ticks := make(chan time.Time)
		old, oldTTY := topTicker, isTerminal
		topTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
		defer func() { topTicker, isTerminal = old, oldTTY }()
		top := func(util int) string {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			var buf bytes.Buffer
			done := make(chan error)
			var errOut bytes.Buffer
			go func() { done <- Run(ctx, []string{"clusters", "top", cl.ID}, d.getenv, &buf, &errOut) }()
			tick := func() {
				t.Helper()
				select {
				case ticks <- time.Now():
				case err := <-done: // top ended early: say why instead of waiting for ever
					t.Fatalf("top ended before its next tick: %v\n%s\n%s", err, buf.String(), errOut.String())
				}
			}
			tick() // the first frame is drawn before the ticker is read
			d.clock.Advance(time.Minute)
			d.reportGPUs(t, cl, util)
			tick()
			tick() // the previous frame is written once this send is taken
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		// On a terminal each frame clears the screen, like top.
		isTerminal = func(io.Writer) bool { return true }
		frames := strings.Split(top(12), "\x1b[H\x1b[2J")
		if len(frames) < 3 || !strings.Contains(frames[1], "81 % now") || !strings.Contains(frames[len(frames)-1], "12 % now") {
			t.Fatalf("frames: %q", frames)
		}
		// Into a file or a pipe (what isTerminal really says of a buffer):
		// the frames one after another, no control codes.
		isTerminal = oldTTY
		if out := top(34); strings.Contains(out, "\x1b") || !strings.Contains(out, "12 % now") || !strings.Contains(out, "34 % now") {
			t.Fatalf("not a terminal: %q", out)
		}
	})
}

// isTerminal tells a terminal from a file: a pseudo-terminal's master is
// one, a regular file and a buffer are not.
func TestTopIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "top")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	if !isTerminal(pty) {
		t.Error("a pseudo-terminal not taken for a terminal")
	}
}

// X15: "clusters gpu-watch" shows and sets the stall
// alert and the idle rule; out-of-bounds values exit 1 and change nothing;
// "clusters launch --idle-hours" opts in at launch.
func TestCLIGPUWatch(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)
		out, _, code := d.gpu(t, "clusters", "gpu-watch", cl.ID)
		if code != 0 || !strings.Contains(out, "Stall alerts after 10 minutes; idle rule off.") {
			t.Fatalf("show: %d %s", code, out)
		}
		if _, errOut, code := d.gpu(t, "clusters", "gpu-watch", cl.ID, "--idle-hours", "30"); code != 1 || !strings.Contains(errOut, "idle.hours") {
			t.Fatalf("bad hours: %d %s", code, errOut)
		}
		out, errOut, code := d.gpu(t, "clusters", "gpu-watch", cl.ID, "--idle-hours", "3", "--idle-action", "stop", "--stall", "off")
		if code != 0 || !strings.Contains(out, "Stall alerts off; when every GPU has been below 5 % for 3 h: mail a warning, then stop the cluster 60 minutes later.") {
			t.Fatalf("set: %d %s %s", code, out, errOut)
		}
		w, _ := d.store.GPUWatchFor(context.Background(), d.org.ID, cl.ID)
		if p := w.Policy(); !p.IdleOn || p.IdleHours != 3 || !p.StallOff {
			t.Fatalf("stored %+v", p)
		}
	})
}
