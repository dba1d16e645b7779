package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// agentTask is a software task for one node (issue 5 fills it in).
type agentTask struct {
	ID       string            `json:"id"`
	Kind     string            `json:"kind"`
	Software string            `json:"software"`
	Role     string            `json:"role"`
	Files    map[string]string `json:"files,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Script   string            `json:"script"`
}

// nextAgentTask hands a node its next software task, if any.
func (h *handler) nextAgentTask(c echo.Context, cl models.Cluster, node models.ClusterNode) (*agentTask, error) {
	return nil, nil
}

// agentTaskResult is POST /v1/agent/tasks/{task}: a task's raw output.
func (h *handler) agentTaskResult(c echo.Context) error {
	return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No such task for this node."}
}
