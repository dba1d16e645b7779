package views

import (
	"context"
	"io"

	"github.com/a-h/templ"
)

// OffersPage is the picker (O3).
type OffersPage struct {
	Meta          Meta
	Form          OfferForm
	Problems      map[string]string
	Groups        []OfferGroupView
	Private       []PrivateOfferRow // X9: the signed-in organisation's own, above the rest
	Shown         int               // offers shown in all groups
	Accelerators  []string
	Interconnects []string
	Kinds         []string
	GPUCounts     []int
	ResultsHTML   []byte // OfferResults already rendered (the handler's cache), or nil
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
}

// OfferGroupView is one location at one node count.
type OfferGroupView struct {
	Location     string
	LocationName string
	Nodes        int
	Offers       []OfferRow
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
