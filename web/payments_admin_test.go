package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// B4, B9: the operator's payments page lists each
// payment event that credited nothing (organisation, top-up, event, reason)
// and says when the webhook endpoint sends another API version than ours,
// with the fields read from its events; customers cannot see it. In test
// mode it says there are no webhooks.
func TestAdminPaymentsPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		if d := doc(t, operatorFor(t, app, app.signupAccount("op0@deck.example", "Ops0")).get("/admin/payments")); !strings.Contains(
			d.Find(`[data-testid=payments-mode]`).Text(), "Test mode") {
			t.Errorf("test mode: %q", d.Find(`[data-testid=admin-payments-page]`).Text())
		}

		app = newPaymentsApp(t, app.db, &fakePayments{})
		op := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		if d := doc(t, op.get("/admin/payments")); d.Find(`[data-testid=no-mismatches]`).Length() != 1 ||
			!strings.Contains(d.Find(`[data-testid=webhook-version]`).Text(), "No webhook event") {
			t.Fatalf("before any event: %q", d.Find(`[data-testid=admin-payments-page]`).Text())
		}
		acc := app.signupAccount("buyer@example.com", "Buyers")
		tok := apiKeyFor(t, app, acc)
		_, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"20"}`)
		id := out["id"].(string)
		hook := func(ev models.PaymentEvent) {
			body, _ := json.Marshal(ev)
			req := httptest.NewRequest("POST", "/webhooks/stripe", strings.NewReader(string(body)))
			req.Header.Set("Stripe-Signature", "good")
			if rec := app.do(req); rec.Code != http.StatusOK {
				t.Fatalf("webhook %s: %d", ev.ID, rec.Code)
			}
		}
		hook(models.PaymentEvent{ID: "evt_idr", Type: "checkout.session.completed", CheckoutComplete: true, OrgID: acc.org.ID, TopUpID: id,
			SessionID: "cs_" + id, Amount: 3_200_000 * models.Micro, Currency: "idr", Paid: true, APIVersion: "2023-10-16"})
		d := doc(t, op.get("/admin/payments"))
		row := d.Find(`[data-testid=payment-mismatch]`)
		if row.Length() != 1 || !strings.Contains(row.Text(), "Buyers") || !strings.Contains(row.Text(), id) ||
			!strings.Contains(row.Text(), "evt_idr") || !strings.Contains(row.Text(), "paid in IDR, not USD: the top-up is $20.00") {
			t.Errorf("mismatch rows: %q", row.Text())
		}
		if v := d.Find(`[data-testid=webhook-version]`).Text(); !strings.Contains(v, "sends API version 2023-10-16") || strings.Contains(v, "fields") {
			t.Errorf("same version: %q", v)
		}
		if bal, _ := app.store.Balance(t.Context(), acc.org.ID); bal != 0 {
			t.Errorf("balance %d after a mismatch, want 0", bal)
		}

		app.clock.Advance(time.Minute)
		hook(models.PaymentEvent{ID: "evt_new", Type: "customer.updated", APIVersion: "2025-03-31.basil"})
		hook(models.PaymentEvent{ID: "evt_new2", Type: "checkout.session.completed", CheckoutComplete: true, OrgID: acc.org.ID, TopUpID: id,
			SessionID: "cs_" + id, Amount: 20 * models.Micro, Currency: "usd", Paid: true, APIVersion: "2025-03-31.basil"})
		if bal, _ := app.store.Balance(t.Context(), acc.org.ID); bal != 20*models.Micro {
			t.Errorf("balance %d after the matching event of another version, want $20", bal)
		}
		v := doc(t, op.get("/admin/payments")).Find(`[data-testid=webhook-version]`)
		if !strings.Contains(v.Text(), "sends API version 2025-03-31.basil") || !strings.Contains(v.Text(), "speaks 2023-10-16") ||
			!strings.Contains(v.Text(), "checkout.session: id, amount_total, currency") {
			t.Errorf("other version: %q", v.Text())
		}
		if rec := app.login(acc).get("/admin/payments"); rec.Code == http.StatusOK {
			t.Errorf("a customer saw the payments page: %d", rec.Code)
		}
	})
}
