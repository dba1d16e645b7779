package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// The agent protocol (/v1/agent/…): each node's agent authenticates with its
// own token (Authorization: Bearer cdn_…), which works for that node only and
// stops working once the cluster ends or its terminate was requested (410).
// The wire types are agentapi's, shared with the agent (providers/agent).
//
// A machine placed with the cluster's bootstrap token (Bearer cdb_…, one
// for every machine of the group) first claims its rank at
// POST /v1/agent/claim and gets its node token back (agentClaim).

// maxAgentLogLines bounds one logs request.
const maxAgentLogLines = 500

const (
	agentClusterKey = "agent_cluster"
	agentNodeKey    = "agent_node"
)

// agentAuth authenticates a node by its token.
func (h *handler) agentAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			return &APIError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "Send the node's agent token as a bearer token."}
		}
		cl, node, err := h.Store.NodeForAgentToken(c.Request().Context(), token)
		switch {
		case errors.Is(err, models.ErrAgentRevoked):
			return &APIError{Status: http.StatusGone, Code: "cluster_ended", Message: "This cluster has ended; the agent should stop."}
		case errors.Is(err, models.ErrNotFound):
			return &APIError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "Unknown agent token."}
		case err != nil:
			return err
		}
		c.Set(agentClusterKey, cl)
		c.Set(agentNodeKey, node)
		return next(c)
	}
}

func agentOf(c echo.Context) (models.Cluster, models.ClusterNode) {
	return c.Get(agentClusterKey).(models.Cluster), c.Get(agentNodeKey).(models.ClusterNode)
}

// agentCheckin is POST /v1/agent/checkin: step (b).
func (h *handler) agentCheckin(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.CheckinRequest
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {hostname, privateIp, version, nvidiaSmi}."}
	}
	nodes, err := h.Store.AgentCheckIn(c.Request().Context(), cl, node, req.PrivateIP, req.MeshPort, req.NvidiaSMI)
	if errors.Is(err, models.ErrAddressTaken) {
		return &APIError{Status: http.StatusConflict, Code: "address_taken",
			Message: "Another node of this cluster already has this address and mesh port: " + err.Error()}
	}
	if err != nil {
		return err
	}
	resp := agentapi.CheckinResponse{Cluster: cl.ID, Node: node.Name, Rank: node.Rank, HeartbeatSeconds: 10, Peers: peersOf(nodes)}
	return c.JSON(http.StatusOK, resp)
}

// agentPeers is POST /v1/agent/peers: step (c).
func (h *handler) agentPeers(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.PeersRequest
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {reached, unreachable}."}
	}
	unreachable := map[string]string{}
	for _, u := range req.Unreachable {
		unreachable[u.Address] = u.Error
	}
	done, err := h.Store.ReportPeers(c.Request().Context(), cl, node, req.Reached, unreachable)
	if err != nil {
		return err
	}
	resp := agentapi.PeersResponse{MeshComplete: done}
	if !done {
		nodes, err := h.Store.NodesFor(c.Request().Context(), cl.ID)
		if err != nil {
			return err
		}
		resp.Peers = peersOf(nodes)
	}
	return c.JSON(http.StatusOK, resp)
}

// peersOf is the peer list: every node with its address and its agent's
// mesh port, where its peers reach it (step c).
func peersOf(nodes []models.ClusterNode) []agentapi.Peer {
	peers := make([]agentapi.Peer, 0, len(nodes))
	for _, n := range nodes {
		peers = append(peers, agentapi.Peer{Name: n.Name, Rank: n.Rank, Address: n.PrivateIP, Port: n.MeshPort})
	}
	return peers
}

// agentHeartbeat is POST /v1/agent/heartbeat: liveness, the start command's
// and the mounts step's state, the GPU samples and XID lines (X15), and the node's next task and start order
// (models.Heartbeat, one transaction).
func (h *handler) agentHeartbeat(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.HeartbeatRequest
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {start, mounts, gpu} (or an empty body)."}
	}
	orders, err := h.Store.Heartbeat(c.Request().Context(), cl, node, heartbeatReport(req))
	var bad *models.ReportError
	if errors.As(err, &bad) {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: bad.Error() + "."}
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, heartbeatResponse(node, orders))
}

// agentLogs is POST /v1/agent/logs: the node's log lines (N6).
func (h *handler) agentLogs(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.LogsRequest
	if err := c.Bind(&req); err != nil || len(req.Lines) > maxAgentLogLines {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON {lines: [{at, text}]}, at most 500 lines."}
	}
	lines := make([]models.LogInput, 0, len(req.Lines))
	for _, l := range req.Lines {
		lines = append(lines, models.LogInput{At: l.At, Text: l.Text})
	}
	if err := h.Store.AppendNodeLogs(c.Request().Context(), cl, node.Rank, lines); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// agentClaim is POST /v1/agent/claim: a machine holding the cluster's
// bootstrap token claims its rank, once, bound to its provider machine id,
// and gets the node's own token for every other agent endpoint (OP1).
func (h *handler) agentClaim(c echo.Context) error {
	token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok || !models.IsBootstrapToken(token) {
		return &APIError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "Send the cluster's bootstrap token (cdb_…) as a bearer token."}
	}
	var req agentapi.ClaimRequest
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {machineId, hostname, privateIp}."}
	}
	cl, node, err := h.Store.ClaimRank(c.Request().Context(), token,
		models.Claim{MachineID: req.MachineID, Hostname: req.Hostname, PrivateIP: req.PrivateIP})
	switch {
	case errors.Is(err, models.ErrAgentRevoked):
		return &APIError{Status: http.StatusGone, Code: "cluster_ended", Message: "This cluster has ended; the agent should stop."}
	case errors.Is(err, models.ErrNotFound):
		return &APIError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "Unknown bootstrap token."}
	case errors.Is(err, models.ErrNotPlaced):
		return &APIError{Status: http.StatusConflict, Code: "not_placed", Message: "The cluster's placement is not recorded yet; claim again shortly."}
	case errors.Is(err, models.ErrUnknownMachine):
		return &APIError{Status: http.StatusForbidden, Code: "unknown_machine", Message: "This machine is not one of the cluster's: send the provider's machine id (or a host name or private address the provider reported)."}
	case errors.Is(err, models.ErrRankClaimed):
		return &APIError{Status: http.StatusConflict, Code: "rank_claimed", Message: "Another machine already claimed this rank."}
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, agentapi.ClaimResponse{Token: models.AgentToken(cl, node), Cluster: cl.ID, Node: node.Name, Rank: node.Rank})
}
