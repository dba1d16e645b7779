package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/labstack/echo/v4"
)

// newMCP is /mcp's handler (API5): the MCP tools over Streamable HTTP, each
// a call of this server's own REST API, made in process with the caller's
// API key, so a tool sees exactly what the API shows that key.
func newMCP(api http.Handler) echo.HandlerFunc {
	return echo.WrapHandler(mcpserver.Handler(api, mcpserver.BearerKey))
}

// requireAPIKey guards /mcp: an `Authorization: Bearer cdk_…` API key, and
// nothing else (a dashboard session has no key for the tools to act with).
// A missing, revoked or mistyped key is refused here, before any MCP.
func (h *handler) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		noStore(c)
		authz := c.Request().Header.Get("Authorization")
		var err error = errNoAPIKey
		if authz != "" {
			err = h.authenticateBearer(c, authz)
		}
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="clusterdeck"`)
			return err
		}
		return next(c)
	}
}
