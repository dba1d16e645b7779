package lambda

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/clusterdeck/clusterdeck/providers"
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

// StartupScript is the cloud-init user-data of one machine: it downloads
// the clusterdeck binary (checked against its SHA-256 when one is
// configured), writes the group's workload (image, env, ports, SSH keys,
// start command: the agent installs the keys and runs the rest, N3) and
// runs `clusterdeck agent --server URL --token T --workload FILE` as a
// systemd service that restarts on failure and on every boot. The token
// authenticates exactly this machine; Lambda never returns user_data in its
// answers, and the token and workload sit in root-only files.
func StartupScript(a AgentInstall, serverURL, token string, w providers.Workload) (string, error) {
	if u, err := url.Parse(serverURL); serverURL == "" || err != nil || u.Host == "" {
		return "", fmt.Errorf("lambda: server URL %q is not an absolute URL", serverURL)
	}
	if token == "" || strings.ContainsAny(token, "\n\r'\"\\ $`") {
		return "", errors.New("lambda: agent token is empty or has characters a start-up script cannot carry")
	}
	workload, err := json.Marshal(w) // one line: it cannot end the here-document early
	if err != nil {
		return "", fmt.Errorf("lambda: workload: %w", err)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("#!/bin/sh")
	line("# Clusterdeck machine start-up (cloud-init user-data): install and start the cluster agent.")
	line("set -eu")
	line("install -d -m 0755 /opt/clusterdeck")
	line("curl -fsSL --retry 10 --retry-delay 5 --retry-all-errors -o /opt/clusterdeck/clusterdeck.new %s", shellQuote(a.URL))
	if a.SHA256 != "" {
		line("echo %s | sha256sum -c -", shellQuote(strings.ToLower(a.SHA256)+"  /opt/clusterdeck/clusterdeck.new"))
	}
	line("chmod 0755 /opt/clusterdeck/clusterdeck.new && mv /opt/clusterdeck/clusterdeck.new /opt/clusterdeck/clusterdeck")
	line("umask 077")
	line("install -d -m 0700 /etc/clusterdeck")
	line("cat > /etc/clusterdeck/agent.env <<'CLUSTERDECK_ENV'")
	line("CLUSTERDECK_SERVER=%s", serverURL)
	line("CLUSTERDECK_TOKEN=%s", token)
	line("CLUSTERDECK_ENV")
	line("cat > /etc/clusterdeck/workload.json <<'CLUSTERDECK_WORKLOAD'")
	line("%s", workload)
	line("CLUSTERDECK_WORKLOAD")
	line("umask 022")
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
	if b.Len() > userDataMax {
		return "", fmt.Errorf("lambda: start-up script is %d bytes; Lambda takes at most %d", b.Len(), userDataMax)
	}
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
