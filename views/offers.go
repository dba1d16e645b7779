package views

import (
	"context"
	"io"
	"net/url"
	"strconv"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/models/domain"
)

// OffersPage is the picker (O3).
type OffersPage struct {
	Meta          Meta
	Form          OfferForm
	Problems      map[string]string
	Groups        []OfferGroupView
	QuoteGroups   []OfferGroupView  // the groups with rows that need a quote, in that section's order (O3)
	Private       []PrivateOfferRow // X9: the signed-in organisation's own, above the rest
	Shown         int               // offers shown in all groups
	Startable     int               // of them, those that can start now at the asked size
	GPUsDefaulted bool              // Form.GPUs is the page's default, not the visitor's choice
	Accelerators  []string
	Interconnects []string
	Kinds         []string
	GPUCounts     []int
	ResultsHTML   []byte // OfferResults already rendered (the handler's cache), or nil
	RefreshedAt   string // when the shown shape's prices were last refreshed ("" when the catalog has none)
	CatalogStale  bool   // the catalog has the shape, but no price recent enough to sell (O6)
	// CheapestMatch is, when the price ceiling left nothing, what the
	// cheapest offer matching the other filters costs per hour ("$67.20"),
	// and LiftURL the same search with the ceiling lifted to it.
	CheapestMatch, LiftURL string
	// Volume pins the picker to a volume's location (V2): only its offers
	// are shown and Launch mounts it.
	Volume *PinnedVolume
}

// PinnedVolume is the volume the picker is pinned to.
type PinnedVolume struct{ ID, Name, Location string }

// results is the results fragment: the pre-rendered bytes when there are.
func (p OffersPage) results() templ.Component {
	if p.ResultsHTML == nil {
		return OfferResults(p)
	}
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := w.Write(p.ResultsHTML)
		return err
	})
}

// OfferForm is the picker's query, as typed (kept on bad input).
type OfferForm struct {
	Accelerator  string
	Nodes        string
	Interconnect string
	Kind         string
	GPUs         string
	MaxPrice     string
	Community    bool
	Sort         string // domain.OfferSort; "" reads as cluster price
}

// AnyGPUs is the GPUs-per-machine choice of every size: absent, the page
// picks the largest machine on offer.
const AnyGPUs = "any"

// NeedQuote is how many shown offers cannot start at the asked size.
func (p OffersPage) NeedQuote() int { return p.Shown - p.Startable }

// sortedBy reports whether the page is sorted by s (cluster price when the
// form names none).
func (f OfferForm) sortedBy(s string) bool {
	if f.Sort == "" {
		return s == "cluster_price"
	}
	return f.Sort == s
}

// QuoteRequestURL is the quote-request form prefilled with the filters: the
// GPU, the machine count and, when chosen, GPUs per machine (not "any": a
// quote asks for one size) and fabric.
func (f OfferForm) QuoteRequestURL() string {
	q := url.Values{}
	for k, v := range map[string]string{"accelerator": f.Accelerator, "nodes": f.Nodes, "gpus_per_node": f.GPUs, "interconnect": f.Interconnect} {
		if v != "" && !(k == "gpus_per_node" && v == AnyGPUs) {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return "/quote-requests/new"
	}
	return "/quote-requests/new?" + q.Encode()
}

// ceilingLabel is a typed price ceiling as people read dollars ("$5.00").
func ceilingLabel(typed string) string {
	if m, err := domain.ParseUSD(typed); err == nil {
		return domain.USD(m)
	}
	return typed
}

// URLWithCeiling is the same search with the price ceiling set to max.
func (f OfferForm) URLWithCeiling(max string) string {
	q := url.Values{}
	for k, v := range map[string]string{"accelerator": f.Accelerator, "nodes": f.Nodes, "gpus_per_node": f.GPUs,
		"interconnect": f.Interconnect, "machine_kind": f.Kind, "sort": f.Sort, "max_price": max} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Community {
		q.Set("include_community", "on")
	}
	return "/offers?" + q.Encode()
}

// OfferGroupView is one location at one node count.
type OfferGroupView struct {
	Location     string
	LocationName string
	Nodes        int
	Offers       []OfferRow // startable first
	Startable    int        // how many of Offers, from the front, can start now
	QuoteRank    int        // place in the "Needs a quote" section; -1 = none there
}

func sellLabel(s string) string {
	switch s {
	case "reserved_ahead":
		return "reserved ahead"
	case "not_in_stock":
		return "not in stock"
	}
	return "can start now"
}

func selected(a, b string) bool { return a == b }

// startLine is the summary's first half: "3 can start now".
func startLine(n int) string {
	if n == 0 {
		return "None can start now"
	}
	return strconv.Itoa(n) + " can start now"
}

// quoteLine is the summary's second half: "8 need a quote".
func quoteLine(n int) string {
	if n == 1 {
		return "1 needs a quote"
	}
	return strconv.Itoa(n) + " need a quote"
}

// gpusLine names the machine size the page shows, when it shows one.
func gpusLine(p OffersPage) string {
	switch p.Form.GPUs {
	case "", AnyGPUs:
		return ", any GPUs per machine"
	case "1":
		return ", 1 GPU per machine"
	}
	return ", " + p.Form.GPUs + " GPUs per machine"
}

// gpusDefaultLine says the machine size was the page's choice.
func gpusDefaultLine(p OffersPage) string {
	if !p.GPUsDefaulted {
		return ""
	}
	return "The largest machines on offer; choose Any under GPUs per machine for every size."
}

// sortLine says the order as it is shown (O3): with several locations,
// locations are ordered by their best row and rows inside each, so the
// sentence names both; one location is one sorted list.
func sortLine(p OffersPage) string {
	by := "the cheapest whole cluster"
	first := "cheapest whole cluster first"
	switch {
	case p.Form.sortedBy("gpu_price"):
		by, first = "the lowest price per GPU-hour", "lowest price per GPU-hour first"
	case p.Form.sortedBy("track_record"):
		by, first = "the best track record", "recent launches succeeded most often first"
	}
	if len(p.Groups) < 2 {
		return first
	}
	return "locations ordered by " + by + " each has, and inside each location " + first
}

// needsQuoteLine says what the rows under "Needs a quote" are.
func needsQuoteLine(nodes string) string {
	return "These locations cannot start " + nodes + " machines now: Request a quote and we reserve them for you."
}
