package web

import (
	"errors"
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// agentTask is a task for one node: install the node's role of the
// cluster's software, run the software's own check (S1, S2), or on node-0
// of a ready cluster the NCCL check (X4). The
// agent writes Files, exports Env, runs Script as Exec.Run(kind+":"+software)
// and posts {ok, output} to /v1/agent/tasks/{id}.
type agentTask struct {
	ID       string            `json:"id"`
	Kind     string            `json:"kind"`
	Software string            `json:"software"`
	Role     string            `json:"role"`
	Files    map[string]string `json:"files,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Script   string            `json:"script"`
}

// agentTaskResultReq is POST /v1/agent/tasks/{id}.
type agentTaskResultReq struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
}

// nextAgentTask hands a node its next software task, if any, and marks it sent.
func (h *handler) nextAgentTask(c echo.Context, cl models.Cluster, node models.ClusterNode) (*agentTask, error) {
	ctx := c.Request().Context()
	t, err := h.Store.NextSoftwareTask(ctx, cl, node)
	if err != nil {
		return nil, err
	}
	if t == nil {
		nc, err := h.Store.NextNCCLTask(ctx, cl, node)
		if err != nil || nc == nil {
			return nil, err
		}
		return &agentTask{ID: nc.TaskID, Kind: models.NCCLTaskKind, Software: models.NCCLTaskSoftware, Role: node.Name, Script: nc.Script}, nil
	}
	p := t.Decode()
	return &agentTask{ID: t.ID, Kind: t.Kind, Software: t.Software, Role: t.Role,
		Files: p.Files, Env: p.Env, Script: p.Script}, nil
}

// agentTaskResult is POST /v1/agent/tasks/{task}: a task's raw output. Only
// the node the task was made for may answer it (404 otherwise); answering
// again changes nothing and gets the recorded status back.
func (h *handler) agentTaskResult(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentTaskResultReq
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
		return c.JSON(http.StatusOK, map[string]string{"id": check.TaskID, "status": check.Status})
	}
	t, err := h.Store.RecordSoftwareTaskResult(c.Request().Context(), cl, node, c.Param("task"), req.OK, req.Output)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No such task for this node."}
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"id": t.ID, "status": t.Status})
}
