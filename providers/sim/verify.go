package sim

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Verification before hand-over (X13): the steps the agent runs for
// a verification task ("verify:<check>"), played here as the tools print.
const (
	// VerifyMachineStep prints the machine check: `nvidia-smi -q`, the
	// kernel log's NVRM Xid lines and `dcgmi diag -r 1`, between the
	// markers of nodespec.VerifyMachineScript.
	VerifyMachineStep = "verify:machine"
	// VerifyRingStep prints all_reduce_perf with NCCL_ALGO=Ring across
	// every machine of the group, started on this one.
	VerifyRingStep = "verify:ring"
	// VerifyPairStep prints all_reduce_perf between this machine and the
	// one of rank PEER_RANK (exported by the task).
	VerifyPairStep = "verify:pair"
)

// simIdleTempC is a GPU's temperature at idle.
const simIdleTempC = 31

var peerRankRE = regexp.MustCompile(`PEER_RANK='?(\d+)`)

// verify plays one verification step on this machine.
func (e *executor) verify(ctx context.Context, step, script string) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	if err := e.up(c.now()); err != nil {
		return "", err
	}
	g := e.n.g
	switch step {
	case VerifyMachineStep:
		return e.machineCheck(), nil
	case VerifyRingStep:
		var live []*node
		for _, n := range g.nodes {
			if !n.released {
				live = append(live, n)
			}
		}
		return allReduceOn(g, live, c.ringBusBW(g, live)), nil
	}
	m := peerRankRE.FindStringSubmatch(script)
	if m == nil {
		return "PEER_RANK is not set\n", exitStatus(2)
	}
	peer, _ := strconv.Atoi(m[1])
	if peer < 0 || peer >= len(g.nodes) || peer == e.n.index {
		return fmt.Sprintf("no peer of rank %d\n", peer), exitStatus(2)
	}
	pair := []*node{e.n, g.nodes[peer]}
	if peer < e.n.index {
		pair[0], pair[1] = pair[1], pair[0]
	}
	return allReduceOn(g, pair, c.ringBusBW(g, pair)), nil
}

// machineCheck prints what nodespec.VerifyMachineScript prints on this
// machine. Callers hold c.mu.
func (e *executor) machineCheck() string {
	n := e.n
	cfg := n.g.offer.cfg
	m, ok := gpuModels[cfg.Accelerator]
	if !ok {
		m = simGPU{"NVIDIA " + strings.ReplaceAll(cfg.Accelerator, "_", " "), 81920}
	}
	count := cfg.GPUsPerNode
	if n.gpuMissing {
		count--
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("===== nvidia-smi -q =====")
	w("")
	w("==============NVSMI LOG==============")
	w("")
	w("Timestamp                                 : %s", e.c.now().UTC().Format("Mon Jan _2 15:04:05 2006"))
	w("Driver Version                            : %s", simDriver)
	w("CUDA Version                              : 12.4")
	w("")
	w("Attached GPUs                             : %d", count)
	for i := range count {
		bad := n.eccErrors && i == 1
		w("GPU 00000000:%02X:00.0", 0x18+0x10*i)
		w("    Product Name                          : %s", m.name)
		w("    Product Brand                         : NVIDIA")
		w("    PCI")
		w("        Bus                               : 0x%02X", 0x18+0x10*i)
		w("        GPU Link Info")
		w("            PCIe Generation")
		w("                Max                       : 5")
		w("                Current                   : 5")
		w("            Link Width")
		w("                Max                       : 16x")
		w("                Current                   : 16x")
		w("    FB Memory Usage")
		w("        Total                             : %d MiB", m.memMiB)
		w("        Reserved                          : 328 MiB")
		w("        Used                              : 0 MiB")
		w("    ECC Mode")
		w("        Current                           : Enabled")
		w("        Pending                           : Enabled")
		dramUE, remapUE, pending := 0, 0, "No"
		if bad {
			dramUE, remapUE, pending = 2, 2, "Yes"
		}
		w("    ECC Errors")
		w("        Volatile")
		w("            SRAM Correctable              : 0")
		w("            SRAM Uncorrectable Parity     : 0")
		w("            SRAM Uncorrectable SEC-DED    : 0")
		w("            DRAM Correctable              : 0")
		w("            DRAM Uncorrectable            : %d", dramUE)
		w("        Aggregate")
		w("            SRAM Correctable              : 0")
		w("            SRAM Uncorrectable Parity     : 0")
		w("            SRAM Uncorrectable SEC-DED    : 0")
		w("            DRAM Correctable              : 0")
		w("            DRAM Uncorrectable            : %d", dramUE)
		w("    Retired Pages")
		w("        Single Bit ECC                    : N/A")
		w("        Double Bit ECC                    : N/A")
		w("        Pending Page Blacklist            : N/A")
		w("    Remapped Rows")
		w("        Correctable Error                 : 0")
		w("        Uncorrectable Error               : %d", remapUE)
		w("        Pending                           : %s", pending)
		w("        Remapping Failure Occurred        : No")
		w("    Temperature")
		w("        GPU Current Temp                  : %d C", simIdleTempC+i%3)
		w("        GPU Shutdown Temp                 : 92 C")
		w("        GPU Slowdown Temp                 : 89 C")
	}
	w("===== kernel log: NVRM Xid =====")
	if n.eccErrors {
		w("[  912.304711] NVRM: Xid (PCI:0000:28:00): 48, pid=0, name=, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.")
		w("[  912.304795] NVRM: Xid (PCI:0000:28:00): 63, pid=0, name=, Row Remapper: New row (0x00000000000d0e3c) marked for remapping, reset gpu to activate.")
	}
	w("===== stress: dcgmi diag -r 1 =====")
	w("Successfully ran diagnostic for group.")
	w("+---------------------------+------------------------------------------------+")
	w("| Diagnostic                | Result                                         |")
	w("+===========================+================================================+")
	w("|-----  Deployment  --------+------------------------------------------------|")
	rows := []string{"Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
		"Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom"}
	rc := 0
	for _, r := range rows {
		res, warn := "Pass", ""
		switch {
		case r == "Page Retirement/Row Remap" && n.eccErrors:
			res, warn = "Fail", "GPU 1 has uncorrectable memory errors and row remappings are pending"
		case r == "Inforom" && n.stressFails:
			res, warn = "Fail", "A corrupt InfoROM has been detected in GPU 2."
		}
		w("| %-25s | %-46s |", r, res)
		if warn != "" {
			w("| %-25s | %-46s |", "Warning", warn)
			rc = 226
		}
	}
	w("+---------------------------+------------------------------------------------+")
	w("===== stress exit status: %d =====", rc)
	return b.String()
}
