package models

import "testing"

func TestMoneyFormats(t *testing.T) {
	tests := []struct {
		m       Money
		usd     string
		decimal string
	}{
		{0, "$0.00", "0.00"},
		{39_840_000, "$39.84", "39.84"},
		{2_490_500, "$2.49", "2.4905"},
		{139, "$0.00", "0.000139"},
		{1_234_567_890_000, "$1,234,567.89", "1234567.89"},
		{-5_000_000, "-$5.00", "-5.00"},
		{4_995_000, "$5.00", "4.995"}, // half a cent rounds up for people; the API stays exact
	}
	for _, tt := range tests {
		if got := USD(tt.m); got != tt.usd {
			t.Errorf("USD(%d) = %q, want %q", tt.m, got, tt.usd)
		}
		if got := DecimalUSD(tt.m); got != tt.decimal {
			t.Errorf("DecimalUSD(%d) = %q, want %q", tt.m, got, tt.decimal)
		}
		if tt.m >= 0 {
			back, err := ParseUSD(tt.decimal)
			if err != nil || back != tt.m {
				t.Errorf("ParseUSD(%q) = %d, %v; want %d (Q6 round trip)", tt.decimal, back, err, tt.m)
			}
		}
	}
}

func TestParseUSDRefusesNonsense(t *testing.T) {
	for _, s := range []string{"", "abc", "1.2345678", "-3", "1e3", "1.2.3", "NaN", "9999999999999"} {
		if _, err := ParseUSD(s); err == nil {
			t.Errorf("ParseUSD(%q) accepted nonsense", s)
		}
	}
	for s, want := range map[string]Money{"$40": 40 * Micro, " 12.5 ": 12_500_000, ".5": 500_000} {
		if got, err := ParseUSD(s); err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

// A quote for machines of one GPU reads "1 GPU", not
// "1 GPUs".
func TestLineItemsSayOneGPU(t *testing.T) {
	q := Quote{Nodes: 2, GPUsPerNode: 1, PerGPUHour: 2_000_000, RootDiskGB: 100, DiskGBHour: 100}
	if got := q.LineItems()[0].Quantity; got != "2 × 1 GPU at $2.00/GPU-h" {
		t.Errorf("line item %q", got)
	}
	q.GPUsPerNode = 8
	if got := q.LineItems()[0].Quantity; got != "2 × 8 GPUs at $2.00/GPU-h" {
		t.Errorf("line item %q", got)
	}
}
