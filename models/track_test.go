package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// X2: a node.verification_failed event, whoever writes
// it, counts as the launch's verification failure and as a fault of the
// machine it names (its host, else its provider id); the second fault of
// one machine in 30 days quarantines it, once.
func TestVerificationFailureEventsCountAndQuarantine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 500*models.Micro)
		c, _, err := e.launch(e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", c.ID).
			Updates(map[string]any{"provider_node_id": "i-123", "machine_host": "rack2-h05"}).Error; err != nil {
			t.Fatal(err)
		}
		if err := models.AddPublicEvent(e.s, ctx, c, models.TypeNodeVerificationFailed, "node-1", "2 uncorrectable ECC errors"); err != nil {
			t.Fatal(err)
		}
		if q, _ := e.s.QuarantinedMachines(ctx, c.Provider); len(q) != 0 {
			t.Fatalf("quarantined after one fault: %v", q)
		}
		e.clock.Advance(time.Hour)
		if err := models.AddPublicEvent(e.s, ctx, c, models.TypeNodeVerificationFailed, "node-1", "XID 79"); err != nil {
			t.Fatal(err)
		}
		if err := models.AddPublicEvent(e.s, ctx, c, models.TypeNodeVerificationFailed, "node-1", "XID 79 again"); err != nil {
			t.Fatal(err)
		}
		q, err := e.s.QuarantinedMachines(ctx, c.Provider)
		if err != nil || len(q) != 1 || q[0] != "rack2-h05" {
			t.Fatalf("quarantined %v %v", q, err)
		}
		var n int64
		db.Model(&models.MachineQuarantine{}).Count(&n)
		if n != 1 {
			t.Errorf("%d quarantines, want one", n)
		}
		book, err := e.s.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := book.For(c.OfferID, 2); r == nil || r.VerifyFailures != 3 || r.Tried != 0 {
			t.Errorf("record %+v", r)
		}
		if !models.IsPublicEventType(models.TypeNodeVerificationFailed) {
			t.Error("node.verification_failed is not a public event type")
		}
	})
}
