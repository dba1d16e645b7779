package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// prodEnv is a production environment with session keys and nothing else.
func prodEnv(t *testing.T, kv map[string]string) map[string]string {
	env := map[string]string{"CLUSTERDECK_ENV": "production", "DATA_DIR": t.TempDir(), "LOG_LEVEL": "error",
		"SESSION_AUTH_KEY": strings.Repeat("ab", 64), "SESSION_ENC_KEY": strings.Repeat("cd", 32)}
	for k, v := range kv {
		env[k] = v
	}
	return env
}

// OP5, B7, B9: production refuses to serve with payments
// in test mode, saying why and what to set, before it opens anything;
// INVOICE_ONLY=1 is the explicit way to run without a payment provider,
// and start-up then warns that self-service top-ups are off.
func TestProductionRefusesTestModePayments(t *testing.T) {
	env := prodEnv(t, map[string]string{"ADDR": "127.0.0.1:0"})
	// A server that did start stops at once: the context is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &stdout, &stderr)
	if out := stdout.String(); err == nil || !strings.Contains(err.Error(), "STRIPE_SECRET_KEY") || !strings.Contains(err.Error(), "INVOICE_ONLY=1") || out != "" {
		t.Fatalf("production without Stripe keys: %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(env["DATA_DIR"], "clusterdeck.db")); err == nil {
		t.Error("the refused start-up opened the database")
	}
	// migrate and admin need no payments: only serving is refused.
	if _, err := runCLI(t, env, "migrate"); err != nil {
		t.Errorf("migrate in production without Stripe keys: %v", err)
	}

	get := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	c, err := loadConfig(get(prodEnv(t, map[string]string{"INVOICE_ONLY": "1", "METRICS_TOKEN": "m", "TRUSTED_PROXIES": "10.0.0.0/8"})))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := c.startupChecks()
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "top-ups and auto-recharge are off") {
		t.Errorf("invoice only: %q %v", warnings, err)
	}
	c, err = loadConfig(get(prodEnv(t, map[string]string{"STRIPE_SECRET_KEY": "sk_live_x", "STRIPE_WEBHOOK_SECRET": "whsec_x",
		"METRICS_TOKEN": "m", "TRUSTED_PROXIES": "10.0.0.0/8"})))
	if err != nil {
		t.Fatal(err)
	}
	if warnings, err := c.startupChecks(); err != nil || len(warnings) != 0 {
		t.Errorf("production with Stripe, a metrics token and proxies: %q %v", warnings, err)
	}
	for _, bad := range []map[string]string{
		{"INVOICE_ONLY": "yes"},
		{"INVOICE_ONLY": "1", "STRIPE_SECRET_KEY": "sk_live_x", "STRIPE_WEBHOOK_SECRET": "whsec_x"},
		{"METRICS_LOOPBACK": "true"},
	} {
		if _, err := loadConfig(get(prodEnv(t, bad))); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// OP5: production says at start-up what /metrics and
// the client address will be without METRICS_TOKEN or TRUSTED_PROXIES.
func TestProductionStartupWarnings(t *testing.T) {
	get := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	c, err := loadConfig(get(prodEnv(t, map[string]string{"STRIPE_SECRET_KEY": "sk_test_x", "STRIPE_WEBHOOK_SECRET": "whsec_x"})))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := c.startupChecks()
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"METRICS_TOKEN is unset: /metrics answers 403", "TRUSTED_PROXIES is unset", "test-mode key"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in %q (%v)", want, all, err)
		}
	}
	c.MetricsLoopback = true
	if warnings, _ := c.startupChecks(); !strings.Contains(strings.Join(warnings, "\n"), "METRICS_LOOPBACK=1 without METRICS_TOKEN") {
		t.Errorf("no warning for METRICS_LOOPBACK: %q", warnings)
	}
}

// B9: MAX_TOP_UP_USD and MAX_ADJUSTMENT_USD default to
// $50,000 and $1,000,000; a top-up maximum is at most what Stripe accepts.
func TestMoneyLimitsConfig(t *testing.T) {
	get := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	c, err := loadConfig(get(nil))
	if err != nil || c.MaxTopUp != models.DefaultMaxTopUp || c.MaxAdjustment != models.DefaultMaxAdjustment {
		t.Errorf("defaults: %d %d %v", c.MaxTopUp, c.MaxAdjustment, err)
	}
	c, err = loadConfig(get(map[string]string{"MAX_TOP_UP_USD": "2500", "MAX_ADJUSTMENT_USD": "10000.50"}))
	if err != nil || c.MaxTopUp != 2500*models.Micro || c.MaxAdjustment != 10_000_500_000 {
		t.Errorf("set: %d %d %v", c.MaxTopUp, c.MaxAdjustment, err)
	}
	for k, bad := range map[string][]string{
		"MAX_TOP_UP_USD":     {"4.99", "1000000", "ten", "-5", "100.001"},
		"MAX_ADJUSTMENT_USD": {"0", "1000000000.01", "x"},
	} {
		for _, v := range bad {
			if _, err := loadConfig(get(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s=%s: %v", k, v, err)
			}
		}
	}
}
