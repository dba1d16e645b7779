package lambda

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// AgentInstall says where machines download the clusterdeck binary
// (linux/amd64, the architecture of Lambda's GPU machines) and the SHA-256
// it must have.
type AgentInstall struct {
	URL    string // LAMBDA_AGENT_URL: http(s) URL of the binary
	SHA256 string // LAMBDA_AGENT_SHA256: hex digest; empty = not verified
}

func (a AgentInstall) validate() error {
	u, err := url.Parse(a.URL)
	if a.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("lambda: the agent download URL must be an http(s) URL, not %q", a.URL)
	}
	if a.SHA256 != "" {
		if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != 32 {
			return errors.New("lambda: the agent checksum must be 64 hex digits (SHA-256)")
		}
	}
	return nil
}

// userDataMax is Lambda's limit on user_data: plain text, at most 1 MB.
const userDataMax = 1 << 20

// StartupScript is the cloud-init user-data of one machine: it adds the
// customer's SSH keys for the image's user, downloads the clusterdeck binary
// (checked against its SHA-256 when one is configured), and runs
// `clusterdeck agent --server URL --token T` as a systemd service that
// restarts on failure and on every boot. The token authenticates exactly
// this machine; Lambda never returns user_data in its answers, and the
// token sits in a root-only file on the machine.
func StartupScript(a AgentInstall, serverURL, token string, sshKeys []string) (string, error) {
	if u, err := url.Parse(serverURL); serverURL == "" || err != nil || u.Host == "" {
		return "", fmt.Errorf("lambda: server URL %q is not an absolute URL", serverURL)
	}
	if token == "" || strings.ContainsAny(token, "\n\r'\"\\ $`") {
		return "", errors.New("lambda: agent token is empty or has characters a start-up script cannot carry")
	}
	var keys []string
	for _, k := range sshKeys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if strings.ContainsAny(k, "\n\r") {
			return "", errors.New("lambda: an SSH key spans several lines")
		}
		keys = append(keys, k)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# Clusterdeck machine start-up (cloud-init user-data): install and start the cluster agent.")
	w("set -eu")
	if len(keys) > 0 {
		w("install -d -m 0700 -o %s -g %s /home/%s/.ssh", SSHUser, SSHUser, SSHUser)
		w("cat >> /home/%s/.ssh/authorized_keys <<'CLUSTERDECK_KEYS'", SSHUser)
		for _, k := range keys {
			w("%s", k)
		}
		w("CLUSTERDECK_KEYS")
		w("chown %s:%s /home/%s/.ssh/authorized_keys && chmod 0600 /home/%s/.ssh/authorized_keys", SSHUser, SSHUser, SSHUser, SSHUser)
	}
	w("install -d -m 0755 /opt/clusterdeck")
	w("install -d -m 0700 /etc/clusterdeck")
	w("curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o /opt/clusterdeck/clusterdeck.new %s", shellQuote(a.URL))
	if a.SHA256 != "" {
		w("echo %s | sha256sum -c -", shellQuote(strings.ToLower(a.SHA256)+"  /opt/clusterdeck/clusterdeck.new"))
	}
	w("chmod 0755 /opt/clusterdeck/clusterdeck.new && mv /opt/clusterdeck/clusterdeck.new /opt/clusterdeck/clusterdeck")
	w("umask 077")
	w("cat > /etc/clusterdeck/agent.env <<'CLUSTERDECK_ENV'")
	w("CLUSTERDECK_SERVER=%s", serverURL)
	w("CLUSTERDECK_TOKEN=%s", token)
	w("CLUSTERDECK_ENV")
	w("umask 022")
	w("cat > /etc/systemd/system/clusterdeck-agent.service <<'CLUSTERDECK_UNIT'")
	w("[Unit]")
	w("Description=Clusterdeck cluster agent")
	w("Wants=network-online.target")
	w("After=network-online.target")
	w("")
	w("[Service]")
	w("EnvironmentFile=/etc/clusterdeck/agent.env")
	w("ExecStart=/opt/clusterdeck/clusterdeck agent --server ${CLUSTERDECK_SERVER} --token ${CLUSTERDECK_TOKEN}")
	w("Restart=always")
	w("RestartSec=5")
	w("")
	w("[Install]")
	w("WantedBy=multi-user.target")
	w("CLUSTERDECK_UNIT")
	w("systemctl daemon-reload")
	w("systemctl enable --now clusterdeck-agent.service")
	if b.Len() > userDataMax {
		return "", fmt.Errorf("lambda: start-up script is %d bytes; Lambda takes at most %d", b.Len(), userDataMax)
	}
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
