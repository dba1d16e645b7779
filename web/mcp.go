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

// mcpPostOnly answers GET and DELETE /mcp: a stateless endpoint has no
// stream to open and no session to end, and Streamable HTTP clients expect
// 405 then (a 404 would read as a lost session).
func mcpPostOnly(c echo.Context) error {
	c.Response().Header().Set("Allow", http.MethodPost)
	return &APIError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Message: "This MCP endpoint is stateless: POST each message; there is no stream to GET and no session to DELETE."}
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
