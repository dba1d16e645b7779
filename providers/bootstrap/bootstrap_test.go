package bootstrap_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
)

// downloadPart is the generated script's download-and-check part, as it
// is, with the install directory moved to dir.
func downloadPart(t *testing.T, script, dir string) string {
	t.Helper()
	_, rest, ok := strings.Cut(script, bootstrap.DownloadBegin+"\n")
	part, _, ok2 := strings.Cut(rest, bootstrap.DownloadEnd+"\n")
	first := "CLUSTERDECK_DIR=" + bootstrap.InstallDir + "\n"
	if !ok || !ok2 || !strings.HasPrefix(part, first) {
		t.Fatalf("no download part starting with %q in:\n%s", first, script)
	}
	return "set -eu\nCLUSTERDECK_DIR=" + bootstrap.Quote(dir) + "\n" + strings.TrimPrefix(part, first)
}

// runSh runs a script with sh in a clean environment (no proxy: the
// download stays on loopback).
func runSh(t *testing.T, script string) (string, error) {
	t.Helper()
	for _, tool := range []string{"sh", "curl", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: under CI=true the start-up script's test must run (.ci/run installs it)", tool)
			}
			t.Skipf("SKIPPING: %s is not installed; the start-up script's download is not tested", tool)
		}
	}
	sh, _ := exec.LookPath("sh")
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NO_PROXY=*", "no_proxy=*", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// OP1: a machine's start-up script downloads the agent binary from its
// versioned URL and checks its SHA-256 before anything runs it: the right
// binary lands in place, executable; a wrong checksum ends the script with
// nothing left to run. Both the VM (systemd) and the container (foreground)
// scripts, run with sh against a server on loopback, in a temp dir.
func TestScriptDownloadsAndVerifies(t *testing.T) {
	binary := []byte("#!/bin/sh\necho clusterdeck agent\n")
	sum := sha256.Sum256(binary)
	good := hex.EncodeToString(sum[:])
	other := sha256.Sum256([]byte("another binary"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/agent/0123456789ab/clusterdeck-linux-amd64" {
			http.NotFound(w, r)
			return
		}
		w.Write(binary)
	}))
	defer srv.Close()
	url := srv.URL + "/agent/0123456789ab/clusterdeck-linux-amd64"
	w := providers.Workload{Image: "ubuntu-22.04"}

	for _, sup := range []bootstrap.Supervisor{bootstrap.Systemd, bootstrap.Foreground} {
		script, err := bootstrap.Script(bootstrap.AgentInstall{URL: url, SHA256: strings.ToUpper(good)}, sup, "https://deck.example.com", "cdn_tok", w)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "start.sh")
		if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("sh", "-n", file).CombinedOutput(); err != nil {
			t.Fatalf("sh -n: %v\n%s\n%s", err, out, script)
		}
		// The download comes before the binary is run or anything else is written.
		if i, j := strings.Index(script, bootstrap.DownloadEnd), strings.Index(script, "clusterdeck agent"); i < 0 || j < i ||
			strings.Index(script, "/etc/clusterdeck") < i {
			t.Errorf("the binary is used before it is checked:\n%s", script)
		}

		dir := filepath.Join(t.TempDir(), "opt")
		if out, err := runSh(t, downloadPart(t, script, dir)); err != nil {
			t.Fatalf("supervisor %d: the right binary: %v\n%s", sup, err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "clusterdeck"))
		st, _ := os.Stat(filepath.Join(dir, "clusterdeck"))
		if err != nil || string(got) != string(binary) || st.Mode().Perm() != 0o755 {
			t.Errorf("supervisor %d: installed %q (%v), mode %v", sup, got, err, st)
		}
		if _, err := os.Stat(filepath.Join(dir, "clusterdeck.new")); !os.IsNotExist(err) {
			t.Errorf("supervisor %d: the download is left beside the binary: %v", sup, err)
		}

		// The same script with another checksum: it stops, and leaves no binary.
		bad, err := bootstrap.Script(bootstrap.AgentInstall{URL: url, SHA256: hex.EncodeToString(other[:])}, sup, "https://deck.example.com", "cdn_tok", w)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(t.TempDir(), "opt")
		part := downloadPart(t, bad, dir) + "echo SHOULD-NOT-RUN\n"
		out, err := runSh(t, part)
		if err == nil || strings.Contains(out, "SHOULD-NOT-RUN") || !strings.Contains(out, "does not have the SHA-256") {
			t.Errorf("supervisor %d: a wrong checksum: %v\n%s", sup, err, out)
		}
		for _, name := range []string{"clusterdeck", "clusterdeck.new"} {
			if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Errorf("supervisor %d: %s exists after a wrong checksum: %v", sup, name, err)
			}
		}
	}
}

// A group's one script (OP1): every machine runs the same text with the
// cluster's bootstrap token; the machine's own id comes from the variable
// the provider sets, and the agent claims its rank with it.
func TestGroupScript(t *testing.T) {
	a := bootstrap.AgentInstall{URL: "https://deck.example.com/agent/v1/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}
	for _, sup := range []bootstrap.Supervisor{bootstrap.Foreground, bootstrap.Systemd} {
		s, err := bootstrap.GroupScript(a, sup, "https://deck.example.com", "cdb_cl1_abc", "RUNPOD_POD_ID", providers.Workload{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s, "CLUSTERDECK_TOKEN=cdb_cl1_abc\n") ||
			!strings.Contains(s, `echo "CLUSTERDECK_MACHINE_ID=${RUNPOD_POD_ID:-}" >> /etc/clusterdeck/agent.env`) {
			t.Fatalf("script lacks the bootstrap token or the machine id:\n%s", s)
		}
		if sup == bootstrap.Foreground && !strings.Contains(s, `--machine-id "$CLUSTERDECK_MACHINE_ID"`) {
			t.Fatalf("the foreground agent is not given its machine id:\n%s", s)
		}
		if out, err := exec.Command("sh", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Fatalf("not valid sh: %v\n%s", err, out)
		}
	}
	if _, err := bootstrap.GroupScript(a, bootstrap.Foreground, "https://deck.example.com", "cdn_node_token", "RUNPOD_POD_ID", providers.Workload{}); err == nil {
		t.Fatal("a node token in a group's script must be refused")
	}
	if _, err := bootstrap.GroupScript(a, bootstrap.Foreground, "https://deck.example.com", "cdb_cl1_abc", "X; rm -rf /", providers.Workload{}); err == nil {
		t.Fatal("a variable name that is not one must be refused")
	}
}
