// Package web is Clusterdeck's HTTP side: the echo server, every route,
// middleware, sessions and CSRF, handlers for pages and htmx partials, the
// REST API v1, and webhooks. Handlers record intent; jobs perform provider
// side effects. It never imports jobs or providers: what it needs from them
// arrives as the small interfaces below, satisfied in main.
package web

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the web layer's slice of the process configuration.
type Config struct {
	Production bool   // CLUSTERDECK_ENV=production: no development routes
	BaseURL    string // public URL, e.g. https://deck.example.com

	SessionAuthKey []byte // signs session cookies (HMAC)
	SessionEncKey  []byte // encrypts session cookies (AES)

	DefaultMaxMachines int          // quota for new organisations (0: models.DefaultMaxMachines)
	DefaultMaxGPUs     int          // quota for new organisations (0: models.DefaultMaxGPUs)
	TrustedProxies     []*net.IPNet // proxies whose X-Forwarded-For is believed (client IPs for throttling and audit)
	SMTP               bool         // mail leaves by SMTP (SMTP_URL set); else the dev mailbox shows it
	SalesEmail         string       // receives every new quote request (SALES_EMAIL; "" = models.DefaultSalesEmail)
	MetricsToken       string       // bearer token for /metrics; "" = loopback clients only, and in production none but with MetricsLoopback
	MetricsLoopback    bool         // production: /metrics answers direct loopback clients without a token (METRICS_LOOPBACK=1)
	TopUpsOff          bool         // INVOICE_ONLY=1: no self-service top-ups; operators adjust balances
	MCPOrigins         []string     // origins besides BaseURL's whose browser pages may call /mcp (MCP_ALLOWED_ORIGINS)
	Providers          []string     // the GPU providers enabled by PROVIDERS (the admin's providers page)
	// ProviderSettings is what the environment configures for each provider
	// (OP1), shown on the providers page; keys never reach the web layer.
	ProviderSettings map[string]ProviderSetting
	// SSHMachinesFile and SSHFileMachines are the ssh provider's machines
	// file and its machines as loaded at start-up (the machines page lists
	// them read-only beside those added there).
	SSHMachinesFile string
	SSHFileMachines []models.SSHMachine
	// PagePoll is how often the clusters list and a live cluster page
	// refresh themselves in the browser while something is under way
	// (0: views.DefaultPoll, 3 s).
	PagePoll time.Duration
}

// ProviderSetting is one provider's configuration as the providers page
// shows it: whether its key is set (never the key), its regions and the
// variables that set them.
type ProviderSetting struct {
	KeyVar     string   // e.g. LAMBDA_API_KEY; "" when the provider has no account key
	KeySet     bool     // KeyVar is set
	RegionsVar string   // e.g. LAMBDA_REGIONS; "" when the provider has no such setting
	Regions    []string // regions sold; empty = every one the provider lists
	MarkupVar  string   // e.g. LAMBDA_MARKUP_PERCENT
}

// JobRunner runs a job's tick now (development routes, "recover now").
type JobRunner interface {
	RunNow(ctx context.Context, name string) error
	// Kick runs one tick soon in the background; the runner owns it (its
	// shutdown waits for it), so no request starts work that outlives the
	// server.
	Kick(name string)
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
	LogPoll   time.Duration     // how often a log or event stream looks for new rows (default 1 s)
	KeepAlive time.Duration     // how often a quiet event stream sends a comment (default 15 s)
	Payments  Payments          // nil: test mode, top-ups credited at once (B7)
	Metrics   Metrics           // the registry /metrics serves (nil: a new one)
	// AgentBinary finds the binary served at /agent/<version>/… (OP1);
	// nil or ErrNoAgentBinary: every such URL answers 404.
	AgentBinary func() (AgentBinary, error)
	// AgentLimitClock is the clock the per-node agent limits refill on
	// (nil: the store's, moved on by wall time while it stands still).
	AgentLimitClock func() time.Time
	// RefusalHold is the longest a 429 of the agent and metrics limits is
	// held before it is written (0: RefusalHold; below 0: not held).
	RefusalHold time.Duration
}

// refusalHold is Deps.RefusalHold or its default.
func (h *handler) refusalHold() time.Duration {
	switch {
	case h.RefusalHold < 0:
		return 0
	case h.RefusalHold == 0:
		return RefusalHold
	}
	return h.RefusalHold
}

// agentLimitClock is Deps.AgentLimitClock or its default.
func (h *handler) agentLimitClock() func() time.Time {
	if h.AgentLimitClock != nil {
		return h.AgentLimitClock
	}
	return limitClock(h.Store.Now)
}

type handler struct {
	Deps
	sessions        *sessions.CookieStore
	httpMetrics     *httpMetrics
	metricsHandler  http.Handler
	assets          assets            // /static/*, read and gzipped once
	assetURLs       map[string]string // asset name → versioned URL, for the layout
	renders         *renderCache      // offers answers by models.Pick stamp (offers.go)
	mcp             echo.HandlerFunc  // /mcp: the MCP tools over this server's own API
	webhookVersions sync.Map          // Stripe API versions other than ours already logged
	forwardWarning  untrustedForwarding
	agentFiles      openFiles // /agent/…: the served binary, opened once (agent_binary.go)
	webhookSends    *webhookSendLimits
	streams         *streamLimits // event streams and long polls per key and organisation
	heartbeats      *heartbeatLimiter
}

// WebhookClusterView is the cluster as the API shows it, for the data of its
// webhook events (X8): main puts it in the store's models.Settings, since
// models cannot import the API's types. New writes nothing into the Store:
// its settings are fixed before the jobs start.
func WebhookClusterView(ctx context.Context, tx *models.Store, c models.Cluster) (any, error) {
	return clusterAPIView(ctx, tx, c, false)
}

// New builds the echo server with every route.
func New(d Deps) *echo.Echo {
	e, _ := newServer(d)
	return e
}

// newServer is New, with the handler behind it (tests look at its caches).
func newServer(d Deps) (*echo.Echo, *handler) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = prometheus.NewRegistry()
	}
	h := &handler{Deps: d, sessions: newSessionStore(d.Config), renders: newRenderCache(renderCacheBudget), streams: newStreamLimits()}
	if d.Store != nil {
		h.webhookSends = newWebhookSendLimits(d.Store.Now)
	}
	h.metricsHandler = h.newMetricsHandler(d.Metrics)
	as, err := loadAssets(d.Static)
	if err != nil {
		panic(fmt.Sprintf("web: static assets: %v", err)) // embedded at build time: cannot fail at run time
	}
	h.assets, h.assetURLs = as, as.URLs()
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.IPExtractor = ipExtractor(d.Config.TrustedProxies)
	e.HTTPErrorHandler = h.errorHandler
	h.middleware(e)
	h.mcp = newMCP(e)
	h.routes(e)
	return e, h
}

// ipExtractor believes X-Forwarded-For only from trusted proxies; without
// any, the client IP is the TCP peer (echo's safe default).
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// Timeouts bound what one connection can hold of the server (X19): the request's headers and its whole body must arrive within
// ReadHeader and Read, an answer must be written within Write, and an idle
// keep-alive connection is closed after Idle. Long-lived answers (log
// streams, the agent binary's download) move their own deadlines on
// (holdOpen).
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts are the timeouts of the server main runs.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 60 * time.Second, Write: 2 * time.Minute, Idle: 2 * time.Minute}

// HTTPServer is the http.Server that serves handler with the timeouts t.
func HTTPServer(handler http.Handler, t Timeouts) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// Write windows of the long-lived answers: a log stream's every round of
// writes, and a whole download of the agent binary.
const (
	streamWriteWindow   = time.Minute
	downloadWriteWindow = time.Hour
)

// holdOpen lets a long-lived answer outlive the server's read and write
// timeouts: no read deadline (the request has no more body to read, and a
// read deadline passing would cancel the request's context), and a write
// deadline window from now, which a stream moves on before each round of
// writes, so a client that stops reading is still cut off. The deadlines
// are the socket's, in real time, not the project's clock. A writer without
// deadlines (a test's recorder) is left as it is.
func holdOpen(c echo.Context, window time.Duration) {
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(window))
}

// logPoll is how often a log stream looks for new lines.
func (h *handler) logPoll() time.Duration {
	if h.LogPoll > 0 {
		return h.LogPoll
	}
	return time.Second
}
