package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const csrfCookie = "_csrf"

// errCSRF is the refusal of a state-changing request without a valid token.
var errCSRF = echo.NewHTTPError(http.StatusForbidden, "This form has expired or did not come from Clusterdeck. Reload the page and try again.")

// csrf protects every form and htmx request with a double-submit token: a
// random value in an HttpOnly, SameSite=Lax cookie that each page repeats in
// a hidden _csrf field and in hx-headers (X-CSRF-Token). Unsafe methods must
// send it back; cross-site fetches are refused outright. The REST API (bearer
// keys, no cookies), the agent protocol (node tokens), webhooks (signatures)
// and development routes sit outside it.
func (h *handler) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if csrfExempt(c.Request().URL.Path) {
			return next(c)
		}
		token := ""
		if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			token = ck.Value
		} else {
			token = h.setCSRFCookie(c)
		}
		c.Set(csrfContextKey, token)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if c.Request().Header.Get("Sec-Fetch-Site") == "cross-site" {
			return errCSRF
		}
		sent := c.Request().Header.Get("X-CSRF-Token")
		if sent == "" {
			sent = c.FormValue("_csrf")
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return errCSRF
		}
		return next(c)
	}
}

// setCSRFCookie issues a fresh token cookie and returns the token.
func (h *handler) setCSRFCookie(c echo.Context) string {
	token := newToken(32)
	dropSetCookie(c, csrfCookie)
	c.SetCookie(&http.Cookie{
		Name: csrfCookie, Value: token, Path: "/", HttpOnly: true,
		Secure: h.secureCookies(c), SameSite: http.SameSiteLaxMode,
	})
	return token
}

// rotateCSRF replaces the CSRF token when the privilege level changes
// (log-in, sign-up, log-out), so a token planted or seen before is useless
// after; the response's page already carries the new one.
func (h *handler) rotateCSRF(c echo.Context) {
	c.Set(csrfContextKey, h.setCSRFCookie(c))
}

func csrfExempt(path string) bool {
	for _, p := range []string{"/v1/", "/webhooks/", "/dev/", "/static/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// secureCookies is true except on plain-HTTP localhost during development.
func (h *handler) secureCookies(c echo.Context) bool {
	if h.Config.Production {
		return true
	}
	host := c.Request().Host
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	local := host == "localhost" || host == "127.0.0.1" || host == "[::1]" || strings.HasPrefix(host, "127.")
	return !local && c.Scheme() == "https"
}

func newToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("web: random token: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
