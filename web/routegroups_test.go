package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// machineRoute lists the routes of routes.go registered on no group: the
// ones programs and machines call, which read and set no cookie.
func machineRoute(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/mcp" ||
		strings.HasPrefix(path, "/static/") || strings.HasPrefix(path, "/agent/") ||
		strings.HasPrefix(path, "/v1/agent/") || strings.HasPrefix(path, "/webhooks/")
}

// The groups of routes.go carry their middleware, so a
// route cannot slip out of the CSRF guard by its path, and no path list
// decides it. Every unsafe page route refuses a signed-in browser without
// the token (the pages group runs csrf); the machines' routes answer a
// request carrying a session cookie without setting any cookie (they run
// neither csrf nor the session).
func TestRouteGroupsCarryTheirMiddleware(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	c := app.login(acc)
	pageRoutes, machineRoutes := 0, 0
	for _, r := range app.e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		params := map[string]string{}
		for _, m := range paramRE.FindAllString(r.Path, -1) {
			if m != "*" {
				params[m[1:]] = "x1"
			}
		}
		path, _ := fillPath(r.Path, params)
		switch {
		case machineRoute(r.Path):
			machineRoutes++
			req, _ := http.NewRequest(r.Method, path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			for name, ck := range c.jar {
				if name != csrfCookie { // a browser's session cookie, without the mirror
					req.AddCookie(ck)
				}
			}
			req.RemoteAddr = c.ip + ":4321"
			rec := app.do(req)
			if cks := rec.Result().Cookies(); len(cks) > 0 {
				t.Errorf("%s %s set cookie %s: the machines' routes must run neither the session nor the CSRF guard",
					r.Method, r.Path, cks[0].Name)
			}
		case strings.HasPrefix(r.Path, "/v1/") || strings.HasPrefix(r.Path, "/dev/"):
			// The API checks the token itself (TestAPISessionNeedsCSRFForUnsafeMethods);
			// development routes are loopback-only.
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			pageRoutes++
			rec := c.post(path, url.Values{"_csrf": {""}})
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "did not come from Clusterdeck") {
				t.Errorf("%s %s without the CSRF token: %d; want the CSRF refusal", r.Method, r.Path, rec.Code)
			}
		}
	}
	if pageRoutes < 40 || machineRoutes < 8 {
		t.Fatalf("walked %d unsafe page routes and %d machine routes: the route table is not being read", pageRoutes, machineRoutes)
	}
	// An unknown address is answered as a page: signed in, its 404 shows
	// the navigation (the session ran).
	if rec := c.get("/no-such-page"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "ada@example.com") {
		t.Errorf("unknown page: %d, signed-in navigation shown: %v", rec.Code, strings.Contains(rec.Body.String(), "ada@example.com"))
	}
}
