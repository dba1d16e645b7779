package sim

import (
	"fmt"
	"strings"
)

// GPUStep is the step the agent runs before it checks in:
// `nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv`.
const GPUStep = "gpus"

// simGPU is how nvidia-smi names an accelerator and the memory it reports.
type simGPU struct {
	name   string
	memMiB int
}

// gpuModels are the names and memory real machines report (see the
// nvidia-smi samples in models/nodespec/testdata).
var gpuModels = map[string]simGPU{
	"H200_141GB": {"NVIDIA H200", 143771},
	"H100_80GB":  {"NVIDIA H100 80GB HBM3", 81559},
	"A100_80GB":  {"NVIDIA A100-SXM4-80GB", 81920},
	"L40S":       {"NVIDIA L40S", 46068},
	"RTX_4090":   {"NVIDIA GeForce RTX 4090", 24564},
}

const simDriver = "550.90.07"

// nvidiaSMI is what GPUStep prints on this machine: one row per GPU of its
// offer, one fewer under a gpu_missing fault. Callers hold c.mu.
func (e *executor) nvidiaSMI() string {
	cfg := e.n.g.offer.cfg
	m, ok := gpuModels[cfg.Accelerator]
	if !ok {
		m = simGPU{"NVIDIA " + strings.ReplaceAll(cfg.Accelerator, "_", " "), 81920}
	}
	count := cfg.GPUsPerNode
	if e.n.gpuMissing {
		count--
	}
	if count <= 0 {
		return "No devices were found\n"
	}
	var b strings.Builder
	b.WriteString("index, name, memory.total [MiB], driver_version\n")
	for i := range count {
		fmt.Fprintf(&b, "%d, %s, %d MiB, %s\n", i, m.name, m.memMiB, simDriver)
	}
	return b.String()
}
