package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// The agent protocol (/v1/agent/…): each node's agent authenticates with its
// own token (Authorization: Bearer cdn_…), which works for that node only and
// stops working once the cluster ends or its terminate was requested (410).
// These wire types mirror providers/agent's; the end-to-end tests prove they agree.

type agentCheckinReq struct {
	NvidiaSMI *string `json:"nvidiaSmi"` // nodespec.GPUQuery's output
}

type agentCheckinResp struct {
	Cluster          string      `json:"cluster"`
	Node             string      `json:"node"`
	Rank             int         `json:"rank"`
	Peers            []agentPeer `json:"peers"`
	HeartbeatSeconds int         `json:"heartbeatSeconds"`
}

type agentPeer struct {
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
	Address string `json:"address"`
}

type agentPeersReq struct {
	Reached     []string `json:"reached"`
	Unreachable []struct {
		Address string `json:"address"`
		Error   string `json:"error"`
	} `json:"unreachable"`
}

type agentLogsReq struct {
	Lines []struct {
		At   time.Time `json:"at"`
		Text string    `json:"text"`
	} `json:"lines"`
}

// maxAgentLogLines bounds one logs request.
const maxAgentLogLines = 500

const (
	agentClusterKey = "agent_cluster"
	agentNodeKey    = "agent_node"
)

// agentRoutes registers the agent protocol outside the customer API's auth.
func (h *handler) agentRoutes(e *echo.Echo) {
	g := e.Group("/v1/agent", h.agentAuth)
	g.POST("/checkin", h.agentCheckin)
	g.POST("/peers", h.agentPeers)
	g.POST("/heartbeat", h.agentHeartbeat)
	g.POST("/logs", h.agentLogs)
	g.POST("/tasks/:task", h.agentTaskResult)
}

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
	var req agentCheckinReq
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {hostname, privateIp, version, nvidiaSmi}."}
	}
	nodes, err := h.Store.AgentCheckIn(c.Request().Context(), cl, node, req.NvidiaSMI)
	if err != nil {
		return err
	}
	resp := agentCheckinResp{Cluster: cl.ID, Node: node.Name, Rank: node.Rank, HeartbeatSeconds: 10}
	for _, n := range nodes {
		resp.Peers = append(resp.Peers, agentPeer{Name: n.Name, Rank: n.Rank, Address: n.PrivateIP})
	}
	return c.JSON(http.StatusOK, resp)
}

// agentPeers is POST /v1/agent/peers: step (c).
func (h *handler) agentPeers(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentPeersReq
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
	return c.JSON(http.StatusOK, map[string]bool{"meshComplete": done})
}

// agentHeartbeat is POST /v1/agent/heartbeat: liveness, and the node's next task.
func (h *handler) agentHeartbeat(c echo.Context) error {
	cl, node := agentOf(c)
	ctx := c.Request().Context()
	if err := h.Store.TouchHeartbeat(ctx, node.ID); err != nil {
		return err
	}
	task, err := h.nextAgentTask(c, cl, node)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"task": task})
}

// agentLogs is POST /v1/agent/logs: the node's log lines (N6).
func (h *handler) agentLogs(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentLogsReq
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
