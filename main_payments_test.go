package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/payments"
	"github.com/clusterdeck/clusterdeck/web"
	"github.com/stripe/stripe-go/v76/webhook"
)

// B7: no key is test mode; a key without the webhook secret is refused.
func TestPaymentsConfig(t *testing.T) {
	if webPayments(config{}) != nil {
		t.Error("no Stripe key must be test mode (nil)")
	}
	env := map[string]string{"STRIPE_SECRET_KEY": "sk_test_1"}
	if _, err := loadConfig(func(k string) string { return env[k] }); err == nil {
		t.Error("a Stripe key without STRIPE_WEBHOOK_SECRET was accepted")
	}
}

// B4: the adapter hands web a verified checkout.session.completed as the
// ledger's PaymentEvent, and a bad signature as web.ErrBadSignature.
func TestStripeForWebVerifiesWebhooks(t *testing.T) {
	p := webPayments(config{StripeSecretKey: "sk_test_1", StripeWebhookSecret: "whsec_1"})
	body, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": "checkout.session.completed", "api_version": "2023-10-16",
		"data": map[string]any{"object": map[string]any{"id": "cs_1", "object": "checkout.session", "amount_total": 2500, "currency": "usd", "payment_status": "paid",
			"metadata": map[string]string{"org_id": "org_1", "top_up_id": "tu_1"}}}})
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_1", Timestamp: time.Now()})
	ev, err := p.VerifyWebhook(sp.Payload, sp.Header)
	want := models.PaymentEvent{ID: "evt_1", Type: "checkout.session.completed", OrgID: "org_1", TopUpID: "tu_1", SessionID: "cs_1",
		Amount: 25 * models.Micro, Currency: "usd", Paid: true, APIVersion: "2023-10-16", CheckoutComplete: true}
	if err != nil || ev != want {
		t.Fatalf("event %+v %v, want %+v", ev, err, want)
	}
	forged := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_other", Timestamp: time.Now()})
	if _, err := p.VerifyWebhook(forged.Payload, forged.Header); !errors.Is(err, web.ErrBadSignature) {
		t.Errorf("forged: %v, want web.ErrBadSignature", err)
	}
}

// B4: a payment_intent.* event reaches the ledger with the charge, the
// customer and the saved card as the API sends them (bare ids).
func TestStripeForWebPaymentIntentEvents(t *testing.T) {
	p := webPayments(config{StripeSecretKey: "sk_test_1", StripeWebhookSecret: "whsec_1"})
	body, _ := json.Marshal(map[string]any{"id": "evt_2", "object": "event", "type": "payment_intent.succeeded", "api_version": "2023-10-16",
		"data": map[string]any{"object": map[string]any{"id": "pi_1", "object": "payment_intent", "status": "succeeded", "amount_received": 5000, "currency": "usd",
			"customer": "cus_1", "payment_method": "pm_1", "metadata": map[string]string{"org_id": "org_1", "charge_id": "ch_1"}}}})
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_1", Timestamp: time.Now()})
	ev, err := p.VerifyWebhook(sp.Payload, sp.Header)
	want := models.PaymentEvent{ID: "evt_2", Type: "payment_intent.succeeded", OrgID: "org_1", SessionID: "pi_1", Amount: 50 * models.Micro,
		Currency: "usd", APIVersion: "2023-10-16", Paid: true, PaymentIntent: true, ChargeID: "ch_1", PaymentIntentID: "pi_1", CustomerID: "cus_1", PaymentMethodID: "pm_1"}
	if err != nil || ev != want {
		t.Fatalf("event %+v %v, want %+v", ev, err, want)
	}
}

// B4: docs/operating.md's webhook set-up line names every event
// the ledger acts on, so an operator subscribes the endpoint to each.
func TestOperatingListsWebhookEvents(t *testing.T) {
	readme, err := os.ReadFile("docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `STRIPE_WEBHOOK_SECRET`") {
			line = l
		}
	}
	for _, ev := range payments.WebhookEvents {
		if !strings.Contains(line, "`"+ev+"`") {
			t.Errorf("docs/operating.md's STRIPE_WEBHOOK_SECRET line does not name %s: %q", ev, line)
		}
	}
}
