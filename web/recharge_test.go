package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B4: auto-recharge needs the card a top-up by card saved (read from the
// verified payment_intent.succeeded); owners and admins set it through the
// API and the page, members may not; a failed charge shows a banner on every
// page to owners and admins only, and saving the setting lifts it.
func TestAutoRecharge(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app = newPaymentsApp(t, app.db, &fakePayments{})
		ctx := context.Background()
		acc := app.signupAccount("recharge@example.com", "Rechargers")
		tok := apiKeyFor(t, app, acc)
		member := app.joinAccount(acc, "m@example.com", models.RoleMember)
		mtok := apiKeyFor(t, app, account{user: member.user, org: acc.org, env: acc.env, role: models.RoleMember})
		on := `{"enabled":true,"threshold":"20.00","amount":"50.00"}`

		if code, out := apiJSON(t, app, "PUT", "/v1/billing/auto-recharge", tok, on); code != http.StatusUnprocessableEntity {
			t.Fatalf("enabled without a card: %d %v, want 422", code, out)
		}
		_, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"40"}`)
		body, _ := json.Marshal(models.PaymentEvent{ID: "evt_pi", Type: "payment_intent.succeeded", PaymentIntent: true, OrgID: acc.org.ID,
			TopUpID: out["id"].(string), PaymentIntentID: "pi_1", CustomerID: "cus_1", PaymentMethodID: "pm_1", Paid: true, Amount: 40 * models.Micro})
		req := httptest.NewRequest("POST", "/webhooks/stripe", strings.NewReader(string(body)))
		req.Header.Set("Stripe-Signature", "good")
		if rec := app.do(req); rec.Code != http.StatusOK {
			t.Fatalf("webhook: %d", rec.Code)
		}
		if _, out := apiJSON(t, app, "GET", "/v1/billing/auto-recharge", tok, ""); out["cardSaved"] != true || out["enabled"] != false {
			t.Fatalf("after the top-up's payment: %v, want the card saved", out)
		}
		for _, bad := range []string{`{"enabled":true,"threshold":"20","amount":"4.99"}`, `{"enabled":true,"threshold":"-1","amount":"50"}`,
			`{"enabled":true,"threshold":"x","amount":"50"}`} {
			if code, out := apiJSON(t, app, "PUT", "/v1/billing/auto-recharge", tok, bad); code != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d %v, want 422", bad, code, out)
			}
		}
		if code, _ := apiJSON(t, app, "PUT", "/v1/billing/auto-recharge", mtok, on); code != http.StatusForbidden {
			t.Errorf("member: %d, want 403", code)
		}
		code, out := apiJSON(t, app, "PUT", "/v1/billing/auto-recharge", tok, on)
		if code != http.StatusOK || out["enabled"] != true || out["threshold"] != "20.00" || out["amount"] != "50.00" {
			t.Fatalf("enable: %d %v", code, out)
		}
		if got := app.auditActions(acc.org.ID); !strings.Contains(strings.Join(got, " "), "billing.auto_recharge") {
			t.Errorf("audit %v lacks billing.auto_recharge", got)
		}

		// A charge is due ($0 < $20) and the bank asks for the cardholder.
		if n, err := app.store.PlanCharges(ctx); err != nil || n != 1 {
			t.Fatalf("planned %d, %v", n, err)
		}
		cs, _ := app.store.Charges(ctx, acc.org.ID)
		if err := app.store.FailCharge(ctx, acc.org.ID, cs[0].ID, "pi_2", "authentication_required", "confirm"); err != nil {
			t.Fatal(err)
		}
		owner, mem := app.login(acc), app.login(member)
		for _, path := range []string{"/clusters", "/billing"} {
			if n := doc(t, owner.get(path)).Find(`[data-testid="charge-problem"]`).Length(); n != 1 {
				t.Errorf("owner on %s: %d banners, want 1", path, n)
			}
		}
		if n := doc(t, mem.get("/clusters")).Find(`[data-testid="charge-problem"]`).Length(); n != 0 {
			t.Errorf("member sees %d banners, want none", n)
		}
		if _, out := apiJSON(t, app, "GET", "/v1/billing/auto-recharge", tok, ""); out["paused"] == nil {
			t.Errorf("API: %v, want paused", out)
		}

		// The page form: an htmx post with a bad amount gets the form back, 422.
		rec := owner.post("/billing/auto-recharge", url.Values{"enabled": {"on"}, "threshold": {"20"}, "amount": {"2"}}, "HX-Request", "true")
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid="problem-amount"]`).Length() != 1 {
			t.Fatalf("bad form: %d\n%s", rec.Code, rec.Body)
		}
		if rec := owner.post("/billing/auto-recharge", url.Values{"enabled": {"on"}, "threshold": {"20"}, "amount": {"50"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("save: %d %s", rec.Code, rec.Body)
		}
		if n := doc(t, owner.get("/clusters")).Find(`[data-testid="charge-problem"]`).Length(); n != 0 {
			t.Errorf("after saving again: %d banners, want none", n)
		}
		if rec := mem.post("/billing/auto-recharge", url.Values{"enabled": {"on"}, "threshold": {"20"}, "amount": {"50"}}); rec.Code != http.StatusForbidden {
			t.Errorf("member form post: %d, want 403", rec.Code)
		}
	})
}
