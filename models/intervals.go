package models

import (
	"context"
	"fmt"
	"time"
)

// Machine states shown on billing rows (X7).
const (
	MachineRunning  = "running"
	MachineDegraded = "degraded"
	MachineStopped  = "stopped"
)

// MachineInterval is one span of one machine in one state (X7). EndedAt is
// nil while it lasts.
type MachineInterval struct {
	ID        int64
	ClusterID string
	OrgID     string
	NodeID    string
	State     string
	StartedAt time.Time
	EndedAt   *time.Time
}

// machineState maps a cluster status onto its machines' state; "" means
// the machines are in no billed state (starting, failed, terminated).
func machineState(to ClusterStatus) string {
	switch to {
	case StatusInstalling, StatusVerifying, StatusReady:
		return MachineRunning
	case StatusDegraded:
		return MachineDegraded
	case StatusStopped:
		return MachineStopped
	}
	return ""
}

// RecordMachineStates is X7's recorder. The state machine calls it, in the
// same transaction, whenever a cluster's status changes: it closes every
// machine's open interval of another state at now and opens one in the new
// state. Repeating it with the same status changes nothing.
func (s *Store) RecordMachineStates(ctx context.Context, clusterID string, to ClusterStatus) error {
	state, now := machineState(to), s.Now()
	db := s.db.WithContext(ctx)
	if err := db.Exec("UPDATE machine_intervals SET ended_at = ? WHERE cluster_id = ? AND ended_at IS NULL AND state <> ?",
		now, clusterID, state).Error; err != nil {
		return fmt.Errorf("models: close intervals %s: %w", clusterID, err)
	}
	if state == "" {
		return nil
	}
	err := db.Exec("INSERT INTO machine_intervals (cluster_id, org_id, node_id, state, started_at) "+
		"SELECT n.cluster_id, n.org_id, n.id, ?, ? FROM cluster_nodes n WHERE n.cluster_id = ? AND n.status <> 'joining' AND NOT EXISTS "+
		"(SELECT 1 FROM machine_intervals i WHERE i.node_id = n.id AND i.ended_at IS NULL) ON CONFLICT DO NOTHING",
		state, now, clusterID).Error
	if err != nil {
		return fmt.Errorf("models: open intervals %s: %w", clusterID, err)
	}
	return nil
}

// nodeInterval closes machine nodeID's open interval at now and, when
// state is not "", opens one in state: a machine that joined after ready
// or was replaced (L10, X5) has its own span.
func (s *Store) nodeInterval(ctx context.Context, c Cluster, nodeID, state string) error {
	now, db := s.Now(), s.db.WithContext(ctx)
	if err := db.Exec("UPDATE machine_intervals SET ended_at = ? WHERE node_id = ? AND ended_at IS NULL", now, nodeID).Error; err != nil {
		return fmt.Errorf("models: close interval of %s: %w", nodeID, err)
	}
	if state == "" {
		return nil
	}
	return db.Exec("INSERT INTO machine_intervals (cluster_id, org_id, node_id, state, started_at) VALUES (?, ?, ?, ?, ?)",
		c.ID, c.OrgID, nodeID, state, now).Error
}

// MachineIntervals lists a cluster's intervals by machine, oldest first,
// through its organisation.
func (s *Store) MachineIntervals(ctx context.Context, orgID, clusterID string) (map[string][]MachineInterval, error) {
	var rows []MachineInterval
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).
		Order("started_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: intervals %s: %w", clusterID, err)
	}
	out := map[string][]MachineInterval{}
	for _, r := range rows {
		out[r.NodeID] = append(out[r.NodeID], r)
	}
	return out, nil
}
