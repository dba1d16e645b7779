package domain

// NodeStep is what ShownNodeStatus reads of a node: its stored status
// and the step it waits for.
type NodeStep struct {
	Status NodeStatus
	Step   string
}

// NodeStatusesShown lists, for each cluster status, the statuses its nodes
// may be shown with (L8): a node never reads provisioning in an installing
// cluster, ready in a provisioning one or failed in one that is not.
var NodeStatusesShown = map[ClusterStatus][]NodeStatus{
	StatusProvisioning: {NodeProvisioning, NodeLost, NodeTerminating},
	StatusInstalling:   {NodeInstalling, NodeTerminating},
	StatusVerifying:    {NodeVerifying, NodeJoining, NodeTerminating},
	StatusReady:        {NodeReady, NodeJoining, NodeTerminating},
	StatusDegraded:     {NodeReady, NodeInstalling, NodeDegraded, NodeDown, NodeRestarting, NodeJoining, NodeTerminating},
	StatusStopped:      {NodeStopped, NodeProvisioning, NodeTerminating},
	StatusFailed:       {NodeFailed, NodeLost, NodeReleased},
	StatusTerminated:   {NodeTerminated, NodeLost},
}

// ShownNodeStatus is what the page says about node n of cluster c: derived
// from the cluster's status, then the node's own (down, restarting, lost,
// the one that failed, one joining a running cluster) and its step, so it
// never contradicts the cluster
// (L8, L11). Stored statuses lag behind the cluster's in places — nodes of
// a cluster degraded by its software still read installing — which is why
// the page never shows them raw.
func ShownNodeStatus(c Lifecycle, n NodeStep) NodeStatus {
	switch c.Status {
	case StatusTerminated:
		if n.Status == NodeLost {
			return NodeLost
		}
		return NodeTerminated
	case StatusFailed:
		if n.Status == NodeFailed || n.Status == NodeLost {
			return n.Status
		}
		return NodeReleased
	}
	if c.TerminateRequestedAt != nil {
		return NodeTerminating
	}
	if n.Status == NodeJoining && (c.Status == StatusReady || c.Status == StatusDegraded || c.Status == StatusVerifying) {
		return NodeJoining // an added worker or a replacement taking its own steps (L10, X5)
	}
	switch c.Status {
	case StatusProvisioning:
		if n.Status == NodeLost {
			return NodeLost
		}
		return NodeProvisioning
	case StatusInstalling:
		return NodeInstalling
	case StatusVerifying:
		return NodeVerifying
	case StatusDegraded:
		switch {
		case n.Status == NodeDown || n.Status == NodeRestarting:
			return n.Status
		case n.Step == StepSoftware && SoftwareFailure(c.LastError):
			return NodeDegraded
		case n.Step == StepSoftware:
			return NodeInstalling
		}
		return NodeReady
	case StatusStopped:
		if c.Resuming() && n.Status == NodeProvisioning { // starting again with the launch's steps (B6)
			return NodeProvisioning
		}
		return NodeStopped
	}
	return NodeReady
}
