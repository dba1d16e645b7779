package models

import (
	"context"
	"fmt"
	"time"
)

// BalanceFigure is B8's one balance of an organisation: the written ledger
// and the usage still accumulating in open periods (owed already, written
// at the next metering pass). Every place that shows or uses the balance —
// the header, the billing page, hours remaining, the run-out, budgets,
// admission, enforcement and GET /v1/billing/balance — reads it from
// CurrentBalance and uses Balance(), showing Accruing beside it.
type BalanceFigure struct {
	Written  Money // the sum of the ledger's completed entries
	Accruing Money // usage of open periods, clusters' machines and volumes: not yet written
}

// Balance is the figure: the written ledger less what is accumulating.
func (f BalanceFigure) Balance() Money { return f.Written - f.Accruing }

// CurrentBalance is the organisation's balance at the store's now (B8),
// in at most five queries whatever its number of clusters and volumes.
func (s *Store) CurrentBalance(ctx context.Context, orgID string) (BalanceFigure, error) {
	var f BalanceFigure
	var err error
	if f.Written, err = s.Balance(ctx, orgID); err != nil {
		return f, err
	}
	f.Accruing, err = s.accruing(ctx, orgID, s.Now())
	return f, err
}

// accruing is what the organisation's open periods have run up at now:
// each machine of every cluster with unwritten billed time, from its mark
// (as the metering pass will write it, the same cumulative rounding), and
// each volume not deleted from its own mark.
func (s *Store) accruing(ctx context.Context, orgID string, now time.Time) (Money, error) {
	db := s.db.WithContext(ctx)
	var cs []Cluster
	err := db.Model(&Cluster{}).Joins("LEFT JOIN usage_marks m ON m.cluster_id = clusters.id").
		Where("clusters.org_id = ? AND clusters.ready_at IS NOT NULL", orgID).
		Where("COALESCE(clusters.stopped_at, clusters.released_at) IS NULL OR m.billed_until IS NULL OR " +
			"m.billed_until < COALESCE(clusters.stopped_at, clusters.released_at)").
		Order("clusters.id").Find(&cs).Error
	if err != nil {
		return 0, fmt.Errorf("models: accruing clusters of %s: %w", orgID, err)
	}
	var sum Money
	if len(cs) > 0 {
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		var marks []UsageMark
		if err := db.Where("cluster_id IN ?", ids).Find(&marks).Error; err != nil {
			return 0, fmt.Errorf("models: accruing marks of %s: %w", orgID, err)
		}
		markOf := map[string]*time.Time{}
		for i := range marks {
			markOf[marks[i].ClusterID] = &marks[i].BilledUntil
		}
		machines, err := s.machinesOf(ctx, ids)
		if err != nil {
			return 0, err
		}
		for _, c := range cs {
			for _, n := range machines[c.ID] {
				_, acc := accumulating(c, n.Gaps, markOf[c.ID], now)
				sum += acc
			}
		}
	}
	var vs []Volume
	if err := db.Where("org_id = ? AND deleted_at IS NULL", orgID).Find(&vs).Error; err != nil {
		return 0, fmt.Errorf("models: accruing volumes of %s: %w", orgID, err)
	}
	for _, v := range vs {
		_, acc := volumeOpen(v, now)
		sum += acc
	}
	return sum, nil
}
