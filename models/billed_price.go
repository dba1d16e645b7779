package models

import (
	"context"

	"gorm.io/gorm"
)

// The price a cloud bills is checked after create (OP1, Q2): the adapters
// report each machine's price where the cloud's API says it (RunPod's pod
// cost, Lambda's instance type price, Shadeform's hourly price), and the
// provision job records the highest on the cluster. Above the cost the
// cluster was launched at (its offer's machine-hour at the provider, before
// markup), the cluster is marked once, every operator is mailed, it is
// listed on /admin/prices and counted by a metric. The customer pays the
// locked price whatever the cloud bills: USDPerHour never changes.

// PriceAbove is a cluster whose cloud bills more than its launch cost, for
// operators.
type PriceAbove struct {
	Cluster Cluster
	OrgName string
}

// BilledAbove reports whether the cloud bills more than the cluster's
// launch cost.
func (c Cluster) BilledAbove() bool {
	return c.UpstreamMachineHour > 0 && c.BilledMachineHour > c.UpstreamMachineHour
}

// RecordBilledPrice records billed, the highest machine-hour the cloud
// says it bills for the cluster's machines (micro-dollars), when it is
// higher than what was recorded. The first time it is above the launch
// cost the cluster is marked (PriceAboveAt) and every operator is mailed,
// in the same transaction; above reports that first time.
func (s *Store) RecordBilledPrice(ctx context.Context, c Cluster, billed Money) (above bool, err error) {
	if billed <= 0 || billed <= c.BilledMachineHour {
		return false, nil
	}
	err = s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ? AND billed_machine_hour < ?", c.ID, billed).
			Update("billed_machine_hour", billed)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if c.UpstreamMachineHour <= 0 || billed <= c.UpstreamMachineHour {
			return nil
		}
		now := tx.Now()
		res = tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ? AND price_above_at IS NULL", c.ID).Update("price_above_at", now)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		above = true
		var ops []User
		if err := tx.db.WithContext(ctx).Where("is_operator = ?", true).Order("id").Find(&ops).Error; err != nil {
			return err
		}
		mail := PriceAboveMail{Provider: c.Provider, ClusterID: c.ID, OrgID: c.OrgID, Nodes: c.Nodes, OfferID: c.OfferID,
			Billed: billed, Upstream: c.UpstreamMachineHour, Locked: c.MachineHour}
		for _, u := range ops {
			if err := tx.Notify(ctx, "price-above:"+c.ID+":"+u.ID, u.Email, mail); err != nil {
				return err
			}
		}
		return nil
	})
	return above, err
}

// PricesAbove lists the clusters whose cloud bills above their launch
// cost, newest first (operators).
func (s *Store) PricesAbove(ctx context.Context) ([]PriceAbove, error) {
	var cs []Cluster
	if err := s.db.WithContext(ctx).Where("price_above_at IS NOT NULL").Order("price_above_at DESC, id").Limit(500).Find(&cs).Error; err != nil {
		return nil, err
	}
	out := make([]PriceAbove, 0, len(cs))
	names := map[string]string{}
	for _, c := range cs {
		if _, ok := names[c.OrgID]; !ok {
			var o Org
			if err := s.db.WithContext(ctx).Where("id = ?", c.OrgID).Take(&o).Error; err != nil && err != gorm.ErrRecordNotFound {
				return nil, err
			}
			names[c.OrgID] = o.Name
		}
		out = append(out, PriceAbove{Cluster: c, OrgName: names[c.OrgID]})
	}
	return out, nil
}

// LiveBilledAbove counts the clusters not ended whose cloud bills above
// their launch cost (the alarm's metric).
func (s *Store) LiveBilledAbove(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&Cluster{}).Where("price_above_at IS NOT NULL AND status NOT IN ?",
		[]ClusterStatus{StatusFailed, StatusTerminated}).Count(&n).Error
	return n, err
}

func up1010ClusterBilledPrice(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"ALTER TABLE clusters ADD COLUMN upstream_machine_hour bigint NOT NULL DEFAULT 0",
		"ALTER TABLE clusters ADD COLUMN billed_machine_hour bigint NOT NULL DEFAULT 0",
		"ALTER TABLE clusters ADD COLUMN price_above_at " + ts,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
