// Package bootstrap writes the start-up script a cloud machine runs to
// install and start the cluster agent (OP1): download the clusterdeck
// binary served by our server at a versioned URL, check its SHA-256, write
// the agent's token and the group's workload into root-only files and start
// `clusterdeck agent --server URL --token T --workload FILE`. Every real
// adapter uses it; only how the agent is kept running differs: a systemd
// unit on VMs and bare metal, the container's own foreground process where
// there is no init system (RunPod pods).
package bootstrap

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/clusterdeck/clusterdeck/providers"
)

// AgentInstall says where machines download the clusterdeck binary
// (linux/amd64) and the SHA-256 it must have.
type AgentInstall struct {
	URL    string // http(s) URL of the binary
	SHA256 string // hex digest; empty = not verified
}

// Validate reports a URL or checksum a machine could not use.
func (a AgentInstall) Validate() error {
	u, err := url.Parse(a.URL)
	if a.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the agent download URL must be an http(s) URL, not %q", a.URL)
	}
	if a.SHA256 != "" {
		if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != 32 {
			return errors.New("the agent checksum must be 64 hex digits (SHA-256)")
		}
	}
	return nil
}

// Supervisor is how the started agent is kept running.
type Supervisor int

const (
	// Systemd installs a unit that restarts the agent on failure and on
	// every boot (cloud-init user-data on VMs).
	Systemd Supervisor = iota
	// Foreground execs the agent as the script's last step: the script is
	// a container's command, run again on every start of the container, and
	// the container lives as long as the agent.
	Foreground
)

// Script is the start-up script of one machine. The token authenticates
// exactly this machine.
func Script(a AgentInstall, sup Supervisor, serverURL, token string, w providers.Workload) (string, error) {
	return script(a, sup, serverURL, token, "", w)
}

// GroupScript is the one start-up script every machine of a group placed
// with one call runs: token is the cluster's bootstrap token (cdb_…), and
// machineIDVar names the environment variable in which the provider hands
// each machine its own id (RunPod's RUNPOD_POD_ID), which the agent sends
// with its claim (--machine-id) so that its rank is bound to the machine id
// the placement returned. An empty machineIDVar leaves the agent to claim
// by host name or address.
func GroupScript(a AgentInstall, sup Supervisor, serverURL, token, machineIDVar string, w providers.Workload) (string, error) {
	if !strings.HasPrefix(token, "cdb_") {
		return "", errors.New("a group's start-up script carries the cluster's bootstrap token (cdb_…)")
	}
	if !envName.MatchString(machineIDVar) && machineIDVar != "" {
		return "", fmt.Errorf("%q is not an environment variable name", machineIDVar)
	}
	return script(a, sup, serverURL, token, machineIDVar, w)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func script(a AgentInstall, sup Supervisor, serverURL, token, machineIDVar string, w providers.Workload) (string, error) {
	if err := a.Validate(); err != nil {
		return "", err
	}
	if u, err := url.Parse(serverURL); serverURL == "" || err != nil || u.Host == "" {
		return "", fmt.Errorf("server URL %q is not an absolute URL", serverURL)
	}
	if token == "" || strings.ContainsAny(token, "\n\r'\"\\ $`") {
		return "", errors.New("agent token is empty or has characters a start-up script cannot carry")
	}
	workload, err := json.Marshal(w) // one line: it cannot end the here-document early
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("#!/bin/sh")
	if sup == Systemd {
		line("# Clusterdeck machine start-up (cloud-init user-data): install and start the cluster agent.")
	} else {
		line("# Clusterdeck machine start-up (the container's command): install the cluster agent and run it in the foreground.")
	}
	line("set -eu")
	// The download and its check, between markers: the part a test runs
	// as it is, in a directory of its own (DownloadBegin, DownloadEnd).
	line("%s", DownloadBegin)
	line("CLUSTERDECK_DIR=%s", InstallDir)
	line("install -d -m 0755 \"$CLUSTERDECK_DIR\"")
	if sup == Systemd {
		line("curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o \"$CLUSTERDECK_DIR/clusterdeck.new\" %s", Quote(a.URL))
	} else {
		// Container images may lack curl: fall back to wget, then to the
		// distribution's curl.
		line("if ! command -v curl >/dev/null 2>&1 && ! command -v wget >/dev/null 2>&1; then")
		line("  (apt-get update -qq && apt-get install -y -qq curl ca-certificates) >/dev/null 2>&1 || true")
		line("fi")
		line("if command -v curl >/dev/null 2>&1; then")
		line("  curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o \"$CLUSTERDECK_DIR/clusterdeck.new\" %s", Quote(a.URL))
		line("else")
		line("  wget -q -t 10 -O \"$CLUSTERDECK_DIR/clusterdeck.new\" %s", Quote(a.URL))
		line("fi")
	}
	if a.SHA256 != "" {
		// Never run a binary other than the one the placement named: a
		// mismatch removes the download and ends the script (set -e).
		line("if ! echo \"%s  $CLUSTERDECK_DIR/clusterdeck.new\" | sha256sum -c - >/dev/null 2>&1; then", strings.ToLower(a.SHA256))
		line("  rm -f \"$CLUSTERDECK_DIR/clusterdeck.new\"")
		line("  echo \"clusterdeck: the agent binary from %s does not have the SHA-256 %s; not running it\" >&2", shellSafe(a.URL), strings.ToLower(a.SHA256))
		line("  exit 1")
		line("fi")
	}
	line("chmod 0755 \"$CLUSTERDECK_DIR/clusterdeck.new\" && mv \"$CLUSTERDECK_DIR/clusterdeck.new\" \"$CLUSTERDECK_DIR/clusterdeck\"")
	line("%s", DownloadEnd)
	line("umask 077")
	line("install -d -m 0700 /etc/clusterdeck")
	line("cat > /etc/clusterdeck/agent.env <<'CLUSTERDECK_ENV'")
	line("CLUSTERDECK_SERVER=%s", serverURL)
	line("CLUSTERDECK_TOKEN=%s", token)
	line("CLUSTERDECK_ENV")
	if machineIDVar != "" {
		// The machine's own id, as the provider set it in this machine's
		// environment: the agent claims its rank with it.
		line("echo \"CLUSTERDECK_MACHINE_ID=${%s:-}\" >> /etc/clusterdeck/agent.env", machineIDVar)
	}
	line("cat > /etc/clusterdeck/workload.json <<'CLUSTERDECK_WORKLOAD'")
	line("%s", workload)
	line("CLUSTERDECK_WORKLOAD")
	line("umask 022")
	if sup == Foreground {
		line(". /etc/clusterdeck/agent.env")
		if machineIDVar != "" {
			line("exec /opt/clusterdeck/clusterdeck agent --server \"$CLUSTERDECK_SERVER\" --token \"$CLUSTERDECK_TOKEN\" --machine-id \"$CLUSTERDECK_MACHINE_ID\" --workload /etc/clusterdeck/workload.json")
			return b.String(), nil
		}
		line("exec /opt/clusterdeck/clusterdeck agent --server \"$CLUSTERDECK_SERVER\" --token \"$CLUSTERDECK_TOKEN\" --workload /etc/clusterdeck/workload.json")
		return b.String(), nil
	}
	line("cat > /etc/systemd/system/clusterdeck-agent.service <<'CLUSTERDECK_UNIT'")
	line("[Unit]")
	line("Description=Clusterdeck cluster agent")
	line("Wants=network-online.target")
	line("After=network-online.target")
	line("")
	line("[Service]")
	line("EnvironmentFile=/etc/clusterdeck/agent.env")
	line("ExecStart=/opt/clusterdeck/clusterdeck agent --server ${CLUSTERDECK_SERVER} --token ${CLUSTERDECK_TOKEN} --workload /etc/clusterdeck/workload.json")
	line("Restart=always")
	line("RestartSec=5")
	line("")
	line("[Install]")
	line("WantedBy=multi-user.target")
	line("CLUSTERDECK_UNIT")
	line("systemctl daemon-reload")
	line("systemctl enable --now clusterdeck-agent.service")
	return b.String(), nil
}

// InstallDir is where the script puts the clusterdeck binary.
const InstallDir = "/opt/clusterdeck"

// The markers around the script's download and checksum part: it sets
// CLUSTERDECK_DIR (InstallDir) on its first line, and needs nothing the
// script wrote before it.
const (
	DownloadBegin = "# clusterdeck: download the agent binary and check its SHA-256"
	DownloadEnd   = "# clusterdeck: the agent binary is in place"
)

// shellSafe keeps the characters of s that need no quoting inside a
// double-quoted shell word (for a message).
func shellSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r == '$' || r == '`' || r < ' ' {
			return -1
		}
		return r
	}, s)
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
