package web

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/views"
)

// The workload on every node (N3): the start command's state per node and
// the ports, for the cluster page, its connections panel and the API.

// startWaiting is a node whose agent has not started the start command in
// this boot yet (the cluster is not ready, or it is just becoming so).
const startWaiting = "waiting"

// startsByRank indexes a cluster's start command states.
func startsByRank(starts []models.NodeStart) map[int]*models.NodeStart {
	out := make(map[int]*models.NodeStart, len(starts))
	for i := range starts {
		out[starts[i].Rank] = &starts[i]
	}
	return out
}

// startUnknown is a start command last reported running on a machine that
// no longer runs (stopped, down, released): whether it still runs is not
// known, and it is never said to run.
const startUnknown = "unknown"

// machineRuns reports whether node n's machine runs now (its cluster is
// neither stopped nor ended, and it is up).
func machineRuns(cl models.Cluster, n models.ClusterNode) bool {
	return cl.Lifecycle().GPUsAtWork() && n.Status.GPUsRunning()
}

// startJSON is a node's start command for the API; nil when the cluster has none.
func startJSON(cl models.Cluster, n models.ClusterNode, st *models.NodeStart) *api.NodeStartCommand {
	if cl.StartCommand == "" {
		return nil
	}
	if st == nil {
		return &api.NodeStartCommand{State: startWaiting}
	}
	started := st.StartedAt
	out := &api.NodeStartCommand{State: st.State, StartedAt: &started, ExitCode: st.ExitCode, EndedAt: st.EndedAt, Error: st.Error}
	if st.State == models.StartRunning && !machineRuns(cl, n) {
		out.State = startUnknown
		out.Error = fmt.Sprintf("%s is %s; its last report (%s) said running.", n.Name, models.ShownNodeStatus(cl, n), st.ReportedAt.UTC().Format(time.RFC3339))
	}
	return out
}

// startView is a node's start command for the page; nil when the cluster has none.
func startView(cl models.Cluster, n models.ClusterNode, st *models.NodeStart) *views.StartView {
	if cl.StartCommand == "" {
		return nil
	}
	switch {
	case st == nil && !machineRuns(cl, n):
		return &views.StartView{State: startUnknown, Label: "start command: not running (the machine is " + string(models.ShownNodeStatus(cl, n)) + ")"}
	case st == nil:
		return &views.StartView{State: startWaiting, Label: "start command: waiting for the cluster to be ready"}
	case st.State == models.StartRunning && !machineRuns(cl, n):
		return &views.StartView{State: startUnknown, Label: fmt.Sprintf("start command: unknown, the machine is %s (last seen running at %s, since %s)",
			models.ShownNodeStatus(cl, n), clock(&st.ReportedAt), clock(&st.StartedAt))}
	case st.State == models.StartRunning:
		return &views.StartView{State: st.State, Label: "start command: running since " + clock(&st.StartedAt)}
	case st.State == models.StartExited:
		return &views.StartView{State: st.State, Label: fmt.Sprintf("start command: exited with code %d at %s", *st.ExitCode, clock(st.EndedAt))}
	default:
		return &views.StartView{State: st.State, Label: "start command: did not run to its end at " + clock(st.EndedAt) + ": " + st.Error}
	}
}

// portsFor lists the workload's ports: open between the nodes everywhere,
// published on each node's public address where the machine kind allows
// (models.Cluster.PortsPublished), and reachable on node-0 by an SSH tunnel.
func portsFor(cl models.Cluster, s nodespec.Cluster) []api.Port {
	out := []api.Port{}
	primary := s.PrimarySSH().Command
	for _, p := range cl.Ports() {
		port := strconv.Itoa(p)
		ap := api.Port{Port: p, Published: cl.PortsPublished(), Addresses: []string{}}
		if rest, ok := strings.CutPrefix(primary, "ssh "); ok {
			ap.Tunnel = "ssh -N -L " + port + ":localhost:" + port + " " + rest
		}
		if ap.Published {
			for _, n := range s.Nodes {
				if n.PublicHost != "" {
					ap.Addresses = append(ap.Addresses, net.JoinHostPort(n.PublicHost, port))
				}
			}
			ap.Note = "Open between the nodes and published on every node's public address."
		} else {
			ap.Note = "Open between the nodes; not published (" + unpublishedWhy(cl) + "): reach it through the SSH tunnel."
		}
		out = append(out, ap)
	}
	return out
}

func unpublishedWhy(cl models.Cluster) string {
	if !cl.PublicIPs {
		return "this site has no public addresses"
	}
	return cl.MachineKind + " machines forward only SSH"
}

// portViews is portsFor for the connections panel.
func portViews(ports []api.Port) []views.PortView {
	out := make([]views.PortView, 0, len(ports))
	for _, p := range ports {
		out = append(out, views.PortView{Port: strconv.Itoa(p.Port), Published: p.Published,
			Addresses: p.Addresses, Tunnel: p.Tunnel, Note: p.Note})
	}
	return out
}
