package models_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X8: an endpoint's URL is https; plain http only to this machine in
// development; in production a literal private, loopback or link-local
// address is refused at once (names are checked again at connect time).
func TestWebhookURLProblem(t *testing.T) {
	for _, c := range []struct {
		url     string
		dev, ok bool
	}{
		{"https://hooks.example.com/x", false, true},
		{"https://hooks.example.com/x", true, true},
		{"http://hooks.example.com/x", false, false},
		{"http://hooks.example.com/x", true, false},
		{"http://127.0.0.1:9000/x", true, true},
		{"http://localhost:9000/x", true, true},
		{"http://127.0.0.1:9000/x", false, false},
		{"https://127.0.0.1/x", false, false},
		{"https://10.0.0.5/x", false, false},
		{"https://169.254.169.254/latest", false, false},
		{"https://[::1]/x", false, false},
		{"https://[64:ff9b::a9fe:a9fe]/latest", false, false},              // NAT64 of 169.254.169.254
		{"https://[64:ff9b:1::808:808]/x", false, false},                   // local-use NAT64
		{"https://[::127.0.0.1]/x", false, false},                          // IPv4-compatible loopback
		{"https://[2002:a00:1::1]/x", false, false},                        // 6to4 of 10.0.0.1
		{"https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", false, false}, // Teredo client 127.0.0.1
		{"https://[64:ff9b::808:808]/x", false, true},                      // NAT64 of a public address
		{"https://user:pw@hooks.example.com/x", false, false},
		{"ftp://hooks.example.com/x", true, false},
		{"hooks.example.com/x", true, false},
		{"", true, false},
	} {
		if got := models.WebhookURLProblem(c.url, c.dev) == ""; got != c.ok {
			t.Errorf("WebhookURLProblem(%q, dev=%v) ok=%v, want %v", c.url, c.dev, got, c.ok)
		}
	}
}

// The signature header: one v1 per secret, each HMAC-SHA256 of "t.body".
func TestWebhookSignature(t *testing.T) {
	at := models.NewFakeClock(testWebhookTime).Now()
	got := models.WebhookSignature([]string{"whsec_a", "whsec_b"}, at, []byte(`{"id":"evt_1"}`))
	// printf '%s' '1764504000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_a (and whsec_b)
	want := "t=1764504000,v1=" + hmacHex("whsec_a", `1764504000.{"id":"evt_1"}`) + ",v1=" + hmacHex("whsec_b", `1764504000.{"id":"evt_1"}`)
	if got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

var testWebhookTime = time.Date(2025, 11, 30, 12, 0, 0, 0, time.UTC)

func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
