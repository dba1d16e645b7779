package nodespec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Verification before hand-over (X13): every machine runs the machine
// check (VerifyMachineScript) through its agent — `nvidia-smi -q`, the NVRM
// Xid lines of the kernel log, and a short stress of every GPU when a tool
// for it is on the machine — and the server reads its output here. The
// fabric checks are nccl-tests' all_reduce_perf with NCCL_ALGO=Ring (read
// with ParseAllReduce).

// Section markers of the machine check's output.
const (
	verifySMIMarker    = "===== nvidia-smi -q ====="
	verifyXidMarker    = "===== kernel log: NVRM Xid ====="
	verifyStressMarker = "===== stress: "
	verifyStressExit   = "===== stress exit status: "
)

// Stress tools, in the order the machine check looks for them.
const (
	StressDCGM    = "dcgmi diag -r 1"
	StressMatmul  = "pytorch matmul"
	StressSkipped = "skipped"
)

// VerifyMachineScript is what every machine runs for its machine check. It
// always exits 0 (the agent runs it under bash -euo pipefail): the server
// reads each section. The matmul loop is bounded
// (60 s per GPU at most) and checks its result.
const VerifyMachineScript = `echo '` + verifySMIMarker + `'
nvidia-smi -q 2>&1 || true
echo '` + verifyXidMarker + `'
{ dmesg 2>/dev/null || journalctl -k --no-pager 2>/dev/null; } | grep -E 'NVRM: Xid' | tail -n 50 || true
rc=0
if command -v dcgmi >/dev/null 2>&1; then
  echo '` + verifyStressMarker + StressDCGM + ` ====='
  dcgmi diag -r 1 2>&1 || rc=$?
elif python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  echo '` + verifyStressMarker + StressMatmul + ` ====='
  python3 - <<'CLUSTERDECK_PY' 2>&1 || rc=$?
import time, torch
for i in range(torch.cuda.device_count()):
    d = torch.device("cuda", i)
    a = torch.randn(8192, 8192, device=d); b = torch.randn(8192, 8192, device=d)
    ref = (a @ b).sum().item(); t0 = time.time(); n = 0
    while time.time() - t0 < 60 and n < 200:
        if abs((a @ b).sum().item() - ref) > 1e-3 * max(1.0, abs(ref)):
            raise SystemExit(f"GPU {i}: matmul result changed after {n} iterations")
        n += 1
    print(f"GPU {i}: {n} matmuls of 8192x8192 in {time.time() - t0:.1f} s, results stable")
CLUSTERDECK_PY
else
  echo '` + verifyStressMarker + StressSkipped + ` ====='
  echo 'neither dcgmi nor PyTorch with CUDA is on this machine: no stress run'
fi
echo "` + verifyStressExit + `$rc ====="
exit 0
`

// GPUHealth is one GPU's health as `nvidia-smi -q` prints it. Counts the
// output does not carry (N/A, older drivers) are 0; flags are false.
type GPUHealth struct {
	BusID                   string // "00000000:18:00.0"
	Name                    string
	MemoryTotalMiB          int64
	VolatileUncorrectable   int64 // ECC Errors → Volatile: every "… Uncorrectable …" and "Double Bit … Total" count
	RetiredPagesPending     bool  // Retired Pages → Pending Page Blacklist / Pending Page Retirement: Yes
	RemapPending            bool  // Remapped Rows → Pending: Yes
	RemapFailure            bool  // Remapped Rows → Remapping Failure Occurred: Yes
	PCIeGenCurrent, GenMax  int   // GPU Link Info → PCIe Generation: Current, Max (0 = not shown)
	WidthCurrent, WidthMax  int   // GPU Link Info → Link Width: Current, Max ("16x" → 16)
	TemperatureC            int   // Temperature → GPU Current Temp (-1 = not shown)
	ECCModeEnabled, ECCSeen bool  // ECC Mode → Current: Enabled; whether the section was there
}

// SMIQ is a machine's `nvidia-smi -q`.
type SMIQ struct {
	Driver string
	GPUs   []GPUHealth
}

var smiQGPUHeader = regexp.MustCompile(`^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$`)

// ParseSMIQ reads `nvidia-smi -q`: the "Driver Version" line, then one
// "GPU <bus id>" block per GPU whose indentation nests its sections (the
// layout every driver since R450 prints). Fields are read by their section
// path, so added or missing fields of other driver versions do not matter.
// "No devices were found" gives no GPUs and no error; output with no GPU
// block and no driver line is ErrFormat.
func ParseSMIQ(output string) (SMIQ, error) {
	var q SMIQ
	if strings.TrimSpace(output) == "" {
		return q, fmt.Errorf("nvidia-smi -q: %w", ErrEmpty)
	}
	var cur *GPUHealth
	var path []string // section names by indent level (4 spaces each)
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := smiQGPUHeader.FindStringSubmatch(line); m != nil {
			q.GPUs = append(q.GPUs, GPUHealth{BusID: m[1], TemperatureC: -1})
			cur, path = &q.GPUs[len(q.GPUs)-1], nil
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		level := indent / 4
		key, val, hasVal := strings.Cut(strings.TrimSpace(line), ":")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if cur == nil {
			if key == "Driver Version" {
				q.Driver = val
			}
			continue
		}
		if level < 1 {
			continue
		}
		if len(path) > level-1 {
			path = path[:level-1]
		}
		if !hasVal || val == "" {
			for len(path) < level-1 {
				path = append(path, "")
			}
			path = append(path, key)
			continue
		}
		readSMIQField(cur, strings.Join(append(append([]string{}, path...), key), "/"), val)
	}
	if len(q.GPUs) == 0 && q.Driver == "" && !strings.Contains(output, noDevices) {
		return q, fmt.Errorf("nvidia-smi -q: no driver version and no GPU: %w", ErrFormat)
	}
	return q, nil
}

// readSMIQField keeps one "path: value" of a GPU block.
func readSMIQField(g *GPUHealth, path, val string) {
	yes := strings.EqualFold(val, "Yes")
	switch {
	case path == "Product Name":
		g.Name = val
	case path == "FB Memory Usage/Total":
		g.MemoryTotalMiB = int64(numPrefix(val))
	case strings.HasPrefix(path, "ECC Errors/Volatile/") && isUncorrectable(path):
		g.VolatileUncorrectable += int64(max(numPrefix(val), 0))
	case path == "ECC Mode/Current":
		g.ECCSeen, g.ECCModeEnabled = true, strings.EqualFold(val, "Enabled")
	case strings.HasPrefix(path, "Retired Pages/Pending"): // "Pending Page Blacklist" (≤ R470), "Pending Page Retirement"
		g.RetiredPagesPending = g.RetiredPagesPending || yes
	case path == "Remapped Rows/Pending":
		g.RemapPending = yes
	case path == "Remapped Rows/Remapping Failure Occurred":
		g.RemapFailure = yes
	case path == "PCI/GPU Link Info/PCIe Generation/Current":
		g.PCIeGenCurrent = numPrefix(val)
	case path == "PCI/GPU Link Info/PCIe Generation/Max":
		g.GenMax = numPrefix(val)
	case path == "PCI/GPU Link Info/Link Width/Current":
		g.WidthCurrent = numPrefix(val)
	case path == "PCI/GPU Link Info/Link Width/Max":
		g.WidthMax = numPrefix(val)
	case path == "Temperature/GPU Current Temp":
		if t := numPrefix(val); t >= 0 {
			g.TemperatureC = t
		}
	}
}

// isUncorrectable: "SRAM Uncorrectable", "SRAM Uncorrectable Parity",
// "SRAM Uncorrectable SEC-DED", "DRAM Uncorrectable" (R470+), or the
// "Double Bit/Total" of older drivers.
func isUncorrectable(path string) bool {
	return strings.Contains(path, "Uncorrectable") || strings.HasSuffix(path, "Double Bit/Total")
}

// numPrefix reads the number a value starts with ("81559 MiB", "16x",
// "31 C"); -1 when there is none (N/A).
func numPrefix(s string) int {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return -1
	}
	return n
}

// Xid is one NVRM Xid line of the kernel log.
type Xid struct {
	Code int
	PCI  string // "0000:18:00"
	Line string // as logged, without the timestamp
}

var xidRE = regexp.MustCompile(`NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),(.*)$`)

// ParseXids reads the NVRM Xid lines of a kernel log:
//
//	[ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.
func ParseXids(log string) []Xid {
	var out []Xid
	for line := range strings.Lines(log) {
		m := xidRE.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			continue
		}
		code, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		i := strings.Index(line, "NVRM:")
		out = append(out, Xid{Code: code, PCI: m[1], Line: strings.TrimSpace(line[i:])})
	}
	return out
}

// StressResult is the machine check's stress section.
type StressResult struct {
	Tool   string // StressDCGM, StressMatmul or StressSkipped; "" when the section is missing
	Passed bool   // exit status 0 and, for dcgmi, no test reported Fail
	Detail string // the failing line, or why it was skipped
}

// MachineCheck is what the machine check printed, section by section.
type MachineCheck struct {
	SMI    SMIQ
	SMIErr error
	Xids   []Xid
	Stress StressResult
}

// ParseMachineCheck splits the machine check's output at its markers and
// reads each section.
func ParseMachineCheck(output string) MachineCheck {
	var mc MachineCheck
	smi, rest := between(output, verifySMIMarker, verifyXidMarker)
	mc.SMI, mc.SMIErr = ParseSMIQ(smi)
	xids, rest := between(rest, "", verifyStressMarker)
	mc.Xids = ParseXids(xids)
	i := strings.Index(output, verifyStressMarker)
	if i < 0 {
		return mc
	}
	head, body, _ := strings.Cut(output[i+len(verifyStressMarker):], "\n")
	mc.Stress.Tool = strings.TrimSuffix(strings.TrimSpace(head), " =====")
	code := -1
	if j := strings.LastIndex(body, verifyStressExit); j >= 0 {
		code = numPrefix(strings.TrimSpace(body[j+len(verifyStressExit):]))
		body = body[:j]
	}
	body = strings.TrimSpace(body)
	switch mc.Stress.Tool {
	case StressSkipped:
		mc.Stress.Passed, mc.Stress.Detail = true, firstLine(body)
	case StressDCGM:
		fail := dcgmFailure(body)
		mc.Stress.Passed = code == 0 && fail == ""
		mc.Stress.Detail = fail
		if !mc.Stress.Passed && fail == "" {
			mc.Stress.Detail = fmt.Sprintf("dcgmi exited with status %d: %s", code, lastLine(body))
		}
	default:
		mc.Stress.Passed = code == 0
		if !mc.Stress.Passed {
			mc.Stress.Detail = fmt.Sprintf("exited with status %d: %s", code, lastLine(body))
		}
	}
	return mc
}

// dcgmFailure returns the first row of dcgmi diag's result table that
// reads Fail, and the Warning line after it: "Page Retirement/Row Remap:
// Fail — GPU 3 has uncorrectable memory errors…". "" when none failed.
func dcgmFailure(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		cells := strings.Split(l, "|")
		if len(cells) < 3 {
			continue
		}
		name, res := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if !strings.HasPrefix(res, "Fail") {
			continue
		}
		msg := name + ": " + res
		for _, w := range lines[i+1:] {
			wc := strings.Split(w, "|")
			if len(wc) >= 3 && strings.HasPrefix(strings.TrimSpace(wc[1]), "Warning") {
				msg += " — " + strings.TrimSpace(wc[2])
				break
			}
		}
		return msg
	}
	return ""
}

// between returns what lies after begin ("" = from the start) up to end,
// and the rest from end on.
func between(s, begin, end string) (string, string) {
	if begin != "" {
		i := strings.Index(s, begin)
		if i < 0 {
			return "", s
		}
		s = s[i+len(begin):]
	}
	j := strings.Index(s, end)
	if j < 0 {
		return s, ""
	}
	return s[:j], s[j:]
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// VerifyRingCommand is the all-reduce of the fabric check: the NCCL check's
// command (Commands().NCCLAllReduce) with NCCL_ALGO=Ring, since on two
// machines other algorithms (NVLS, tree) overstate the network.
func (c Cluster) VerifyRingCommand() string {
	return ringOnly(c.Commands().NCCLAllReduce.Text)
}

// VerifyPairCommand is the pairwise all-reduce between this node and the
// node of rank PEER_RANK ($PEER_HOST is exported by the task), with
// NCCL_ALGO=Ring.
func (c Cluster) VerifyPairCommand(self, peer string) string {
	g := strconv.Itoa(max(c.GPUsPerNode, 1))
	return ringOnly(fmt.Sprintf("mpirun --allow-run-as-root -np %d -H %s:%s,%s:%s -x NCCL_DEBUG=WARN %s -b 8 -e 8G -f 2 -g 1",
		2*max(c.GPUsPerNode, 1), self, g, peer, g, NCCLTestBinary))
}

func ringOnly(cmd string) string {
	if strings.HasPrefix(cmd, "mpirun") {
		return strings.Replace(cmd, "mpirun", "mpirun -x NCCL_ALGO=Ring", 1) + "\n"
	}
	return "NCCL_ALGO=Ring " + cmd + "\n"
}
