package web

import (
	"fmt"
	"slices"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// V4: the mounts each agent is ordered to make and the
// folders customers are shown are one plan (models.MountPlan): for every
// machine kind, with and without a volume, a node gets a mount order
// exactly when the customers' list names it, and the volume's path is the
// one customers see.
func TestAgentMountsFollowThePlan(t *testing.T) {
	vol := &models.Volume{ID: "vol-1", Name: "data", SizeGB: 100}
	var nodes []models.ClusterNode
	for r := range 3 {
		nodes = append(nodes, models.ClusterNode{Rank: r, Name: fmt.Sprintf("node-%d", r), PrivateIP: fmt.Sprintf("10.0.0.%d", r+1)})
	}
	for _, kind := range []string{"vm", "bare_metal", "container"} {
		for _, v := range []*models.Volume{nil, vol} {
			cl := models.Cluster{Nodes: 3, MachineKind: kind}
			shown := map[string][]string{}
			for _, m := range models.Mounts(cl, v) {
				for _, n := range m.Nodes {
					shown[n] = append(shown[n], m.Path)
				}
			}
			plan := models.PlanMounts(cl, v)
			for _, n := range nodes {
				am := agentMounts(plan, nodes, n.Rank, "node-0 slots=8")
				name := fmt.Sprintf("%s/volume %v/%s", kind, v != nil, n.Name)
				if (am != nil) != (len(shown[n.Name]) > 0) {
					t.Errorf("%s: agent order %+v, customers see %v", name, am, shown[n.Name])
					continue
				}
				if am == nil {
					continue
				}
				if am.Shared != slices.Contains(shown[n.Name], models.SharedDir) {
					t.Errorf("%s: shared %v, customers see %v", name, am.Shared, shown[n.Name])
				}
				if (am.Volume != nil) != (v != nil) || am.Volume != nil && !slices.Contains(shown[n.Name], am.Volume.Path) {
					t.Errorf("%s: volume %+v, customers see %v", name, am.Volume, shown[n.Name])
				}
				if am.Head != "10.0.0.1" || len(am.Clients) != 2 || am.Hostfile != "node-0 slots=8\n" {
					t.Errorf("%s: head %q clients %v hostfile %q", name, am.Head, am.Clients, am.Hostfile)
				}
			}
		}
	}
}
