package views

import (
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/models/domain"
)

// OfferRow is one offer at the requested node count. It points into the
// picker's answer rather than copying text: a page at catalog scale has
// hundreds of rows (O3).
type OfferRow struct {
	Offer *domain.Offer // after holds (models' stock.go)
	Nodes int
	// Volume is the volume the picker is pinned to (V2): Launch carries it.
	Volume string
}

// sizeChips are the node sizes each offer row shows as sellable or not (O4).
var sizeChips = [...]int{2, 4, 8, 16, 32, 64}

// OfferRows renders rows of the offers grid (one location's startable rows,
// or its rows that need a quote). It is written in Go rather than templ:
// templ's runtime allocates for every expression, and a page with 400 rows
// would allocate megabytes. Each row is built in one pooled buffer and
// written at once, so rows allocate nothing per request.
func OfferRows(rows []OfferRow) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		bp := rowBuffers.Get().(*[]byte)
		defer rowBuffers.Put(bp)
		for _, r := range rows {
			*bp = appendOfferRow((*bp)[:0], r.Offer, r.Nodes, r.Volume)
			if _, err := w.Write(*bp); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

var rowBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Each size chip's class (static/css/input.css), by what the location says
// of the size (O4): can start (green), reserved ahead (amber, dashed: on
// request) or not in stock (grey, struck). The legend uses the same.
const (
	chipStartable = "chip-start"
	chipReserved  = "chip-reserved"
	chipNoStock   = "chip-out"
)

// ChipClass is the class of a size chip that reads sell (domain.Sellability).
func ChipClass(sell string) string {
	switch sell {
	case string(domain.Startable):
		return chipStartable
	case string(domain.ReservedAhead):
		return chipReserved
	}
	return chipNoStock
}

// RowDimmed is the class of a row or card that cannot start: dimmed, under
// "Needs a quote".
const RowDimmed = "row-dim"

// appendOfferRow is one <tr> of the grid's six fixed columns: the machine
// (shape, interconnect, kind, community warning), $/GPU-h, $/machine-h,
// $/cluster-h, what the location has free with the standard sizes (O4), and
// the action. Prices are exact (domain.AppendPrice), so the cluster's is the
// machine's × machines as shown (O7).
func appendOfferRow(b []byte, o *domain.Offer, n int, volume string) []byte {
	sell := string(o.SellFor(n))
	b = append(b, `<tr id="offer-`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-testid="offer-row" data-offer-id="`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-sell="`...)
	b = appendEscaped(b, sell)
	if sell != string(domain.Startable) {
		b = append(b, `" class="`+RowDimmed...)
	}
	b = append(b, `"><td class="cell"><span class="block font-medium">`...)
	b = appendShape(b, n, o.GPUsPerNode, o.Accelerator)
	b = append(b, `</span><span class="block text-xs text-slate-500">`...)
	b = appendEscaped(b, InterconnectLabel(o.Interconnect))
	b = append(b, ` · `...)
	b = appendEscaped(b, KindLabel(o.MachineKind))
	b = append(b, `</span>`...)
	b = appendTrack(b, o.Track, n, "span")
	if o.Community {
		b = append(b, `<span class="mt-1 inline-block rounded bg-amber-100 px-1.5 py-0.5 text-xs text-amber-900 dark:bg-amber-900 dark:text-amber-100" title="Community host: keep secrets off it" data-testid="community-warning">community · keep secrets off</span>`...)
	}
	b = append(b, `</td><td class="cell num" data-testid="gpu-price">`...)
	b = domain.AppendPrice(b, o.PerGPUHour)
	b = append(b, `</td><td class="cell num" data-testid="machine-price">`...)
	b = domain.AppendPrice(b, o.MachineHour())
	b = append(b, `</td><td class="cell num font-semibold" data-testid="cluster-price">`...)
	b = domain.AppendPrice(b, o.ClusterHour(n))
	b = append(b, `</td><td class="cell"><span class="block text-xs" data-testid="nodes-available">`...)
	b = appendAvailability(b, o)
	b = append(b, `</span>`...)
	b = appendChips(b, o)
	b = append(b, `</td><td class="cell text-right">`...)
	b = appendAction(b, o, n, sell, "", volume)
	return append(b, `</td></tr>`...)
}

// appendTrack is the offer's track record at the row's size (X2, X13):
// "7 of 9 recent launches succeeded · ready in 9 min" with the ring its
// verifications measured under it, or "no launches yet". Where there were
// launches it is the <summary> of a <details> that opens, by a tap as by a
// click, on every outcome, the times to ready, the ring's median and worst
// beside the line rate, and the machine failures.
func appendTrack(b []byte, r *domain.TrackRecord, n int, tag string) []byte {
	if r == nil || r.Launches == 0 {
		b = append(append(append(b, '<'), tag...), ` class="track">`...)
		b = r.AppendSummary(b)
		return append(append(append(b, `</`...), tag...), '>')
	}
	b = append(b, `<details class="track-box" data-testid="track"><summary><span class="track" title="Last 30 days: `...)
	b = strconv.AppendInt(b, int64(r.VerifyFailures), 10)
	b = append(b, ` failed verification`...)
	if per, ok := r.FailuresPer1000h(); ok {
		b = append(b, ` · `...)
		b = strconv.AppendFloat(b, per, 'f', 1, 64)
		b = append(b, ` machine failures per 1,000 machine-hours after ready`...)
	}
	b = append(b, `">`...)
	b = r.AppendSummary(b)
	b = append(b, `</span>`...)
	if r.Ring.Samples > 0 {
		b = append(b, `<span class="track-ring" data-testid="track-ring">`...)
		b = r.AppendRingSummary(b)
		b = append(b, `</span>`...)
	}
	b = append(b, `</summary><div class="track-detail" data-testid="track-detail"><p>Last 30 days at `...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ` machines, each launch counted once:</p><ul class="track-outcomes">`...)
	o := r.Outcomes
	for _, c := range [...]struct {
		key, label string
		n          int
	}{
		{domain.OutcomeReady, "ready", o.Ready}, {domain.OutcomeReadyAfterSwap, "ready after a swap", o.ReadyAfterSwap},
		{domain.OutcomeFailedPlacing, "failed placing", o.FailedPlacing}, {domain.OutcomeFailedInstalling, "failed installing", o.FailedInstalling},
		{domain.OutcomeFailedVerifying, "failed verifying", o.FailedVerifying},
		{domain.OutcomeCancelled, "cancelled before hand-over", o.Cancelled}, {"under_way", "under way", o.UnderWay},
	} {
		if c.n == 0 && (c.key == domain.OutcomeCancelled || c.key == "under_way") {
			continue
		}
		b = append(b, `<li data-outcome="`...)
		b = append(b, c.key...)
		b = append(b, `">`...)
		b = strconv.AppendInt(b, int64(c.n), 10)
		b = append(append(b, ' '), c.label...)
		b = append(b, `</li>`...)
	}
	b = append(b, `</ul>`...)
	if r.ReadySamples > 0 {
		b = append(b, `<p data-testid="track-detail-ready">Launch to hand-over: median `...)
		b = strconv.AppendInt(b, int64(r.ReadyP50), 10)
		b = append(b, ` min, 90th percentile `...)
		b = strconv.AppendInt(b, int64(r.ReadyP90), 10)
		b = append(b, ` min.</p>`...)
	}
	b = append(b, `<p data-testid="track-detail-ring">`...)
	if g := r.Ring; g.Samples > 0 {
		b = append(b, `Ring bus bandwidth of `...)
		b = strconv.AppendInt(b, int64(g.Samples), 10)
		if g.Samples == 1 {
			b = append(b, ` verification: `...)
		} else {
			b = append(b, ` verifications: median `...)
		}
		b = appendReading(b, g.Median)
		if g.Samples > 1 {
			b = appendReading(append(b, `; worst `...), g.Worst)
		}
		b = append(b, `.`...)
	} else {
		b = append(b, `No verification measured the ring yet.`...)
	}
	b = append(b, `</p><p>`...)
	b = strconv.AppendInt(b, int64(r.VerifyFailures), 10)
	b = append(b, ` machines failed verification`...)
	if per, ok := r.FailuresPer1000h(); ok {
		b = append(b, ` · `...)
		b = strconv.AppendFloat(b, per, 'f', 1, 64)
		b = append(b, ` machine failures per 1,000 machine-hours after ready`...)
	}
	return append(b, `.</p></div></details>`...)
}

// appendReading is "368 GB/s, 92 % of the 400 GB/s line rate", or the
// GB/s alone for an Ethernet overlay.
func appendReading(b []byte, r domain.RingReading) []byte {
	b = domain.AppendGBps(b, r.GBps)
	if p, ok := r.Percent(); ok {
		b = append(strconv.AppendInt(append(b, ", "...), int64(p), 10), " % of the "...)
		b = append(domain.AppendGBps(b, r.LineRateGBps), " line rate"...)
	}
	return b
}

// appendChips is the standard sizes, each as the location sells it (O4).
func appendChips(b []byte, o *domain.Offer) []byte {
	b = append(b, `<span class="mt-1 flex flex-wrap gap-1" aria-label="Sizes">`...)
	for _, size := range sizeChips {
		s := string(o.SellFor(size))
		b = append(b, `<span class="`...)
		b = append(b, ChipClass(s)...)
		b = append(b, `" title="`...)
		b = append(b, sellLabel(s)...)
		b = append(b, `">`...)
		b = append(strconv.AppendInt(b, int64(size), 10), `</span>`...)
	}
	return append(b, `</span>`...)
}

// appendShape is Shape, escaped: "4 × 8 × H100 80GB".
func appendShape(b []byte, nodes, gpus int, accel string) []byte {
	b = append(strconv.AppendInt(b, int64(nodes), 10), " × "...)
	b = append(strconv.AppendInt(b, int64(gpus), 10), " × "...)
	for i := 0; i < len(accel); i++ {
		if accel[i] == '_' {
			b = append(b, ' ')
		} else {
			b = appendEscaped(b, accel[i:i+1])
		}
	}
	return b
}

// appendAvailability is what the location has free (less holds) in words
// that agree with the action (O2, O4): a counted location says how many are
// free and so how many can start; one that only says whether it has any
// starts up to 8 and takes the rest on request.
func appendAvailability(b []byte, o *domain.Offer) []byte {
	switch {
	case o.NodesAvailable != nil && *o.NodesAvailable > 0:
		b = append(strconv.AppendInt(b, int64(*o.NodesAvailable), 10), " free here — up to "...)
		return appendMachines(b, o.MaxNodes())
	case o.NodesAvailable == nil && o.Available:
		b = append(b, "in stock — up to "...)
		b = appendMachines(b, domain.UncountedMaxNodes)
		return strconv.AppendInt(append(b, "; available on request above "...), domain.UncountedMaxNodes, 10)
	}
	return append(b, "none free here — on request"...)
}

// appendMachines is "1 machine" or "n machines".
func appendMachines(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " machine"...)
	}
	return append(b, " machines"...)
}

// appendEscaped appends s escaped as html.EscapeString (and templ) does.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b = append(b, "&amp;"...)
		case '\'':
			b = append(b, "&#39;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&#34;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendQueryEscaped appends s as url.QueryEscape does; its output needs no
// HTML escaping.
func appendQueryEscaped(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

// appendAction is the row's or card's action: Launch at this size, or what
// the location says and Request a quote. prefix tells the card's test ids
// ("card-") from the table's ("").
func appendAction(b []byte, o *domain.Offer, n int, sell, prefix, volume string) []byte {
	if sell == string(domain.Startable) {
		b = append(b, `<a href="/clusters/new?nodes=`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, `&amp;offer=`...)
		b = appendQueryEscaped(b, o.ID)
		if volume != "" {
			b = append(b, `&amp;volume=`...)
			b = appendQueryEscaped(b, volume)
		}
		b = append(b, `" class="btn-primary" data-testid="`...)
		b = append(b, prefix...)
		b = append(b, `launch-link">Launch</a>`...)
	} else {
		b = append(b, `<span class="block text-xs font-medium text-slate-500" data-testid="`...)
		b = append(b, prefix...)
		b = append(b, `sell-label">`...)
		b = append(b, sellLabel(sell)...)
		b = append(b, `</span> <a href="/quote-requests/new?accelerator=`...)
		b = appendQueryEscaped(b, o.Accelerator)
		b = append(b, `&amp;gpus_per_node=`...)
		b = strconv.AppendInt(b, int64(o.GPUsPerNode), 10)
		b = append(b, `&amp;interconnect=`...)
		b = appendQueryEscaped(b, o.Interconnect)
		b = append(b, `&amp;location=`...)
		b = appendQueryEscaped(b, o.Location)
		b = append(b, `&amp;nodes=`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, `" class="link text-sm" data-testid="`...)
		b = append(b, prefix...)
		b = append(b, `quote-link">Request a quote</a>`...)
	}
	// X18: book this offer at this size from a date (its calendar first).
	b = append(b, ` <a href="/reservations/new?nodes=`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `&amp;offer=`...)
	b = appendQueryEscaped(b, o.ID)
	if prefix == "" {
		b = append(b, `" class="link whitespace-nowrap text-sm" data-testid="reserve-link">Reserve ahead</a>`...)
	} else { // a phone card's action column is the Launch button's width
		b = append(b, `" class="link mt-1 block text-center text-xs" data-testid="`...)
		b = append(b, prefix...)
		b = append(b, `reserve-link">Reserve</a>`...)
	}
	return b
}

// OfferCards renders offers as phone cards (below xl), under their
// location's name: the shape, the cluster price large with the machine's and the GPU-hour's
// under it, what is free, and the action. Written like OfferRows, for the
// same reason.
func OfferCards(rows []OfferRow) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		bp := rowBuffers.Get().(*[]byte)
		defer rowBuffers.Put(bp)
		for _, r := range rows {
			*bp = appendOfferCard((*bp)[:0], r.Offer, r.Nodes, r.Volume)
			if _, err := w.Write(*bp); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

func appendOfferCard(b []byte, o *domain.Offer, n int, volume string) []byte {
	sell := string(o.SellFor(n))
	b = append(b, `<li class="flex items-start gap-3 px-3 py-3`...)
	if sell != string(domain.Startable) {
		b = append(b, ` `+RowDimmed...)
	}
	b = append(b, `" data-testid="offer-card" data-card-offer-id="`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-sell="`...)
	b = appendEscaped(b, sell)
	b = append(b, `"><div class="min-w-0 flex-1"><p class="font-medium">`...)
	b = appendShape(b, n, o.GPUsPerNode, o.Accelerator)
	b = append(b, `</p><p class="text-xs text-slate-500">`...)
	b = appendEscaped(b, InterconnectLabel(o.Interconnect))
	b = append(b, ` · `...)
	b = appendEscaped(b, KindLabel(o.MachineKind))
	b = append(b, `</p>`...)
	b = appendTrack(b, o.Track, n, "p")
	if o.Community {
		b = append(b, `<p class="mt-1"><span class="rounded bg-amber-100 px-1.5 py-0.5 text-xs text-amber-900 dark:bg-amber-900 dark:text-amber-100">community · keep secrets off</span></p>`...)
	}
	b = append(b, `<p class="mt-1 tabular-nums"><span class="font-semibold" data-testid="card-cluster-price">`...)
	b = append(domain.AppendPrice(b, o.ClusterHour(n)), "/cluster-h"...)
	b = append(b, `</span> <span class="block text-xs text-slate-500"><span class="whitespace-nowrap" data-testid="card-machine-price">`...)
	b = append(domain.AppendPrice(b, o.MachineHour()), "/machine-h"...)
	b = append(b, `</span> · <span class="whitespace-nowrap" data-testid="card-gpu-price">`...)
	b = append(domain.AppendPrice(b, o.PerGPUHour), "/GPU-h"...)
	b = append(b, `</span></span></p><p class="mt-1 text-xs" data-testid="card-nodes-available">`...)
	b = appendAvailability(b, o)
	b = append(b, `</p>`...)
	b = appendChips(b, o)
	b = append(b, `</div><div class="shrink-0 text-right">`...)
	b = appendAction(b, o, n, sell, "card-", volume)
	return append(b, `</div></li>`...)
}
