package views

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// X15: the sparkline is plain SVG whose path follows the
// values (0 % at the bottom, Max at the top), breaks at a minute without a
// sample, and carries its label and numbers as the accessible name.
func TestSparklineRenders(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name       string
		values     []float64
		max        float64
		line, area string
	}{
		{name: "rising percent", values: []float64{0, 50, 100}, max: 100,
			line: "M0 31L60 16L120 1", area: "M0 32L0 31L60 16L120 1L120 32Z"},
		{name: "a gap breaks the line", values: []float64{100, nan, 0, 0}, max: 100,
			line: "M0 1h0.5M80 31L120 31", area: "M0 32L0 1L0 32ZM80 32L80 31L120 31L120 32Z"},
		{name: "values above max are clamped", values: []float64{150, 100}, max: 100, line: "M0 1L120 1", area: "M0 32L0 1L120 1L120 32Z"},
		{name: "max from the data", values: []float64{2, 4}, line: "M0 16L120 1", area: "M0 32L0 16L120 1L120 32Z"},
		{name: "no sample at all", values: []float64{nan, nan}, max: 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			s := Spark{ID: "u-node-3", Label: "GPU utilization of node-3, last hour", Values: c.values, Max: c.max, Summary: "now 87 %"}
			if err := Sparkline(s).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			d, err := goquery.NewDocumentFromReader(strings.NewReader(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			svg := d.Find("svg[data-testid=sparkline]")
			if svg.Length() != 1 || svg.AttrOr("role", "") != "img" || svg.AttrOr("aria-labelledby", "") != "u-node-3-t" {
				t.Fatalf("svg: %s", b.String())
			}
			if title := d.Find("title#u-node-3-t").Text(); title != "GPU utilization of node-3, last hour: now 87 %" {
				t.Fatalf("title = %q", title)
			}
			if got := d.Find("[data-testid=spark-line]").AttrOr("d", ""); got != c.line {
				t.Errorf("line = %q, want %q", got, c.line)
			}
			if got := d.Find("[data-testid=spark-area]").AttrOr("d", ""); got != c.area {
				t.Errorf("area = %q, want %q", got, c.area)
			}
			if strings.Contains(b.String(), "<script") {
				t.Error("a sparkline needs no script")
			}
		})
	}
}
