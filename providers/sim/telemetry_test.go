package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// utilOf reads each GPU line's utilization (the third column) of a
// gpu-sample answer.
func utilOf(t *testing.T, out string) []string {
	t.Helper()
	var u []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, ", ")
		if len(f) != 10 {
			t.Fatalf("a sample line of %d columns: %q", len(f), line)
		}
		u = append(u, f[2])
	}
	return u
}

// X15: the simulated GPUs follow the start command's declared load:
// idle before it starts, busy while it runs, and with "stalled" one
// machine at 0 % while its peers spin at 100 %.
func TestGPUSamplesFollowTheWorkload(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		script string
		want   func(rank int, util string) bool
	}{
		{"python train.py", func(_ int, u string) bool { return u >= "90" && len(u) == 2 }},
		{"# sim: gpus=idle\njupyter lab", func(_ int, u string) bool { return u == "0" }},
		{"# sim: gpus=stalled node=1\ntorchrun train.py", func(r int, u string) bool { return (r == 1) == (u == "0") && (r == 1 || u == "100") }},
	} {
		var machines []Machine
		c, clk := newTestCloud(t, WithAgents(func(m Machine) MachineAgent { machines = append(machines, m); return nil }))
		req := request(c, "w", offCt, 3)
		req.StartCommand = tc.script
		if _, err := c.PlaceGroup(ctx, req); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		if err := c.StepAgents(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range machines {
			out, err := m.Exec.Run(ctx, GPUSampleStep, "nvidia-smi --query-gpu=…")
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range utilOf(t, out) {
				if u != "0" {
					t.Fatalf("%q: %s busy (%s %%) before the start command", tc.script, m.Name, u)
				}
			}
			if _, err := m.Exec.(providers.Starter).Start(ctx, providers.Command{Step: "start", Script: tc.script}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Minute)
		for _, m := range machines {
			out, _ := m.Exec.Run(ctx, GPUSampleStep, "")
			for _, u := range utilOf(t, out) {
				if !tc.want(m.Index, u) {
					t.Errorf("%q: %s at %s %%", tc.script, m.Name, u)
				}
			}
		}
	}
}

// X15: gpu_ecc, gpu_xid and gpu_drops hit a live machine After, show
// in its samples and kernel log, and a restart clears them.
func TestGPUFaultsAndRestart(t *testing.T) {
	ctx := context.Background()
	var machines []Machine
	c, clk := newTestCloud(t, WithAgents(func(m Machine) MachineAgent { machines = append(machines, m); return nil }))
	g := place(t, c, "w", offCounted, 2)
	clk.Advance(15 * time.Minute) // booted
	if err := c.StepAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Inject(Fault{Kind: FaultGPUECC, Group: "w", Node: 1, GPU: 0, After: Duration(time.Minute)},
		Fault{Kind: FaultGPUXID, Group: "w", Node: 1, XID: 48}, Fault{Kind: FaultGPUDrops, Group: "w", Node: 1, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	ex := machines[1].Exec
	out, _ := ex.Run(ctx, GPUSampleStep, "")
	gpus := len(strings.Split(strings.TrimSpace(out), "\n"))
	if strings.Contains(out, "\n2, ") || !strings.Contains(out, "\n3, ") || !strings.HasPrefix(out, "0, GPU-") || strings.Split(strings.Split(out, "\n")[0], ", ")[8] != "0" {
		t.Fatalf("GPU 2 dropped, no ECC error yet:\n%s", out)
	}
	if xid, _ := ex.Run(ctx, XIDStep, ""); !strings.Contains(xid, "NVRM: Xid (PCI:0000:18:00): 48, pid=4711") {
		t.Fatalf("kernel log: %q", xid)
	}
	clk.Advance(time.Minute)
	if out, _ := ex.Run(ctx, GPUSampleStep, ""); strings.Split(strings.Split(out, "\n")[0], ", ")[8] != "2" {
		t.Fatalf("ECC after a minute: %s", out)
	}
	if other, _ := machines[0].Exec.Run(ctx, XIDStep, ""); other != "" {
		t.Errorf("node-0 got node-1's XID: %q", other)
	}
	if err := c.RestartNode(ctx, "w", g.Nodes[1].ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(15 * time.Minute)
	out, err := ex.Run(ctx, GPUSampleStep, "")
	if err != nil || len(strings.Split(strings.TrimSpace(out), "\n")) != gpus+1 || strings.Split(strings.Split(out, "\n")[0], ", ")[8] != "0" {
		t.Fatalf("after the restart (%v):\n%s", err, out)
	}
	if xid, _ := ex.Run(ctx, XIDStep, ""); xid != "" {
		t.Errorf("kernel log after the reboot: %q", xid)
	}
}

// The GPU faults parse like the others; gpu and xid belong to them only.
func TestGPUFaultsParse(t *testing.T) {
	if f, err := ParseFaults([]byte(`{"kind": "gpu_xid", "group": "cl_1", "node": 2, "gpu": 1, "xid": 74, "after": "90s"}`)); err != nil || f[0].XID != 74 || f[0].GPU != 1 {
		t.Fatalf("%+v %v", f, err)
	}
	for _, bad := range []string{`{"kind": "goes_down", "xid": 79}`, `{"kind": "gpu_ecc", "xid": 79}`, `{"kind": "gpu_drops", "gpu": 64}`} {
		if _, err := ParseFaults([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
