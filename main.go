// Command clusterdeck is the whole product in one binary: the dashboard and
// REST API with its jobs (`serve`, the default), schema migrations
// (`migrate`), and the tools around them. Run `clusterdeck help`.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/agentbin"
	"github.com/clusterdeck/clusterdeck/internal/cli"
	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/clusterdeck/clusterdeck/web"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"gorm.io/gorm"
)

const usage = `clusterdeck — multi-node GPU clusters, self-hosted.

Usage:
  clusterdeck [serve]     serve the dashboard, the API and the jobs (default)
  clusterdeck migrate     apply database migrations and exit
  clusterdeck demo        development only: create (idempotently) a demo organisation,
                          owner and API key, and print their credentials
  clusterdeck admin grant EMAIL    make a user an operator (the /admin area)
  clusterdeck admin revoke EMAIL   take the operator flag away
  clusterdeck agent --server URL --token T
                          run the cluster agent on a node
  clusterdeck gpu offers|clusters quote|launch|list|get|connections|logs|terminate
                          the REST API from the command line (clusterdeck gpu help)
  clusterdeck mcp         the API's tools for an AI agent (MCP over stdio; see --help)
  clusterdeck version     the version and commit this binary was built from
  clusterdeck help        this text; clusterdeck COMMAND --help for one command

Configuration comes from environment variables; see docs/operating.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		var code cli.Exit // `gpu` printed its own message
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "clusterdeck:", err)
		os.Exit(1)
	}
}

// run dispatches a subcommand. Tests call it with their own args and env.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if cmd == "version" || cmd == "--version" {
		fmt.Fprint(stdout, versionText(debug.ReadBuildInfo()))
		return nil
	}
	if cmd != "gpu" && wantsHelp(args) && printHelp(stdout, cmd) {
		return nil
	}
	withDemo := false
	if cmd == "serve" && len(args) == 1 && args[0] == "--demo" {
		withDemo, args = true, nil // make run: the demo log-in, printed once the server listens
	}
	if _, ok := commandHelp[cmd]; ok && cmd != "admin" && len(args) > 0 {
		return fmt.Errorf("%s takes no arguments: configuration comes from environment variables\n\n%s", cmd, commandHelp[cmd])
	}
	if cmd == "agent" { // runs on a node: no database, no server config
		return runAgent(ctx, args, stderr)
	}
	if cmd == "gpu" { // the API's client: no database, no server config
		return cli.Run(ctx, args, getenv, stdout, stderr)
	}
	if cmd == "run" { // X17: `clusterdeck run -f train.yaml` is `gpu runs submit -f train.yaml`
		return cli.Run(ctx, append([]string{"runs", "submit"}, args...), getenv, stdout, stderr)
	}
	if cmd == "mcp" { // the API's tools for an agent, over stdio: a client too
		return mcpserver.Command(ctx, args, getenv, os.Stdin, nopCloser{stdout}, stderr)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	switch cmd {
	case "serve":
		if withDemo {
			return serveDemo(ctx, cfg, log, stdout)
		}
		return serve(ctx, cfg, log, stdout, nil)
	case "migrate":
		db, err := openDB(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer closeDB(db)
		fmt.Fprintln(stdout, "migrations are up to date")
		return nil
	case "demo":
		return demo(ctx, cfg, log, stdout)
	case "admin":
		return adminCommand(ctx, cfg, log, args, stdout)
	default:
		return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
}

// nopCloser is stdout for `mcp`, which closes its writer when the agent leaves.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openDB opens the configured database and applies pending migrations.
func openDB(ctx context.Context, cfg config, log *slog.Logger) (*gorm.DB, error) {
	db, err := models.Open(cfg.DatabaseURL, cfg.SQLitePath())
	if err != nil {
		return nil, err
	}
	applied, err := models.Migrate(ctx, db)
	if err != nil {
		closeDB(db)
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "ids", applied)
	}
	return db, nil
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
}

// serve runs the web server and the jobs until ctx is cancelled.
// serveDemo is `serve --demo` (make run): the demo organisation is made
// ready first, and its log-in is printed once the server listens, set
// apart from the logs, so it is the last thing a newcomer sees.
func serveDemo(ctx context.Context, cfg config, log *slog.Logger, stdout io.Writer) error {
	var login bytes.Buffer
	if err := demo(ctx, cfg, log, &login); err != nil {
		return err
	}
	return serve(ctx, cfg, log, stdout, func() { fmt.Fprint(stdout, demoBanner(cfg, login.String())) })
}

// demoBanner frames the demo's log-in lines with what a newcomer needs next.
func demoBanner(cfg config, login string) string {
	rule := strings.Repeat("=", 78)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", rule)
	for _, l := range strings.Split(strings.TrimSpace(login), "\n") {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "  The demo user is an operator too: %s/admin\n", cfg.BaseURL)
	if cfg.FakeClock {
		b.WriteString("  The fake clock is on: `make walk` (another terminal) moves it a minute every two seconds,\n" +
			"  so a launched cluster comes up in about a minute of real time.\n")
	} else {
		b.WriteString("  A cluster takes 15–25 minutes of real time on the simulated cloud. To walk one in\n" +
			"  seconds: CLUSTERDECK_FAKE_CLOCK=1 make run, then `make walk` in another terminal.\n")
	}
	fmt.Fprintf(&b, "%s\n", rule)
	return b.String()
}

func serve(ctx context.Context, cfg config, log *slog.Logger, stdout io.Writer, listening func()) error {
	warnings, err := cfg.startupChecks()
	if err != nil {
		return err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	db, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB(db)
	if !cfg.Production {
		if err := cfg.loadDevSessionKeys(ctx, db); err != nil {
			return fmt.Errorf("development session keys: %w", err)
		}
	}

	var clock models.Clock = models.RealClock{}
	var fake *models.FakeClock
	var shared *sharedClock
	if cfg.FakeClock {
		if shared, err = openSharedClock(ctx, db, time.Now()); err != nil {
			return err
		}
		fake = shared.fake
		clock = fake
		log.Warn("fake clock enabled: move time with POST /dev/clock", "now", fake.Now())
	}
	cloud, err := buildProviders(cfg, clock, db, instanceName())
	if err != nil {
		return err
	}
	// One Settings, fixed before the jobs and the web start: nothing is
	// assigned into the store after this line.
	store := models.NewStoreWith(db, clock, cfg.settings(cloud.Registry.StopRefusals()))
	if n, err := store.SealWebhookSecrets(ctx); err != nil {
		return fmt.Errorf("seal webhook secrets: %w", err)
	} else if n > 0 {
		log.Info("sealed webhook signing secrets stored in clear", "endpoints", n)
	}
	mailer, err := buildMailer(cfg, clock, log)
	if err != nil {
		return err
	}
	metrics, jobMetrics, err := newMetrics()
	if err != nil {
		return err
	}
	sched := jobs.NewScheduler(store, log)
	if shared != nil {
		sched.BeforeTick(shared.load)
		sched.FollowClock() // the per-minute jobs run when the fake clock moves
		cloud.BeforeRound = shared.load
	}
	if err := jobs.Register(sched, jobs.Deps{Store: store, Providers: cloud.Registry, Mailer: mailer, RenderMail: views.RenderOutbox[models.OutboxMail], BaseURL: cfg.BaseURL, Metrics: jobMetrics,
		Charger: jobsCharger(cfg), Webhooks: webhookPoster(cfg)}); err != nil {
		return err
	}
	// Fill the catalog before the first page view, then keep it fresh.
	if err := sched.RunNow(ctx, "catalog"); err != nil {
		log.Warn("first catalog refresh failed", "error", err)
	}
	sched.Start()

	var simCtl web.SimControl
	if cloud.SimControl != nil {
		simCtl = cloud.SimControl
	}
	agentBinary := func() (web.AgentBinary, error) {
		bin, err := cfg.AgentBinary()
		if errors.Is(err, agentbin.ErrNone) {
			return web.AgentBinary{}, web.ErrNoAgentBinary
		}
		if err != nil {
			return web.AgentBinary{}, err
		}
		return web.AgentBinary{Path: bin.Path, SHA256: bin.SHA256, Version: bin.Version}, nil
	}
	var handler http.Handler = web.New(web.Deps{AgentBinary: agentBinary,
		Config: web.Config{Production: cfg.Production, BaseURL: cfg.BaseURL,
			SessionAuthKey: cfg.SessionAuthKey, SessionEncKey: cfg.SessionEncKey,
			DefaultMaxMachines: cfg.DefaultMaxMachines, DefaultMaxGPUs: cfg.DefaultMaxGPUs,
			TrustedProxies: cfg.TrustedProxies, MCPOrigins: cfg.MCPOrigins, SMTP: cfg.SMTPURL != "", SalesEmail: cfg.SalesEmail,
			MetricsToken: cfg.MetricsToken, MetricsLoopback: cfg.MetricsLoopback, TopUpsOff: cfg.InvoiceOnly,
			Providers: cfg.Providers, ProviderSettings: cfg.providerSettings(),
			SSHMachinesFile: cfg.SSHMachinesFile, SSHFileMachines: fileMachineRows(cloud.SSHFile)},
		Store: store, Log: log, Static: static.FS, Jobs: sched, FakeClock: fake, Sim: simCtl, Metrics: metrics,
		Payments: webPayments(cfg),
	})
	if shared != nil {
		handler = shared.middleware(handler)
	}
	srv := web.HTTPServer(handler, web.DefaultTimeouts)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Clusterdeck is serving on %s (open %s/offers)\n", ln.Addr(), cfg.BaseURL)
	log.Info("serving", "addr", ln.Addr().String(), "env", envName(cfg), "database", dbName(cfg))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	cloud.Start(bg)
	if listening != nil {
		listening()
	}

	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No new ticks or agent rounds; the running ones and the in-flight
	// requests finish (bounded by shutdown), then the process exits.
	stopBG()
	jobsDone := make(chan error, 1)
	go func() { jobsDone <- sched.Stop(shutdown) }()
	err = srv.Shutdown(shutdown)
	err = errors.Join(err, <-jobsDone, cloud.Wait(shutdown))
	log.Info("stopped", "error", err)
	return err
}

// newMetrics is the one registry /metrics serves (OP3): the Go runtime's
// and the process's metrics and the jobs'; web registers its own on it.
func newMetrics() (*prometheus.Registry, *jobs.Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := jobs.NewMetrics(reg)
	return reg, m, err
}

func envName(cfg config) string {
	if cfg.Production {
		return "production"
	}
	return "development"
}

func dbName(cfg config) string {
	if cfg.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite:" + cfg.SQLitePath()
}
