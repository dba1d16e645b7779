package lambda_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
)

// The start-up script is valid sh; it fetches the binary, checks its
// SHA-256, writes the workload (whose SSH keys the agent installs) and runs
// `clusterdeck agent --server URL --token T --workload FILE` as a service
// that survives reboots (N3).
func TestStartupScript(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	a := lambda.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: sum}
	w := providers.Workload{Image: "nvcr.io/nvidia/pytorch:24.05-py3", Env: map[string]string{"A": "x\nCLUSTERDECK_WORKLOAD\n'"},
		Ports: []int{8888}, SSHKeys: []string{"ssh-ed25519 AAAAkey1 a@b"}, StartCommand: "echo hi; sleep 1"}
	script, err := lambda.StartupScript(a, "https://deck.example.com", "agt_tok_1", w)
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
		"CLUSTERDECK_DIR=/opt/clusterdeck\n",
		"curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o \"$CLUSTERDECK_DIR/clusterdeck.new\" 'https://deck.example.com/dl/clusterdeck-linux-amd64'\n",
		"if ! echo \"" + sum + "  $CLUSTERDECK_DIR/clusterdeck.new\" | sha256sum -c - >/dev/null 2>&1; then\n",
		"CLUSTERDECK_SERVER=https://deck.example.com\nCLUSTERDECK_TOKEN=agt_tok_1\n",
		"ExecStart=/opt/clusterdeck/clusterdeck agent --server ${CLUSTERDECK_SERVER} --token ${CLUSTERDECK_TOKEN} --workload /etc/clusterdeck/workload.json\n",
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
	// The workload reads back as written, even with a value that looks like
	// the here-document's end.
	_, rest, _ := strings.Cut(script, "<<'CLUSTERDECK_WORKLOAD'\n")
	body, _, ok := strings.Cut(rest, "\nCLUSTERDECK_WORKLOAD\n")
	var back providers.Workload
	if !ok || json.Unmarshal([]byte(body), &back) != nil || !reflect.DeepEqual(back, w) {
		t.Errorf("workload %q reads back as %+v", body, back)
	}
	// Without a checksum nothing is verified.
	plain, err := lambda.StartupScript(lambda.AgentInstall{URL: a.URL}, "https://deck.example.com", "agt_tok_1", providers.Workload{})
	if err != nil || strings.Contains(plain, "sha256sum") {
		t.Errorf("plain script: %v\n%s", err, plain)
	}
	for _, bad := range []struct{ server, token string }{
		{"", "t"}, {"deck.example.com", "t"}, {"https://deck.example.com", ""},
		{"https://deck.example.com", "t'; rm -rf /"}, {"https://deck.example.com", "t\nX=1"},
	} {
		if _, err := lambda.StartupScript(a, bad.server, bad.token, providers.Workload{}); err == nil {
			t.Errorf("accepted server %q token %q", bad.server, bad.token)
		}
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
