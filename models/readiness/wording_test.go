package readiness

import "testing"

// A ready cluster of one GPU says "1 GPU", not "1 GPUs".
func TestSummaryCountsOneGPU(t *testing.T) {
	for n, want := range map[int]string{1: "ready: 1/1 nodes pass, 1 GPU", 16: "ready: 1/1 nodes pass, 16 GPUs"} {
		if got := summarize(Report{Ready: true, TotalGPUs: n}, 1); got != want {
			t.Errorf("%d GPUs: %q, want %q", n, got, want)
		}
	}
}
