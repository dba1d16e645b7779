package web

import (
	"errors"
	"net/http"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// agentTaskResult is POST /v1/agent/tasks/{task}: a task's raw output. Only
// the node the task was made for may answer it (404 otherwise); answering
// again changes nothing and gets the recorded status back.
func (h *handler) agentTaskResult(c echo.Context) error {
	cl, node := agentOf(c)
	var req agentapi.TaskResult
	if err := c.Bind(&req); err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_request", Message: "Send JSON: {ok, output}."}
	}
	if id := c.Param("task"); models.IsVerifyTask(id) {
		t, err := h.Store.RecordVerifyResult(c.Request().Context(), cl, node, id, req.OK, req.Output)
		if errors.Is(err, models.ErrNotFound) {
			return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No such task for this node."}
		} else if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, agentapi.TaskStatus{ID: t.ID, Status: t.Status})
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
