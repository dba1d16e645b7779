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
	out, err := s.usageOf(ctx, orgID, []Cluster{c}, UsageWindow{})
	if err != nil {
		return ClusterUsage{}, err
	}
	return out[0], nil
}

// UsageForOrg is the usage of every cluster of the organisation that was
// billed at or after since (the billing page's lines, B3), newest first, in
// a fixed number of queries.
func (s *Store) UsageForOrg(ctx context.Context, orgID string, since time.Time) ([]ClusterUsage, error) {
	var cs []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND ready_at IS NOT NULL AND (released_at IS NULL OR released_at >= ?)", orgID, since).
		Order("ready_at DESC, id").Limit(500).Find(&cs).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage of %s: %w", orgID, err)
	}
	return s.usageOf(ctx, orgID, cs, UsageWindow{})
}

// UsageForMonth is the usage lines of the organisation's clusters that ran
// in window w: only the periods that start in it, and the open period only
// while now is in it (the billing page, its CSV and GET /v1/billing/usage).
// Every cluster of the month is a line, however many: the month's spend is
// their sum, so a cut list would understate it.
func (s *Store) UsageForMonth(ctx context.Context, orgID string, w UsageWindow) ([]ClusterUsage, error) {
	var cs []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND ready_at IS NOT NULL AND ready_at < ? AND (released_at IS NULL OR released_at >= ?)",
		orgID, w.To, w.From).Order("ready_at DESC, id").Find(&cs).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage of %s: %w", orgID, err)
	}
	return s.usageOf(ctx, orgID, cs, w)
}

// usageOf builds the usage lines of clusters of one organisation: their
// machines, written usage per machine, marks and intervals, one query each.
func (s *Store) usageOf(ctx context.Context, orgID string, cs []Cluster, w UsageWindow) ([]ClusterUsage, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	machines, err := s.machinesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	var sums []struct {
		NodeID  string
		Amount  Money
		Minutes int64
	}
	q := s.db.WithContext(ctx).Table("ledger_entries").Select("node_id, SUM(amount) AS amount, SUM(minutes) AS minutes").
		Where("org_id = ? AND kind = ? AND cluster_id IN ?", orgID, LedgerUsage, ids)
	if !w.To.IsZero() {
		q = q.Where("period_start >= ? AND period_start < ?", w.From, w.To)
	}
	err = q.Group("node_id").Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage sums: %w", err)
	}
	written := map[string][2]int64{}
	for _, r := range sums {
		written[r.NodeID] = [2]int64{int64(-r.Amount), r.Minutes}
	}
	var marks []UsageMark
	if err := s.db.WithContext(ctx).Where("cluster_id IN ?", ids).Find(&marks).Error; err != nil {
		return nil, fmt.Errorf("models: usage marks: %w", err)
	}
	markOf := map[string]*time.Time{}
	for i := range marks {
		markOf[marks[i].ClusterID] = &marks[i].BilledUntil
	}
	var ivs []MachineInterval
	if err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id IN ?", orgID, ids).Order("started_at, id").Find(&ivs).Error; err != nil {
		return nil, fmt.Errorf("models: intervals: %w", err)
	}
	intervals := map[string][]MachineInterval{}
	for _, iv := range ivs {
		intervals[iv.NodeID] = append(intervals[iv.NodeID], iv)
	}
	now := s.Now()
	out := make([]ClusterUsage, len(cs))
	for i, c := range cs {
		out[i] = ClusterUsage{Cluster: c}
		for _, n := range machines[c.ID] {
			accMin, acc := accumulating(c, n.Gaps, markOf[c.ID], now)
			if !w.contains(now) {
				accMin, acc = 0, 0
			}
			w := written[n.ID]
			m := MachineUsage{NodeID: n.ID, Name: n.Name, MachineHour: c.MachineHour, Completed: Money(w[0]), Minutes: w[1],
				AccumulatingMinutes: accMin, Accumulating: acc, Intervals: intervals[n.ID]}
			out[i].Completed += m.Completed
			out[i].Accumulating += m.Accumulating
			out[i].Machines = append(out[i].Machines, m)
		}
	}
	return out, nil
}

// accumulating is one machine's usage after the last written period, up to
// the stop, the release or now, less its unbilled gaps: the same
// cumulative rounding as the pass, so it is exactly what the pass will write.
func accumulating(c Cluster, gaps []BillingGap, mark *time.Time, now time.Time) (int64, Money) {
	if c.ReadyAt == nil {
		return 0, 0
	}
	b := billedCluster{ReadyAt: *c.ReadyAt, ReleasedAt: c.ReleasedAt, StoppedAt: c.StoppedAt, BillFrom: c.BillFrom, UnbilledAt: c.UnbilledAt}
	anchor := b.billAnchor()
	from, to := anchor, now
	if mark != nil && mark.After(from) {
		from = *mark
	}
	if end := b.billEnd(); end != nil && end.Before(to) {
		to = *end
	}
	m0, m1 := billedMinutes(anchor, gaps, from), billedMinutes(anchor, gaps, to)
	if m1 <= m0 {
		return 0, 0
	}
	return m1 - m0, machineCharge(c.MachineHour, m1) - machineCharge(c.MachineHour, m0)
}
