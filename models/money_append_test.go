package models_test

import (
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// The append forms print exactly what USD and DecimalUSD print.
func TestAppendUSDMatchesUSD(t *testing.T) {
	amounts := []models.Money{0, 1, 4_999, 5_000, 9_999, 10_000, 999_999, 1_000_000, 2_490_000, 39_840_000,
		123_456_789, 1_234_567_890_123, 999_995_000, 100_000_000_000_000, 139, 2_490_500}
	for _, m := range amounts {
		for _, v := range []models.Money{m, -m} {
			if got := string(models.AppendUSD([]byte("x"), v)); got != "x"+models.USD(v) {
				t.Errorf("AppendUSD(%d) = %q, want x%q", v, got, models.USD(v))
			}
			if got := string(models.AppendDecimalUSD(nil, v)); got != models.DecimalUSD(v) {
				t.Errorf("AppendDecimalUSD(%d) = %q, want %q", v, got, models.DecimalUSD(v))
			}
		}
	}
	for m := models.Money(0); m < 3_000_000; m += 7_919 {
		if models.USD(m) != string(models.AppendUSD(nil, m)) || models.DecimalUSD(m) != string(models.AppendDecimalUSD(nil, m)) {
			t.Fatalf("append forms differ at %d", m)
		}
	}
}

// PriceUSD is exact (O7): it reads as DecimalUSD with a dollar sign and
// thousands separators, and n × a machine's price reads as n × its figure.
func TestPriceUSDIsExact(t *testing.T) {
	for m, want := range map[models.Money]string{
		0: "$0.00", 39_840_000: "$39.84", 19_974_000: "$19.974", 79_751_600: "$79.7516",
		139: "$0.000139", 1_275_520_000: "$1,275.52", 123_456_789_012: "$123,456.789012", -2_490_500: "-$2.4905",
	} {
		if got := models.PriceUSD(m); got != want {
			t.Errorf("PriceUSD(%d) = %q, want %q", m, got, want)
		}
	}
	for m := models.Money(0); m < 50_000_000; m += 104_729 {
		got := models.PriceUSD(m)
		back, err := models.ParseUSD(got[1:])
		if err != nil || back != m {
			t.Fatalf("PriceUSD(%d) = %q reads back as %d (%v): not exact", m, got, back, err)
		}
	}
}
