package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// OP1, Q2: a cluster whose provider bills above its launch cost is listed
// for operators on /admin/prices with the launch cost, the billed price and
// the customer's locked price, and counted by the alarm's metric while it
// runs; customers get 403.
func TestAdminPricesPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		cust := app.signupAccount("cust@example.com", "Acme")
		op := app.signupAccount("op@example.com", "Ops")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		if rec := app.login(cust).get("/admin/prices"); rec.Code != http.StatusForbidden {
			t.Errorf("customer: %d", rec.Code)
		}
		oc := app.login(op)
		if d := doc(t, oc.get("/admin/prices")); d.Find(`[data-testid=admin-prices-empty]`).Length() != 1 {
			t.Error("no empty state")
		}
		cl := launchFor(t, app, cust, "billed")
		if cl.UpstreamMachineHour <= 0 {
			t.Fatalf("no launch cost recorded: %+v", cl)
		}
		billed := cl.UpstreamMachineHour + 500_000 // fifty cents a machine-hour more
		if above, err := app.store.RecordBilledPrice(ctx, cl, billed); err != nil || !above {
			t.Fatalf("record: %v %v", above, err)
		}
		d := doc(t, oc.get("/admin/prices"))
		row := d.Find(`[data-testid=price-row][data-cluster=` + cl.ID + `]`)
		if row.Length() != 1 || !strings.Contains(row.Find(`[data-testid=price-billed]`).Text(), "$"+models.DecimalUSD(billed)) ||
			!strings.Contains(row.Find(`[data-testid=price-launch]`).Text(), "$"+models.DecimalUSD(cl.UpstreamMachineHour)) ||
			!strings.Contains(row.Find(`[data-testid=price-customer]`).Text(), "$"+models.DecimalUSD(cl.MachineHour)) ||
			!strings.Contains(row.Text(), "Acme") {
			t.Errorf("price row %q", row.Text())
		}
		if d.Find(`[data-testid=admin-tabs] a[href="/admin/prices"][aria-current=page]`).Length() != 1 {
			t.Error("no Prices tab")
		}
		if f := scrape(t, app)["clusterdeck_clusters_billed_above_launch_cost"]; f == nil || f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("alarm metric: %v", f)
		}
		var mails []models.OutboxMail
		if err := app.db.Where("to_addr = ?", op.user.Email).Find(&mails).Error; err != nil || len(mails) != 1 {
			t.Errorf("operator mails %d (%v), want 1", len(mails), err)
		}
	})
}
