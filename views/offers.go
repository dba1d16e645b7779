package views

// OffersPage is the picker (O3).
type OffersPage struct {
	Meta          Meta
	Form          OfferForm
	Problems      map[string]string
	Groups        []OfferGroupView
	Shown         int // offers shown in all groups
	Accelerators  []string
	Interconnects []string
	Kinds         []string
	GPUCounts     []int
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
