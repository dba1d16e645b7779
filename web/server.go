// Package web is Clusterdeck's HTTP side: the echo server, every route,
// middleware, sessions and CSRF, handlers for pages and htmx partials, the
// REST API v1, and webhooks. Handlers record intent; jobs perform provider
// side effects. It never imports jobs or providers: what it needs from them
// arrives as the small interfaces below, satisfied in main.
package web

import (
	"context"
	"io/fs"
	"log/slog"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// Config is the web layer's slice of the process configuration.
type Config struct {
	Production bool   // CLUSTERDECK_ENV=production: no development routes
	BaseURL    string // public URL, e.g. https://deck.example.com

	SessionAuthKey []byte // signs session cookies (HMAC)
	SessionEncKey  []byte // encrypts session cookies (AES)
}

// JobRunner runs a job's tick now (development routes, "recover now").
type JobRunner interface {
	RunNow(ctx context.Context, name string) error
	Names() []string
}

// SimControl scripts the simulated cloud's faults (development only).
type SimControl interface {
	InjectFaultsJSON(data []byte) (int, error)
}

// Deps is everything the web layer needs.
type Deps struct {
	Config    Config
	Store     *models.Store
	Log       *slog.Logger
	Static    fs.FS
	Jobs      JobRunner
	FakeClock *models.FakeClock // set only with CLUSTERDECK_FAKE_CLOCK=1 in development
	Sim       SimControl        // nil when the simulated cloud is not enabled
}

type handler struct {
	Deps
}

// New builds the echo server with every route.
func New(d Deps) *echo.Echo {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	h := &handler{Deps: d}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = h.errorHandler
	h.middleware(e)
	h.routes(e)
	return e
}
