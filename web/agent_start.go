package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/labstack/echo/v4"
)

// The start command (N3) on the agent protocol: the agent reports its state
// with each heartbeat once it started it in this boot; until then, once the
// cluster is ready (every machine joined, the software passed its check),
// the heartbeat's answer carries the start order with the node's env.

// recordStart keeps the start command state a heartbeat reported.
func (h *handler) recordStart(ctx context.Context, cl models.Cluster, node models.ClusterNode, st *agentapi.StartState) error {
	if st == nil || st.State == agentapi.StartNone {
		return nil
	}
	r := models.StartReport{State: st.State, StartedAt: st.StartedAt, ExitCode: st.ExitCode, EndedAt: st.EndedAt, Error: st.Error}
	if err := r.Validate(); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "start: " + err.Error() + "."}
	}
	return h.Store.RecordStart(ctx, cl, node, r)
}

// recordMounts keeps the mounts step state a heartbeat reported (V4).
func (h *handler) recordMounts(ctx context.Context, cl models.Cluster, node models.ClusterNode, st *agentapi.MountsState) error {
	if st == nil {
		return nil
	}
	r := models.MountsReport{State: st.State, StartedAt: st.StartedAt, EndedAt: st.EndedAt, Error: st.Error}
	if err := r.Validate(); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "mounts: " + err.Error() + "."}
	}
	return h.Store.RecordMounts(ctx, cl, node, r)
}

// startOrder is the node's start order: nil before the cluster is ready
// and once the agent reported its start command.
func (h *handler) startOrder(c echo.Context, cl models.Cluster, node models.ClusterNode, reported bool) (*agentapi.StartOrder, error) {
	if reported || cl.Status != models.StatusReady || node.Status == models.NodeJoining {
		return nil, nil
	}
	nodes, err := h.Store.NodesFor(c.Request().Context(), cl.ID)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	spec := h.spec(c, cl, nodes)
	for _, e := range spec.Env(node.Rank) {
		env[e.Name] = e.Value
	}
	user := node.SSHUser
	if user == "" {
		user = nodespec.DefaultSSHUser
	}
	mounts, err := h.agentMounts(c.Request().Context(), cl, nodes, node.Rank, spec.Hostfile())
	if err != nil {
		return nil, err
	}
	return &agentapi.StartOrder{User: user, Env: env, Publish: cl.PortsPublished(), Mounts: mounts}, nil
}

// agentMounts is V4 for the agents (see models.Mounts): /shared from
// node-0 on vm and bare_metal, and the cluster's volume on node-0; nil
// when node rank gets neither (a container's workers always).
func (h *handler) agentMounts(ctx context.Context, cl models.Cluster, nodes []models.ClusterNode, rank int, hostfile string) (*agentapi.Mounts, error) {
	shared := models.HasSharedFolder(cl.MachineKind)
	if !shared && rank != 0 {
		return nil, nil
	}
	vol, err := h.Store.VolumeOfCluster(ctx, cl)
	if err != nil {
		return nil, err
	}
	if !shared && vol == nil {
		return nil, nil
	}
	m := &agentapi.Mounts{Shared: shared, Clients: []string{}, Hostfile: hostfile}
	if !strings.HasSuffix(m.Hostfile, "\n") {
		m.Hostfile += "\n"
	}
	for _, n := range nodes {
		if n.Rank == 0 {
			m.Head = n.PrivateIP
		} else {
			m.Clients = append(m.Clients, n.PrivateIP)
		}
	}
	if vol != nil {
		path := models.SharedVolumeDir
		if !shared {
			path = models.HeadVolumeDir
		}
		m.Volume = &agentapi.VolumeMount{ID: vol.ID, Name: vol.Name, SizeGB: vol.SizeGB, Path: path}
	}
	return m, nil
}
