package payments_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/stripemock"
	"github.com/clusterdeck/clusterdeck/providers/payments"
	"github.com/stripe/stripe-go/v76/webhook"
)

const whsec = "whsec_test_secret"

var stripeMock struct {
	once sync.Once
	url  string
	stop func()
	err  error
}

// startStripeMock runs stripe-mock once for the package.
func startStripeMock(t *testing.T) string {
	t.Helper()
	stripeMock.once.Do(func() { stripeMock.url, stripeMock.stop, stripeMock.err = stripemock.Start() })
	stripemock.Require(t, stripeMock.err)
	return stripeMock.url
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stripeMock.stop != nil {
		stripeMock.stop()
	}
	os.Exit(code)
}

// B7: a top-up Checkout Session and an off-session PaymentIntent are
// requests Stripe's own API description accepts (stripe-mock validates them).
func TestStripeMockAcceptsOurRequests(t *testing.T) {
	p := payments.New(payments.Config{SecretKey: "sk_test_123", WebhookSecret: whsec, APIURL: startStripeMock(t)})
	if p.TestMode() {
		t.Fatal("a key configured must not be test mode")
	}
	ctx := context.Background()
	for _, cust := range []string{"", "cus_123"} {
		co, err := p.CreateCheckout(ctx, payments.CheckoutParams{OrgID: "org_1", TopUpID: "tu_1", Amount: 25_000_000, CustomerID: cust,
			CustomerEmail: "a@example.com", SuccessURL: "http://localhost/billing?paid=1", CancelURL: "http://localhost/billing"})
		if err != nil || co.ID == "" || co.URL == "" || co.Paid {
			t.Errorf("checkout (customer %q): %+v %v", cust, co, err)
		}
	}
	ch, err := p.ChargeOffSession(ctx, payments.ChargeParams{OrgID: "org_1", ChargeID: "ch_1", Amount: 50_000_000,
		CustomerID: "cus_123", PaymentMethodID: "pm_123", IdempotencyKey: "charge:ch_1"})
	if err != nil || ch.PaymentIntentID == "" || ch.Status == "" {
		t.Errorf("off-session charge: %+v %v", ch, err)
	}
}

// recorder is an in-process Stripe for what stripe-mock cannot show: the
// exact form we send, the idempotency key, and declines.
type recorder struct {
	mu     sync.Mutex
	forms  []url.Values
	keys   []string
	status int
	body   string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	req.ParseForm()
	r.mu.Lock()
	r.forms = append(r.forms, req.PostForm)
	r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
	status, body := r.status, r.body
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func fakeStripe(t *testing.T, status int, body string) (payments.Provider, *recorder) {
	rec := &recorder{status: status, body: body}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return payments.New(payments.Config{SecretKey: "sk_test_123", WebhookSecret: whsec, APIURL: srv.URL}), rec
}

// B4: the Checkout Session saves the card (setup_future_usage off_session),
// is in payment mode, in cents, names the org and top-up in metadata, and
// is idempotent on the top-up.
func TestCheckoutRequest(t *testing.T) {
	p, rec := fakeStripe(t, 200, `{"id":"cs_test_1","object":"checkout.session","url":"https://pay.example/cs_test_1"}`)
	co, err := p.CreateCheckout(context.Background(), payments.CheckoutParams{OrgID: "org_1", TopUpID: "tu_9", Amount: 12_340_000,
		SuccessURL: "http://localhost/ok", CancelURL: "http://localhost/no"})
	if err != nil || co.ID != "cs_test_1" || co.URL != "https://pay.example/cs_test_1" {
		t.Fatalf("checkout %+v %v", co, err)
	}
	f := rec.forms[0]
	for k, want := range map[string]string{
		"mode": "payment", "payment_intent_data[setup_future_usage]": "off_session",
		"metadata[org_id]": "org_1", "metadata[top_up_id]": "tu_9", "payment_intent_data[metadata][top_up_id]": "tu_9",
		"line_items[0][price_data][unit_amount]": "1234", "line_items[0][price_data][currency]": "usd",
		"customer_creation": "always", "client_reference_id": "tu_9",
	} {
		if got := f.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if rec.keys[0] != "top-up:tu_9" {
		t.Errorf("idempotency key %q", rec.keys[0])
	}
}

// B4: a top-up under $5, or in fractions of a cent, is refused before Stripe.
func TestTopUpValidation(t *testing.T) {
	for _, p := range []payments.Provider{payments.TestMode{}, payments.New(payments.Config{SecretKey: "sk_test_123", APIURL: "http://127.0.0.1:1"})} {
		for _, amount := range []int64{0, 4_990_000, 5_000_001} {
			if _, err := p.CreateCheckout(context.Background(), payments.CheckoutParams{OrgID: "o", TopUpID: "t", Amount: amount}); err == nil {
				t.Errorf("test mode %v: amount %d accepted", p.TestMode(), amount)
			}
		}
	}
}

// B4: off-session charges: success, a decline and authentication_required
// are results with the card's reason, never retried blindly; the key is ours.
func TestChargeOffSession(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		want       payments.Charge
		wantErr    bool
		authNeeded bool
	}{
		{"succeeded", 200, `{"id":"pi_1","object":"payment_intent","status":"succeeded"}`,
			payments.Charge{PaymentIntentID: "pi_1", Status: payments.ChargeSucceeded}, false, false},
		{"declined", 402, `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.","payment_intent":{"id":"pi_2"}}}`,
			payments.Charge{PaymentIntentID: "pi_2", Status: payments.ChargeFailed, FailureCode: "card_declined", DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."}, false, false},
		{"authentication required", 402, `{"error":{"type":"card_error","code":"authentication_required","message":"This payment requires authentication.","payment_intent":{"id":"pi_3"}}}`,
			payments.Charge{PaymentIntentID: "pi_3", Status: payments.ChargeFailed, FailureCode: "authentication_required", Message: "This payment requires authentication.", AuthenticationRequired: true}, false, true},
		{"server error: outcome unknown", 400, `{"error":{"type":"invalid_request_error","message":"No such customer"}}`, payments.Charge{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := fakeStripe(t, tt.status, tt.body)
			got, err := p.ChargeOffSession(context.Background(), payments.ChargeParams{OrgID: "org_1", ChargeID: "ch_7", Amount: 20_000_000,
				CustomerID: "cus_1", PaymentMethodID: "pm_1", IdempotencyKey: "charge:ch_7"})
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
			f := rec.forms[0]
			if f.Get("off_session") != "true" || f.Get("confirm") != "true" || f.Get("amount") != "2000" ||
				f.Get("metadata[charge_id]") != "ch_7" || rec.keys[0] != "charge:ch_7" {
				t.Errorf("request %v key %q", f, rec.keys[0])
			}
		})
	}
}

func signed(t *testing.T, payload string, secret string, at time.Time) (string, []byte) {
	t.Helper()
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(payload), Secret: secret, Timestamp: at})
	return sp.Header, sp.Payload
}

func eventJSON(id, typ, version string, object any) string {
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "api_version": version,
		"data": map[string]any{"object": object}})
	return string(b)
}

var session = map[string]any{"id": "cs_1", "object": "checkout.session", "amount_total": 2500, "currency": "usd", "payment_status": "paid",
	"customer": "cus_1", "payment_intent": "pi_1", "metadata": map[string]string{"org_id": "org_1", "top_up_id": "tu_1"}}

// B4: webhooks are verified over the raw body with stripe-go's webhook
// package: a good signature decodes, a bad, missing or stale one is
// ErrBadSignature, an unknown type decodes to nothing to act on.
func TestParseWebhook(t *testing.T) {
	p := payments.New(payments.Config{SecretKey: "sk_test_123", WebhookSecret: whsec, APIURL: "http://127.0.0.1:1"})
	now := time.Now()
	good := eventJSON("evt_1", payments.EventCheckoutCompleted, "2023-10-16", session)
	header, body := signed(t, good, whsec, now)
	e, err := p.ParseWebhook(body, header)
	want := payments.Event{ID: "evt_1", Type: payments.EventCheckoutCompleted, OrgID: "org_1", TopUpID: "tu_1", ObjectID: "cs_1",
		PaymentIntentID: "pi_1", CustomerID: "cus_1", Amount: 25_000_000, Currency: "usd", Paid: true, APIVersion: "2023-10-16"}
	if err != nil || e != want {
		t.Fatalf("good event: %+v %v, want %+v", e, err, want)
	}
	otherHeader, _ := signed(t, good, "whsec_other", now)
	staleHeader, _ := signed(t, good, whsec, now.Add(-time.Hour))
	for name, h := range map[string]string{"wrong secret": otherHeader, "stale": staleHeader, "missing": "", "garbage": "t=1,v1=zz"} {
		if _, err := p.ParseWebhook(body, h); !errors.Is(err, payments.ErrBadSignature) {
			t.Errorf("%s signature: %v, want ErrBadSignature", name, err)
		}
	}
	tampered := []byte(strings.Replace(string(body), "2500", "250000", 1))
	if _, err := p.ParseWebhook(tampered, header); !errors.Is(err, payments.ErrBadSignature) {
		t.Errorf("tampered body: %v, want ErrBadSignature", err)
	}
	h2, b2 := signed(t, eventJSON("evt_2", "customer.created", "2023-10-16", map[string]any{"id": "cus_9", "object": "customer"}), whsec, now)
	if e, err := p.ParseWebhook(b2, h2); err != nil || e.Type != "customer.created" || e.OrgID != "" || e.Amount != 0 {
		t.Errorf("unknown event: %+v %v", e, err)
	}
	if _, err := (payments.TestMode{}).ParseWebhook(body, header); !errors.Is(err, payments.ErrTestMode) {
		t.Errorf("test mode webhook: %v", err)
	}
}

// B7: without a key, test mode: paid at once, clearly not Stripe.
func TestTestMode(t *testing.T) {
	p := payments.New(payments.Config{})
	if !p.TestMode() {
		t.Fatal("no key must mean test mode")
	}
	co, err := p.CreateCheckout(context.Background(), payments.CheckoutParams{OrgID: "o", TopUpID: "tu_1", Amount: 5_000_000, SuccessURL: "/billing"})
	if err != nil || !co.Paid || co.URL != "/billing" || !strings.HasPrefix(co.ID, "test_") {
		t.Errorf("test checkout %+v %v", co, err)
	}
	ch, err := p.ChargeOffSession(context.Background(), payments.ChargeParams{ChargeID: "c1", Amount: 10_000_000})
	if err != nil || ch.Status != payments.ChargeSucceeded {
		t.Errorf("test charge %+v %v", ch, err)
	}
}

// B4: a payment_intent.* webhook as the API sends it (customer and
// payment_method as bare ids) decodes to the card to save, or to the
// auto-recharge charge it settles or fails.
func TestParsePaymentIntentWebhook(t *testing.T) {
	p := payments.New(payments.Config{SecretKey: "sk_test_123", WebhookSecret: whsec, APIURL: "http://127.0.0.1:1"})
	now := time.Now()
	topUpPI := map[string]any{"id": "pi_1", "object": "payment_intent", "status": "succeeded", "amount_received": 2500, "currency": "usd",
		"customer": "cus_1", "payment_method": "pm_1", "setup_future_usage": "off_session",
		"metadata": map[string]string{"org_id": "org_1", "top_up_id": "tu_1"}}
	h, b := signed(t, eventJSON("evt_4", payments.EventPaymentSucceeded, "2023-10-16", topUpPI), whsec, now)
	e, err := p.ParseWebhook(b, h)
	want := payments.Event{ID: "evt_4", Type: payments.EventPaymentSucceeded, OrgID: "org_1", TopUpID: "tu_1", ObjectID: "pi_1",
		PaymentIntentID: "pi_1", CustomerID: "cus_1", PaymentMethodID: "pm_1", Amount: 25_000_000, Currency: "usd", Paid: true,
		APIVersion: "2023-10-16"}
	if err != nil || e != want {
		t.Fatalf("top-up payment: %+v %v, want %+v", e, err, want)
	}
	failed := map[string]any{"id": "pi_2", "object": "payment_intent", "status": "requires_payment_method", "customer": "cus_1",
		"last_payment_error": map[string]any{"type": "card_error", "code": "card_declined", "message": "Your card was declined."},
		"metadata":           map[string]string{"org_id": "org_1", "charge_id": "ch_1"}}
	h, b = signed(t, eventJSON("evt_5", payments.EventPaymentFailed, "2023-10-16", failed), whsec, now)
	e, err = p.ParseWebhook(b, h)
	if err != nil || e.ChargeID != "ch_1" || e.Paid || e.FailureCode != "card_declined" || e.FailureMessage != "Your card was declined." {
		t.Fatalf("failed charge: %+v %v", e, err)
	}
}

// B4: an endpoint on another API version is not refused:
// the event is read for the fields the ledger uses, each on its own, so an
// expanded object, a field of a changed shape or one gone reads as what it
// says or as nothing, never as a 400 on every payment. Adaptive Pricing's
// presentment currency is not what we are paid: the source currency is.
func TestParseWebhookOtherAPIVersions(t *testing.T) {
	p := payments.New(payments.Config{SecretKey: "sk_test_123", WebhookSecret: whsec, APIURL: "http://127.0.0.1:1"})
	now := time.Now()
	newer := map[string]any{"id": "cs_2", "object": "checkout.session", "amount_total": 2500, "currency": "usd", "payment_status": "paid",
		"customer": map[string]any{"id": "cus_2", "object": "customer"}, "payment_intent": nil, "collected_information": map[string]any{},
		"metadata": map[string]string{"org_id": "org_1", "top_up_id": "tu_2"}}
	for _, version := range []string{"2020-08-27", "2024-06-20", "2025-03-31.basil"} {
		h, b := signed(t, eventJSON("evt_v", payments.EventCheckoutCompleted, version, newer), whsec, now)
		e, err := p.ParseWebhook(b, h)
		want := payments.Event{ID: "evt_v", Type: payments.EventCheckoutCompleted, OrgID: "org_1", TopUpID: "tu_2", ObjectID: "cs_2",
			CustomerID: "cus_2", Amount: 25_000_000, Currency: "usd", Paid: true, APIVersion: version}
		if err != nil || e != want {
			t.Errorf("version %s: %+v %v, want %+v", version, e, err, want)
		}
	}
	odd := map[string]any{"id": "pi_3", "object": "payment_intent", "status": "succeeded", "amount_received": "2500", "currency": 840,
		"last_payment_error": "gone", "metadata": []string{"x"}}
	h, b := signed(t, eventJSON("evt_odd", payments.EventPaymentSucceeded, "2099-01-01", odd), whsec, now)
	if e, err := p.ParseWebhook(b, h); err != nil || e.ObjectID != "pi_3" || !e.Paid || e.Amount != 0 || e.Currency != "" || e.OrgID != "" {
		t.Errorf("fields of changed shapes: %+v %v, want them read as nothing", e, err)
	}
	converted := map[string]any{"id": "cs_3", "object": "checkout.session", "amount_total": 320000000, "currency": "idr",
		"payment_status": "paid", "currency_conversion": map[string]any{"amount_total": 2000, "source_currency": "usd", "fx_rate": "16000"},
		"metadata": map[string]string{"org_id": "org_1", "top_up_id": "tu_3"}}
	h, b = signed(t, eventJSON("evt_cc", payments.EventCheckoutAsyncSucceeded, "2023-10-16", converted), whsec, now)
	if e, err := p.ParseWebhook(b, h); err != nil || e.Amount != 20_000_000 || e.Currency != "usd" {
		t.Errorf("adaptive pricing: %+v %v, want $20 in usd", e, err)
	}
	h, b = signed(t, `{"id":"evt_bad","object":"event","type":"checkout.session.completed","api_version":"2099-01-01","data":{"object":"cs_4"}}`, whsec, now)
	if _, err := p.ParseWebhook(b, h); err == nil || errors.Is(err, payments.ErrBadSignature) {
		t.Errorf("data.object not an object: %v, want a decoding error", err)
	}
}
