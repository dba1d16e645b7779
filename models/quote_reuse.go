package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// QuotePruneAfter is how long an expired, unused quote is kept: long enough
// for a late launch to be told "price_changed: expired" with the old quote
// (Q5), short enough that reloading a launch page cannot grow the table.
const QuotePruneAfter = 24 * time.Hour

// ReuseQuote is CreateQuote for callers that price the same thing again and
// again (the launch page, launches straight from an offer): an unused quote
// of the organisation and environment for the same offer, shape and price
// with at least half its lock left is returned as it is; otherwise the
// organisation's long-expired unused quotes are pruned and a new one is made
// (X12: viewing a launch page does not grow the quotes table).
func (s *Store) ReuseQuote(ctx context.Context, orgID, envID string, r ShapeQuery) (Quote, error) {
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
	var q Quote
	err = s.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND offer_id = ? AND used_by_cluster = ? AND expires_at > ?",
		orgID, envID, o.ID, "", now.Add(QuoteTTL/2)).
		Where("nodes = ? AND gpus_per_node = ? AND volume_gb = ? AND max_hourly_price = ? AND include_community = ? AND private_offer_id = ? AND volume_id = ?",
			r.Nodes, r.GPUsPerNode, r.VolumeGB, r.MaxHourlyPrice, r.IncludeCommunity, r.PrivateOfferID, r.VolumeID).
		Where("usd_per_hour = ? AND per_gpu_hour = ? AND disk_gb_hour = ? AND root_disk_gb = ?",
			priceQuote(o, r), o.PerGPUHour, o.DiskGBHour, o.RootDiskGB).
		Order("expires_at DESC").Take(&q).Error
	if err == nil {
		return q, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return Quote{}, fmt.Errorf("models: reuse quote: %w", err)
	}
	if _, err := s.pruneQuotes(ctx, orgID); err != nil {
		return Quote{}, err
	}
	return s.CreateQuote(ctx, orgID, envID, r)
}

// PruneQuotes deletes every organisation's unused quotes that expired more
// than QuotePruneAfter ago (the login-throttle-prune job runs it hourly).
func (s *Store) PruneQuotes(ctx context.Context) (int64, error) { return s.pruneQuotes(ctx, "") }

func (s *Store) pruneQuotes(ctx context.Context, orgID string) (int64, error) {
	q := s.db.WithContext(ctx).Where("used_by_cluster = ? AND expires_at < ?", "", s.Now().Add(-QuotePruneAfter))
	if orgID != "" {
		q = q.Where("org_id = ?", orgID)
	}
	res := q.Delete(&Quote{})
	if res.Error != nil {
		return 0, fmt.Errorf("models: prune quotes: %w", res.Error)
	}
	return res.RowsAffected, nil
}
