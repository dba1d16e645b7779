package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const (
	csrfCookie     = "_csrf"
	csrfSessionKey = "csrf"
)

// errCSRF is the refusal of a state-changing request without a valid token.
var errCSRF = echo.NewHTTPError(http.StatusForbidden, "This form has expired or did not come from Clusterdeck. Reload the page and try again.")

// csrf protects every form and htmx request with a synchronizer token kept
// in the session (signed and encrypted, so it cannot be planted): each page
// repeats it in a hidden _csrf field and in hx-headers (X-CSRF-Token), and
// unsafe methods must send it back; cross-site fetches are refused outright.
// The token is mirrored in an HttpOnly _csrf cookie for clients that read it,
// but that cookie is never trusted (A3). It runs on the pages group of
// routes.go only: the REST API checks the token itself when called with the
// session (requireAPI), and MCP (bearer keys), the agent protocol (node
// tokens), webhooks (signatures), the public immutable downloads (/static/,
// /agent/: no cookie on a cached answer) and development routes sit outside it.
func (h *handler) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, err := h.sessionCSRF(c)
		if err != nil {
			return err
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
		if !csrfMatch(sent, token) {
			return errCSRF
		}
		return next(c)
	}
}

// csrfMatch compares a sent token with the session's in constant time.
func csrfMatch(sent, token string) bool {
	return sent != "" && token != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(token)) == 1
}

// sessionCSRF returns the session's token, creating (and saving) one for a
// session without, and keeps the mirror cookie in step.
func (h *handler) sessionCSRF(c echo.Context) (string, error) {
	s := h.session(c)
	token := sessionString(s, csrfSessionKey)
	if len(token) < 32 {
		token = newToken(32)
		s.Values[csrfSessionKey] = token
		if err := h.saveSession(c, s); err != nil {
			return "", err
		}
	}
	if ck, err := c.Cookie(csrfCookie); err != nil || ck.Value != token {
		h.setCSRFCookie(c, token)
	}
	return token, nil
}

// setCSRFCookie sets the mirror cookie.
func (h *handler) setCSRFCookie(c echo.Context, token string) {
	dropSetCookie(c, csrfCookie)
	c.SetCookie(&http.Cookie{
		Name: csrfCookie, Value: token, Path: "/", HttpOnly: true,
		Secure: h.secureCookies(c), SameSite: http.SameSiteLaxMode,
	})
}

// rotateCSRF replaces the CSRF token in the request's session when the
// privilege level changes (log-in, sign-up, log-out), so a token planted or
// seen before is useless after; the caller saves the session, and the
// response's page already carries the new one.
func (h *handler) rotateCSRF(c echo.Context) {
	token := newToken(32)
	h.session(c).Values[csrfSessionKey] = token
	h.setCSRFCookie(c, token)
	c.Set(csrfContextKey, token)
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
