package nodespec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GPU is one GPU as nvidia-smi reports it. Numeric fields the output does
// not carry are -1; string fields are "".
type GPU struct {
	Index int
	// Name is the product name ("NVIDIA H100 80GB HBM3"). The default table
	// truncates long names to its column width.
	Name string
	UUID string
	// MemoryTotalMiB and MemoryUsedMiB are in MiB.
	MemoryTotalMiB int64
	MemoryUsedMiB  int64
	// UtilizationPercent is the GPU utilisation, 0–100.
	UtilizationPercent int
	DriverVersion      string
	CUDAVersion        string
}

func unknownGPU(index int) GPU {
	return GPU{Index: index, MemoryTotalMiB: -1, MemoryUsedMiB: -1, UtilizationPercent: -1}
}

// noDevices is what nvidia-smi prints when the driver sees no GPU.
const noDevices = "No devices were found"

var smiListRE = regexp.MustCompile(`^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$`)

// ParseSMIList parses `nvidia-smi -L`:
//
//	GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-55748b5b-…)
//
// MIG device lines (indented, under their GPU) are skipped. "No devices
// were found" gives no GPUs and no error. Anything else without a GPU line,
// such as the driver's "NVIDIA-SMI has failed …", is ErrFormat.
func ParseSMIList(output string) ([]GPU, error) {
	if strings.TrimSpace(output) == "" {
		return nil, fmt.Errorf("nvidia-smi -L: %w", ErrEmpty)
	}
	var gpus []GPU
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		m := smiListRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		g := unknownGPU(idx)
		g.Name, g.UUID = strings.TrimSpace(m[2]), m[3]
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		if strings.Contains(output, noDevices) {
			return nil, nil
		}
		return nil, fmt.Errorf("nvidia-smi -L: %q: %w", firstLine(output), ErrFormat)
	}
	return gpus, nil
}

// ParseSMIQuery parses `nvidia-smi --query-gpu=<fields> --format=csv`, with
// its header line (units in the header and the values, as in
// "memory.total [MiB]" / "81920 MiB", or without units under nounits). It
// reads the fields index, name, uuid, memory.total, memory.used,
// utilization.gpu and driver_version, in any order; others are ignored.
// Values such as "[N/A]" or "[Not Supported]" read as unknown. Without an
// index column, GPUs are numbered in the order listed.
//
// Output without the header (--format=csv,noheader) cannot be read: the
// columns would be unknown. It is ErrFormat, as is a row whose field count
// differs from the header's.
func ParseSMIQuery(output string) ([]GPU, error) {
	if strings.TrimSpace(output) == "" {
		return nil, fmt.Errorf("nvidia-smi --query-gpu: %w", ErrEmpty)
	}
	var cols []string
	var gpus []GPU
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if cols == nil {
			if strings.TrimSpace(line) == noDevices {
				return nil, nil
			}
			cols = make([]string, len(fields))
			known := false
			for i, f := range fields {
				name, _, _ := strings.Cut(f, " [")
				cols[i] = strings.ToLower(strings.TrimSpace(name))
				switch cols[i] {
				case "index", "name", "uuid", "gpu_uuid", "memory.total", "memory.used", "utilization.gpu", "driver_version", "pci.bus_id":
					known = true
				}
			}
			if !known {
				return nil, fmt.Errorf("nvidia-smi --query-gpu: no CSV header (run with --format=csv): %q: %w", line, ErrFormat)
			}
			continue
		}
		if len(fields) != len(cols) {
			return gpus, fmt.Errorf("nvidia-smi --query-gpu: row %d has %d fields, header has %d: %w", len(gpus)+1, len(fields), len(cols), ErrFormat)
		}
		g := unknownGPU(len(gpus))
		for i, col := range cols {
			v := fields[i]
			if isSMIUnknown(v) {
				continue
			}
			switch col {
			case "index":
				if n, ok := leadingInt(v); ok {
					g.Index = int(n)
				}
			case "name":
				g.Name = v
			case "uuid", "gpu_uuid":
				g.UUID = v
			case "memory.total":
				if n, ok := leadingInt(v); ok {
					g.MemoryTotalMiB = n
				}
			case "memory.used":
				if n, ok := leadingInt(v); ok {
					g.MemoryUsedMiB = n
				}
			case "utilization.gpu":
				if n, ok := leadingInt(v); ok {
					g.UtilizationPercent = int(n)
				}
			case "driver_version":
				g.DriverVersion = v
			}
		}
		gpus = append(gpus, g)
	}
	if cols == nil {
		return nil, fmt.Errorf("nvidia-smi --query-gpu: %w", ErrEmpty)
	}
	return gpus, nil
}

var (
	smiVersionRE = regexp.MustCompile(`Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)`)
	smiGPURowRE  = regexp.MustCompile(`^\|\s+(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC|N/A)\s+\|`)
	smiMemRE     = regexp.MustCompile(`(\d+)MiB\s*/\s*(\d+)MiB`)
	smiUtilRE    = regexp.MustCompile(`^\s*(\d+)%`)
)

// ParseSMITable parses the default `nvidia-smi` table: for each GPU its
// index, (possibly truncated) name, memory used and total, utilisation, and
// the driver and CUDA versions from the banner. The processes table is
// ignored. "No devices were found" gives no GPUs and no error.
func ParseSMITable(output string) ([]GPU, error) {
	if strings.TrimSpace(output) == "" {
		return nil, fmt.Errorf("nvidia-smi: %w", ErrEmpty)
	}
	var driver, cuda string
	var gpus []GPU
	pending := -1 // index in gpus whose second line is expected next
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		if strings.Contains(line, "Processes:") {
			break
		}
		if m := smiVersionRE.FindStringSubmatch(line); m != nil {
			driver, cuda = m[1], m[2]
			continue
		}
		if m := smiGPURowRE.FindStringSubmatch(line); m != nil {
			idx, _ := strconv.Atoi(m[1])
			g := unknownGPU(idx)
			g.Name = m[2]
			gpus = append(gpus, g)
			pending = len(gpus) - 1
			continue
		}
		if pending >= 0 {
			cells := strings.Split(line, "|")
			if len(cells) >= 4 {
				g := &gpus[pending]
				if m := smiMemRE.FindStringSubmatch(cells[2]); m != nil {
					g.MemoryUsedMiB, _ = strconv.ParseInt(m[1], 10, 64)
					g.MemoryTotalMiB, _ = strconv.ParseInt(m[2], 10, 64)
				}
				if m := smiUtilRE.FindStringSubmatch(cells[3]); m != nil {
					g.UtilizationPercent, _ = strconv.Atoi(m[1])
				}
			}
			pending = -1
		}
	}
	if len(gpus) == 0 {
		if strings.Contains(output, noDevices) {
			return nil, nil
		}
		if driver == "" {
			return nil, fmt.Errorf("nvidia-smi: %q: %w", firstLine(output), ErrFormat)
		}
		return nil, fmt.Errorf("nvidia-smi: banner but no GPU rows: %w", ErrTruncated)
	}
	for i := range gpus {
		gpus[i].DriverVersion, gpus[i].CUDAVersion = driver, cuda
	}
	return gpus, nil
}

// CheckGPUs reports whether a node's GPUs, as parsed from nvidia-smi, match
// the cluster's shape: exactly GPUsPerNode of them.
func (c Cluster) CheckGPUs(gpus []GPU) error {
	if len(gpus) != c.GPUsPerNode {
		return fmt.Errorf("nvidia-smi lists %d GPUs, the cluster has %d per node", len(gpus), c.GPUsPerNode)
	}
	return nil
}

func isSMIUnknown(v string) bool {
	return v == "" || v == "N/A" || (strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]"))
}

// leadingInt parses the integer at the start of v ("81920 MiB", "0 %").
func leadingInt(v string) (int64, bool) {
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:end], 10, 64)
	return n, err == nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
