package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Health damping (X14), as Cluster API's MachineHealthCheck
// does with maxUnhealthy: when more than a set share of a cluster's
// machines is unhealthy at once, the trouble is most likely the network or
// the provider, which restarting or swapping machines does not fix. Then
// every automatic repair of the cluster stops (recovery's restarts and the
// swaps of machines that failed verification) until fewer are unhealthy,
// with one event when it stops and one when it resumes; the cluster page
// says so. A person's own "Recover now" and Replace still work.
//
// One machine is always repairable: the share is counted in whole machines
// rounded down with a floor of one, so a two-machine cluster with one
// machine down is repaired, and with two it is not.

// DefaultMaxUnhealthyPercent is the share above which automatic repair
// stops when HEALTH_MAX_UNHEALTHY_PERCENT is not set.
const DefaultMaxUnhealthyPercent = 40

// RepairVerdict is whether a cluster's machines may be repaired
// automatically now, and why not.
type RepairVerdict struct {
	Allowed    bool
	Machines   int // the cluster's admitted machines
	Unhealthy  int // of them, unhealthy now
	MaxPercent int // the configured share
	Limit      int // the most unhealthy machines automatic repair still acts on
	Reason     string
}

// DampRepair is the rule itself: more than limit unhealthy machines out of
// machines, where limit is maxPercent of machines rounded down, at least 1.
func DampRepair(machines, unhealthy, maxPercent int) RepairVerdict {
	if maxPercent <= 0 {
		maxPercent = DefaultMaxUnhealthyPercent
	}
	limit := max(1, machines*maxPercent/100)
	v := RepairVerdict{Allowed: unhealthy <= limit, Machines: machines, Unhealthy: unhealthy, MaxPercent: maxPercent, Limit: limit}
	if !v.Allowed {
		v.Reason = fmt.Sprintf("%d of %d machines are unhealthy at once, more than %d %% (%d): "+
			"a network or provider incident is not fixed by replacing machines, so automatic recovery and swaps wait until fewer are unhealthy",
			unhealthy, machines, maxPercent, limit)
	}
	return v
}

// unhealthyNode reports whether an admitted machine counts as unhealthy:
// declared down, being restarted, or seen unwell by the last health pass.
func unhealthyNode(n ClusterNode) bool {
	return n.Status == NodeDown || n.Status == NodeRestarting || n.DownSince != nil
}

// admittedNode reports whether n counts among the cluster's machines.
func admittedNode(n ClusterNode) bool {
	switch n.Status {
	case NodeFailed, NodeLost, NodeTerminated:
		return false
	}
	return true
}

// RepairVerdictFor applies DampRepair to a cluster's nodes. failing names
// more machines the caller knows to be unhealthy although their rows do not
// say so yet (machines that failed verification), by node name.
func (s *Store) RepairVerdictFor(nodes []ClusterNode, failing ...string) RepairVerdict {
	extra := map[string]bool{}
	for _, f := range failing {
		extra[f] = true
	}
	machines, unhealthy := 0, 0
	for _, n := range nodes {
		if !admittedNode(n) {
			continue
		}
		machines++
		if unhealthyNode(n) || extra[n.Name] {
			unhealthy++
		}
	}
	return DampRepair(machines, unhealthy, s.settings.MaxUnhealthyPercent)
}

// MayRepairAutomatically is the one question every automatic repair of a
// cluster asks before it acts (recovery's restarts, verification's swaps):
// may its machines be restarted or replaced automatically now? It reads
// the cluster's nodes; failing are machines known unhealthy beyond what
// their rows say (see RepairVerdictFor). When the answer changes it records
// so on the cluster (NoteDamping), so the caller only reads Allowed and
// Reason.
func (s *Store) MayRepairAutomatically(ctx context.Context, c Cluster, failing ...string) (RepairVerdict, error) {
	nodes, err := s.NodesFor(ctx, c.ID)
	if err != nil {
		return RepairVerdict{}, err
	}
	v := s.RepairVerdictFor(nodes, failing...)
	return v, s.NoteDamping(ctx, c, v)
}

// NoteDamping records a change of the verdict on the cluster: damped_at
// is set with an event when repair stops, cleared with an event when it
// may go on. Nothing is written while the verdict stays.
func (s *Store) NoteDamping(ctx context.Context, c Cluster, v RepairVerdict) error {
	if v.Allowed == (c.DampedAt == nil) {
		return nil
	}
	return s.Tx(ctx, func(tx *Store) error {
		q := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ?", c.ID)
		var set any
		var kind, msg string
		if v.Allowed {
			q, set, kind = q.Where("damped_at IS NOT NULL"), nil, "info"
			msg = fmt.Sprintf("Automatic repair resumes: %d of %d machines unhealthy, within the %d %% limit.", v.Unhealthy, v.Machines, v.MaxPercent)
		} else {
			q, set, kind = q.Where("damped_at IS NULL"), tx.Now(), "error"
			msg = "Automatic repair paused: " + v.Reason + ". Recover now and Replace still work."
		}
		res := q.Updates(map[string]any{"damped_at": set, "updated_at": tx.Now()})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // someone else recorded it first
		}
		cur, err := tx.ClusterByID(ctx, c.ID)
		if err != nil {
			return err
		}
		return tx.addEvent(ctx, cur, cur.Status, kind, "", "recovery", msg)
	})
}

// Damped reports whether automatic repair of the cluster is paused by
// damping, and since when.
func (c Cluster) Damped() (bool, time.Time) {
	if c.DampedAt == nil {
		return false, time.Time{}
	}
	return true, *c.DampedAt
}

func up0965HealthDamping(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	return tx.Exec("ALTER TABLE clusters ADD COLUMN damped_at " + ts).Error
}
