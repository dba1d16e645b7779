package models

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"
)

// Counted stock (O2). A counted offer stores what its provider
// reported free at RefreshedAt, and a provider's count already leaves out
// the machines it has placed. So a cluster holds machines against the stored
// count from its launch until they are released, except when they were
// placed before the refresh (the count already left them out). Launches,
// quotes and the picker subtract what clusters hold; the catalog job stamps
// RefreshedAt before it asks the provider, so a placement racing a refresh is
// counted twice for one refresh at most, never missed. Yes/no stock (no
// count) is not counted.

// heldClause selects the clusters holding machines against their offer's
// stored count; the query joins offers.
const heldClause = "clusters.released_at IS NULL AND (clusters.placed_at IS NULL OR clusters.placed_at >= offers.refreshed_at)"

// heldMachines sums, per counted offer, the machines clusters hold against
// its stored count; offerID "" means every offer.
func (s *Store) heldMachines(ctx context.Context, offerID string) (map[string]int, error) {
	var rows []struct {
		OfferID string
		Held    int
	}
	q := s.db.WithContext(ctx).Table("clusters").
		Select("clusters.offer_id AS offer_id, COALESCE(SUM(clusters.nodes), 0) AS held").
		Joins("JOIN offers ON offers.id = clusters.offer_id").
		Where("offers.nodes_available IS NOT NULL AND " + heldClause)
	if offerID != "" {
		q = q.Where("clusters.offer_id = ?", offerID)
	}
	if err := q.Group("clusters.offer_id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("models: held machines: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.OfferID] = r.Held
	}
	return out, nil
}

// withHolds turns stored counts into what can start now: each counted
// offer's count less what clusters hold against it.
func (s *Store) withHolds(ctx context.Context, offers []Offer) ([]Offer, error) {
	held, err := s.heldMachines(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range offers {
		offers[i] = offerLess(offers[i], held[offers[i].ID])
	}
	return offers, nil
}

// less is the offer with n of its counted machines taken.
func offerLess(o Offer, n int) Offer {
	if o.NodesAvailable == nil || n == 0 {
		return o
	}
	free := max(0, *o.NodesAvailable-n)
	o.NodesAvailable = &free
	o.Available = free > 0
	return o
}

// reserveStock checks, inside a launch's transaction, that q's offer still
// has q.Nodes machines free once every cluster's hold is subtracted; the new
// cluster then holds them by existing. The offer's row is locked on
// PostgreSQL so launches of every organisation against it queue; SQLite's
// immediate transactions already serialise writers. It refuses with
// not_in_stock and changes nothing when they do not fit.
func (s *Store) reserveStock(ctx context.Context, q Quote) (Offer, error) {
	db := s.db.WithContext(ctx)
	if s.IsPostgres() {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var o Offer
	if err := db.Where("id = ?", q.OfferID).Take(&o).Error; err != nil {
		return o, fmt.Errorf("models: the quote's offer is gone: %w", notFound(err, "offer "+q.OfferID))
	}
	if o.NodesAvailable == nil {
		return o, nil
	}
	held, err := s.heldMachines(ctx, o.ID)
	if err != nil {
		return o, err
	}
	free := offerLess(o, held[o.ID])
	if CapacitySource(o) == SourceHeld { // X18: held machines booked ahead are not for on-demand launches
		peak, err := s.bookedPeak(ctx, o.ID)
		if err != nil {
			return o, err
		}
		free = offerLess(free, peak)
	}
	if *free.NodesAvailable < q.Nodes {
		return o, &NoCapacityError{Reason: NotInStockReason, Shape: q.Request(), Free: free.NodesAvailable}
	}
	return o, nil
}
