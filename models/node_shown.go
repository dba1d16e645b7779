package models

import (
	"context"
	"errors"
	"github.com/clusterdeck/clusterdeck/models/domain"

	"gorm.io/gorm"
)

// ShownNodeStatus is the status the page and the API show for node n of
// cluster c (L8): decided by domain.ShownNodeStatus.
func ShownNodeStatus(c Cluster, n ClusterNode) NodeStatus {
	return domain.ShownNodeStatus(c.Lifecycle(), domain.NodeStep{Status: n.Status, Step: n.Step})
}

// SoftwareRunStarted returns the organisation's cluster's software run, or
// nil when none started yet; unlike SoftwareRunFor it never starts one, so
// a page may read it (L11).
func (s *Store) SoftwareRunStarted(ctx context.Context, orgID, clusterID string) (*SoftwareRun, error) {
	var run SoftwareRun
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND org_id = ?", clusterID, orgID).Take(&run).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &run, nil
}
