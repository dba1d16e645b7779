package models

import "strings"

// Public event types: the names under which a cluster's history leaves
// Clusterdeck (GET /v1/events, its stream, the MCP tools). Each is derived
// from the event row as written in the transaction of the change, so the
// history already in the database has its types too.
const (
	PublicClusterProvisioning      = "cluster.provisioning"
	PublicClusterInstalling        = "cluster.installing"
	PublicClusterReady             = "cluster.ready"
	PublicClusterDegraded          = "cluster.degraded"
	PublicClusterHealthy           = "cluster.healthy"
	PublicClusterRecoveryExhausted = "cluster.recovery_exhausted"
	PublicClusterStopped           = "cluster.stopped"
	PublicClusterResumed           = "cluster.resumed"
	PublicClusterTerminated        = "cluster.terminated"
	PublicClusterFailed            = "cluster.failed"
	PublicNodeDown                 = "node.down"
	PublicNodeReplaced             = "node.replaced"
	PublicNodeJoined               = "node.joined"
)

// PublicEventTypes lists every public event type.
var PublicEventTypes = []string{
	PublicClusterProvisioning, PublicClusterInstalling, PublicClusterReady, PublicClusterDegraded,
	PublicClusterHealthy, PublicClusterRecoveryExhausted, PublicClusterStopped, PublicClusterResumed,
	PublicClusterTerminated, PublicClusterFailed, PublicNodeDown, PublicNodeReplaced, PublicNodeJoined,
}

// PublicEventType is e's public type, "" for the entries that only tell
// the story (node steps, requests, notes).
func PublicEventType(e ClusterEvent) string {
	switch e.Kind {
	case "request":
		if e.Status == string(StatusProvisioning) && e.Step == "" && strings.HasPrefix(e.Message, "Launch requested") {
			return PublicClusterProvisioning // the launch (L1)
		}
	case "error":
		if e.Step == "health" {
			return PublicNodeDown // one more machine down in a cluster already degraded (R2)
		}
	case "step":
		if e.Step == "join" {
			if strings.Contains(e.Message, " replaced the machine that was down") {
				return PublicNodeReplaced // a replacement joined in a down one's place (X5)
			}
			return PublicNodeJoined // an added worker joined (L10)
		}
	case "status":
		switch ClusterStatus(e.Status) {
		case StatusFailed:
			return PublicClusterFailed
		case StatusTerminated:
			return PublicClusterTerminated
		case StatusStopped:
			return PublicClusterStopped
		case StatusReady, StatusInstalling:
			switch {
			case e.Step == "health":
				return PublicClusterHealthy // every machine healthy again (R2)
			case e.Step == "" && strings.HasPrefix(e.Message, resumedMessage):
				return PublicClusterResumed // B6
			case e.Status == string(StatusReady):
				return PublicClusterReady
			}
			return PublicClusterInstalling
		case StatusDegraded:
			switch e.Step {
			case "recovery":
				return PublicClusterRecoveryExhausted // R5
			case "":
				return PublicClusterResumed // resumed with its software not yet checked (B6, L6)
			}
			return PublicClusterDegraded
		}
	}
	return ""
}

// resumedMessage starts the entry of a resume's end (stop.go).
const resumedMessage = "Every machine is up and reached every other again"
