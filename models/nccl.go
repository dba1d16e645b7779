package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// The NCCL check (X4): once a cluster is ready, node-0's agent runs the
// all-reduce test the connections panel shows (nodespec NCCLAllReduce)
// across every GPU, once. Its bus bandwidth is kept on the cluster beside
// what the offer's interconnect advertises, with a warning when it is far
// below (nodespec.ReadAllReduce).

// NCCL check statuses.
const (
	NCCLPending  = "pending"  // planned, not yet handed to node-0
	NCCLSent     = "sent"     // handed to node-0's agent, no result yet
	NCCLMeasured = "measured" // the test ran and its output was read
	NCCLFailed   = "failed"   // the test failed or its output could not be read
)

// NCCLTaskLease is how long a handed-out check may stay unanswered before
// it is handed out again (8 GB messages on a large cluster take minutes).
const NCCLTaskLease = 30 * time.Minute

// NCCLCheck is a cluster's NCCL check and what it measured.
type NCCLCheck struct {
	ClusterID      string  `gorm:"primaryKey;size:32"`
	OrgID          string  `gorm:"size:32;index"`
	TaskID         string  `gorm:"size:32;uniqueIndex"` // the agent's task id, "nc_…"
	Status         string  `gorm:"size:16"`
	Script         string  `gorm:"type:text"`
	Output         string  `gorm:"type:text"`              // bounded, see MaxCheckOutput
	BusBW          float64 `gorm:"column:bus_bw"`          // GB/s at the largest message size
	ExpectedBusBW  float64 `gorm:"column:expected_bus_bw"` // GB/s the advertised interconnect allows
	AdvertisedGbps int     `gorm:"column:advertised_gbps"` // per node
	Percent        int     // BusBW as a share of ExpectedBusBW
	Warning        string  `gorm:"size:1000"`
	Summary        string  `gorm:"size:1000"`
	CreatedAt      time.Time
	SentAt         *time.Time
	FinishedAt     *time.Time
}

// TableName keeps the table name short and explicit.
func (NCCLCheck) TableName() string { return "cluster_nccl_checks" }

// nccl0221 is the table as migration 0221 created it.
type nccl0221 struct {
	ClusterID      string  `gorm:"primaryKey;size:32"`
	OrgID          string  `gorm:"size:32;index"`
	TaskID         string  `gorm:"size:32;uniqueIndex"`
	Status         string  `gorm:"size:16"`
	Script         string  `gorm:"type:text"`
	Output         string  `gorm:"type:text"`
	BusBW          float64 `gorm:"column:bus_bw"`
	ExpectedBusBW  float64 `gorm:"column:expected_bus_bw"`
	AdvertisedGbps int     `gorm:"column:advertised_gbps"`
	Percent        int
	Warning        string `gorm:"size:1000"`
	Summary        string `gorm:"size:1000"`
	CreatedAt      time.Time
	SentAt         *time.Time
	FinishedAt     *time.Time
}

func (nccl0221) TableName() string { return "cluster_nccl_checks" }

func up0221ClusterNcclChecks(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&nccl0221{})
}

// PlanNCCLCheck plans a ready cluster's NCCL check, once: a cluster that
// has one already keeps it. ErrConflict when the cluster is not ready.
func (s *Store) PlanNCCLCheck(ctx context.Context, c Cluster, script string) error {
	return s.Tx(ctx, func(tx *Store) error {
		cur, err := tx.ClusterByID(ctx, c.ID)
		if err != nil {
			return err
		}
		if cur.Status != StatusReady || cur.TerminateRequestedAt != nil {
			return fmt.Errorf("models: cluster %s is %s, not ready: %w", c.ID, cur.Status, ErrConflict)
		}
		check := NCCLCheck{ClusterID: c.ID, OrgID: c.OrgID, TaskID: NewID("nc"), Status: NCCLPending,
			Script: script, CreatedAt: tx.Now()}
		res := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&check)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return tx.addEvent(ctx, cur, cur.Status, "info", "node-0", "", fmt.Sprintf(
			"NCCL check planned: node-0 runs an all-reduce across all %d GPUs to measure the interconnect.", cur.Nodes*cur.GPUsPerNode))
	})
}

// ClustersAwaitingNCCL lists ready clusters, not being terminated, whose
// NCCL check was never planned: one query, however many clusters are ready.
func (s *Store) ClustersAwaitingNCCL(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("status = ? AND terminate_requested_at IS NULL", StatusReady).
		Where("NOT EXISTS (SELECT 1 FROM cluster_nccl_checks n WHERE n.cluster_id = clusters.id)").
		Order("created_at, id").Find(&out).Error
	return out, err
}

// NCCLCheckFor returns the cluster's NCCL check, through its organisation;
// nil when none was planned.
func (s *Store) NCCLCheckFor(ctx context.Context, orgID, clusterID string) (*NCCLCheck, error) {
	var out []NCCLCheck
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).Limit(1).Find(&out).Error
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// NextNCCLTask hands node-0 of a ready cluster its NCCL check and marks it
// sent: a pending one, or one handed out more than NCCLTaskLease ago and
// never answered. nil for other nodes, other statuses and no check.
func (s *Store) NextNCCLTask(ctx context.Context, c Cluster, n ClusterNode) (*NCCLCheck, error) {
	if c.Status != StatusReady || n.Rank != 0 {
		return nil, nil
	}
	now := s.Now()
	due := s.db.Where("status = ?", NCCLPending).Or("status = ? AND sent_at < ?", NCCLSent, now.Add(-NCCLTaskLease))
	var check NCCLCheck
	err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Where(due).Take(&check).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res := s.db.WithContext(ctx).Model(&NCCLCheck{}).Where("cluster_id = ?", c.ID).Where(due).
		Updates(map[string]any{"status": NCCLSent, "sent_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, res.Error // handed out meanwhile
	}
	check.Status, check.SentAt = NCCLSent, &now
	return &check, nil
}

// IsNCCLTask reports whether an agent's task id is an NCCL check's.
func IsNCCLTask(taskID string) bool { return strings.HasPrefix(taskID, "nc_") }

// RecordNCCLResult stores what node-0's agent reported for the NCCL check
// and reads it against the interconnect. Only node-0 of that cluster may
// answer (ErrNotFound otherwise); an answered check changes nothing. The
// measurement, or why there is none, is an event.
func (s *Store) RecordNCCLResult(ctx context.Context, c Cluster, n ClusterNode, taskID string, ok bool, output string) (NCCLCheck, error) {
	var out NCCLCheck
	err := s.Tx(ctx, func(tx *Store) error {
		err := tx.db.WithContext(ctx).Where("task_id = ? AND cluster_id = ?", taskID, c.ID).Take(&out).Error
		if err != nil || n.Rank != 0 {
			return notFound(orNotFound(err), "task "+taskID)
		}
		if out.Status == NCCLMeasured || out.Status == NCCLFailed {
			return nil
		}
		nodes, err := tx.NodesFor(ctx, c.ID)
		if err != nil {
			return err
		}
		spec := ClusterSpec(c, nodes, Offer{})
		out.Output = tailBytes(cleanOutput(output), MaxCheckOutput)
		now := tx.Now()
		out.FinishedAt = &now
		reading, rerr := spec.ReadAllReduce(out.Output)
		kind := "info"
		switch {
		case !ok || rerr != nil:
			why := "the test failed"
			if rerr != nil {
				why = rerr.Error()
			}
			out.Status, kind = NCCLFailed, "error"
			out.Summary = truncate(fmt.Sprintf("The NCCL check did not measure the interconnect: %s. Output:\n%s", why, tailBytes(out.Output, 600)), 1000)
		default:
			out.Status = NCCLMeasured
			out.BusBW, out.ExpectedBusBW, out.AdvertisedGbps = reading.BusBW, reading.ExpectedBusBW, reading.AdvertisedGbps
			out.Percent, out.Warning = reading.Percent, truncate(reading.Warning, 1000)
			out.Summary = truncate(fmt.Sprintf("NCCL all-reduce across %d GPUs: %s GB/s bus bandwidth, %d %% of the %s GB/s that %d × %d Gbit/s NICs per node allow (%s).",
				spec.WorldSize(), nodespec.GBps(out.BusBW), out.Percent, nodespec.GBps(out.ExpectedBusBW), spec.NICs, spec.NICGbps, c.Interconnect), 1000)
			if spec.Overlay() {
				out.Summary = truncate(fmt.Sprintf("NCCL all-reduce across %d GPUs: %s GB/s bus bandwidth on the encrypted overlay (its floor: %s GB/s).",
					spec.WorldSize(), nodespec.GBps(out.BusBW), nodespec.GBps(nodespec.OverlayFloorGBps)), 1000)
			}
			if out.Warning != "" {
				out.Summary = truncate(out.Summary+" "+out.Warning, 1000)
			}
		}
		res := tx.db.WithContext(ctx).Model(&NCCLCheck{}).Where("cluster_id = ? AND status IN ?", c.ID, []string{NCCLPending, NCCLSent}).
			Updates(map[string]any{"status": out.Status, "output": out.Output, "bus_bw": out.BusBW, "expected_bus_bw": out.ExpectedBusBW,
				"advertised_gbps": out.AdvertisedGbps, "percent": out.Percent, "warning": out.Warning, "summary": out.Summary, "finished_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 { // answered meanwhile
			return tx.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&out).Error
		}
		return tx.addEvent(ctx, c, c.Status, kind, n.Name, "", out.Summary)
	})
	return out, err
}

func orNotFound(err error) error {
	if err == nil {
		return gorm.ErrRecordNotFound
	}
	return err
}
