package views

import (
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/models"
)

// OfferRow is one offer at the requested node count. It points into the
// picker's answer rather than copying text: a page at catalog scale has
// hundreds of rows (issue 13).
type OfferRow struct {
	Offer *models.Offer // after holds (models' stock.go)
	Nodes int
	// Volume is the volume the picker is pinned to (V2): Launch carries it.
	Volume string
}

// sizeChips are the node sizes each offer row shows as sellable or not (O4).
var sizeChips = [...]int{2, 4, 8, 16, 32, 64}

// OfferRows renders a location's table rows. It is written in Go rather than
// templ: templ's runtime allocates for every expression, and a page with 400
// rows would allocate megabytes. Each row is built in one pooled buffer and
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

// Each chip's class, by whether the size can start now.
const (
	chipStartable = "rounded px-1.5 py-0.5 text-xs tabular-nums bg-green-50 text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-300 dark:ring-green-900"
	chipOther     = "rounded px-1.5 py-0.5 text-xs tabular-nums text-slate-400 line-through ring-1 ring-slate-200 dark:ring-slate-700"
)

// appendOfferRow is one <tr>: shape, interconnect, kind, cluster and machine
// price, free machines, the standard sizes (O4) and the action.
func appendOfferRow(b []byte, o *models.Offer, n int, volume string) []byte {
	sell := string(o.SellFor(n))
	b = append(b, `<tr id="offer-`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-testid="offer-row" data-offer-id="`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-sell="`...)
	b = appendEscaped(b, sell)
	b = append(b, `"><td class="cell whitespace-nowrap"><span class="font-medium">`...)
	b = appendShape(b, n, o.GPUsPerNode, o.Accelerator)
	b = append(b, `</span> `...)
	if o.Community {
		b = append(b, `<span class="ml-1 rounded bg-amber-100 px-1.5 py-0.5 text-xs text-amber-900 dark:bg-amber-900 dark:text-amber-100" title="Community host: keep secrets off it" data-testid="community-warning">community · keep secrets off</span>`...)
	}
	b = append(b, `</td><td class="cell">`...)
	b = appendEscaped(b, InterconnectLabel(o.Interconnect))
	b = append(b, `</td><td class="cell">`...)
	b = appendEscaped(b, KindLabel(o.MachineKind))
	b = append(b, `</td><td class="cell num whitespace-nowrap"><span class="font-semibold" data-testid="cluster-price">`...)
	b = append(models.AppendUSD(b, o.ClusterHour(n)), "/h"...)
	b = append(b, `</span> <span class="block text-xs text-slate-500" data-testid="machine-price">`...)
	b = append(models.AppendUSD(b, o.MachineHour()), "/h per machine"...)
	b = append(b, `</span></td><td class="cell num whitespace-nowrap" data-testid="nodes-available">`...)
	b = appendAvailability(b, o)
	b = append(b, `</td><td class="cell"><div class="flex gap-1" aria-label="Node sizes">`...)
	for _, size := range sizeChips {
		s := string(o.SellFor(size))
		b = append(b, `<span class="`...)
		if s == string(models.Startable) {
			b = append(b, chipStartable...)
		} else {
			b = append(b, chipOther...)
		}
		b = append(b, `" title="`...)
		b = append(b, sellLabel(s)...)
		b = append(b, `">`...)
		b = append(strconv.AppendInt(b, int64(size), 10), `</span>`...)
	}
	b = append(b, `</div></td><td class="cell whitespace-nowrap text-right">`...)
	b = appendAction(b, o, n, sell, "", volume)
	return append(b, `</td></tr>`...)
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

// appendAvailability is what the location reports free, less holds.
func appendAvailability(b []byte, o *models.Offer) []byte {
	switch {
	case o.NodesAvailable != nil:
		return append(strconv.AppendInt(b, int64(*o.NodesAvailable), 10), " free"...)
	case o.Available:
		return append(b, "in stock"...)
	}
	return append(b, "none"...)
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
func appendAction(b []byte, o *models.Offer, n int, sell, prefix, volume string) []byte {
	if sell == string(models.Startable) {
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
	return b
}

// OfferCards renders a location's offers as phone cards (below md): the
// shape and where, the cluster price large with the machine's and the
// GPU-hour's under it, and the action. Written like OfferRows, for the same
// reason.
func OfferCards(g OfferGroupView) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		bp := rowBuffers.Get().(*[]byte)
		defer rowBuffers.Put(bp)
		for _, r := range g.Offers {
			*bp = appendOfferCard((*bp)[:0], g.LocationName, r.Offer, r.Nodes, r.Volume)
			if _, err := w.Write(*bp); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

func appendOfferCard(b []byte, locationName string, o *models.Offer, n int, volume string) []byte {
	sell := string(o.SellFor(n))
	b = append(b, `<li class="flex items-center gap-3 px-3 py-3" data-testid="offer-card" data-card-offer-id="`...)
	b = appendEscaped(b, o.ID)
	b = append(b, `" data-sell="`...)
	b = appendEscaped(b, sell)
	b = append(b, `"><div class="min-w-0 flex-1"><p class="font-medium">`...)
	b = appendShape(b, n, o.GPUsPerNode, o.Accelerator)
	b = append(b, `</p><p class="text-xs text-slate-500">`...)
	b = appendEscaped(b, locationName)
	b = append(b, ` · `...)
	b = appendEscaped(b, InterconnectLabel(o.Interconnect))
	b = append(b, ` · `...)
	b = appendEscaped(b, KindLabel(o.MachineKind))
	b = append(b, `</p>`...)
	if o.Community {
		b = append(b, `<p class="mt-1"><span class="rounded bg-amber-100 px-1.5 py-0.5 text-xs text-amber-900 dark:bg-amber-900 dark:text-amber-100">community · keep secrets off</span></p>`...)
	}
	b = append(b, `<p class="mt-1 tabular-nums"><span class="font-semibold" data-testid="card-cluster-price">`...)
	b = append(models.AppendUSD(b, o.ClusterHour(n)), "/h"...)
	b = append(b, `</span> <span class="block text-xs text-slate-500">`...)
	b = append(models.AppendUSD(b, o.MachineHour()), "/h per machine · "...)
	b = append(models.AppendUSD(b, o.PerGPUHour), "/GPU-h · "...)
	b = appendAvailability(b, o)
	b = append(b, `</span></p></div><div class="shrink-0 text-right">`...)
	b = appendAction(b, o, n, sell, "card-", volume)
	return append(b, `</div></li>`...)
}
