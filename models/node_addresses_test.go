package models_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// Addresses a cloud assigns at boot (OP1: Lambda reports none at placement)
// replace the placeholder private address and fill the SSH endpoint; empty
// values keep what is recorded, and the same report changes nothing again.
func TestSetNodeAddresses(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c, _, err := e.launch(e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.MarkPlaced(ctx, c.ID, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0"}, {Rank: 1, ProviderNodeID: "i-1"}}); err != nil {
			t.Fatal(err)
		}
		nodes, err := e.s.NodesFor(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if nodes[1].PrivateIP != "" || nodes[1].PublicHost != "" { // none assumed (OP1)
			t.Fatalf("placed without addresses: %+v", nodes[1])
		}
		report := models.PlacedNode{PrivateIP: "10.0.2.101", PublicHost: "198.51.100.3", SSHPort: 22, User: "ubuntu"}
		if changed, err := e.s.SetNodeAddresses(ctx, nodes[1], report); err != nil || !changed {
			t.Fatalf("changed %v, %v", changed, err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		n := nodes[1]
		if n.PrivateIP != "10.0.2.101" || n.PublicHost != "198.51.100.3" || n.SSHPort != 22 || n.SSHUser != "ubuntu" {
			t.Errorf("node-1 %+v", n)
		}
		if nodes[0].PrivateIP != "" || nodes[0].PublicHost != "" {
			t.Errorf("node-0 changed too: %+v", nodes[0])
		}
		if changed, err := e.s.SetNodeAddresses(ctx, n, report); err != nil || changed {
			t.Errorf("the same report again: changed %v, %v", changed, err)
		}
		if changed, err := e.s.SetNodeAddresses(ctx, n, models.PlacedNode{}); err != nil || changed {
			t.Errorf("an empty report: changed %v, %v", changed, err)
		}
	})
}
