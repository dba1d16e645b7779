package models_test

import (
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// L8: whatever a node's stored status and step, the status the
// page shows for it is one its cluster's status allows, for every cluster
// status, terminating or not — the stored statuses lag (a degraded
// cluster's nodes still read installing), the shown ones never contradict.
func TestShownNodeStatusNeverContradictsTheCluster(t *testing.T) {
	stored := []models.NodeStatus{models.NodeProvisioning, models.NodeInstalling, models.NodeReady, models.NodeDown,
		models.NodeRestarting, models.NodeFailed, models.NodeLost, models.NodeTerminated, models.NodeStopped, models.NodeJoining}
	steps := []string{models.StepRunning, models.StepAgent, models.StepMesh, models.StepSoftware, "done"}
	errs := []string{"", "install_failed:node-1", "node_down:node-1: stopped", "timeout:agent"}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, cs := range models.ClusterStatuses {
		allowed := models.NodeStatusesShown[cs]
		if len(allowed) == 0 {
			t.Fatalf("no shown node statuses for %s", cs)
		}
		for _, terminating := range []bool{false, true} {
			for _, ns := range stored {
				for _, step := range steps {
					for _, le := range errs {
						c := models.Cluster{Status: cs, LastError: le}
						if terminating {
							c.TerminateRequestedAt = &now
						}
						got := models.ShownNodeStatus(c, models.ClusterNode{Status: ns, Step: step})
						if !slices.Contains(allowed, got) {
							t.Errorf("cluster %s (terminating %v, %q), node %s at %s: shown %q, allowed %v", cs, terminating, le, ns, step, got, allowed)
						}
						if terminating && !cs.Terminal() && got != models.NodeTerminating && got != models.NodeLost {
							t.Errorf("a terminating %s cluster shows a node %q", cs, got)
						}
					}
				}
			}
		}
	}
	// The cases once seen (L8): provisioning nodes of an installing or
	// degraded cluster, and a healthy node of a failed one reading failed.
	for _, tc := range []struct {
		c    models.Cluster
		n    models.ClusterNode
		want models.NodeStatus
	}{
		{models.Cluster{Status: models.StatusInstalling}, models.ClusterNode{Status: models.NodeProvisioning, Step: models.StepSoftware}, models.NodeInstalling},
		{models.Cluster{Status: models.StatusDegraded, LastError: "check_failed:slurm"}, models.ClusterNode{Status: models.NodeInstalling, Step: models.StepSoftware}, models.NodeDegraded},
		{models.Cluster{Status: models.StatusDegraded, LastError: "node_down:node-1: gone"}, models.ClusterNode{Status: models.NodeInstalling, Step: models.StepSoftware}, models.NodeInstalling},
		{models.Cluster{Status: models.StatusDegraded, LastError: "node_down:node-1: gone"}, models.ClusterNode{Status: models.NodeReady, Step: "done"}, models.NodeReady},
		{models.Cluster{Status: models.StatusFailed}, models.ClusterNode{Status: models.NodeTerminated, Step: models.StepMesh}, models.NodeReleased},
		{models.Cluster{Status: models.StatusFailed}, models.ClusterNode{Status: models.NodeProvisioning, Step: models.StepMesh}, models.NodeReleased},
		{models.Cluster{Status: models.StatusFailed}, models.ClusterNode{Status: models.NodeFailed, Step: models.StepAgent}, models.NodeFailed},
		// A worker or replacement joining a running cluster reads joining (L10, X5), and is released with it.
		{models.Cluster{Status: models.StatusReady}, models.ClusterNode{Status: models.NodeJoining, Step: models.StepAgent}, models.NodeJoining},
		{models.Cluster{Status: models.StatusDegraded, LastError: "node_down:node-1: gone"}, models.ClusterNode{Status: models.NodeJoining, Step: models.StepSoftware}, models.NodeJoining},
		{models.Cluster{Status: models.StatusReady, TerminateRequestedAt: &now}, models.ClusterNode{Status: models.NodeJoining, Step: models.StepMesh}, models.NodeTerminating},
		{models.Cluster{Status: models.StatusFailed}, models.ClusterNode{Status: models.NodeJoining, Step: models.StepMesh}, models.NodeReleased},
	} {
		if got := models.ShownNodeStatus(tc.c, tc.n); got != tc.want {
			t.Errorf("%s cluster (%q), node %s at %s: %q, want %q", tc.c.Status, tc.c.LastError, tc.n.Status, tc.n.Step, got, tc.want)
		}
	}
}
