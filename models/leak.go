package models

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// ProviderLeak is a machine of a failed or terminated cluster that its
// provider still had (X10): found by the reconcile job, released by it,
// listed for operators. No ledger entry is ever made for it.
type ProviderLeak struct {
	ID         int64 `gorm:"primaryKey;autoIncrement"`
	ClusterID  string
	OrgID      string
	Provider   string
	GroupName  string
	NodeID     string
	State      string // what the provider reported
	FoundAt    time.Time
	ReleasedAt *time.Time
}

// ClustersToReconcile is one batch of ended clusters whose machines are not
// yet proven gone, by id after afterID.
func (s *Store) ClustersToReconcile(ctx context.Context, afterID string, limit int) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("status IN ? AND reconciled_at IS NULL AND placed_at IS NOT NULL AND id > ?",
		[]ClusterStatus{StatusFailed, StatusTerminated}, afterID).Order("id").Limit(limit).Find(&out).Error
	return out, err
}

// RecordLeaks lists machines found still there; one found again is not listed twice.
func (s *Store) RecordLeaks(ctx context.Context, leaks []ProviderLeak) error {
	if len(leaks) == 0 {
		return nil
	}
	for i := range leaks {
		leaks[i].FoundAt = s.Now()
	}
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&leaks).Error
}

// MarkLeaksReleased records that the provider accepted the release of a
// cluster's leaked machines.
func (s *Store) MarkLeaksReleased(ctx context.Context, clusterID string) error {
	return s.db.WithContext(ctx).Model(&ProviderLeak{}).Where("cluster_id = ? AND released_at IS NULL", clusterID).
		Update("released_at", s.Now()).Error
}

// MarkReconciled records that every machine of the clusters is proven gone.
func (s *Store) MarkReconciled(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Model(&Cluster{}).Where("id IN ?", ids).Update("reconciled_at", s.Now()).Error
}

// Leaks lists every leak found, newest first (operators).
func (s *Store) Leaks(ctx context.Context) ([]ProviderLeak, error) {
	var out []ProviderLeak
	err := s.db.WithContext(ctx).Order("found_at DESC, id DESC").Limit(1000).Find(&out).Error
	return out, err
}
