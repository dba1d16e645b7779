package domain

import "time"

// Accelerators, machine kinds and interconnects a customer can ask for (O1).
var (
	Accelerators  = []string{"H200_141GB", "H100_80GB", "A100_80GB", "L40S", "RTX_4090"}
	MachineKinds  = []string{"vm", "bare_metal", "container"}
	Interconnects = []string{"ethernet", "infiniband", "roce"}
	GPUCounts     = []int{1, 2, 4, 8}
)

// Node-count bounds (O3) and the cap for locations that do not count (O2).
const (
	MinNodes          = 2
	MaxNodes          = 64
	UncountedMaxNodes = 8
)

// OfferFreshness is how long a catalog row counts as startable after its
// provider last reported it (O6).
const OfferFreshness = 10 * time.Minute

// Offer is one machine shape in one location, as the catalog job last saw it.
// Prices are micro-dollars.
type Offer struct {
	ID       string `gorm:"primaryKey;size:191"` // provider + ":" + provider offer id
	Provider string `gorm:"size:64;index"`
	// Upstream is the cloud behind an aggregator provider (Shadeform's
	// "lambdalabs", ...), kept from the adapter's offer; empty otherwise.
	Upstream      string `gorm:"size:64;not null;default:''"`
	ProviderOffer string `gorm:"size:128"`
	Location      string `gorm:"size:128;index"`
	LocationName  string `gorm:"size:191"`
	Interconnect  string `gorm:"size:32"`
	// NICs × NICGbps is what a machine's fabric cards carry (providers.Offer);
	// zero NICs is an encrypted Ethernet overlay.
	NICs           int    `gorm:"column:nics;not null;default:0"`
	NICGbps        int    `gorm:"column:nic_gbps;not null;default:0"`
	MachineKind    string `gorm:"size:32"`
	Accelerator    string `gorm:"size:64;index"`
	GPUsPerNode    int    `gorm:"column:gpus_per_node"`
	VCPUs          int    `gorm:"column:vcpus"`
	MemoryGB       int    `gorm:"column:memory_gb"`
	PerGPUHour     Money  `gorm:"column:per_gpu_hour"`
	RootDiskGB     int    `gorm:"column:root_disk_gb"`
	DiskGBHour     Money  `gorm:"column:disk_gb_hour"`
	Community      bool
	NodesAvailable *int
	Available      bool
	BootSeconds    int
	PublicIPs      bool      `gorm:"column:public_ips"`
	Gateway        string    `gorm:"size:255"`
	RefreshedAt    time.Time `gorm:"index"`
	// Track is the offer's track record at the picker's size (track.go),
	// set on the picker's copies when it was read (Pick.WithTrack); nil
	// otherwise. Never stored.
	Track *TrackRecord `gorm:"-"`
}

// LineRateGBps is what one machine's fabric cards carry together, in GB/s
// (0 for an Ethernet overlay).
func (o Offer) LineRateGBps() float64 { return float64(o.NICs) * float64(o.NICGbps) / 8 }

// MachineHour is one machine's price per hour: its GPUs and its root disk.
func (o Offer) MachineHour() Money {
	return Money(o.GPUsPerNode)*o.PerGPUHour + Money(o.RootDiskGB)*o.DiskGBHour
}

// ClusterHour is the whole cluster's price per hour at n machines (Q3 with no
// volume): the per-GPU formula, which equals machine price × machines (O7).
func (o Offer) ClusterHour(n int) Money {
	return Money(o.GPUsPerNode)*Money(n)*o.PerGPUHour + Money(o.RootDiskGB)*Money(n)*o.DiskGBHour
}

// MaxNodes is O2: min(64, count) when the location counts its free machines,
// 8 when it only says whether it has any (0 when it has none).
func (o Offer) MaxNodes() int {
	if o.NodesAvailable == nil {
		if !o.Available {
			return 0
		}
		return UncountedMaxNodes
	}
	return min(MaxNodes, *o.NodesAvailable)
}

// Sellability says whether a size can start now, and if not, why (O4).
type Sellability string

const (
	Startable     Sellability = "available"
	ReservedAhead Sellability = "reserved_ahead" // withheld: the count is unknown and the size is over 8
	NotInStock    Sellability = "not_in_stock"   // the location counted fewer machines free
)

// SellFor is O4 for n machines.
func (o Offer) SellFor(n int) Sellability {
	switch {
	case n <= o.MaxNodes():
		return Startable
	case o.NodesAvailable == nil && o.Available:
		return ReservedAhead
	default:
		return NotInStock
	}
}

// Fresh reports whether the offer is inside its freshness window at now (O6).
func (o Offer) Fresh(now time.Time) bool { return now.Sub(o.RefreshedAt) <= OfferFreshness }

// BootTime is the machine kind's typical time to a running machine.
func (o Offer) BootTime() time.Duration { return time.Duration(o.BootSeconds) * time.Second }

// OfferSort orders the picker's answer (O3): groups by their best startable
// offer, offers inside a group startable first, then by the key.
type OfferSort string

const (
	SortClusterPrice OfferSort = "cluster_price" // whole cluster per hour (the default)
	SortGPUPrice     OfferSort = "gpu_price"     // per GPU-hour (Q3's rate), then whole cluster
	SortTrackRecord  OfferSort = "track_record"  // launches started of tried (X2), then whole cluster
)

// OfferSorts are the sorts a customer can ask for, the default first.
var OfferSorts = []OfferSort{SortClusterPrice, SortGPUPrice, SortTrackRecord}
