package models

import (
	"context"
	"fmt"
	"time"
)

// UsageEntry is a usage ledger entry with the machine and period it bills.
type UsageEntry struct {
	ID          string
	OrgID       string
	ClusterID   string
	NodeID      string
	Amount      Money // negative: a charge
	IdemKey     string
	Description string
	PeriodStart time.Time
	PeriodEnd   time.Time
	Minutes     int64
	CreatedAt   time.Time
}

// TableName reads usage from the ledger.
func (UsageEntry) TableName() string { return "ledger_entries" }

// UsageEntries lists a cluster's written usage through its organisation,
// by machine and period.
func (s *Store) UsageEntries(ctx context.Context, orgID, clusterID string) ([]UsageEntry, error) {
	var out []UsageEntry
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ? AND kind = ?", orgID, clusterID, LedgerUsage).
		Order("node_id, period_start").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage of %s: %w", clusterID, err)
	}
	return out, nil
}

// MachineUsage is one machine's row under "Cluster usage — NAME" (B3, X7):
// what is written (Completed) and what the open period has run up so far
// (Accumulating: computed, never written).
type MachineUsage struct {
	NodeID, Name        string
	MachineHour         Money
	Minutes             int64 // Completed minutes
	Completed           Money // charged, positive
	AccumulatingMinutes int64
	Accumulating        Money
	Intervals           []MachineInterval
}

// ClusterUsage is a cluster's usage line with its machines.
type ClusterUsage struct {
	Cluster                 Cluster
	Machines                []MachineUsage
	Completed, Accumulating Money
}

// UsageForCluster is one cluster's usage, per machine, at the store's now.
func (s *Store) UsageForCluster(ctx context.Context, orgID, clusterID string) (ClusterUsage, error) {
	c, err := s.ClusterForOrg(ctx, orgID, clusterID)
	if err != nil {
		return ClusterUsage{}, err
	}
	nodes, err := s.NodesFor(ctx, c.ID)
	if err != nil {
		return ClusterUsage{}, err
	}
	entries, err := s.UsageEntries(ctx, orgID, c.ID)
	if err != nil {
		return ClusterUsage{}, err
	}
	intervals, err := s.MachineIntervals(ctx, orgID, c.ID)
	if err != nil {
		return ClusterUsage{}, err
	}
	var mark *time.Time
	var marks []time.Time
	if err := s.db.WithContext(ctx).Table("usage_marks").Where("cluster_id = ?", c.ID).Pluck("billed_until", &marks).Error; err != nil {
		return ClusterUsage{}, fmt.Errorf("models: usage mark %s: %w", c.ID, err)
	}
	if len(marks) == 1 {
		mark = &marks[0]
	}
	accMin, acc := accumulating(c, mark, s.Now())
	out := ClusterUsage{Cluster: c}
	for _, n := range nodes {
		m := MachineUsage{NodeID: n.ID, Name: n.Name, MachineHour: c.MachineHour,
			AccumulatingMinutes: accMin, Accumulating: acc, Intervals: intervals[n.ID]}
		for _, e := range entries {
			if e.NodeID == n.ID {
				m.Minutes += e.Minutes
				m.Completed -= e.Amount
			}
		}
		out.Completed += m.Completed
		out.Accumulating += m.Accumulating
		out.Machines = append(out.Machines, m)
	}
	return out, nil
}

// accumulating is one machine's usage after the last written period, up to
// the release or now: the same cumulative rounding as the pass, so it is
// exactly what the pass will write.
func accumulating(c Cluster, mark *time.Time, now time.Time) (int64, Money) {
	if c.ReadyAt == nil {
		return 0, 0
	}
	from, to := *c.ReadyAt, now
	if mark != nil {
		from = *mark
	}
	if c.ReleasedAt != nil && c.ReleasedAt.Before(to) {
		to = *c.ReleasedAt
	}
	m0, m1 := minutesSince(*c.ReadyAt, from), minutesSince(*c.ReadyAt, to)
	if m1 <= m0 {
		return 0, 0
	}
	return m1 - m0, machineCharge(c.MachineHour, m1) - machineCharge(c.MachineHour, m0)
}
