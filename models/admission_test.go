package models_test

import (
	"context"
	"errors"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// L2 counts one hour of every cluster the organisation runs or provisions,
// and only those: a failed or terminated cluster no longer holds money back.
func TestAdmissionCountsLiveClustersOnly(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100*models.Micro)
		if _, err := e.s.SetOrgQuota(ctx, e.org.ID, 64, 512); err != nil {
			t.Fatal(err)
		}
		shape := models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:h100x8"}
		var live []models.Cluster
		for range 2 {
			c, _, err := e.launch(e.quote(t, shape), "", "")
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, c)
		}
		// $100 less 2 × $39.94 running leaves $20.12 for a $39.94 cluster.
		q := e.quote(t, shape)
		_, _, err := e.launch(q, "", "")
		var ib *models.InsufficientBalanceError
		if !errors.As(err, &ib) || ib.Committed != 2*q.USDPerHour || ib.Required != q.USDPerHour || ib.Shortfall() != 19_820_000 {
			t.Fatalf("third launch: %v", err)
		}
		if _, err := e.s.FailCluster(ctx, live[0].ID, models.ParseLastError("timeout:running"), "node-0", models.StepRunning, "late", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.MarkTerminated(ctx, live[1].ID); err != nil {
			t.Fatal(err)
		}
		a, err := e.s.AdmissionFor(ctx, e.org.ID, q.USDPerHour)
		if err != nil || a.Committed != 0 || a.Shortfall() != 0 {
			t.Fatalf("after the two ended: %+v %v", a, err)
		}
		if _, _, err := e.launch(q, "", ""); err != nil {
			t.Errorf("launch once the others ended: %v", err)
		}
	})
}
