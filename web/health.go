package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// healthz is GET /healthz: the process is up.
func (h *handler) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is GET /readyz: the database answers.
func (h *handler) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := h.Store.Ping(ctx); err != nil {
		h.Log.Warn("readyz: database unreachable", "error", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "unreachable"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready", "database": "ok"})
}
