package web

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Context keys set by middleware.
const (
	csrfContextKey = "csrf"
	userNavKey     = "user_nav"
	gzipWriterKey  = "gzip_writer"
	gzipSplicedKey = "gzip_spliced"
)

// middleware installs the stack every request goes through, outermost first.
func (h *handler) middleware(e *echo.Echo) {
	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently}))
	e.Use(middleware.RequestID())
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURIPath: true, LogMethod: true, LogLatency: true, LogRequestID: true,
		LogRemoteIP: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.Status >= 500:
				level = slog.LevelError
			case v.Status >= 400:
				level = slog.LevelWarn
			case strings.HasPrefix(v.URIPath, "/static/") || v.URIPath == "/healthz" || strings.HasPrefix(v.URIPath, "/v1/agent/"):
				level = slog.LevelDebug
			}
			h.Log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("request_id", v.RequestID), slog.String("method", v.Method),
				slog.String("path", v.URIPath), slog.Int("status", v.Status),
				slog.Duration("duration", v.Latency), slog.String("ip", v.RemoteIP))
			return nil
		},
	}))
	e.Use(h.timeRequests) // outside Recover, so a panic is timed as its 500
	e.Use(middleware.Recover())
	e.Use(h.warnUntrustedForwarding)
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:         "0",
		ContentTypeNosniff:    "nosniff",
		XFrameOptions:         "DENY",
		HSTSMaxAge:            hstsMaxAge(h.Config.Production),
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
	}))
	e.Use(Gzip())
	e.Use(middleware.BodyLimit("1M"))
	e.Use(h.guardText)
	// The CSRF guard and the session are not here: routes.go gives them to
	// the groups of routes a browser opens.
}

func hstsMaxAge(production bool) int {
	if production {
		return int((365 * 24 * time.Hour).Seconds())
	}
	return 0
}

// Gzip is the compression every page goes through (the load test puts its
// bare handler behind the same, so the two are compared like for like).
func Gzip() echo.MiddlewareFunc {
	gz := middleware.GzipWithConfig(middleware.GzipConfig{Skipper: skipGzip})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := gz(func(c echo.Context) error {
			// The writer the middleware installed (when it compresses):
			// an answer already gzipped is written past it (gzipsplice.go).
			c.Set(gzipWriterKey, c.Response().Writer)
			return next(c)
		})
		return func(c echo.Context) error {
			err := h(c)
			if c.Get(gzipSplicedKey) != nil {
				// The middleware drops the header of an answer that did
				// not go through it; the answer sent has it.
				c.Response().Header().Set(echo.HeaderContentEncoding, "gzip")
			}
			return err
		}
	}
}

// skipGzip leaves streams alone, static assets, which are gzipped once at
// start-up (assets.go), and the agent binary (agent_binary.go), which is
// served as stored: compressing it cost seconds of CPU per download and
// made its Range answers unusable (OP1).
func skipGzip(c echo.Context) bool {
	p := c.Request().URL.Path
	return isStream(c) || strings.HasPrefix(p, "/static/") || strings.HasPrefix(p, "/agent/")
}

// isStream skips compression for server-sent events and streamed logs, which
// must flush line by line.
func isStream(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasSuffix(p, "/stream") || strings.HasSuffix(p, "/logs") ||
		strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream")
}
