package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// The price a cloud bills is checked after create (OP1, Q2): RunPod bills
// the pods above the price its catalog listed when the cluster was quoted.
// The adapter reads the pods' cost, the provision job records it on the
// cluster with the moment it went above the launch cost, every operator is
// mailed once, the alarm's count says one, and the customer's locked price
// does not move.
func TestProvisionBilledAboveLaunchCost(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := fakekit.NewClockAt(cloudStart)
		c, f := runpodCloud(t, clk, 2, false)
		w := newCloudWorld(t, db, clk, c)
		ops := models.User{ID: models.NewID("usr"), Email: "ops@example.com", IsOperator: true, CreatedAt: cloudStart}
		if err := db.Create(&ops).Error; err != nil {
			t.Fatal(err)
		}
		cl := w.launch(2)
		if cl.UpstreamMachineHour != 8*2_990_000 {
			t.Fatalf("launch cost %d, want the offer's 8 × $2.99", cl.UpstreamMachineHour)
		}
		f.Billed = map[string]float64{"NVIDIA H100 80GB HBM3": 3.49} // the cloud bills above its listing
		w.kick()
		w.untilRunning(15*time.Minute, cl)
		w.tick() // a second look changes nothing
		now, err := w.store.ClusterByID(ctx, cl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if now.BilledMachineHour != 8*3_490_000 || now.PriceAboveAt == nil || !now.BilledAbove() {
			t.Fatalf("billed %d, above at %v: want 8 × $3.49 recorded and marked", now.BilledMachineHour, now.PriceAboveAt)
		}
		if now.USDPerHour != cl.USDPerHour || now.MachineHour != cl.MachineHour {
			t.Errorf("the customer's locked price moved: %d → %d per hour", cl.USDPerHour, now.USDPerHour)
		}
		var mails []models.OutboxMail
		if err := db.Where("to_addr = ?", ops.Email).Find(&mails).Error; err != nil {
			t.Fatal(err)
		}
		mails, err = views.RenderedMails(mails, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(mails) != 1 || !strings.Contains(mails[0].Text, "27.92") || !strings.Contains(mails[0].Text, "23.92") {
			t.Fatalf("operator mails %+v", mails)
		}
		if n, err := w.store.LiveBilledAbove(ctx); err != nil || n != 1 {
			t.Errorf("alarm count %d (%v), want 1", n, err)
		}
		if list, err := w.store.PricesAbove(ctx); err != nil || len(list) != 1 || list[0].Cluster.ID != cl.ID || list[0].OrgName != "Acme" {
			t.Errorf("listed for operators: %+v %v", list, err)
		}
		w.terminate(cl)
		if n, _ := w.store.LiveBilledAbove(ctx); n != 0 {
			t.Errorf("a terminated cluster still counted: %d", n)
		}
	})
}
