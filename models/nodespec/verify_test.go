package nodespec

import (
	"os"
	"strings"
	"testing"
)

// X13: the machine check reads `nvidia-smi -q` as real drivers
// print it — here a real A100 block with a row remap pending.
func TestParseSMIQRealA100RemapPending(t *testing.T) {
	raw, err := os.ReadFile("testdata/nvidia_smi_q_a100_remap_pending_excerpt.txt")
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseSMIQ(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if q.Driver != "510.73.08" || len(q.GPUs) != 1 {
		t.Fatalf("driver %q, %d GPUs; want 510.73.08 and one block", q.Driver, len(q.GPUs))
	}
	g := q.GPUs[0]
	if g.BusID != "00000000:10:1C.0" || g.Name != "NVIDIA A100-SXM4-80GB" {
		t.Errorf("GPU %q %q", g.BusID, g.Name)
	}
	if g.VolatileUncorrectable != 0 {
		t.Errorf("volatile uncorrectable = %d, want 0 (177 are correctable)", g.VolatileUncorrectable)
	}
	if !g.RemapPending || g.RemapFailure || g.RetiredPagesPending {
		t.Errorf("remap pending %v failure %v retired pending %v; want true false false", g.RemapPending, g.RemapFailure, g.RetiredPagesPending)
	}
}

// A full H100 block in the R535+ layout (SRAM parity/SEC-DED counters, PCIe
// link info, temperatures) with uncorrectable errors in the volatile section.
func TestParseSMIQCountsVolatileUncorrectableAndLink(t *testing.T) {
	out := `==============NVSMI LOG==============

Driver Version                            : 550.90.07
Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    PCI
        Bus                               : 0x18
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 4
                Device Current            : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
    FB Memory Usage
        Total                             : 81559 MiB
        Used                              : 0 MiB
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 1
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 4
            DRAM Uncorrectable            : 2
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 9
            DRAM Uncorrectable            : 9
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 2
        Pending                           : No
        Remapping Failure Occurred        : Yes
    Temperature
        GPU Current Temp                  : 34 C
        GPU Shutdown Temp                 : 92 C
`
	q, err := ParseSMIQ(out)
	if err != nil {
		t.Fatal(err)
	}
	g := q.GPUs[0]
	if g.VolatileUncorrectable != 3 {
		t.Errorf("volatile uncorrectable = %d, want 3 (aggregate counts are not this boot's)", g.VolatileUncorrectable)
	}
	if g.PCIeGenCurrent != 4 || g.GenMax != 5 || g.WidthCurrent != 8 || g.WidthMax != 16 {
		t.Errorf("link gen %d/%d width %d/%d", g.PCIeGenCurrent, g.GenMax, g.WidthCurrent, g.WidthMax)
	}
	if g.TemperatureC != 34 || g.MemoryTotalMiB != 81559 || !g.RemapFailure || !g.ECCModeEnabled {
		t.Errorf("temp %d mem %d remap failure %v ecc %v", g.TemperatureC, g.MemoryTotalMiB, g.RemapFailure, g.ECCModeEnabled)
	}
}

func TestParseXids(t *testing.T) {
	log := `[ 1811.437622] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.
[ 1811.437700] nvidia-nvlink: IBMNPU: unrelated line
[ 9912.001000] NVRM: Xid (PCI:0000:3b:00): 48, pid=2211, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.
`
	xs := ParseXids(log)
	if len(xs) != 2 || xs[0].Code != 79 || xs[0].PCI != "0000:18:00" || xs[1].Code != 48 {
		t.Fatalf("xids = %+v", xs)
	}
	if !strings.HasPrefix(xs[1].Line, "NVRM: Xid (PCI:0000:3b:00): 48,") {
		t.Errorf("line %q keeps no timestamp", xs[1].Line)
	}
}

func TestParseMachineCheckStress(t *testing.T) {
	dcgmFail := verifySMIMarker + "\nDriver Version : 550.90.07\n" + verifyXidMarker + "\n" +
		verifyStressMarker + StressDCGM + " =====\n" +
		`+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Page Retirement/Row Remap | Fail                                           |
| Warning                   | GPU 3 has uncorrectable memory errors and row  |
| Graphics Processes        | Pass                                           |
+---------------------------+------------------------------------------------+
` + verifyStressExit + "226 =====\n"
	mc := ParseMachineCheck(dcgmFail)
	if mc.Stress.Tool != StressDCGM || mc.Stress.Passed || !strings.Contains(mc.Stress.Detail, "Page Retirement/Row Remap: Fail — GPU 3") {
		t.Errorf("stress = %+v", mc.Stress)
	}
	skipped := verifySMIMarker + "\nDriver Version : 550.90.07\n" + verifyXidMarker + "\n" + verifyStressMarker + StressSkipped +
		" =====\nneither dcgmi nor PyTorch with CUDA is on this machine: no stress run\n" + verifyStressExit + "0 =====\n"
	mc = ParseMachineCheck(skipped)
	if mc.Stress.Tool != StressSkipped || !mc.Stress.Passed || !strings.Contains(mc.Stress.Detail, "neither dcgmi") {
		t.Errorf("skipped = %+v", mc.Stress)
	}
}
