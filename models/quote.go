package models

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// QuoteTTL is how long a quote locks its price (Q2).
const QuoteTTL = 15 * time.Minute

// VolumeGBHour is the persistent volume rate in micro-dollars per GB-hour
// (about $0.10 per GB-month).
const VolumeGBHour Money = 137

// MaxVolumeGB bounds a persistent volume.
const MaxVolumeGB = 100_000

// ShapeQuery is a shape to price (Q1). Field problems use the API's names.
type ShapeQuery struct {
	Accelerator      string `json:"accelerator"`
	Nodes            int    `json:"nodes"`
	GPUsPerNode      int    `json:"gpusPerNode"`
	VolumeGB         int    `json:"persistentGb"`
	MaxHourlyPrice   Money  `json:"-"` // 0 = no ceiling
	Location         string `json:"location,omitempty"`
	OfferID          string `json:"offerId,omitempty"`
	IncludeCommunity bool   `json:"include_community"`
	PrivateOfferID   string `json:"privateOfferId,omitempty"` // X9: the organisation's private offer
	VolumeID         string `json:"volumeId,omitempty"`       // V2: mount this volume (pins its location)
}

// Validate returns field problems keyed by the API's JSON names.
func (r ShapeQuery) Validate() FieldErrors {
	fe := FieldErrors{}
	if !slices.Contains(Accelerators, r.Accelerator) {
		fe["accelerator"] = "choose one of " + strings.Join(Accelerators, ", ")
	}
	maxNodes := MaxNodes
	if r.PrivateOfferID != "" {
		maxNodes = CapacityMaxNodes // X18: a private offer's own size decides (privateOffer), not the self-serve bound
	}
	if r.Nodes < MinNodes || r.Nodes > maxNodes {
		fe["nodes"] = fmt.Sprintf("a cluster has %d to %d machines", MinNodes, maxNodes)
	}
	if r.GPUsPerNode < 1 || r.GPUsPerNode > 8 {
		fe["gpusPerNode"] = "1 to 8 GPUs per machine"
	}
	if r.VolumeGB < 0 || r.VolumeGB > MaxVolumeGB {
		fe["storage.persistentGb"] = fmt.Sprintf("0 to %d GB", MaxVolumeGB)
	}
	if r.MaxHourlyPrice < 0 {
		fe["maxHourlyPrice"] = "a ceiling cannot be negative"
	}
	return fe
}

// NoCapacityError is Q4: nothing fits the shape now.
type NoCapacityError struct {
	Reason string // no_location_with_n_nodes, above_max_hourly_price, gpus_per_node_unavailable, offer_not_found, not_in_stock, catalog_stale
	Shape  ShapeQuery
	Free   *int // not_in_stock: the machines the offer has free now
}

// NotInStockReason is a launch refused because other launches took the
// offer's counted machines since it was quoted (X12).
const NotInStockReason = "not_in_stock"

// CatalogStaleReason: the catalog holds offers for the shape, but none was
// refreshed within OfferFreshness (its provider did not answer lately, O6),
// so nothing can be sold until the next refresh; another shape is not the
// remedy (API2).
const CatalogStaleReason = "catalog_stale"

func (e *NoCapacityError) Error() string { return "no capacity: " + e.Reason }

// Advice is what the customer can change (Q4).
func (e *NoCapacityError) Advice() []string {
	switch e.Reason {
	case "gpus_per_node_unavailable":
		return []string{"Try another number of GPUs per machine (1, 2, 4 or 8).", "Try another location."}
	case "above_max_hourly_price":
		return []string{"Raise the price ceiling.", "Try fewer GPUs per machine.", "Try fewer machines."}
	case PrivateOfferDated:
		return []string{"This private offer starts on a date: book it as a reservation from its start (POST /v1/reservations with its privateOfferId)."}
	case PrivateOfferExpired:
		return []string{"This private offer has expired.", "Request a new quote for reserved capacity."}
	case "private_offer_shape":
		return []string{"Send the private offer's own accelerator, nodes and gpusPerNode."}
	case CatalogStaleReason:
		return []string{"Prices for this shape are being refreshed: its provider did not answer recently. Try again in a few minutes.",
			"If it persists, the provider may be unreachable; the operator's providers page shows its last refresh."}
	case NotInStockReason:
		return []string{"Other launches took these machines since the price was quoted.", "Try fewer machines.", "Try another offer or location.", "Request a quote for reserved capacity."}
	default:
		return []string{"Try fewer machines.", "Try fewer GPUs per machine.", "Try another location.", "Request a quote for reserved capacity."}
	}
}

// Quote locks a whole-cluster price for a shape on one offer (Q2).
type Quote struct {
	ID               string `gorm:"primaryKey;size:32"`
	OrgID            string `gorm:"size:32;index"`
	EnvID            string `gorm:"size:32"`
	OfferID          string `gorm:"size:191"`
	Provider         string `gorm:"size:64"`
	Location         string `gorm:"size:128"`
	LocationName     string `gorm:"size:191"`
	Accelerator      string `gorm:"size:64"`
	MachineKind      string `gorm:"size:32"`
	Interconnect     string `gorm:"size:32"`
	Community        bool
	Nodes            int
	GPUsPerNode      int   `gorm:"column:gpus_per_node"`
	VolumeGB         int   `gorm:"column:volume_gb"`
	PerGPUHour       Money `gorm:"column:per_gpu_hour"`
	RootDiskGB       int   `gorm:"column:root_disk_gb"`
	DiskGBHour       Money `gorm:"column:disk_gb_hour"`
	VolumeGBHour     Money `gorm:"column:volume_gb_hour"`
	USDPerHour       Money `gorm:"column:usd_per_hour"`
	MaxHourlyPrice   Money
	IncludeCommunity bool
	Availability     string `gorm:"size:32"`
	ExpiresAt        time.Time
	UsedByCluster    string `gorm:"size:32"`
	PrivateOfferID   string `gorm:"size:32"` // X9; added by 0601_private_offers
	VolumeID         string `gorm:"size:32"` // V2: the volume it mounts; added by 0760_volumes
	CreatedAt        time.Time
}

// Frozen copies of the tables as migration 0201 created them (see Migration:
// later model changes never rewrite history).
type (
	quoteV0201 struct {
		ID               string `gorm:"primaryKey;size:32"`
		OrgID            string `gorm:"size:32;index"`
		EnvID            string `gorm:"size:32"`
		OfferID          string `gorm:"size:191"`
		Provider         string `gorm:"size:64"`
		Location         string `gorm:"size:128"`
		LocationName     string `gorm:"size:191"`
		Accelerator      string `gorm:"size:64"`
		MachineKind      string `gorm:"size:32"`
		Interconnect     string `gorm:"size:32"`
		Community        bool
		Nodes            int
		GPUsPerNode      int   `gorm:"column:gpus_per_node"`
		VolumeGB         int   `gorm:"column:volume_gb"`
		PerGPUHour       int64 `gorm:"column:per_gpu_hour"`
		RootDiskGB       int   `gorm:"column:root_disk_gb"`
		DiskGBHour       int64 `gorm:"column:disk_gb_hour"`
		VolumeGBHour     int64 `gorm:"column:volume_gb_hour"`
		USDPerHour       int64 `gorm:"column:usd_per_hour"`
		MaxHourlyPrice   int64
		IncludeCommunity bool
		Availability     string `gorm:"size:32"`
		ExpiresAt        time.Time
		UsedByCluster    string `gorm:"size:32"`
		CreatedAt        time.Time
	}
)

func (quoteV0201) TableName() string { return "quotes" }

func up0201Quotes(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&quoteV0201{})
}

// LineItem is one part of a price (Q2): GPUs, root disks, volume.
type LineItem struct {
	Name       string `json:"name"`
	Quantity   string `json:"quantity"`
	USDPerHour Money  `json:"-"`
}

// Count is n and the noun, plural unless n is 1: "1 GPU", "8 GPUs".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// LineItems breaks the quote down; they add up to USDPerHour (Q3).
func (q Quote) LineItems() []LineItem {
	if q.PrivateOfferID != "" { // X9: one price per machine, root disk included
		items := []LineItem{{Name: "machines", Quantity: fmt.Sprintf("%d machines at $%s/machine-h, private offer %s (GPUs and root disk)",
			q.Nodes, DecimalUSD(q.MachineHour()), q.PrivateOfferID), USDPerHour: Money(q.Nodes) * q.MachineHour()}}
		if q.VolumeGB > 0 {
			items = append(items, LineItem{Name: "volume", Quantity: fmt.Sprintf("%d GB at $%s/GB-h", q.VolumeGB, DecimalUSD(q.VolumeGBHour)),
				USDPerHour: Money(q.VolumeGB) * q.VolumeGBHour})
		}
		return items
	}
	items := []LineItem{
		{Name: "gpus", Quantity: fmt.Sprintf("%d × %s at $%s/GPU-h", q.Nodes, Count(q.GPUsPerNode, "GPU"), DecimalUSD(q.PerGPUHour)),
			USDPerHour: Money(q.GPUsPerNode) * Money(q.Nodes) * q.PerGPUHour},
		{Name: "root_disks", Quantity: fmt.Sprintf("%d × %d GB at $%s/GB-h", q.Nodes, q.RootDiskGB, DecimalUSD(q.DiskGBHour)),
			USDPerHour: Money(q.RootDiskGB) * Money(q.Nodes) * q.DiskGBHour},
	}
	if q.VolumeGB > 0 {
		items = append(items, LineItem{Name: "volume", Quantity: fmt.Sprintf("%d GB at $%s/GB-h", q.VolumeGB, DecimalUSD(q.VolumeGBHour)),
			USDPerHour: Money(q.VolumeGB) * q.VolumeGBHour})
	}
	return items
}

// MachineHour is one machine's share of the price (GPUs and root disk).
func (q Quote) MachineHour() Money {
	return Money(q.GPUsPerNode)*q.PerGPUHour + Money(q.RootDiskGB)*q.DiskGBHour
}

// Expired reports whether the quote no longer locks its price.
func (q Quote) Expired(now time.Time) bool { return !now.Before(q.ExpiresAt) }

// Request is the shape the quote was made for, as priced fields (Q5).
func (q Quote) Request() ShapeQuery {
	return ShapeQuery{Accelerator: q.Accelerator, Nodes: q.Nodes, GPUsPerNode: q.GPUsPerNode, VolumeGB: q.VolumeGB,
		MaxHourlyPrice: q.MaxHourlyPrice, Location: q.Location, OfferID: q.OfferID, IncludeCommunity: q.IncludeCommunity,
		PrivateOfferID: q.PrivateOfferID, VolumeID: q.VolumeID}
}

// priceQuote computes Q3 for offer o at the request's shape.
func priceQuote(o Offer, r ShapeQuery) Money {
	return Money(r.GPUsPerNode)*Money(r.Nodes)*o.PerGPUHour + Money(o.RootDiskGB)*Money(r.Nodes)*o.DiskGBHour +
		Money(r.VolumeGB)*VolumeRate(o.Location)
}

func availability(o Offer) string {
	switch {
	case o.NodesAvailable == nil && o.Available:
		return "available"
	case o.NodesAvailable != nil && *o.NodesAvailable >= 16:
		return "high"
	case o.NodesAvailable != nil && *o.NodesAvailable > 0:
		return "low"
	}
	return "none"
}

// FitOffer picks the cheapest fresh offer for the request, or explains why
// none fits (Q1, Q4). It reads the stored catalog only (O6).
func (s *Store) FitOffer(ctx context.Context, r ShapeQuery) (Offer, error) {
	q := s.db.WithContext(ctx).Where("accelerator = ? AND refreshed_at >= ?", r.Accelerator, s.Now().Add(-OfferFreshness))
	if r.OfferID != "" {
		q = q.Where("id = ?", r.OfferID)
	}
	if r.Location != "" {
		q = q.Where("location = ?", r.Location)
	}
	if !r.IncludeCommunity || r.VolumeGB > 0 { // V5: no volume on community hosts
		q = q.Where("community = ?", false)
	}
	var offers []Offer
	if err := q.Order("id").Find(&offers).Error; err != nil {
		return Offer{}, fmt.Errorf("models: fit offer: %w", err)
	}
	offers, err := s.withHolds(ctx, offers)
	if err != nil {
		return Offer{}, err
	}
	if offers, err = s.customerPrices(ctx, offers); err != nil { // OP2: markup before the ceiling and the cheapest
		return Offer{}, err
	}
	if len(offers) == 0 && r.OfferID != "" {
		if stale, err := s.onlyStale(ctx, r); err != nil || stale {
			return Offer{}, staleOr(err, r)
		}
		return Offer{}, &NoCapacityError{Reason: "offer_not_found", Shape: r}
	}
	var withGPUs, sellable []Offer
	for _, o := range offers {
		if o.GPUsPerNode == r.GPUsPerNode {
			withGPUs = append(withGPUs, o)
		}
	}
	for _, o := range withGPUs {
		if o.SellFor(r.Nodes) == Startable {
			sellable = append(sellable, o)
		}
	}
	if len(withGPUs) == 0 {
		if stale, err := s.onlyStale(ctx, r); err != nil || stale {
			return Offer{}, staleOr(err, r)
		}
	}
	switch {
	case len(withGPUs) == 0:
		return Offer{}, &NoCapacityError{Reason: "gpus_per_node_unavailable", Shape: r}
	case len(sellable) == 0:
		return Offer{}, &NoCapacityError{Reason: "no_location_with_n_nodes", Shape: r}
	}
	best, found := Offer{}, false
	for _, o := range sellable {
		p := priceQuote(o, r)
		if r.MaxHourlyPrice > 0 && p > r.MaxHourlyPrice {
			continue
		}
		if !found || p < priceQuote(best, r) || (p == priceQuote(best, r) && o.ID < best.ID) {
			best, found = o, true
		}
	}
	if !found {
		return Offer{}, &NoCapacityError{Reason: "above_max_hourly_price", Shape: r}
	}
	return best, nil
}

// onlyStale reports whether the catalog holds an offer for r (its offer,
// or its accelerator at its GPUs per machine, location and community
// choice) that is too old to sell: the reason no fresh one fits is a
// refresh that has not happened, not the shape.
func (s *Store) onlyStale(ctx context.Context, r ShapeQuery) (bool, error) {
	q := s.db.WithContext(ctx).Model(&Offer{}).Where("accelerator = ? AND refreshed_at < ?", r.Accelerator, s.Now().Add(-OfferFreshness))
	if r.OfferID != "" {
		q = q.Where("id = ?", r.OfferID)
	} else {
		q = q.Where("gpus_per_node = ?", r.GPUsPerNode)
	}
	if r.Location != "" {
		q = q.Where("location = ?", r.Location)
	}
	if !r.IncludeCommunity || r.VolumeGB > 0 {
		q = q.Where("community = ?", false)
	}
	var ids []string
	if err := q.Limit(1).Pluck("id", &ids).Error; err != nil {
		return false, fmt.Errorf("models: stale offers: %w", err)
	}
	return len(ids) > 0, nil
}

// staleOr is err, or catalog_stale for r when err is nil.
func staleOr(err error, r ShapeQuery) error {
	if err != nil {
		return err
	}
	return &NoCapacityError{Reason: CatalogStaleReason, Shape: r}
}

// quoteOffer is the offer a quote of the organisation prices r on, at the
// rates the customer pays: its private offer's (X9), or the cheapest fitting
// catalog offer with its provider's markup (OP2).
func (s *Store) quoteOffer(ctx context.Context, orgID string, r ShapeQuery) (Offer, error) {
	if r.PrivateOfferID != "" {
		return s.privateOffer(ctx, orgID, r)
	}
	return s.FitOffer(ctx, r)
}

// CreateQuote prices the request on the cheapest fitting offer and locks it
// for QuoteTTL (Q2).
func (s *Store) CreateQuote(ctx context.Context, orgID, envID string, r ShapeQuery) (Quote, error) {
	if fe := r.Validate(); len(fe) > 0 {
		return Quote{}, fe
	}
	if err := s.pinVolume(ctx, orgID, envID, &r); err != nil {
		return Quote{}, err
	}
	if err := s.refuseCommunityVolume(ctx, r); err != nil {
		return Quote{}, err
	}
	o, err := s.quoteOffer(ctx, orgID, r)
	if err != nil {
		return Quote{}, err
	}
	now := s.Now()
	expires := now.Add(QuoteTTL)
	if until, err := s.privateValidUntil(ctx, orgID, r); err != nil {
		return Quote{}, err
	} else if !until.IsZero() && until.Before(expires) {
		expires = until // a private offer's price is locked until its day ends, never past it
	}
	q := Quote{
		ID: NewID("qt"), OrgID: orgID, EnvID: envID, OfferID: o.ID, Provider: o.Provider, Location: o.Location,
		LocationName: o.LocationName, Accelerator: o.Accelerator, MachineKind: o.MachineKind, Interconnect: o.Interconnect,
		Community: o.Community, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, VolumeGB: r.VolumeGB,
		PerGPUHour: o.PerGPUHour, RootDiskGB: o.RootDiskGB, DiskGBHour: o.DiskGBHour, VolumeGBHour: VolumeRate(o.Location),
		USDPerHour: priceQuote(o, r), MaxHourlyPrice: r.MaxHourlyPrice, IncludeCommunity: r.IncludeCommunity,
		Availability: availability(o), ExpiresAt: expires, PrivateOfferID: r.PrivateOfferID, VolumeID: r.VolumeID, CreatedAt: now,
	}
	if err := s.db.WithContext(ctx).Create(&q).Error; err != nil {
		return Quote{}, fmt.Errorf("models: create quote: %w", err)
	}
	return q, nil
}

// QuoteForOrg loads a quote through its organisation.
func (s *Store) QuoteForOrg(ctx context.Context, orgID, id string) (Quote, error) {
	var q Quote
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&q).Error
	return q, notFound(err, "quote "+id)
}
