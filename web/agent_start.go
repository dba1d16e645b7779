package web

import (
	"context"
	"net/http"

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
	plan, err := h.Store.MountPlanFor(c.Request().Context(), cl)
	if err != nil {
		return nil, err
	}
	return &agentapi.StartOrder{User: user, Env: env, Publish: cl.PortsPublished(),
		Mounts: agentMounts(plan, nodes, node.Rank, spec.Hostfile())}, nil
}

// agentMounts is node rank's part of the cluster's mount plan (V4,
// models.MountPlan) on the wire; nil when it mounts nothing.
func agentMounts(plan models.MountPlan, nodes []models.ClusterNode, rank int, hostfile string) *agentapi.Mounts {
	nm, ok := plan.ForNode(nodes, rank, hostfile)
	if !ok {
		return nil
	}
	m := &agentapi.Mounts{Shared: nm.Shared, Head: nm.Head, Clients: nm.Clients, Hostfile: nm.Hostfile}
	if v := nm.Volume; v != nil {
		m.Volume = &agentapi.VolumeMount{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB, Path: nm.Path}
	}
	return m
}
