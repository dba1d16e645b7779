package web

import (
	"errors"
	"net/http"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// nextAgentTask hands a node its next task, if any, and marks it sent:
// install the node's role of the cluster's software, run the software's own
// check (S1, S2), a join's install or check (L10, X5), or on node-0 of a
// ready cluster the NCCL check (X4).
func (h *handler) nextAgentTask(c echo.Context, cl models.Cluster, node models.ClusterNode) (*agentapi.Task, error) {
	ctx := c.Request().Context()
	t, err := h.Store.NextSoftwareTask(ctx, cl, node)
	if err == nil && t == nil {
		t, err = h.Store.NextJoinTask(ctx, cl, node) // a machine joining after ready (L10, X5)
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		nc, err := h.Store.NextNCCLTask(ctx, cl, node)
		if err != nil || nc == nil {
			return nil, err
		}
		return &agentapi.Task{ID: nc.TaskID, Kind: agentapi.TaskNCCL, Software: agentapi.NCCLSoftware, Role: node.Name, Script: nc.Script}, nil
	}
	p := t.Decode()
	return &agentapi.Task{ID: t.ID, Kind: t.Kind, Software: t.Software, Role: t.Role,
		Files: p.Files, Env: p.Env, Script: p.Script}, nil
}

// agentTaskResult is POST /v1/agent/tasks/{task}: a task's raw output. Only
// the node the task was made for may answer it (404 otherwise); answering
// again changes nothing and gets the recorded status back.
func (h *handler) agentTaskResult(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.TaskResult
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {ok, output}."}
	}
	if id := c.Param("task"); models.IsNCCLTask(id) {
		check, err := h.Store.RecordNCCLResult(c.Request().Context(), cl, node, id, req.OK, req.Output)
		if errors.Is(err, models.ErrNotFound) {
			return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No such task for this node."}
		} else if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, agentapi.TaskStatus{ID: check.TaskID, Status: check.Status})
	}
	t, err := h.Store.RecordSoftwareTaskResult(c.Request().Context(), cl, node, c.Param("task"), req.OK, req.Output)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No such task for this node."}
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, agentapi.TaskStatus{ID: t.ID, Status: t.Status})
}
