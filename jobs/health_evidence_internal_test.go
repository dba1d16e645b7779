package jobs

import (
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// X19: what a health pass sees rests on the provider's view (the machine
// not running, not found) or on the machine's own agent, which the
// customer controls (a GPU error it reported, its silence); the down
// machine carries which, for the track record and quarantine.
func TestAbuseHealthObservationEvidence(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-10*time.Second), now.Add(-time.Hour)
	running := providers.Group{Nodes: []providers.Node{{Index: 0, State: providers.NodeRunning}}}
	stopped := providers.Group{Nodes: []providers.Node{{Index: 0, State: providers.NodeStopped}}}
	j := &Health{}
	for _, c := range []struct {
		name     string
		node     models.ClusterNode
		group    providers.Group
		found    bool
		evidence string
	}{
		{"well", models.ClusterNode{HeartbeatAt: &recent}, running, true, ""},
		{"stopped at the provider", models.ClusterNode{HeartbeatAt: &recent}, stopped, true, models.EvidenceProvider},
		{"not found", models.ClusterNode{HeartbeatAt: &recent}, running, false, models.EvidenceProvider},
		{"stopped beats a GPU error", models.ClusterNode{HeartbeatAt: &recent, HWFault: "XID 79"}, stopped, true, models.EvidenceProvider},
		{"a GPU error the agent reported", models.ClusterNode{HeartbeatAt: &recent, HWFault: "XID 79"}, running, true, models.EvidenceTenant},
		{"a silent agent", models.ClusterNode{HeartbeatAt: &old}, running, true, models.EvidenceTenant},
	} {
		seen, evidence := j.observe(models.Cluster{Status: models.StatusReady}, c.node, c.group, c.found, now)
		if evidence != c.evidence || (seen == "") != (c.evidence == "") {
			t.Errorf("%s: seen %q evidence %q, want evidence %q", c.name, seen, evidence, c.evidence)
		}
	}
}
