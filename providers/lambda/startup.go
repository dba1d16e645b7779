package lambda

import (
	"fmt"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
)

// AgentInstall says where machines download the clusterdeck binary
// (linux/amd64, the architecture of Lambda's GPU machines) and the SHA-256
// it must have (LAMBDA_AGENT_URL, LAMBDA_AGENT_SHA256).
type AgentInstall = bootstrap.AgentInstall

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
	s, err := bootstrap.Script(a, bootstrap.Systemd, serverURL, token, w)
	if err != nil {
		return "", fmt.Errorf("lambda: %w", err)
	}
	if len(s) > userDataMax {
		return "", fmt.Errorf("lambda: start-up script is %d bytes; Lambda takes at most %d", len(s), userDataMax)
	}
	return s, nil
}
