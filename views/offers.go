package views

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

// OfferRow is one offer at the requested node count.
type OfferRow struct {
	ID           string
	Interconnect string
	Kind         string
	GPUs         int
	Shape        string
	ClusterPrice string // "$79.68/h" for the whole cluster
	MachinePrice string // "$19.92/h" per machine
	Availability string // "12 free", "in stock"
	MaxNodes     int
	Sell         string // available | reserved_ahead | not_in_stock (O4)
	Community    bool
	LaunchURL    string
	QuoteURL     string
	Sizes        []SizeChip
}

// SizeChip is one standard node size and whether this offer sells it.
type SizeChip struct {
	Nodes int
	Sell  string
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

func sizeChipClass(s string) string {
	if s == "available" {
		return "rounded px-1.5 py-0.5 text-xs tabular-nums bg-green-50 text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-300 dark:ring-green-900"
	}
	return "rounded px-1.5 py-0.5 text-xs tabular-nums text-slate-400 line-through ring-1 ring-slate-200 dark:ring-slate-700"
}

func selected(a, b string) bool { return a == b }
