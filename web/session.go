package web

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
)

// Sessions are gorilla/sessions cookies (signed and encrypted), holding only
// ids: the user, their session version, the current organisation and
// environment, a random session id and the issue time. Every request checks
// the version against the database, so log-out everywhere and a password
// change revoke every older cookie; the issue time bounds a cookie's life
// even if the browser keeps it.
const (
	sessionCookie = "cd_session"
	sessionMaxAge = 7 * 24 * time.Hour
)

// Context keys for the request's session and principal.
const (
	sessionKey   = "session"
	principalKey = "principal"
)

// Principal is who a request acts as: a signed-in user (User set), or an API
// key (User nil, APIKeyID set). Env is the key's environment, or the user's
// current (else default) environment. Actor is what the audit log records:
// the user's email or "api_key:<prefix>".
type Principal struct {
	Org      models.Org
	User     *models.User
	UserID   string // the acting person: the signed-in user, or the API key's creator
	Role     models.Role
	Env      models.Environment
	Actor    string
	APIKeyID string
}

// principal returns the request's principal, or nil when signed out.
func principal(c echo.Context) *Principal {
	p, _ := c.Get(principalKey).(*Principal)
	return p
}

func newSessionStore(cfg Config) *sessions.CookieStore {
	auth, enc := cfg.SessionAuthKey, cfg.SessionEncKey
	if len(auth) == 0 || len(enc) == 0 {
		// Ephemeral keys: sessions last until the process restarts.
		auth, enc = make([]byte, 64), make([]byte, 32)
		_, _ = rand.Read(auth)
		_, _ = rand.Read(enc)
	}
	st := sessions.NewCookieStore(auth, enc)
	st.Options = &sessions.Options{Path: "/", MaxAge: int(sessionMaxAge.Seconds()), HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: true}
	st.MaxAge(st.Options.MaxAge)
	return st
}

// session returns the request's decoded session (a new, empty one when the
// cookie is absent or invalid).
func (h *handler) session(c echo.Context) *sessions.Session {
	if s, ok := c.Get(sessionKey).(*sessions.Session); ok {
		return s
	}
	s, err := h.sessions.New(c.Request(), sessionCookie)
	if err != nil {
		s = sessions.NewSession(h.sessions, sessionCookie)
		s.IsNew = true
	}
	c.Set(sessionKey, s)
	return s
}

// saveSession writes the session cookie with our options.
func (h *handler) saveSession(c echo.Context, s *sessions.Session) error {
	s.Options = &sessions.Options{Path: "/", MaxAge: int(sessionMaxAge.Seconds()), HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.secureCookies(c)}
	dropSetCookie(c, sessionCookie)
	return s.Save(c.Request(), c.Response())
}

// dropSetCookie removes a Set-Cookie for name already queued on this
// response, so a cookie saved twice (flash after log-in) is sent once.
func dropSetCookie(c echo.Context, name string) {
	hdr := c.Response().Header()
	var keep []string
	for _, v := range hdr.Values("Set-Cookie") {
		if !strings.HasPrefix(v, name+"=") {
			keep = append(keep, v)
		}
	}
	hdr.Del("Set-Cookie")
	for _, v := range keep {
		hdr.Add("Set-Cookie", v)
	}
}

// startSession replaces whatever session the browser had with a fresh one
// for u (session fixation: nothing carries over, the id is new) and rotates
// the CSRF token. orgID/envID may be empty (first org, default env).
func (h *handler) startSession(c echo.Context, u models.User, orgID, envID string) error {
	s := sessions.NewSession(h.sessions, sessionCookie)
	s.IsNew = true
	s.Values["uid"] = u.ID
	s.Values["ver"] = u.SessionVersion
	s.Values["org"] = orgID
	s.Values["env"] = envID
	s.Values["sid"] = newToken(16)
	s.Values["iat"] = h.Store.Now().Unix()
	c.Set(sessionKey, s)
	h.rotateCSRF(c)
	return h.saveSession(c, s)
}

// endSession replaces the session with an empty one (keeping nothing but an
// optional flash) and rotates the CSRF token.
func (h *handler) endSession(c echo.Context, flash string) error {
	s := sessions.NewSession(h.sessions, sessionCookie)
	s.IsNew = true
	if flash != "" {
		s.AddFlash(string(views.FlashInfo) + ":" + flash)
	}
	c.Set(sessionKey, s)
	c.Set(principalKey, nil)
	h.rotateCSRF(c)
	return h.saveSession(c, s)
}

// setSessionValue changes one value of the signed-in session (current org
// or environment) and saves it.
func (h *handler) setSessionValues(c echo.Context, kv map[string]string) error {
	s := h.session(c)
	for k, v := range kv {
		s.Values[k] = v
	}
	return h.saveSession(c, s)
}

// flash queues a one-line message for the next full page.
func (h *handler) flash(c echo.Context, kind views.FlashKind, msg string) error {
	s := h.session(c)
	s.AddFlash(string(kind) + ":" + msg)
	return h.saveSession(c, s)
}

// takeFlashes pops queued flashes (only when a full page will show them).
func (h *handler) takeFlashes(c echo.Context) []views.Flash {
	s, ok := c.Get(sessionKey).(*sessions.Session)
	if !ok || isPartial(c) || c.Request().Method != http.MethodGet {
		return nil
	}
	raw := s.Flashes()
	if len(raw) == 0 {
		return nil
	}
	out := make([]views.Flash, 0, len(raw))
	for _, r := range raw {
		str, _ := r.(string)
		kind, msg, ok := strings.Cut(str, ":")
		if !ok {
			continue
		}
		out = append(out, decodeFlash(views.FlashKind(kind), msg))
	}
	_ = h.saveSession(c, s)
	return out
}

func sessionString(s *sessions.Session, k string) string {
	v, _ := s.Values[k].(string)
	return v
}

// loadSession is middleware: it resolves the session cookie to a principal
// (and the navigation's user) for every page. A revoked, expired or broken
// cookie is dropped and the request continues signed out.
func (h *handler) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if _, err := r.Cookie(sessionCookie); err != nil {
			return next(c)
		}
		s := h.session(c)
		uid := sessionString(s, "uid")
		if uid == "" {
			return next(c)
		}
		ver, _ := s.Values["ver"].(int)
		iat, _ := s.Values["iat"].(int64)
		now := h.Store.Now()
		if time.Unix(iat, 0).Add(sessionMaxAge).Before(now) {
			if err := h.endSession(c, "Your session expired. Log in again."); err != nil {
				return err
			}
			return next(c)
		}
		sc, err := h.Store.LoadSession(r.Context(), uid, ver, sessionString(s, "org"), sessionString(s, "env"))
		if err == nil {
			err = h.checkNotEnded(c, s)
		}
		if errors.Is(err, models.ErrSessionRevoked) {
			if err := h.endSession(c, "You were logged out. Log in again."); err != nil {
				return err
			}
			return next(c)
		}
		if err != nil {
			return err
		}
		u := sc.User
		c.Set(principalKey, &Principal{Org: sc.Org, User: &u, UserID: u.ID, Role: sc.Role, Env: sc.Env, Actor: u.Email})
		c.Set(userNavKey, &views.UserNav{Email: u.Email, OrgName: sc.Org.Name, CanBilling: sc.Role.CanManage(),
			CanTeam: sc.Role.CanManage(), IsOperator: u.IsOperator})
		return next(c)
	}
}

// loadAPISession is loadSession for the REST API: a request carrying a
// bearer key is a program's, and its cookies (if any) are not read; without
// one, the dashboard's own scripts call the API with the session.
func (h *handler) loadAPISession(next echo.HandlerFunc) echo.HandlerFunc {
	withSession := h.loadSession(next)
	return func(c echo.Context) error {
		if c.Request().Header.Get("Authorization") != "" {
			return next(c)
		}
		return withSession(c)
	}
}

// checkNotEnded refuses a session that was logged out (a copy of its cookie
// kept after log-out): ErrSessionRevoked.
func (h *handler) checkNotEnded(c echo.Context, s *sessions.Session) error {
	ended, err := h.Store.SessionEnded(c.Request().Context(), sessionString(s, "sid"))
	if err != nil {
		return err
	}
	if ended {
		return models.ErrSessionRevoked
	}
	return nil
}

// endServerSession records the request's session as logged out, so every
// copy of its cookie stops working (A2).
func (h *handler) endServerSession(c echo.Context) error {
	p := principal(c)
	if p == nil || p.User == nil {
		return nil
	}
	s := h.session(c)
	iat, _ := s.Values["iat"].(int64)
	return h.Store.EndSession(c.Request().Context(), p.User.ID, sessionString(s, "sid"), time.Unix(iat, 0).Add(sessionMaxAge))
}

// requireUser guards signed-in pages: a signed-out page GET is sent to
// /login?next=…; htmx and other requests get 401.
func (h *handler) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := principal(c); p != nil && p.User != nil {
			noStore(c) // signed-in pages carry private data and secrets (A3)
			return next(c)
		}
		r := c.Request()
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("HX-Request") != "true" {
			return c.Redirect(http.StatusSeeOther, "/login?"+url.Values{"next": {r.URL.RequestURI()}}.Encode())
		}
		if r.Header.Get("HX-Request") == "true" {
			c.Response().Header().Set("HX-Redirect", "/login")
		}
		return echo.NewHTTPError(http.StatusUnauthorized, "Log in to continue.")
	}
}

// requireManager lets owners and admins through (team settings, audit log,
// billing); members get a clear 403 page.
func (h *handler) requireManager(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principal(c)
		if p == nil {
			return echo.NewHTTPError(http.StatusUnauthorized, "Log in to continue.")
		}
		if !p.Role.CanManage() {
			return echo.NewHTTPError(http.StatusForbidden, "Only owners and admins of "+p.Org.Name+
				" can see billing, team settings and the audit log. Ask an owner if you need access.")
		}
		return next(c)
	}
}

// requireOperator guards the /admin area: site operators only.
func (h *handler) requireOperator(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principal(c)
		if p == nil || p.User == nil {
			return echo.NewHTTPError(http.StatusUnauthorized, "Log in to continue.")
		}
		if !p.User.IsOperator {
			return echo.NewHTTPError(http.StatusForbidden, "The admin area is for the operators of this Clusterdeck. "+
				"An operator is made with `clusterdeck admin grant EMAIL`.")
		}
		return next(c)
	}
}

var (
	errNoAPIKey = &APIError{Status: http.StatusUnauthorized, Code: "unauthorized",
		Message: "Send an API key as `Authorization: Bearer cdk_…` (create one under Settings → API keys)."}
	errBadAPIKey = &APIError{Status: http.StatusUnauthorized, Code: "invalid_api_key",
		Message: "That API key is not valid: it may be mistyped or revoked."}
)

// authenticateBearer resolves an Authorization header to a principal.
func (h *handler) authenticateBearer(c echo.Context, header string) error {
	token, ok := models.ParseBearer(header)
	if !ok {
		return errNoAPIKey
	}
	auth, err := h.Store.AuthenticateAPIKey(c.Request().Context(), token)
	if errors.Is(err, models.ErrBadAPIKey) {
		return errBadAPIKey
	}
	if err != nil {
		return err
	}
	c.Set(principalKey, &Principal{Org: auth.Org, UserID: auth.Key.CreatedBy, Role: auth.Role, Env: auth.Env,
		Actor: "api_key:" + auth.Key.Prefix, APIKeyID: auth.Key.ID})
	return nil
}

// requireAPI guards /v1: an `Authorization: Bearer <API key>` acts as the
// key's org and environment. A signed-in dashboard session is accepted too
// (same-origin fetches), and then unsafe methods must repeat the CSRF token
// in X-CSRF-Token, since /v1 sits outside the form CSRF guard.
func (h *handler) requireAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		noStore(c)
		r := c.Request()
		if authz := r.Header.Get("Authorization"); authz != "" {
			if err := h.authenticateBearer(c, authz); err != nil {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="clusterdeck"`)
				return err
			}
			if err := h.keyEnvScope(c); err != nil {
				return err
			}
			return next(c)
		}
		if p := principal(c); p != nil && p.User != nil {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if r.Header.Get("Sec-Fetch-Site") == "cross-site" ||
					!csrfMatch(r.Header.Get("X-CSRF-Token"), sessionString(h.session(c), csrfSessionKey)) {
					return &APIError{Status: http.StatusForbidden, Code: "csrf",
						Message: "Send the page's CSRF token in X-CSRF-Token, or use an API key."}
				}
			}
			return next(c)
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="clusterdeck"`)
		return errNoAPIKey
	}
}

// optionalAPI is for public API routes: no credentials is fine, but a bad
// API key is refused rather than silently ignored.
func (h *handler) optionalAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if authz := c.Request().Header.Get("Authorization"); authz != "" {
			if err := h.authenticateBearer(c, authz); err != nil {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="clusterdeck"`)
				return err
			}
		}
		return next(c)
	}
}

// auditEntry fills who and from where for an audit entry of this request.
func (h *handler) auditEntry(c echo.Context, action, target, detail string) models.AuditEntry {
	e := models.AuditEntry{Action: action, Target: target, Detail: detail, IP: c.RealIP()}
	if p := principal(c); p != nil {
		e.OrgID, e.Actor = p.Org.ID, p.Actor
		if p.User != nil {
			e.UserID = p.User.ID
		}
	}
	return e
}

// safeNext returns next if it is a local path ("/clusters?x=1"), else "".
// It refuses scheme-relative and backslash tricks (open redirects).
func safeNext(next string) string {
	if next == "" || len(next) > 2000 || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n\t") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return next
}
