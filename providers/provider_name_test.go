package providers

import "testing"

func TestAcceleratorName(t *testing.T) {
	for in, want := range map[string]string{"H100/80": "H100_80GB", "RTX 4090/24": "RTX_4090", "L40S/48": "L40S", "A100/80": "A100_80GB",
		"H200/141": "H200_141GB", "MI300X/192": "MI300X_192GB", "A6000/0": "A6000", "Unknown GPU/0": "Unknown_GPU"} {
		var model string
		var mem int
		for i := len(in) - 1; i >= 0; i-- {
			if in[i] == '/' {
				model = in[:i]
				for _, c := range in[i+1:] {
					mem = mem*10 + int(c-'0')
				}
				break
			}
		}
		if got := AcceleratorName(model, mem); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
