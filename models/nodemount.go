package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The mounts step (V4): once the cluster is ready every node's agent
// mounts /shared and, on node-0, the volume, beside its loop, and reports
// the step's state with each heartbeat (mounting, mounted, or failed with
// its reason). The last state per node is kept here; each end is an event.

// Mounts step states (as the agent reports them).
const (
	MountsMounting = "mounting"
	MountsMounted  = "mounted"
	MountsFailed   = "failed"
)

// NodeMount is the state of one node's mounts step in its current boot.
type NodeMount struct {
	ClusterID  string `gorm:"primaryKey;size:32"`
	Rank       int    `gorm:"primaryKey;autoIncrement:false"`
	OrgID      string `gorm:"size:32;index"`
	Node       string `gorm:"size:32"`
	State      string `gorm:"size:16"`
	StartedAt  time.Time
	EndedAt    *time.Time
	Error      string `gorm:"size:1000"`
	ReportedAt time.Time
}

// TableName keeps the table name short and explicit.
func (NodeMount) TableName() string { return "node_mounts" }

func up0761NodeMounts(tx *gorm.DB) error {
	type nodeMount struct {
		ClusterID  string `gorm:"primaryKey;size:32"`
		Rank       int    `gorm:"primaryKey;autoIncrement:false"`
		OrgID      string `gorm:"size:32;index"`
		Node       string `gorm:"size:32"`
		State      string `gorm:"size:16"`
		StartedAt  time.Time
		EndedAt    *time.Time
		Error      string `gorm:"size:1000"`
		ReportedAt time.Time
	}
	return tx.Table("node_mounts").Migrator().CreateTable(&nodeMount{})
}

// MountsReport is what an agent reports of its mounts step.
type MountsReport struct {
	State     string
	StartedAt time.Time
	EndedAt   *time.Time
	Error     string
}

// Validate refuses a report the server cannot show.
func (r MountsReport) Validate() error {
	switch {
	case r.State != MountsMounting && r.State != MountsMounted && r.State != MountsFailed:
		return fmt.Errorf("state %q: want mounting, mounted or failed", r.State)
	case r.StartedAt.IsZero():
		return errors.New("startedAt is required")
	case r.State != MountsMounting && r.EndedAt == nil:
		return fmt.Errorf("state %q needs endedAt", r.State)
	case r.State == MountsFailed && r.Error == "":
		return errors.New("state failed needs error")
	}
	return nil
}

// Ended reports whether the step is over.
func (n NodeMount) Ended() bool { return n.State != MountsMounting }

func (n NodeMount) reported() (time.Time, bool) { return n.StartedAt, n.Ended() }

// RecordMounts keeps node n's mounts step state. A report that changes
// nothing writes nothing; an end adds an event. A report older than the
// kept one (a late heartbeat of an earlier boot) is ignored.
func (s *Store) RecordMounts(ctx context.Context, c Cluster, n ClusterNode, r MountsReport) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("models: mounts report: %w", err)
	}
	r.StartedAt, r.EndedAt = reportStamps(r.StartedAt, r.EndedAt)
	return s.Tx(ctx, func(tx *Store) error {
		row := NodeMount{ClusterID: c.ID, Rank: n.Rank, OrgID: c.OrgID, Node: n.Name, State: r.State,
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Error: truncate(r.Error, 1000), ReportedAt: tx.Now()}
		_, wrote, err := recordNewest(ctx, tx, c.ID, n.Rank, row,
			[]string{"node", "state", "started_at", "ended_at", "error", "reported_at"})
		if err != nil || !wrote || !row.Ended() {
			return err
		}
		kind, msg := "info", n.Name+" mounted its folders."
		if row.State == MountsFailed {
			kind, msg = "error", n.Name+" could not mount its folders: "+row.Error
		}
		return tx.addEvent(ctx, c, c.Status, kind, n.Name, "mounts", msg)
	})
}

// NodeMounts lists a cluster's mounts step states by rank, through its
// organisation (A3).
func (s *Store) NodeMounts(ctx context.Context, orgID, clusterID string) ([]NodeMount, error) {
	var out []NodeMount
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).Order("rank").Find(&out).Error
	return out, err
}
