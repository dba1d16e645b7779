package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// GPU check at step (b) (L4): when a node's agent checks in it
// sends what nvidia-smi shows (nodespec.GPUQuery). The server reads it
// against the offer — GPUsPerNode GPUs of the cluster's accelerator — and
// keeps the verdict here; a node that does not have what was paid for is a
// node failure, which the provision job turns into the cluster's failure.

// NodeGPUCheck is one node's GPUs as its agent reported them.
type NodeGPUCheck struct {
	ClusterID string `gorm:"primaryKey;size:32"`
	Rank      int    `gorm:"primaryKey;autoIncrement:false"`
	OrgID     string `gorm:"size:32;index"`
	Node      string `gorm:"size:32"`
	Summary   string `gorm:"size:255"`  // what nvidia-smi showed, "8 × NVIDIA H100 80GB HBM3 (81559 MiB), driver 550.90.07"
	Mismatch  string `gorm:"size:1000"` // how it differs from the offer; "" when it matches
	CheckedAt time.Time
	// GPUIndexes are the indexes its first nvidia-smi listed ("0,1,2,3"),
	// fixed at registration (X19): the only GPUs its reports may name.
	// "" when nvidia-smi could not be read (MachineGPUs falls back to the offer's).
	GPUIndexes string `gorm:"column:gpu_indexes;size:400;not null;default:''"`
}

// TableName keeps the table name short and explicit.
func (NodeGPUCheck) TableName() string { return "node_gpu_checks" }

// nodeGPUCheck0220 is the table as migration 0220 created it.
type nodeGPUCheck0220 struct {
	ClusterID string `gorm:"primaryKey;size:32"`
	Rank      int    `gorm:"primaryKey;autoIncrement:false"`
	OrgID     string `gorm:"size:32;index"`
	Node      string `gorm:"size:32"`
	Summary   string `gorm:"size:255"`
	Mismatch  string `gorm:"size:1000"`
	CheckedAt time.Time
}

func (nodeGPUCheck0220) TableName() string { return "node_gpu_checks" }

func up0220NodeGpuChecks(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&nodeGPUCheck0220{})
}

// checkNodeGPUs reads what node n's nvidia-smi printed against the
// cluster's offer and keeps the verdict (a later check-in replaces it). A
// mismatch is an error event on the node and its message. It returns the
// mismatch, "" when the GPUs are what the offer promises.
func (s *Store) checkNodeGPUs(ctx context.Context, c Cluster, n ClusterNode, smi string) (string, error) {
	summary, err := nodespec.CheckNodeGPUs(smi, c.Accelerator, c.GPUsPerNode)
	check := NodeGPUCheck{ClusterID: c.ID, Rank: n.Rank, OrgID: c.OrgID, Node: n.Name,
		Summary: truncate(summary, 255), CheckedAt: s.Now(), GPUIndexes: smiIndexes(smi, c.GPUsPerNode)}
	if err != nil {
		check.Mismatch = truncate(fmt.Sprintf("%s does not have the GPUs of its offer: %v.", n.Name, err), 1000)
	}
	// The GPUs are fixed at the machine's first check-in (X19): a later
	// one (an agent restarted while the cluster starts) keeps them; a
	// replacement machine starts afresh (forgetGPUMachine clears them).
	set := clause.AssignmentColumns([]string{"summary", "mismatch", "checked_at"})
	set = append(set, clause.Assignment{Column: clause.Column{Name: "gpu_indexes"},
		Value: gorm.Expr("CASE WHEN node_gpu_checks.gpu_indexes = '' THEN excluded.gpu_indexes ELSE node_gpu_checks.gpu_indexes END")})
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "cluster_id"}, {Name: "rank"}},
		DoUpdates: set,
	}).Create(&check).Error; err != nil {
		return "", err
	}
	if check.Mismatch == "" {
		return "", nil
	}
	if err := s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).Update("message", check.Mismatch).Error; err != nil {
		return "", err
	}
	return check.Mismatch, s.addEvent(ctx, c, c.Status, "error", n.Name, StepAgent, check.Mismatch)
}

// GPUChecks lists a cluster's GPU checks by rank, through its organisation.
func (s *Store) GPUChecks(ctx context.Context, orgID, clusterID string) ([]NodeGPUCheck, error) {
	var out []NodeGPUCheck
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).Order("rank").Find(&out).Error
	return out, err
}

// GPUMismatch returns the lowest-ranked node whose GPUs do not match the
// offer, if any (the provision job fails the cluster with it).
func (s *Store) GPUMismatch(ctx context.Context, clusterID string) (*NodeGPUCheck, error) {
	var out []NodeGPUCheck
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND mismatch <> ?", clusterID, "").Order("rank").Limit(1).Find(&out).Error
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}
