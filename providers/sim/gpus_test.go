package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The agent's nvidia-smi query prints one CSV row per GPU of the offer, as
// real machines do; gpu_missing drops one, a stopped machine answers nothing.
func TestGPUStep(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	mustInject(t, c, Fault{Kind: FaultGPUMissing, Group: "g", Node: 1})
	place(t, c, "g", offYes, 2)
	if _, err := execOf(t, c, "g", 0).Run(ctx, GPUStep, ""); err == nil {
		t.Error("a machine still booting answered nvidia-smi")
	}
	clk.Advance(time.Hour)
	for node, rows := range []int{4, 3} {
		out, err := execOf(t, c, "g", node).Run(ctx, GPUStep, "nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := fmt.Sprintf("%d, NVIDIA A100-SXM4-80GB, 81920 MiB, 550.90.07", rows-1)
		if len(lines) != rows+1 || lines[0] != "index, name, memory.total [MiB], driver_version" || lines[rows] != last {
			t.Errorf("node-%d:\n%s\nwant a header and %d rows, the last %q", node, out, rows, last)
		}
	}
}
