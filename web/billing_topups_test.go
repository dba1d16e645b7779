package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"gorm.io/gorm"
)

// fakePayments stands in for Stripe at web's boundary: the signature
// "good" verifies and the body is the decoded event; the Stripe side is
// tested against stripe-mock in providers/payments.
type fakePayments struct{ started []models.TopUp }

func (f *fakePayments) StartCheckout(_ context.Context, t models.TopUp, _, _, _ string) (string, string, error) {
	f.started = append(f.started, t)
	return "cs_" + t.ID, "https://pay.example/cs_" + t.ID, nil
}

func (f *fakePayments) VerifyWebhook(payload []byte, sig string) (models.PaymentEvent, error) {
	var ev models.PaymentEvent
	if sig != "good" || json.Unmarshal(payload, &ev) != nil {
		return ev, ErrBadSignature
	}
	return ev, nil
}

func (*fakePayments) APIVersion() string { return "2023-10-16" }

func (*fakePayments) WebhookFields() []string {
	return []string{"checkout.session: id, amount_total, currency"}
}

func newPaymentsApp(t *testing.T, db *gorm.DB, p Payments) *testApp {
	app := newTestApp(t, db)
	app.e = New(Deps{
		Config: Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  app.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FakeClock: app.clock, Static: static.FS,
		LogPoll: 5 * time.Millisecond, Payments: p,
	})
	return app
}

// B7: without Stripe keys a top-up is credited at once, in test mode; under
// $5 is refused and credits nothing; members may not add funds.
func TestTopUpTestMode(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("pay@example.com", "Payers")
		tok := apiKeyFor(t, app, acc)
		code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"25.00"}`)
		if code != http.StatusCreated || out["status"] != "completed" || out["testMode"] != true || out["amount"] != "25.00" {
			t.Fatalf("test-mode top-up: %d %v", code, out)
		}
		for _, bad := range []string{`{"amount":"4.99"}`, `{"amount":"ten"}`, `{"amount":"5.001"}`} {
			if code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, bad); code != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d %v, want 422", bad, code, out)
			}
		}
		member := app.joinAccount(acc, "member@example.com", models.RoleMember)
		mtok := apiKeyFor(t, app, account{user: member.user, org: acc.org, env: acc.env, role: models.RoleMember})
		if code, _ := apiJSON(t, app, "POST", "/v1/billing/top-ups", mtok, `{"amount":"25.00"}`); code != http.StatusForbidden {
			t.Errorf("member top-up: %d, want 403", code)
		}
		if bal, _ := app.store.Balance(ctx, acc.org.ID); bal != 25*models.Micro {
			t.Errorf("balance %d, want $25 (credited once)", bal)
		}
		recs, _, err := app.store.AuditRecords(ctx, acc.org.ID, 0, 50)
		if err != nil {
			t.Fatal(err)
		}
		var audited []string
		for _, r := range recs {
			if r.Action == "billing.top_up" {
				audited = append(audited, r.Target+" "+r.Detail)
			}
		}
		if len(audited) != 1 || audited[0] != out["id"].(string)+" 25.00" {
			t.Errorf("audited top-ups %v, want the one accepted", audited)
		}
		if rec := app.do(httptest.NewRequest("POST", "/webhooks/stripe", strings.NewReader("{}"))); rec.Code != http.StatusNotFound {
			t.Errorf("webhook in test mode: %d, want 404", rec.Code)
		}
	})
}

// B4: with Stripe, the top-up answers the Checkout URL and credits nothing;
// only a verified checkout.session.completed credits, once; a bad
// signature answers 400 and an unknown event 200, both changing nothing.
func TestStripeWebhook(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		fake := &fakePayments{}
		app = newPaymentsApp(t, app.db, fake)
		ctx := context.Background()
		acc := app.signupAccount("card@example.com", "Cards")
		tok := apiKeyFor(t, app, acc)
		code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"40"}`)
		id, _ := out["id"].(string)
		if code != http.StatusCreated || out["status"] != "pending" || out["testMode"] != false || out["checkoutUrl"] != "https://pay.example/cs_"+id {
			t.Fatalf("stripe top-up: %d %v", code, out)
		}
		balance := func() models.Money {
			b, _ := app.store.Balance(ctx, acc.org.ID)
			return b
		}
		hook := func(sig string, ev models.PaymentEvent) int {
			body, _ := json.Marshal(ev)
			req := httptest.NewRequest("POST", "/webhooks/stripe", strings.NewReader(string(body)))
			req.Header.Set("Stripe-Signature", sig)
			return app.do(req).Code
		}
		paid := models.PaymentEvent{ID: "evt_1", Type: "checkout.session.completed", CheckoutComplete: true, OrgID: acc.org.ID,
			TopUpID: id, SessionID: "cs_" + id, Amount: 40 * models.Micro, Currency: "usd", Paid: true}
		steps := []struct {
			name    string
			sig     string
			ev      models.PaymentEvent
			code    int
			balance models.Money
		}{
			{"bad signature", "forged", paid, 400, 0},
			{"unknown event", "good", models.PaymentEvent{ID: "evt_0", Type: "customer.created"}, 200, 0},
			{"paid", "good", paid, 200, 40 * models.Micro},
			{"repeated", "good", paid, 200, 40 * models.Micro},
		}
		for _, st := range steps {
			if code := hook(st.sig, st.ev); code != st.code || balance() != st.balance {
				t.Errorf("%s: %d, balance %d; want %d, %d", st.name, code, balance(), st.code, st.balance)
			}
		}
	})
}
