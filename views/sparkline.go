package views

import (
	"math"
	"strconv"
	"strings"
)

// Spark is one small server-rendered chart (X15): a series of
// values between 0 and Max drawn as a line over a light area, with its
// label and a text alternative for screen readers and for anyone who
// would rather read the numbers. A NaN value is a minute with no sample:
// the line breaks there instead of inventing a value.
type Spark struct {
	ID      string    // unique on the page: names the title for aria-labelledby
	Label   string    // "GPU utilization of node-3, last hour"
	Values  []float64 // oldest first
	Max     float64   // the top of the chart (100 for percent); <= 0: the highest value
	Summary string    // "now 87 %, lowest 12 %, highest 98 %"
	Tone    string    // "", "warn" (amber) or "idle" (slate)
}

// Spark chart geometry: the viewBox; the SVG itself stretches to its box.
const (
	sparkW = 120.0
	sparkH = 32.0
)

// sparkPaths are the SVG path data of the line and of the area under it,
// one sub-path per unbroken run of values.
func sparkPaths(values []float64, top float64) (line, area string) {
	if top <= 0 {
		for _, v := range values {
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	n := len(values)
	x := func(i int) float64 {
		if n == 1 {
			return sparkW / 2
		}
		return float64(i) * sparkW / float64(n-1)
	}
	y := func(v float64) float64 {
		v = math.Min(math.Max(v, 0), top)
		return sparkH - 1 - v/top*(sparkH-2) // 1 unit inside top and bottom so the stroke shows
	}
	var l, a strings.Builder
	for i := 0; i < n; {
		if math.IsNaN(values[i]) {
			i++
			continue
		}
		start := i
		for i < n && !math.IsNaN(values[i]) {
			cmd := "L"
			if i == start {
				cmd = "M"
			}
			l.WriteString(cmd + num(x(i)) + " " + num(y(values[i])))
			i++
		}
		end := i - 1
		if start == end { // a lone point: a short tick so it shows
			l.WriteString("h0.5")
		}
		a.WriteString("M" + num(x(start)) + " " + num(sparkH) + "L" + num(x(start)) + " " + num(y(values[start])))
		for j := start + 1; j <= end; j++ {
			a.WriteString("L" + num(x(j)) + " " + num(y(values[j])))
		}
		a.WriteString("L" + num(x(end)) + " " + num(sparkH) + "Z")
	}
	return l.String(), a.String()
}

func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

func sparkViewBox() string { return "0 0 " + num(sparkW) + " " + num(sparkH) }

func sparkLineClass(tone string) string {
	switch tone {
	case "warn":
		return "stroke-amber-600 dark:stroke-amber-400"
	case "idle":
		return "stroke-slate-400"
	}
	return "stroke-indigo-600 dark:stroke-indigo-400"
}

func sparkAreaClass(tone string) string {
	switch tone {
	case "warn":
		return "fill-amber-100 dark:fill-amber-950"
	case "idle":
		return "fill-slate-100 dark:fill-slate-800"
	}
	return "fill-indigo-100 dark:fill-indigo-950"
}
