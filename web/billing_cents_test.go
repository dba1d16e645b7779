package web

import (
	"math"
	"strconv"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B3: the usage CSV's hours reproduce the amount to the cent (4.31 h ×
// $20.32 was $87.58, not the $87.71 billed for 259 minutes).
func TestPreciseHoursReproduceAmounts(t *testing.T) {
	for _, tc := range []struct {
		minutes int64
		rate    float64
		amount  string
	}{
		{259, 20.32, "87.71"}, {90, 19.97, "29.96"}, {1, 2.49, "0.04"}, {7, 67.20, "7.84"}, {600, 3.33, "33.30"},
	} {
		h, err := strconv.ParseFloat(preciseHours(tc.minutes), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := strconv.FormatFloat(math.Round(h*tc.rate*100)/100, 'f', 2, 64); got != tc.amount {
			t.Errorf("%d min = %s h × $%.2f = %s, want %s", tc.minutes, preciseHours(tc.minutes), tc.rate, got, tc.amount)
		}
	}
}

// B3: rows rounded to the cent add up to their line's rounding.
func TestCentsSumToTheLine(t *testing.T) {
	for _, amounts := range [][]models.Money{
		{29_955_000, 29_955_000}, {1_004_999, 1_004_999, 1_004_999}, {3_335_000, 3_335_000, 3_335_000}, {0}, {12_340_000},
	} {
		var sum models.Money
		var got int64
		for i, c := range centsSummingTo(amounts) {
			sum += amounts[i]
			got += c
			if d := c*centMicros - int64(amounts[i]); d > centMicros || d < -centMicros {
				t.Errorf("%v: row %d moved by more than a cent: %d", amounts, i, c)
			}
		}
		if models.USD(models.Money(got*centMicros)) != models.USD(sum) {
			t.Errorf("%v: rows add up to %d cents, the line is %s", amounts, got, models.USD(sum))
		}
	}
}
