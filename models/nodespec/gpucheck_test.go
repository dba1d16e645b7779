package nodespec

import (
	"strings"
	"testing"
)

// A node's nvidia-smi, real output from testdata, against what the offer
// promises (the parsers are wired into check-in).
func TestCheckNodeGPUs(t *testing.T) {
	a100 := readFixture(t, "nvidia_smi_query_gpu_name_memtotal_driver_csv_8x_a100.txt")
	a6000 := readFixture(t, "nvidia_smi_query_gpu_index_name_memtotal_memused_util_csv_2x_a6000.txt")
	tests := []struct {
		name, output, accel string
		gpus                int
		summary, err        string
	}{
		{"matches", a100, "A100_80GB", 8, "8 × NVIDIA A100-SXM4-80GB (81920 MiB), driver 570.133.20", ""},
		{"too few", a100, "A100_80GB", 16, "", "nvidia-smi lists 8 GPUs (8 × NVIDIA A100-SXM4-80GB (81920 MiB), driver 570.133.20), the offer promises 16 × A100 80GB"},
		{"other model", a100, "H100_80GB", 8, "", "GPU 0 is NVIDIA A100-SXM4-80GB (81920 MiB), the offer promises H100 80GB"},
		{"other memory", a100, "A100_40GB", 8, "", "the offer promises A100 40GB"},
		{"workstation cards", a6000, "RTX_4090", 2, "", "the offer promises RTX 4090"},
		{"not csv", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "A100_80GB", 8, "", "nvidia-smi could not be read"},
		{"nothing", "", "A100_80GB", 8, "", "nvidia-smi could not be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, err := CheckNodeGPUs(tt.output, tt.accel, tt.gpus)
			if tt.err == "" {
				if err != nil || summary != tt.summary {
					t.Errorf("= %q, %v; want %q", summary, err, tt.summary)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

func TestIsAccelerator(t *testing.T) {
	tests := []struct {
		gpu   GPU
		accel string
		want  bool
	}{
		{GPU{Name: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: 81559}, "H100_80GB", true},
		{GPU{Name: "NVIDIA H100 PCIe", MemoryTotalMiB: 81559}, "H100_80GB", true},
		{GPU{Name: "NVIDIA H100 PCIe", MemoryTotalMiB: -1}, "H100_80GB", false},
		{GPU{Name: "NVIDIA H200", MemoryTotalMiB: 143771}, "H200_141GB", true},
		{GPU{Name: "NVIDIA GeForce RTX 4090", MemoryTotalMiB: 24564}, "RTX_4090", true},
		{GPU{Name: "NVIDIA GeForce RTX 3090", MemoryTotalMiB: 24576}, "RTX_4090", false},
		{GPU{Name: "NVIDIA L40S", MemoryTotalMiB: 46068}, "L40S", true},
		{GPU{Name: "NVIDIA L40", MemoryTotalMiB: 46068}, "L40S", false},
		{GPU{Name: "NVIDIA A100-SXM4-40GB", MemoryTotalMiB: 40960}, "A100_80GB", false},
	}
	for _, tt := range tests {
		if got := IsAccelerator(tt.gpu, tt.accel); got != tt.want {
			t.Errorf("IsAccelerator(%q %d MiB, %s) = %v", tt.gpu.Name, tt.gpu.MemoryTotalMiB, tt.accel, got)
		}
	}
}
