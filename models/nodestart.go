package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The start command (N3): once the cluster is ready every node's agent
// starts it once per boot and reports its state with each heartbeat. The
// last state per node is kept here; each new start and each end is an
// event.

// Start command states (as the agent reports them).
const (
	StartRunning = "running"
	StartExited  = "exited"
	StartFailed  = "failed" // could not start, or killed (exit code -1)
	StartNone    = "none"   // reported by a machine with no start command; nothing is kept
)

// NodeStart is the state of one node's start command in its current boot.
type NodeStart struct {
	ClusterID  string `gorm:"primaryKey;size:32"`
	Rank       int    `gorm:"primaryKey;autoIncrement:false"`
	OrgID      string `gorm:"size:32;index"`
	Node       string `gorm:"size:32"`
	State      string `gorm:"size:16"`
	StartedAt  time.Time
	ExitCode   *int
	EndedAt    *time.Time
	Error      string `gorm:"size:1000"`
	ReportedAt time.Time
}

// TableName keeps the table name short and explicit.
func (NodeStart) TableName() string { return "node_starts" }

// nodeStart0230 is the table as migration 0230 created it.
type nodeStart0230 struct {
	ClusterID  string `gorm:"primaryKey;size:32"`
	Rank       int    `gorm:"primaryKey;autoIncrement:false"`
	OrgID      string `gorm:"size:32;index"`
	Node       string `gorm:"size:32"`
	State      string `gorm:"size:16"`
	StartedAt  time.Time
	ExitCode   *int
	EndedAt    *time.Time
	Error      string `gorm:"size:1000"`
	ReportedAt time.Time
}

func (nodeStart0230) TableName() string { return "node_starts" }

func up0230NodeStarts(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&nodeStart0230{})
}

// StartReport is what an agent reports of its start command.
type StartReport struct {
	State     string
	StartedAt time.Time
	ExitCode  *int
	EndedAt   *time.Time
	Error     string
}

// Validate refuses a report the server cannot show.
func (r StartReport) Validate() error {
	switch {
	case r.State != StartRunning && r.State != StartExited && r.State != StartFailed:
		return fmt.Errorf("state %q: want running, exited or failed", r.State)
	case r.StartedAt.IsZero():
		return errors.New("startedAt is required")
	case r.State != StartRunning && (r.ExitCode == nil || r.EndedAt == nil):
		return fmt.Errorf("state %q needs exitCode and endedAt", r.State)
	}
	return nil
}

// Ended reports whether the command is no longer running.
func (n NodeStart) Ended() bool { return n.State != StartRunning }

func (n NodeStart) reported() (time.Time, bool) { return n.StartedAt, n.Ended() }

// reportedStep is a step an agent runs on its node and reports with each
// heartbeat, one row per node: the start command (N3), the mounts step (V4).
type reportedStep interface {
	NodeStart | NodeMount
	reported() (startedAt time.Time, ended bool)
}

// supersedes is the one rule for every reported step: the newest report
// wins. A report of a later start replaces the kept one; of the same start
// only an end replaces a running state; an older start (a late heartbeat
// of an earlier boot) is ignored.
func supersedes[T reportedStep](r, kept T) bool {
	rs, rEnded := r.reported()
	ks, kEnded := kept.reported()
	return rs.After(ks) || rs.Equal(ks) && !kEnded && rEnded
}

// reportStamps are a report's times at the precision every database keeps,
// so a report repeated with nanoseconds is the same report.
func reportStamps(started time.Time, ended *time.Time) (time.Time, *time.Time) {
	started = started.UTC().Truncate(time.Microsecond)
	if ended != nil {
		e := ended.UTC().Truncate(time.Microsecond)
		ended = &e
	}
	return started, ended
}

// recordNewest keeps row as its node's report of the step when it
// supersedes the kept one, updating columns; it returns the report kept
// before (nil for the first) and whether row was written.
func recordNewest[T reportedStep](ctx context.Context, tx *Store, clusterID string, rank int, row T, columns []string) (*T, bool, error) {
	var old []T
	if err := tx.db.WithContext(ctx).Where("cluster_id = ? AND rank = ?", clusterID, rank).Limit(1).Find(&old).Error; err != nil {
		return nil, false, err
	}
	var kept *T
	if len(old) == 1 {
		kept = &old[0]
		if !supersedes(row, *kept) {
			return kept, false, nil
		}
	}
	err := tx.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "cluster_id"}, {Name: "rank"}},
		DoUpdates: clause.AssignmentColumns(columns),
	}).Create(&row).Error
	return kept, err == nil, err
}

// RecordStart keeps node n's start command state. A report that changes
// nothing writes nothing; a new start and an end each add an event. A
// report older than the kept one (a late heartbeat of an earlier boot) is
// ignored.
func (s *Store) RecordStart(ctx context.Context, c Cluster, n ClusterNode, r StartReport) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("models: start report: %w", err)
	}
	r.StartedAt, r.EndedAt = reportStamps(r.StartedAt, r.EndedAt)
	return s.Tx(ctx, func(tx *Store) error {
		row := NodeStart{ClusterID: c.ID, Rank: n.Rank, OrgID: c.OrgID, Node: n.Name, State: r.State,
			StartedAt: r.StartedAt, ExitCode: r.ExitCode, EndedAt: r.EndedAt, Error: truncate(r.Error, 1000), ReportedAt: tx.Now()}
		old, wrote, err := recordNewest(ctx, tx, c.ID, n.Rank, row,
			[]string{"state", "started_at", "exit_code", "ended_at", "error", "reported_at"})
		if err != nil || !wrote {
			return err
		}
		if old == nil || !old.StartedAt.Equal(row.StartedAt) {
			if err := tx.addEvent(ctx, c, c.Status, "info", n.Name, "workload", n.Name+"'s start command started."); err != nil {
				return err
			}
		}
		if !row.Ended() {
			return nil
		}
		kind, msg := "info", fmt.Sprintf("%s's start command exited with code %d.", n.Name, *row.ExitCode)
		switch {
		case row.State == StartFailed:
			kind, msg = "error", fmt.Sprintf("%s's start command did not run to its end: %s", n.Name, row.Error)
		case *row.ExitCode != 0:
			kind = "error"
		}
		return tx.addEvent(ctx, c, c.Status, kind, n.Name, "workload", msg)
	})
}

// NodeStarts lists a cluster's start command states by rank, through its
// organisation (A3).
func (s *Store) NodeStarts(ctx context.Context, orgID, clusterID string) ([]NodeStart, error) {
	var out []NodeStart
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).Order("rank").Find(&out).Error
	return out, err
}

// NodeStartsForClusters loads the start command states of several clusters
// of one organisation in one query.
func (s *Store) NodeStartsForClusters(ctx context.Context, orgID string, ids []string) (map[string][]NodeStart, error) {
	out := map[string][]NodeStart{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []NodeStart
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id IN ?", orgID, ids).Order("cluster_id, rank").Find(&rows).Error
	for _, r := range rows {
		out[r.ClusterID] = append(out[r.ClusterID], r)
	}
	return out, err
}
