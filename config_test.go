package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// SALES_EMAIL (RQ2) defaults to sales@clusterdeck.local, is normalised, and
// refuses anything but one plain address.
func TestSalesEmailConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := loadConfig(env(nil))
	if err != nil || c.SalesEmail != "sales@clusterdeck.local" {
		t.Errorf("default: %q %v", c.SalesEmail, err)
	}
	c, err = loadConfig(env(map[string]string{"SALES_EMAIL": " Deals@Example.com "}))
	if err != nil || c.SalesEmail != "deals@example.com" {
		t.Errorf("set: %q %v", c.SalesEmail, err)
	}
	for _, bad := range []string{"Sales <sales@example.com>", "a@example.com, b@example.com", "sales"} {
		if _, err := loadConfig(env(map[string]string{"SALES_EMAIL": bad})); err == nil || !strings.Contains(err.Error(), "SALES_EMAIL") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

// DEFAULT_MARKUP_PERCENT (OP2) is 0 unless set; a percentage with at most
// two decimals, 0 to 500, else start-up fails naming the variable.
func TestDefaultMarkupConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if c, err := loadConfig(env(nil)); err != nil || c.DefaultMarkup != 0 {
		t.Errorf("default: %d %v", c.DefaultMarkup, err)
	}
	if c, err := loadConfig(env(map[string]string{"DEFAULT_MARKUP_PERCENT": "7.5"})); err != nil || c.DefaultMarkup != 750 {
		t.Errorf("7.5: %d %v", c.DefaultMarkup, err)
	}
	for _, bad := range []string{"-1", "501", "1.234", "ten"} {
		if _, err := loadConfig(env(map[string]string{"DEFAULT_MARKUP_PERCENT": bad})); err == nil || !strings.Contains(err.Error(), "DEFAULT_MARKUP_PERCENT") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

// LAMBDA_API_KEY enables the Lambda provider (OP1) beside PROVIDERS; it
// needs LAMBDA_AGENT_URL, and naming lambda without a key fails start-up.
func TestLambdaConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := loadConfig(env(nil))
	if err != nil || slices.Contains(c.Providers, "lambda") {
		t.Fatalf("default: %v %v", c.Providers, err)
	}
	c, err = loadConfig(env(map[string]string{"LAMBDA_API_KEY": "secret_abc", "LAMBDA_SSH_KEY_NAME": "ops", "LAMBDA_AGENT_URL": "https://deck.example.com/clusterdeck",
		"LAMBDA_REGIONS": " us-east-1, us-west-1 ,", "LAMBDA_AGENT_SHA256": strings.Repeat("AB", 32)}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Providers, []string{"sim", "lambda"}) || !slices.Equal(c.Lambda.Regions, []string{"us-east-1", "us-west-1"}) ||
		c.Lambda.APIURL != "https://cloud.lambda.ai" || c.Lambda.AgentSHA256 != strings.Repeat("ab", 32) ||
		c.Lambda.RequestInterval != time.Second || c.Lambda.LaunchInterval != 12*time.Second {
		t.Errorf("enabled: %+v %v", c.Providers, c.Lambda.Regions)
	}
	c, err = loadConfig(env(map[string]string{"PROVIDERS": "lambda", "LAMBDA_API_KEY": "k", "LAMBDA_SSH_KEY_NAME": "ops", "LAMBDA_AGENT_URL": "https://x/cd", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32)}))
	if err != nil || !slices.Equal(c.Providers, []string{"lambda"}) {
		t.Errorf("lambda alone: %v %v", c.Providers, err)
	}
	for name, kv := range map[string]map[string]string{
		"PROVIDERS":        {"PROVIDERS": "sim,lambda"},
		"LAMBDA_AGENT_URL": {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "ftp://x/cd"},
		"LAMBDA_AGENT_SHA256 goes with LAMBDA_AGENT_URL": {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32)},
		"LAMBDA_AGENT_URL needs LAMBDA_AGENT_SHA256":     {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "https://x/cd"},
		"AGENT_BINARY_DIR":                {"AGENT_BINARY_DIR": "/nonexistent/clusterdeck-agent"},
		"LAMBDA_AGENT_SHA256":             {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "https://x/cd", "LAMBDA_AGENT_SHA256": "abc"},
		"LAMBDA_API_URL":                  {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "https://x/cd", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32), "LAMBDA_API_URL": "cloud.lambda.ai"},
		"LAMBDA_LAUNCH_INTERVAL":          {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "https://x/cd", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32), "LAMBDA_LAUNCH_INTERVAL": "0s"},
		"LAMBDA_SSH_KEY_NAME is required": {"LAMBDA_API_KEY": "k", "LAMBDA_AGENT_URL": "https://x/cd", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32)},
	} {
		_, err := loadConfig(env(kv))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

// BALANCE_GRACE and BALANCE_TERMINATE_GRACE (B6) default to 1 h and 72 h;
// anything but a positive duration fails start-up naming the variable.
func TestBalanceGraceConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if c, err := loadConfig(env(nil)); err != nil || c.BalanceGrace != time.Hour || c.TerminateGrace != 72*time.Hour {
		t.Errorf("default: %v %v %v", c.BalanceGrace, c.TerminateGrace, err)
	}
	c, err := loadConfig(env(map[string]string{"BALANCE_GRACE": "30m", "BALANCE_TERMINATE_GRACE": "24h"}))
	if err != nil || c.BalanceGrace != 30*time.Minute || c.TerminateGrace != 24*time.Hour {
		t.Errorf("set: %v %v %v", c.BalanceGrace, c.TerminateGrace, err)
	}
	for _, k := range []string{"BALANCE_GRACE", "BALANCE_TERMINATE_GRACE"} {
		for _, bad := range []string{"0s", "-1h", "an hour"} {
			if _, err := loadConfig(env(map[string]string{k: bad})); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s=%q: err = %v", k, bad, err)
			}
		}
	}
}

// SIM_AGENT_EVERY, the simulated machines' agent round, defaults to 2 s;
// anything but a positive duration fails start-up naming the variable.
func TestSimAgentEveryConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if c, err := loadConfig(env(nil)); err != nil || c.SimAgentEvery != 2*time.Second {
		t.Errorf("default: %v %v", c.SimAgentEvery, err)
	}
	if c, err := loadConfig(env(map[string]string{"SIM_AGENT_EVERY": "100ms"})); err != nil || c.SimAgentEvery != 100*time.Millisecond {
		t.Errorf("set: %v %v", c.SimAgentEvery, err)
	}
	for _, bad := range []string{"0s", "-1s", "often"} {
		if _, err := loadConfig(env(map[string]string{"SIM_AGENT_EVERY": bad})); err == nil || !strings.Contains(err.Error(), "SIM_AGENT_EVERY") {
			t.Errorf("SIM_AGENT_EVERY=%q: err = %v", bad, err)
		}
	}
}

// RUNPOD_API_KEY and SHADEFORM_API_KEY enable their providers (OP1) beside
// PROVIDERS, each with its agent URL; naming one without its key, or a bad
// URL or checksum, fails start-up naming the variable, never showing the key.
func TestRunPodShadeformConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := loadConfig(env(nil))
	if err != nil || slices.Contains(c.Providers, "runpod") || slices.Contains(c.Providers, "shadeform") {
		t.Fatalf("default: %v %v", c.Providers, err)
	}
	c, err = loadConfig(env(map[string]string{"RUNPOD_API_KEY": "secret_rp", "RUNPOD_AGENT_URL": "https://deck.example.com/cd", "RUNPOD_AGENT_SHA256": strings.Repeat("ab", 32),
		"RUNPOD_DATACENTERS": "US-TX-3, EU-RO-1", "RUNPOD_IMAGE": "ubuntu:24.04",
		"SHADEFORM_API_KEY": "secret_sf", "SHADEFORM_AGENT_URL": "https://deck.example.com/cd", "SHADEFORM_AGENT_SHA256": strings.Repeat("CD", 32),
		"SHADEFORM_CLOUDS": "lambdalabs,hyperstack", "SHADEFORM_REGIONS": "us-east-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Providers, []string{"sim", "runpod", "shadeform"}) || !slices.Equal(c.RunPod.Locations, []string{"US-TX-3", "EU-RO-1"}) ||
		c.RunPod.APIURL != "https://api.runpod.io" || c.RunPod.Image != "ubuntu:24.04" || c.Shadeform.APIURL != "https://api.shadeform.ai/v1" ||
		!slices.Equal(c.Shadeform.Clouds, []string{"lambdalabs", "hyperstack"}) || !slices.Equal(c.Shadeform.Locations, []string{"us-east-1"}) ||
		c.Shadeform.AgentSHA256 != strings.Repeat("cd", 32) {
		t.Errorf("enabled: %v %+v", c.Providers, c.Shadeform.Locations)
	}
	for name, kv := range map[string]map[string]string{
		"RUNPOD_API_KEY":                             {"PROVIDERS": "sim,runpod"},
		"SHADEFORM_API_KEY":                          {"PROVIDERS": "shadeform"},
		"RUNPOD_AGENT_URL":                           {"RUNPOD_API_KEY": "secret_rp", "RUNPOD_AGENT_URL": "deck.example.com/cd"},
		"SHADEFORM_AGENT_SHA256":                     {"SHADEFORM_API_KEY": "secret_sf", "SHADEFORM_AGENT_URL": "https://x/cd", "SHADEFORM_AGENT_SHA256": "xyz"},
		"RUNPOD_AGENT_URL needs RUNPOD_AGENT_SHA256": {"RUNPOD_API_KEY": "secret_rp", "RUNPOD_AGENT_URL": "https://x/cd"},
		"RUNPOD_API_URL":                             {"RUNPOD_API_KEY": "secret_rp", "RUNPOD_AGENT_URL": "https://x/cd", "RUNPOD_AGENT_SHA256": strings.Repeat("ab", 32), "RUNPOD_API_URL": "api.runpod.io"},
	} {
		_, err := loadConfig(env(kv))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

// <P>_MARKUP_PERCENT (OP2) sets one provider's markup, validated like
// DEFAULT_MARKUP_PERCENT: a bad value refuses to start, naming the variable.
// The providers page learns which keys are set, never the keys.
func TestProviderMarkupConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := loadConfig(env(map[string]string{"LAMBDA_MARKUP_PERCENT": "12.5", "SIM_MARKUP_PERCENT": "0", "SSH_MARKUP_PERCENT": " 3% ",
		"LAMBDA_API_KEY": "secret_abc", "LAMBDA_SSH_KEY_NAME": "ops", "LAMBDA_AGENT_URL": "https://deck.example.com/clusterdeck", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32), "LAMBDA_REGIONS": "us-east-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"lambda": 1250, "sim": 0, "ssh": 300}; len(c.Markups) != 3 || c.Markups["lambda"] != want["lambda"] ||
		c.Markups["sim"] != 0 || c.Markups["ssh"] != 300 {
		t.Errorf("markups: %v", c.Markups)
	}
	if _, ok := c.Markups["runpod"]; ok {
		t.Error("an unset RUNPOD_MARKUP_PERCENT is a markup")
	}
	ps := c.providerSettings()
	if l := ps["lambda"]; !l.KeySet || l.KeyVar != "LAMBDA_API_KEY" || !slices.Equal(l.Regions, []string{"us-east-1"}) || l.MarkupVar != "LAMBDA_MARKUP_PERCENT" {
		t.Errorf("lambda: %+v", l)
	}
	if r := ps["runpod"]; r.KeySet || r.KeyVar != "RUNPOD_API_KEY" {
		t.Errorf("runpod: %+v", r)
	}
	for _, bad := range []string{"-1", "501", "1.234", "ten"} {
		for _, v := range []string{"LAMBDA_MARKUP_PERCENT", "RUNPOD_MARKUP_PERCENT", "SHADEFORM_MARKUP_PERCENT", "SSH_MARKUP_PERCENT", "SIM_MARKUP_PERCENT"} {
			if _, err := loadConfig(env(map[string]string{v: bad})); err == nil || !strings.Contains(err.Error(), v) {
				t.Errorf("%s=%q: err = %v", v, bad, err)
			}
		}
	}
}

// MCP_ALLOWED_ORIGINS (API5): a comma list of origins,
// normalised; anything else refuses to start naming the variable.
func TestMCPAllowedOriginsConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if c, err := loadConfig(env(nil)); err != nil || len(c.MCPOrigins) != 0 {
		t.Errorf("default: %v %v", c.MCPOrigins, err)
	}
	c, err := loadConfig(env(map[string]string{"MCP_ALLOWED_ORIGINS": " https://App.Example.com:443 , http://localhost:6274/"}))
	if err != nil || !slices.Equal(c.MCPOrigins, []string{"https://app.example.com", "http://localhost:6274"}) {
		t.Errorf("set: %v %v", c.MCPOrigins, err)
	}
	for _, bad := range []string{"app.example.com", "null", "https://app.example.com/mcp", "ftp://app.example.com", "*"} {
		if _, err := loadConfig(env(map[string]string{"MCP_ALLOWED_ORIGINS": bad})); err == nil || !strings.Contains(err.Error(), "MCP_ALLOWED_ORIGINS") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}
