package nodespec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// GPUQuery is the nvidia-smi command every node's agent runs when it checks
// in: one CSV row per GPU with the fields CheckNodeGPUs reads.
const GPUQuery = "nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv"

// CheckNodeGPUs reads a node's GPUQuery output and checks it against what
// the offer promises: GPUsPerNode GPUs of the accelerator (models' names,
// such as "H100_80GB"). It returns a one-line summary of what the node has
// ("8 × NVIDIA H100 80GB HBM3, 81559 MiB, driver 550.90.07") and an error
// saying plainly what differs, or that the output could not be read.
func CheckNodeGPUs(output, accelerator string, gpusPerNode int) (string, error) {
	gpus, err := ParseSMIQuery(output)
	if err != nil {
		return "", fmt.Errorf("nvidia-smi could not be read (%v): %q", err, firstLine(output))
	}
	summary := SummarizeGPUs(gpus)
	if len(gpus) != gpusPerNode {
		return summary, fmt.Errorf("nvidia-smi lists %d GPUs (%s), the offer promises %d × %s",
			len(gpus), summary, gpusPerNode, strings.ReplaceAll(accelerator, "_", " "))
	}
	for _, g := range gpus {
		if !IsAccelerator(g, accelerator) {
			return summary, fmt.Errorf("GPU %d is %s, the offer promises %s", g.Index, describeGPU(g), strings.ReplaceAll(accelerator, "_", " "))
		}
	}
	return summary, nil
}

// IsAccelerator reports whether g is the accelerator: every part of its
// name ("H100_80GB": "H100", "80GB") in the product name, except that the
// memory may instead be within 10% of what nvidia-smi reports (H100 PCIe
// cards do not name it).
func IsAccelerator(g GPU, accelerator string) bool {
	name := strings.ToUpper(strings.ReplaceAll(g.Name, " ", ""))
	parts := strings.Split(strings.ToUpper(accelerator), "_")
	for _, part := range parts {
		if part == "" {
			return false
		}
		if strings.Contains(name, part) {
			continue
		}
		gb, ok := strings.CutSuffix(part, "GB")
		want, err := strconv.Atoi(gb)
		if !ok || err != nil || g.MemoryTotalMiB <= 0 {
			return false
		}
		if got := float64(g.MemoryTotalMiB) / 1024; math.Abs(got-float64(want)) > 0.1*float64(want) {
			return false
		}
	}
	return len(parts) > 0
}

// SummarizeGPUs describes a node's GPUs in one line, grouping equal ones.
func SummarizeGPUs(gpus []GPU) string {
	if len(gpus) == 0 {
		return "no GPUs"
	}
	var parts []string
	count := map[string]int{}
	for _, g := range gpus {
		d := describeGPU(g)
		if count[d] == 0 {
			parts = append(parts, d)
		}
		count[d]++
	}
	for i, d := range parts {
		parts[i] = fmt.Sprintf("%d × %s", count[d], d)
	}
	s := strings.Join(parts, ", ")
	if v := gpus[0].DriverVersion; v != "" {
		s += ", driver " + v
	}
	return s
}

func describeGPU(g GPU) string {
	d := g.Name
	if d == "" {
		d = "an unnamed GPU"
	}
	if g.MemoryTotalMiB > 0 {
		d += fmt.Sprintf(" (%d MiB)", g.MemoryTotalMiB)
	}
	return d
}
