package lambda_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers/lambda"
)

// The start-up script is valid sh, installs the customer's keys, fetches
// the binary, checks its SHA-256 and runs `clusterdeck agent --server URL
// --token T` as a service that survives reboots.
func TestStartupScript(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	a := lambda.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: sum}
	script, err := lambda.StartupScript(a, "https://deck.example.com", "agt_tok_1",
		[]string{"ssh-ed25519 AAAAkey1 a@b", " ", "ssh-rsa AAAAkey2 c@d"})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	file := filepath.Join(t.TempDir(), "user-data.sh")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sh, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s\n%s", err, out, script)
	}
	for _, want := range []string{
		"#!/bin/sh\n",
		"set -eu\n",
		"ssh-ed25519 AAAAkey1 a@b\nssh-rsa AAAAkey2 c@d\nCLUSTERDECK_KEYS\n",
		"curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o /opt/clusterdeck/clusterdeck.new 'https://deck.example.com/dl/clusterdeck-linux-amd64'\n",
		"echo '" + sum + "  /opt/clusterdeck/clusterdeck.new' | sha256sum -c -\n",
		"CLUSTERDECK_SERVER=https://deck.example.com\nCLUSTERDECK_TOKEN=agt_tok_1\n",
		"ExecStart=/opt/clusterdeck/clusterdeck agent --server ${CLUSTERDECK_SERVER} --token ${CLUSTERDECK_TOKEN}\n",
		"Restart=always\n",
		"systemctl enable --now clusterdeck-agent.service\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	// The token file is written under umask 077 (root only).
	if i, j := strings.Index(script, "umask 077"), strings.Index(script, "CLUSTERDECK_TOKEN="); i < 0 || i > j {
		t.Error("the token is written before umask 077")
	}
	// Without a checksum nothing is verified; without keys none are added.
	plain, err := lambda.StartupScript(lambda.AgentInstall{URL: a.URL}, "https://deck.example.com", "agt_tok_1", nil)
	if err != nil || strings.Contains(plain, "sha256sum") || strings.Contains(plain, "authorized_keys") {
		t.Errorf("plain script: %v\n%s", err, plain)
	}
	for _, bad := range []struct{ server, token string }{
		{"", "t"}, {"deck.example.com", "t"}, {"https://deck.example.com", ""},
		{"https://deck.example.com", "t'; rm -rf /"}, {"https://deck.example.com", "t\nX=1"},
	} {
		if _, err := lambda.StartupScript(a, bad.server, bad.token, nil); err == nil {
			t.Errorf("accepted server %q token %q", bad.server, bad.token)
		}
	}
	if _, err := lambda.StartupScript(a, "https://deck.example.com", "t", []string{"ssh-rsa A\nrm -rf /"}); err == nil {
		t.Error("accepted a key spanning lines")
	}
}

// New refuses a configuration it cannot work with.
func TestNewValidates(t *testing.T) {
	for _, cfg := range []lambda.Config{
		{Agent: lambda.AgentInstall{URL: "https://x/clusterdeck"}},
		{APIKey: "k"},
		{APIKey: "k", Agent: lambda.AgentInstall{URL: "ftp://x/clusterdeck"}},
		{APIKey: "k", Agent: lambda.AgentInstall{URL: "https://x/clusterdeck", SHA256: "abc"}},
	} {
		if _, err := lambda.New(cfg); err == nil {
			t.Errorf("accepted %v", cfg)
		}
	}
}
