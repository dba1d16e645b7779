package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Frozen copies of the tables as migration 0001 created them (see Migration:
// later model changes never rewrite history).
type (
	offerV0001 struct {
		ID             string `gorm:"primaryKey;size:191"`
		Provider       string `gorm:"size:64;index"`
		ProviderOffer  string `gorm:"size:128"`
		Location       string `gorm:"size:128;index"`
		LocationName   string `gorm:"size:191"`
		Interconnect   string `gorm:"size:32"`
		MachineKind    string `gorm:"size:32"`
		Accelerator    string `gorm:"size:64;index"`
		GPUsPerNode    int    `gorm:"column:gpus_per_node"`
		VCPUs          int    `gorm:"column:vcpus"`
		MemoryGB       int    `gorm:"column:memory_gb"`
		PerGPUHour     int64  `gorm:"column:per_gpu_hour"`
		RootDiskGB     int    `gorm:"column:root_disk_gb"`
		DiskGBHour     int64  `gorm:"column:disk_gb_hour"`
		Community      bool
		NodesAvailable *int
		Available      bool
		BootSeconds    int
		PublicIPs      bool      `gorm:"column:public_ips"`
		Gateway        string    `gorm:"size:255"`
		RefreshedAt    time.Time `gorm:"index"`
	}
)

func (offerV0001) TableName() string { return "offers" }

func up0001Offers(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&offerV0001{})
}

// ReplaceOffers stores one provider's catalog as seen at now: rows are
// upserted, and the provider's rows it no longer lists are deleted. One
// provider's refresh never touches another's rows.
func (s *Store) ReplaceOffers(ctx context.Context, provider string, offers []Offer, now time.Time) error {
	return s.Tx(ctx, func(tx *Store) error {
		ids := make([]string, 0, len(offers))
		for i := range offers {
			offers[i].Provider = provider
			offers[i].ID = provider + ":" + offers[i].ProviderOffer
			offers[i].RefreshedAt = now
			ids = append(ids, offers[i].ID)
		}
		if len(offers) > 0 {
			err := tx.db.Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(offers, 200).Error
			if err != nil {
				return fmt.Errorf("models: upsert offers: %w", err)
			}
		}
		del := tx.db.Where("provider = ?", provider)
		if len(ids) > 0 {
			del = del.Where("id NOT IN ?", ids)
		}
		if err := del.Delete(&Offer{}).Error; err != nil {
			return err
		}
		return tx.bumpCatalogVersion(ctx) // same transaction: snapshots see rows and version together
	})
}

// OfferByID loads one catalog row.
func (s *Store) OfferByID(ctx context.Context, id string) (Offer, error) {
	var o Offer
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&o).Error
	return o, notFound(err, "offer "+id)
}

// OfferFilter is the picker's question (O3, O5).
type OfferFilter struct {
	Accelerator      string // "" = any
	Nodes            int
	Interconnect     string // "" = any
	MachineKind      string // "" = any
	GPUsPerNode      int    // 0 = any
	MaxClusterHour   Money  // 0 = no ceiling (whole cluster, per hour)
	IncludeCommunity bool
	Location         string    // "" = any
	Sort             OfferSort // "" = SortClusterPrice
}

// Validate returns field problems keyed by the API's query names.
func (f OfferFilter) Validate() FieldErrors {
	fe := FieldErrors{}
	if f.Accelerator != "" && !slices.Contains(Accelerators, f.Accelerator) {
		fe["accelerator"] = "Choose one of " + strings.Join(Accelerators, ", ") + "."
	}
	if f.Nodes < MinNodes || f.Nodes > MaxNodes {
		fe["nodes"] = fmt.Sprintf("A cluster has %d to %d machines.", MinNodes, MaxNodes)
	}
	if f.Interconnect != "" && !slices.Contains(Interconnects, f.Interconnect) {
		fe["interconnect"] = "Choose one of " + strings.Join(Interconnects, ", ") + "."
	}
	if f.MachineKind != "" && !slices.Contains(MachineKinds, f.MachineKind) {
		fe["machine_kind"] = "Choose one of " + strings.Join(MachineKinds, ", ") + "."
	}
	if f.GPUsPerNode != 0 && !slices.Contains(GPUCounts, f.GPUsPerNode) {
		fe["gpus_per_node"] = "Machines come with 1, 2, 4 or 8 GPUs."
	}
	if f.MaxClusterHour < 0 {
		fe["max_price"] = "The price ceiling cannot be negative."
	}
	if f.Sort != "" && !slices.Contains(OfferSorts, f.Sort) {
		fe["sort"] = "Sort by the cluster's price, the price per GPU-hour or the track record."
	}
	return fe
}

// OfferGroup is the picker's unit: one location at one node count (O3).
type OfferGroup struct {
	Location     string
	LocationName string
	Nodes        int
	Offers       []Offer // sorted by whole-cluster price
	Cheapest     Money   // cheapest startable whole-cluster price, 0 when none can start
	// QuoteRank is the group's place in the "Needs a quote" section: the
	// groups that have rows that cannot start, ordered by their best such
	// row under the page's sort (O3), as the startable groups are by their
	// best startable row. -1 when every row can start.
	QuoteRank int
}

// PickOffers answers the picker from the stored catalog (O6: never a
// provider call), counted stock less what clusters hold (stock.go). Offers
// outside the freshness window are left out; community hosts only when asked
// (O5). Groups are ordered by their cheapest startable whole-cluster price,
// groups that cannot start last; offers inside a group by whole-cluster
// price, startable first. The rows come from the catalog snapshot
// (catalog.go); holds and freshness are applied per request.
func (s *Store) PickOffers(ctx context.Context, f OfferFilter) ([]OfferGroup, error) {
	p, err := s.PreparePick(ctx, f)
	if err != nil {
		return nil, err
	}
	return p.Groups(), nil
}

// offerKey is one picked offer as the picker sorts it: small, so sorting
// hundreds of offers moves pointers rather than whole rows.
type offerKey struct {
	offer     *Offer // the stored row, shared: never modified
	held      int    // machines clusters hold against it (stock.go)
	startable bool   // at the asked size, once the holds are taken
	price     Money  // whole cluster per hour at the asked size
	track     *TrackRecord
}

func newOfferKey(o *Offer, held, nodes int) offerKey {
	return offerKey{offer: o, held: held, startable: offerLess(*o, held).SellFor(nodes) == Startable, price: o.ClusterHour(nodes)}
}

// compareBy orders two offers by the filter's sort key: per GPU-hour first
// when asked, then whole cluster, then id (a total order, so answers with
// equal stamps are equal).
func (f *OfferFilter) compareBy(a, b *Offer, aPrice, bPrice Money, aTrack, bTrack *TrackRecord) int {
	if f.Sort == SortTrackRecord {
		if c := compareTrack(aTrack, bTrack); c != 0 {
			return c
		}
	}
	if f.Sort == SortGPUPrice {
		if c := cmp.Compare(a.PerGPUHour, b.PerGPUHour); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(aPrice, bPrice); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// matches is the picker's row filter: fresh at cutoff (O6), the asked shape
// (O3), community hosts only when asked (O5). The price ceiling is applied
// when grouping.
func (f *OfferFilter) matches(o *Offer, cutoff time.Time) bool {
	return !o.RefreshedAt.Before(cutoff) &&
		(f.Accelerator == "" || o.Accelerator == f.Accelerator) &&
		(f.Interconnect == "" || o.Interconnect == f.Interconnect) &&
		(f.MachineKind == "" || o.MachineKind == f.MachineKind) &&
		(f.GPUsPerNode == 0 || o.GPUsPerNode == f.GPUsPerNode) &&
		(f.IncludeCommunity || !o.Community) &&
		(f.Location == "" || o.Location == f.Location)
}

// GroupOffers applies the price ceiling, groups by location at f.Nodes and
// sorts (see PickOffers). It is pure, so the rules are tested without a DB.
func GroupOffers(offers []Offer, f OfferFilter) []OfferGroup {
	keys := make([]offerKey, len(offers))
	for i := range offers {
		keys[i] = newOfferKey(&offers[i], 0, f.Nodes)
	}
	return groupOffers(keys, f)
}

// groupOffers sorts keys (which it may reorder) and copies the offers, less
// their holds, into one slice the groups share.
func groupOffers(keys []offerKey, f OfferFilter) []OfferGroup {
	if f.MaxClusterHour > 0 {
		keys = slices.DeleteFunc(keys, func(k offerKey) bool { return k.price > f.MaxClusterHour })
	}
	slices.SortFunc(keys, func(a, b offerKey) int {
		if c := strings.Compare(a.offer.Location, b.offer.Location); c != 0 {
			return c
		}
		if a.startable != b.startable {
			if a.startable {
				return -1
			}
			return 1
		}
		return f.compareBy(a.offer, b.offer, a.price, b.price, a.track, b.track)
	})
	offers := make([]Offer, len(keys))
	for i, k := range keys {
		offers[i] = offerLess(*k.offer, k.held)
		offers[i].Track = k.track
	}
	var groups []OfferGroup
	for i := 0; i < len(offers); {
		j, first := i, i // first: the lowest id, whose location name the group shows
		for ; j < len(offers) && offers[j].Location == offers[i].Location; j++ {
			if offers[j].ID < offers[first].ID {
				first = j
			}
		}
		g := OfferGroup{Location: offers[i].Location, LocationName: offers[first].LocationName, Nodes: f.Nodes, Offers: offers[i:j:j]}
		if o := g.Offers[0]; o.SellFor(f.Nodes) == Startable {
			g.Cheapest = o.ClusterHour(f.Nodes)
		}
		groups = append(groups, g)
		i = j
	}
	// A group's first offer is its best startable one when it has any,
	// else its best one that needs a quote: groups are ordered by it.
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if (a.Cheapest > 0) != (b.Cheapest > 0) {
			return a.Cheapest > 0
		}
		if c := f.compareBy(&a.Offers[0], &b.Offers[0], a.Offers[0].ClusterHour(f.Nodes), b.Offers[0].ClusterHour(f.Nodes), a.Offers[0].Track, b.Offers[0].Track); c != 0 {
			return c < 0
		}
		return a.Location < b.Location
	})
	// The "Needs a quote" section's order: by each group's best row that
	// cannot start (the first after its startable ones).
	type quoteHead struct {
		group int
		best  *Offer
	}
	var heads []quoteHead
	for i := range groups {
		groups[i].QuoteRank = -1
		for k := range groups[i].Offers {
			if groups[i].Offers[k].SellFor(f.Nodes) != Startable {
				heads = append(heads, quoteHead{i, &groups[i].Offers[k]})
				break
			}
		}
	}
	sort.SliceStable(heads, func(i, j int) bool {
		a, b := heads[i].best, heads[j].best
		return f.compareBy(a, b, a.ClusterHour(f.Nodes), b.ClusterHour(f.Nodes), a.Track, b.Track) < 0
	})
	for r, h := range heads {
		groups[h.group].QuoteRank = r
	}
	if groups == nil {
		groups = []OfferGroup{}
	}
	return groups
}

// CatalogHealth summarises one provider's stored catalog (admin pages).
type CatalogHealth struct {
	Provider    string
	Offers      int
	RefreshedAt time.Time
}

// CatalogHealthByProvider reports each provider's row count and last refresh.
// The newest refresh is read per provider (there are few), because SQLite
// returns MAX() of a time column as text.
func (s *Store) CatalogHealthByProvider(ctx context.Context) ([]CatalogHealth, error) {
	var out []CatalogHealth
	err := s.db.WithContext(ctx).Model(&Offer{}).Select("provider, count(*) AS offers").
		Group("provider").Order("provider").Scan(&out).Error
	if err != nil {
		return nil, err
	}
	for i := range out {
		var newest Offer
		err := s.db.WithContext(ctx).Select("refreshed_at").Where("provider = ?", out[i].Provider).
			Order("refreshed_at DESC").Take(&newest).Error
		if err != nil {
			return nil, err
		}
		out[i].RefreshedAt = newest.RefreshedAt
	}
	return out, nil
}
