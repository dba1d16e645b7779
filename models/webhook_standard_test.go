package models_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// X8: the Standard Webhooks headers verify with the stock Go verifier
// given the "whsec_…" secret as shown, under either secret while a rotated
// one still signs, and not under another secret, another body or another id.
func TestStandardWebhookSignatureStockVerifier(t *testing.T) {
	oldSec := "whsec_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	newSec := "whsec_" + "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	other := "whsec_" + "00000000000000000000000000000000000000000000000000000000000000ff"
	body := []byte(`{"id":"evt_1","type":"cluster.ready"}`)
	now := time.Now()
	headers := func(id string, secrets ...string) http.Header {
		h := http.Header{}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("Webhook-Signature", models.StandardWebhookSignature(secrets, id, now, body))
		return h
	}
	verify := func(secret string, h http.Header, body []byte) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("the stock verifier refuses the secret %s: %v", secret, err)
		}
		return wh.Verify(body, h)
	}
	rotated := headers("evt_1", newSec, oldSec)
	for _, sec := range []string{newSec, oldSec} {
		if err := verify(sec, rotated, body); err != nil {
			t.Errorf("under %s: %v", sec, err)
		}
	}
	if verify(other, rotated, body) == nil {
		t.Error("verified under another secret")
	}
	if verify(newSec, rotated, []byte(`{"id":"evt_1","type":"cluster.failed"}`)) == nil {
		t.Error("verified another body")
	}
	moved := headers("evt_1", newSec)
	moved.Set("Webhook-Id", "evt_2")
	if verify(newSec, moved, body) == nil {
		t.Error("verified under another webhook-id")
	}
}
