package web

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/labstack/echo/v4"
)

// newMCP is /mcp's handler (API5): the MCP tools over Streamable HTTP, each
// a call of this server's own REST API, made in process with the caller's
// API key, so a tool sees exactly what the API shows that key.
// A call of wait_for_cluster blocks until the cluster gets there: it is
// left out of the request-latency histogram (untimed).
func newMCP(api http.Handler) echo.HandlerFunc {
	serve := echo.WrapHandler(mcpserver.Handler(api, mcpserver.BearerKey))
	return func(c echo.Context) error {
		r := c.Request()
		head, err := io.ReadAll(io.LimitReader(r.Body, mcpserver.MaxMessageBytes+1))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		if err == nil && bytes.Contains(head, []byte(`"wait_for_cluster"`)) {
			untimed(c)
		}
		return serve(c)
	}
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
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

// mcpOrigin guards /mcp as the MCP specification requires of Streamable
// HTTP servers (API5): a request carrying an Origin header that
// is not this server's (BASE_URL's origin) nor one of MCPOrigins is
// refused with 403 and a JSON-RPC error, before its key is looked at, so a
// page elsewhere (or one reached by DNS rebinding) cannot drive the tools
// from a browser. No Origin at all is a program, not a page, and passes.
func (h *handler) mcpOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	allowed := map[string]bool{}
	for _, o := range append([]string{h.Config.BaseURL}, h.Config.MCPOrigins...) {
		if n, ok := NormalizeOrigin(o); ok {
			allowed[n] = true
		}
	}
	return func(c echo.Context) error {
		origins := c.Request().Header.Values("Origin")
		if len(origins) == 0 {
			return next(c)
		}
		n, ok := NormalizeOrigin(origins[0])
		if len(origins) > 1 || !ok || !allowed[n] {
			noStore(c)
			mcpserver.WriteError(c.Response(), http.StatusForbidden, mcpserver.InvalidRequest,
				"This Origin may not use this MCP endpoint: a browser page may call it only from this server's own origin or one its operator allowed (MCP_ALLOWED_ORIGINS).")
			return nil
		}
		return next(c)
	}
}

// NormalizeOrigin is an origin (or a URL, whose origin is taken) as
// scheme://host[:port], lower-case, without the scheme's default port;
// false for anything that is not an http(s) origin ("null" included).
func NormalizeOrigin(s string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, true
}
