package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/agentbin"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/web"
)

// config is every setting, read once from the environment (see docs/operating.md).
type config struct {
	Addr        string // ADDR: listen address (default 127.0.0.1:8080)
	DatabaseURL string // DATABASE_URL: postgres://… ; unset → SQLite file under DataDir
	DataDir     string // DATA_DIR: SQLite file and generated development keys (default ./data)
	BaseURL     string // BASE_URL: public URL used in mails and agent bootstraps (default http://ADDR)
	// AGENT_BINARY_DIR: a directory holding the clusterdeck-linux-amd64
	// binary served to machines at BASE_URL/agent/<version>/… (OP1);
	// unset = the running executable (on linux/amd64). AgentBinary finds
	// and hashes it once, on first use.
	AgentBinaryDir string
	AgentBinary    func() (*agentbin.Binary, error)
	Production     bool   // CLUSTERDECK_ENV=production (default development)
	FakeClock      bool   // CLUSTERDECK_FAKE_CLOCK=1: development-only settable clock
	LogFormat      string // LOG_FORMAT: text (default) or json
	LogLevel       string // LOG_LEVEL: debug, info (default), warn, error

	SessionAuthKey []byte // SESSION_AUTH_KEY: hex, 32 or 64 bytes; generated under DataDir in development
	SessionEncKey  []byte // SESSION_ENC_KEY: hex, 16, 24 or 32 bytes; generated under DataDir in development

	Providers []string // PROVIDERS: comma list of enabled GPU providers (default "sim")
	SimConfig string   // SIM_CONFIG: JSON or YAML file for the simulated cloud (default: built in)
	SimSeed   int64    // SIM_SEED: seed for the simulated cloud (default 1)
	// SimAgentEvery is SIM_AGENT_EVERY: how often, in wall time, the
	// simulated machines' agents run a round (default 2s; an instance
	// holds them for 7½ rounds, so a dead one's are taken over after 15 s).
	SimAgentEvery time.Duration
	// SSHMachinesFile is SSH_MACHINES_FILE: the operator's own machines
	// (YAML or JSON) sold by the "ssh" provider; SSH_STATE_FILE overrides
	// where it records placements and trusted host keys (default: beside it).
	SSHMachinesFile string
	SSHStateFile    string

	Lambda lambdaConfig // LAMBDA_*: Lambda's Public Cloud API; enabled when LAMBDA_API_KEY is set
	// RUNPOD_* and SHADEFORM_*: RunPod's REST API v2 and Shadeform; each
	// enabled when its API key is set.
	RunPod, Shadeform cloudConfig

	SMTPURL    string // SMTP_URL: smtp://user:pass@host:port; unset → the dev mailbox
	MailFrom   string // MAIL_FROM: sender address (default "Clusterdeck <noreply@clusterdeck.local>")
	SalesEmail string // SALES_EMAIL: receives every new quote request (default "sales@clusterdeck.local")

	MetricsToken string // METRICS_TOKEN: bearer token for /metrics; unset = loopback scrapes only (development)
	// METRICS_LOOPBACK=1: production answers /metrics without METRICS_TOKEN
	// to direct connections from this machine (never to forwarded ones).
	MetricsLoopback bool

	StripeSecretKey     string // STRIPE_SECRET_KEY: unset = payments test mode (top-ups credited at once), development only
	StripeWebhookSecret string // STRIPE_WEBHOOK_SECRET: whsec_… of the webhook endpoint (API version 2023-10-16)
	// INVOICE_ONLY=1: no payment provider; self-service top-ups are off and
	// only operators adjust balances. Production without STRIPE_SECRET_KEY
	// needs it (B7, B9).
	InvoiceOnly bool
	// MAX_TOP_UP_USD and MAX_ADJUSTMENT_USD: the largest top-up (and
	// auto-recharge amount) and operator adjustment (B9).
	MaxTopUp, MaxAdjustment models.Money

	DefaultMaxMachines int // DEFAULT_MAX_MACHINES: quota of a new organisation (default 64)
	DefaultMaxGPUs     int // DEFAULT_MAX_GPUS: quota of a new organisation (default 512)
	DefaultMaxVolumes  int // DEFAULT_MAX_VOLUMES: live volumes of an organisation without its own quota (default 20)
	DefaultMaxVolumeGB int // DEFAULT_MAX_VOLUME_GB: GB of live volumes together, likewise (default 100000)
	// Verification before hand-over (X13): VERIFY_RING_PERCENT (85),
	// VERIFY_PAIR_BELOW_MEDIAN_PERCENT (10), VERIFY_IDLE_TEMP_MAX_C (70).
	Verify        models.VerifyThresholds
	DefaultMarkup int // DEFAULT_MARKUP_PERCENT: markup on providers without their own (basis points; default 0)
	// Markups is each provider's markup set by <P>_MARKUP_PERCENT (basis
	// points, by provider name): it wins over the providers page.
	Markups        map[string]int
	TrustedProxies []*net.IPNet // TRUSTED_PROXIES: comma list of CIDRs whose X-Forwarded-For is believed
	MCPOrigins     []string     // MCP_ALLOWED_ORIGINS: origins besides BASE_URL's whose pages may call /mcp

	HeartbeatLate  time.Duration // HEALTH_HEARTBEAT_LATE: an agent is late after this long without a heartbeat (default 3m)
	UnhealthyAfter time.Duration // HEALTH_UNHEALTHY_AFTER: how long a machine's condition must hold (default 1m)
	MaxUnhealthy   int           // HEALTH_MAX_UNHEALTHY_PERCENT: above this share of a cluster's machines unhealthy, automatic repair stops (default 40)
	BalanceGrace   time.Duration // BALANCE_GRACE: an exhausted balance stops every running cluster after this long (default 1h)
	TerminateGrace time.Duration // BALANCE_TERMINATE_GRACE: stopped by the balance and unpaid this long, they are terminated (default 72h)
}

// settings are the domain's settings from the environment and flags, the one
// value the store, the jobs and the web read, built before anything starts.
// stopRefusals come from the providers (B6).
func (c config) settings(stopRefusals map[string]string) models.Settings {
	return models.Settings{
		DefaultMarkup:        c.DefaultMarkup,
		EnvMarkups:           c.Markups,
		MachineKeySecret:     machineKeySecret(c.SessionEncKey),
		BalanceGrace:         c.BalanceGrace, // the pages' "runs until" is when the balance job stops (B6)
		TerminateGrace:       c.TerminateGrace,
		HeartbeatLate:        c.HeartbeatLate,
		UnhealthyAfter:       c.UnhealthyAfter,
		Limits:               models.MoneyLimits{MaxTopUp: c.MaxTopUp, MaxAdjustment: c.MaxAdjustment},
		DefaultMaxVolumes:    c.DefaultMaxVolumes,
		DefaultMaxVolumeGB:   c.DefaultMaxVolumeGB,
		WebhookAllowLoopback: !c.Production,  // X8: http to loopback receivers in development only
		MaxUnhealthyPercent:  c.MaxUnhealthy, // health damping
		StopRefusals:         stopRefusals,
		Verify:               c.Verify,
		WebhookClusterView:   web.WebhookClusterView, // X8: webhook events carry the cluster as the API shows it
	}
}

func (c config) SQLitePath() string { return filepath.Join(c.DataDir, "clusterdeck.db") }

func loadConfig(getenv func(string) string) (config, error) {
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	c := config{
		Addr:            get("ADDR", "127.0.0.1:8080"),
		DatabaseURL:     get("DATABASE_URL", ""),
		DataDir:         get("DATA_DIR", "data"),
		LogFormat:       get("LOG_FORMAT", "text"),
		LogLevel:        get("LOG_LEVEL", "info"),
		SimConfig:       get("SIM_CONFIG", ""),
		SSHMachinesFile: get("SSH_MACHINES_FILE", ""),
		SSHStateFile:    get("SSH_STATE_FILE", ""),
		SMTPURL:         get("SMTP_URL", ""),
		MailFrom:        get("MAIL_FROM", "Clusterdeck <noreply@clusterdeck.local>"),
		SalesEmail:      models.NormalizeEmail(get("SALES_EMAIL", models.DefaultSalesEmail)),
		MetricsToken:    get("METRICS_TOKEN", ""),

		StripeSecretKey:     get("STRIPE_SECRET_KEY", ""),
		StripeWebhookSecret: get("STRIPE_WEBHOOK_SECRET", ""),
	}
	if c.StripeSecretKey != "" && c.StripeWebhookSecret == "" {
		return c, errors.New("STRIPE_SECRET_KEY needs STRIPE_WEBHOOK_SECRET: only the verified webhook credits a top-up")
	}
	var err error
	if c.InvoiceOnly, err = flag01(get("INVOICE_ONLY", "")); err != nil {
		return c, fmt.Errorf("INVOICE_ONLY: %w", err)
	}
	if c.InvoiceOnly && c.StripeSecretKey != "" {
		return c, errors.New("INVOICE_ONLY=1 turns self-service payments off, but STRIPE_SECRET_KEY is set: unset one of them")
	}
	if c.MetricsLoopback, err = flag01(get("METRICS_LOOPBACK", "")); err != nil {
		return c, fmt.Errorf("METRICS_LOOPBACK: %w", err)
	}
	if c.MaxTopUp, err = dollarLimit(get("MAX_TOP_UP_USD", models.DecimalUSD(models.DefaultMaxTopUp)), models.MinTopUp, models.StripeMaxAmount); err != nil {
		return c, fmt.Errorf("MAX_TOP_UP_USD: %w", err)
	}
	if c.MaxAdjustment, err = dollarLimit(get("MAX_ADJUSTMENT_USD", models.DecimalUSD(models.DefaultMaxAdjustment)), models.Micro/100, models.MaxAdjustmentLimit); err != nil {
		return c, fmt.Errorf("MAX_ADJUSTMENT_USD: %w", err)
	}
	if models.EmailProblem(c.SalesEmail) != "" {
		return c, fmt.Errorf("SALES_EMAIL must be one plain address like sales@example.com, not %q", c.SalesEmail)
	}
	c.BaseURL = strings.TrimRight(get("BASE_URL", "http://"+c.Addr), "/")
	if c.AgentBinaryDir = get("AGENT_BINARY_DIR", ""); c.AgentBinaryDir != "" {
		if st, err := os.Stat(filepath.Join(c.AgentBinaryDir, agentbin.FileName)); err != nil || !st.Mode().IsRegular() {
			return c, fmt.Errorf("AGENT_BINARY_DIR must hold the linux/amd64 clusterdeck binary named %s: %s has none", agentbin.FileName, c.AgentBinaryDir)
		}
	}
	c.AgentBinary = agentbin.Lazy(c.AgentBinaryDir)
	switch env := get("CLUSTERDECK_ENV", "development"); env {
	case "development":
	case "production":
		c.Production = true
	default:
		return c, fmt.Errorf("CLUSTERDECK_ENV must be development or production, not %q", env)
	}
	c.FakeClock = get("CLUSTERDECK_FAKE_CLOCK", "") == "1"
	if c.FakeClock && c.Production {
		return c, errors.New("CLUSTERDECK_FAKE_CLOCK is for development only; unset it in production")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return c, fmt.Errorf("LOG_FORMAT must be text or json, not %q", c.LogFormat)
	}
	for _, p := range strings.Split(get("PROVIDERS", "sim"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.Providers = append(c.Providers, p)
		}
	}
	if err := c.loadLambda(get); err != nil {
		return c, err
	}
	if c.RunPod, err = c.loadCloud(get, "runpod", "RUNPOD", "https://api.runpod.io", "RUNPOD_DATACENTERS"); err != nil {
		return c, err
	}
	if c.Shadeform, err = c.loadCloud(get, "shadeform", "SHADEFORM", "https://api.shadeform.ai/v1", "SHADEFORM_REGIONS"); err != nil {
		return c, err
	}
	for _, cl := range strings.Split(get("SHADEFORM_CLOUDS", ""), ",") {
		if cl = strings.TrimSpace(cl); cl != "" {
			c.Shadeform.Clouds = append(c.Shadeform.Clouds, cl)
		}
	}
	c.RunPod.Image = get("RUNPOD_IMAGE", "")
	c.RunPod.SSHKey = strings.TrimSpace(get("RUNPOD_SSH_KEY", ""))
	if k := c.RunPod.SSHKey; k != "" && (len(strings.Fields(k)) < 2 || strings.ContainsAny(k, "\n\r")) {
		return c, errors.New("RUNPOD_SSH_KEY must be one OpenSSH public key (\"ssh-ed25519 AAAA… comment\"): the operator's key, put in every pod")
	}
	c.Shadeform.SSHKey = strings.TrimSpace(get("SHADEFORM_SSH_KEY_ID", ""))
	seed, err := strconv.ParseInt(get("SIM_SEED", "1"), 10, 64)
	if err != nil {
		return c, fmt.Errorf("SIM_SEED must be an integer: %w", err)
	}
	c.SimSeed = seed
	if c.SimAgentEvery, err = positiveDuration(get("SIM_AGENT_EVERY", "2s")); err != nil {
		return c, fmt.Errorf("SIM_AGENT_EVERY: %w", err)
	}
	if c.DefaultMaxMachines, err = positiveInt(get("DEFAULT_MAX_MACHINES", "64")); err != nil {
		return c, fmt.Errorf("DEFAULT_MAX_MACHINES: %w", err)
	}
	if c.DefaultMaxGPUs, err = positiveInt(get("DEFAULT_MAX_GPUS", "512")); err != nil {
		return c, fmt.Errorf("DEFAULT_MAX_GPUS: %w", err)
	}
	if c.DefaultMaxVolumes, err = positiveInt(get("DEFAULT_MAX_VOLUMES", "20")); err != nil {
		return c, fmt.Errorf("DEFAULT_MAX_VOLUMES: %w", err)
	}
	if c.DefaultMaxVolumeGB, err = positiveInt(get("DEFAULT_MAX_VOLUME_GB", "100000")); err != nil {
		return c, fmt.Errorf("DEFAULT_MAX_VOLUME_GB: %w", err)
	}
	if c.HeartbeatLate, err = positiveDuration(get("HEALTH_HEARTBEAT_LATE", "3m")); err != nil {
		return c, fmt.Errorf("HEALTH_HEARTBEAT_LATE: %w", err)
	}
	if c.UnhealthyAfter, err = positiveDuration(get("HEALTH_UNHEALTHY_AFTER", "1m")); err != nil {
		return c, fmt.Errorf("HEALTH_UNHEALTHY_AFTER: %w", err)
	}
	if c.MaxUnhealthy, err = positiveInt(get("HEALTH_MAX_UNHEALTHY_PERCENT", "40")); err != nil || c.MaxUnhealthy > 100 {
		return c, fmt.Errorf("HEALTH_MAX_UNHEALTHY_PERCENT: a whole percentage from 1 to 100")
	}
	if c.BalanceGrace, err = positiveDuration(get("BALANCE_GRACE", "1h")); err != nil {
		return c, fmt.Errorf("BALANCE_GRACE: %w", err)
	}
	if c.TerminateGrace, err = positiveDuration(get("BALANCE_TERMINATE_GRACE", "72h")); err != nil {
		return c, fmt.Errorf("BALANCE_TERMINATE_GRACE: %w", err)
	}
	for _, v := range []struct {
		name, def string
		to        *int
	}{{"VERIFY_RING_PERCENT", "85", &c.Verify.RingPercent}, {"VERIFY_PAIR_BELOW_MEDIAN_PERCENT", "10", &c.Verify.PairBelowMedianPercent},
		{"VERIFY_IDLE_TEMP_MAX_C", "70", &c.Verify.IdleTempMaxC}} {
		if *v.to, err = positiveInt(get(v.name, v.def)); err != nil || *v.to > 100 {
			return c, fmt.Errorf("%s must be a whole number from 1 to 100, not %q", v.name, getenv(v.name))
		}
	}
	if c.DefaultMarkup, err = models.ParsePercent(get("DEFAULT_MARKUP_PERCENT", "0")); err != nil || c.DefaultMarkup > models.MaxMarkupBP {
		return c, fmt.Errorf("DEFAULT_MARKUP_PERCENT must be a percentage from 0 to 500 like 12.5, not %q", getenv("DEFAULT_MARKUP_PERCENT"))
	}
	c.Markups = map[string]int{}
	for _, name := range markupProviders {
		v := MarkupVar(name)
		raw := get(v, "")
		if raw == "" {
			continue
		}
		bp, err := models.ParsePercent(raw)
		if err != nil || bp > models.MaxMarkupBP {
			return c, fmt.Errorf("%s must be a percentage from 0 to 500 like 12.5, not %q", v, raw)
		}
		c.Markups[name] = bp
	}
	for _, cidr := range strings.Split(get("TRUSTED_PROXIES", ""), ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			return c, fmt.Errorf("TRUSTED_PROXIES: %q is not a CIDR like 10.0.0.0/8", cidr)
		}
		c.TrustedProxies = append(c.TrustedProxies, n)
	}
	for _, o := range strings.Split(get("MCP_ALLOWED_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		n, ok := web.NormalizeOrigin(o)
		if u, _ := url.Parse(o); !ok || u == nil || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			return c, fmt.Errorf("MCP_ALLOWED_ORIGINS: %q is not an origin like https://app.example.com", o)
		}
		c.MCPOrigins = append(c.MCPOrigins, n)
	}
	if c.SessionAuthKey, err = hexKey(getenv("SESSION_AUTH_KEY"), 32, 64); err != nil {
		return c, fmt.Errorf("SESSION_AUTH_KEY: %w", err)
	}
	if c.SessionEncKey, err = hexKey(getenv("SESSION_ENC_KEY"), 16, 24, 32); err != nil {
		return c, fmt.Errorf("SESSION_ENC_KEY: %w", err)
	}
	if c.Production && (c.SessionAuthKey == nil || c.SessionEncKey == nil) {
		return c, errors.New("production needs SESSION_AUTH_KEY (64 hex bytes) and SESSION_ENC_KEY (32 hex bytes); generate them with `openssl rand -hex 32`")
	}
	return c, nil
}

// markupProviders are the providers whose markup an environment variable
// can set (MarkupVar).
var markupProviders = []string{"sim", "lambda", "runpod", "shadeform", "ssh"}

// MarkupVar is the variable that sets provider's markup (OP2):
// LAMBDA_MARKUP_PERCENT beside LAMBDA_API_KEY and the like.
func MarkupVar(provider string) string { return strings.ToUpper(provider) + "_MARKUP_PERCENT" }

// providerSettings is what the providers page shows of each provider's
// configuration: whether its key is set (never the key) and its regions.
func (c config) providerSettings() map[string]web.ProviderSetting {
	out := map[string]web.ProviderSetting{}
	for _, name := range markupProviders {
		out[name] = web.ProviderSetting{MarkupVar: MarkupVar(name)}
	}
	set := func(name, keyVar string, keySet bool, regionsVar string, regions []string) {
		s := out[name]
		s.KeyVar, s.KeySet, s.RegionsVar, s.Regions = keyVar, keySet, regionsVar, regions
		out[name] = s
	}
	set("lambda", "LAMBDA_API_KEY", c.Lambda.APIKey != "", "LAMBDA_REGIONS", c.Lambda.Regions)
	set("runpod", "RUNPOD_API_KEY", c.RunPod.APIKey != "", "RUNPOD_DATACENTERS", c.RunPod.Locations)
	set("shadeform", "SHADEFORM_API_KEY", c.Shadeform.APIKey != "", "SHADEFORM_REGIONS", c.Shadeform.Locations)
	return out
}

// lambdaConfig is the Lambda adapter's settings (OP1). The key is never
// printed: the struct has no String of its own and the config is never logged.
type lambdaConfig struct {
	APIKey      string   // LAMBDA_API_KEY: enables the provider
	APIURL      string   // LAMBDA_API_URL: API server (default https://cloud.lambda.ai)
	Regions     []string // LAMBDA_REGIONS: comma list of regions sold; unset = every region Lambda lists
	SSHKeyName  string   // LAMBDA_SSH_KEY_NAME: a key of the Lambda account that every launch names
	ImageFamily string   // LAMBDA_IMAGE_FAMILY: machine image family (default: Lambda Stack)
	AgentURL    string   // LAMBDA_AGENT_URL: where machines download the clusterdeck binary (linux/amd64); unset = this server's
	AgentSHA256 string   // LAMBDA_AGENT_SHA256: the binary's SHA-256, checked on every machine
	// LAMBDA_REQUEST_INTERVAL and LAMBDA_LAUNCH_INTERVAL: the pacing of
	// requests and launches (default Lambda's documented 1s and 12s).
	RequestInterval, LaunchInterval time.Duration
}

// loadLambda reads LAMBDA_*; a key enables the provider (added to PROVIDERS
// when not listed there), and naming lambda in PROVIDERS needs a key.
func (c *config) loadLambda(get func(k, def string) string) error {
	l := lambdaConfig{APIKey: get("LAMBDA_API_KEY", ""), APIURL: get("LAMBDA_API_URL", "https://cloud.lambda.ai"),
		SSHKeyName: get("LAMBDA_SSH_KEY_NAME", ""), ImageFamily: get("LAMBDA_IMAGE_FAMILY", ""),
		AgentURL: get("LAMBDA_AGENT_URL", ""), AgentSHA256: strings.ToLower(get("LAMBDA_AGENT_SHA256", ""))}
	for _, r := range strings.Split(get("LAMBDA_REGIONS", ""), ",") {
		if r = strings.TrimSpace(r); r != "" {
			l.Regions = append(l.Regions, r)
		}
	}
	listed := slices.Contains(c.Providers, "lambda")
	if l.APIKey == "" {
		if listed {
			return errors.New("PROVIDERS names lambda but LAMBDA_API_KEY is unset")
		}
		return nil
	}
	if !listed {
		c.Providers = append(c.Providers, "lambda")
	}
	if u, err := url.Parse(l.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("LAMBDA_API_URL must be an http(s) URL like https://cloud.lambda.ai, not %q", l.APIURL)
	}
	if u, err := url.Parse(l.AgentURL); l.AgentURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		return fmt.Errorf("LAMBDA_AGENT_URL must be the http(s) URL Lambda machines download the clusterdeck binary (linux/amd64) from, not %q; unset, they download this server's", l.AgentURL)
	}
	if l.AgentSHA256 != "" && l.AgentURL == "" {
		return errors.New("LAMBDA_AGENT_SHA256 goes with LAMBDA_AGENT_URL: this server's own binary is checked against its own digest")
	}
	if l.AgentURL != "" && l.AgentSHA256 == "" {
		return errors.New("LAMBDA_AGENT_URL needs LAMBDA_AGENT_SHA256 (sha256sum clusterdeck): every machine checks the binary before running it")
	}
	if l.AgentSHA256 != "" {
		if b, err := hex.DecodeString(l.AgentSHA256); err != nil || len(b) != 32 {
			return errors.New("LAMBDA_AGENT_SHA256 must be the binary's SHA-256 in 64 hex digits (sha256sum clusterdeck)")
		}
	}
	var err error
	if l.RequestInterval, err = positiveDuration(get("LAMBDA_REQUEST_INTERVAL", "1s")); err != nil {
		return fmt.Errorf("LAMBDA_REQUEST_INTERVAL: %w", err)
	}
	if l.LaunchInterval, err = positiveDuration(get("LAMBDA_LAUNCH_INTERVAL", "12s")); err != nil {
		return fmt.Errorf("LAMBDA_LAUNCH_INTERVAL: %w", err)
	}
	if strings.TrimSpace(l.SSHKeyName) == "" {
		// Every launch names one account key; customers' keys are never
		// registered on the account (A3): the operator's is required.
		return errors.New("LAMBDA_SSH_KEY_NAME is required with LAMBDA_API_KEY: the name of the operator's SSH key on the Lambda account, which every launch names (customers' keys reach their own machines through the agent, never the account)")
	}
	c.Lambda = l
	return nil
}

// cloudConfig is a cloud adapter's settings (OP1): RunPod and Shadeform.
// The key is never printed.
type cloudConfig struct {
	APIKey    string   // <P>_API_KEY: enables the provider
	APIURL    string   // <P>_API_URL: API server
	Locations []string // RUNPOD_DATACENTERS / SHADEFORM_REGIONS: locations sold; unset = every one listed
	Clouds    []string // SHADEFORM_CLOUDS: Shadeform's upstream clouds sold; unset = all
	Image     string   // RUNPOD_IMAGE: container image of pods whose cluster names none
	// SSHKey is the operator's key: RUNPOD_SSH_KEY, a public key in every
	// pod beside its cluster's keys and the one left registered on the
	// account; SHADEFORM_SSH_KEY_ID, the id of the Shadeform key every
	// create names (unset: the account's default key).
	SSHKey      string
	AgentURL    string // <P>_AGENT_URL: where machines download the clusterdeck binary (linux/amd64); unset = this server's
	AgentSHA256 string // <P>_AGENT_SHA256: the binary's SHA-256, checked on every machine
}

// loadCloud reads <P>_API_KEY, <P>_API_URL, the locations variable and
// <P>_AGENT_URL/_SHA256: a key enables the provider (added to PROVIDERS),
// and naming it in PROVIDERS needs a key.
func (c *config) loadCloud(get func(k, def string) string, name, p, defURL, locVar string) (cloudConfig, error) {
	l := cloudConfig{APIKey: get(p+"_API_KEY", ""), APIURL: get(p+"_API_URL", defURL),
		AgentURL: get(p+"_AGENT_URL", ""), AgentSHA256: strings.ToLower(get(p+"_AGENT_SHA256", ""))}
	for _, r := range strings.Split(get(locVar, ""), ",") {
		if r = strings.TrimSpace(r); r != "" {
			l.Locations = append(l.Locations, r)
		}
	}
	listed := slices.Contains(c.Providers, name)
	if l.APIKey == "" {
		if listed {
			return l, fmt.Errorf("PROVIDERS names %s but %s_API_KEY is unset", name, p)
		}
		return l, nil
	}
	if !listed {
		c.Providers = append(c.Providers, name)
	}
	if u, err := url.Parse(l.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return l, fmt.Errorf("%s_API_URL must be an http(s) URL like %s, not %q", p, defURL, l.APIURL)
	}
	if u, err := url.Parse(l.AgentURL); l.AgentURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		return l, fmt.Errorf("%s_AGENT_URL must be the http(s) URL machines download the clusterdeck binary (linux/amd64) from, not %q; unset, they download this server's", p, l.AgentURL)
	}
	if l.AgentSHA256 != "" && l.AgentURL == "" {
		return l, fmt.Errorf("%s_AGENT_SHA256 goes with %s_AGENT_URL: this server's own binary is checked against its own digest", p, p)
	}
	if l.AgentURL != "" && l.AgentSHA256 == "" {
		return l, fmt.Errorf("%s_AGENT_URL needs %s_AGENT_SHA256 (sha256sum clusterdeck): every machine checks the binary before running it", p, p)
	}
	if l.AgentSHA256 != "" {
		if b, err := hex.DecodeString(l.AgentSHA256); err != nil || len(b) != 32 {
			return l, fmt.Errorf("%s_AGENT_SHA256 must be the binary's SHA-256 in 64 hex digits (sha256sum clusterdeck)", p)
		}
	}
	return l, nil
}

// startupChecks is what serve refuses and what it warns about before
// anything starts (OP5): production never runs payments in test mode (B7,
// B9) and says what it serves without a token or behind a proxy.
func (c config) startupChecks() (warnings []string, err error) {
	if !c.Production {
		if c.StripeSecretKey == "" && !c.InvoiceOnly {
			warnings = append(warnings, "payments run in test mode (STRIPE_SECRET_KEY unset): a top-up is credited at once and no money moves; production refuses this")
		}
		return warnings, nil
	}
	if c.StripeSecretKey == "" && !c.InvoiceOnly {
		return nil, errors.New("production needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET: without them top-ups would run in test mode and credit money nobody paid. " +
			"For a deployment without card payments, where only operators adjust balances, set INVOICE_ONLY=1 (self-service top-ups are then off)")
	}
	if c.InvoiceOnly {
		warnings = append(warnings, "INVOICE_ONLY=1: self-service top-ups and auto-recharge are off; only operators adjust balances (/admin/orgs)")
	}
	if strings.HasPrefix(c.StripeSecretKey, "sk_test_") || strings.HasPrefix(c.StripeSecretKey, "rk_test_") {
		warnings = append(warnings, "STRIPE_SECRET_KEY is a Stripe test-mode key: payments go through Stripe's test mode and no real money moves")
	}
	switch {
	case c.MetricsToken == "" && c.MetricsLoopback:
		warnings = append(warnings, "METRICS_LOOPBACK=1 without METRICS_TOKEN: /metrics (every organisation's deposits) answers any direct connection from this machine")
	case c.MetricsToken == "":
		warnings = append(warnings, "METRICS_TOKEN is unset: /metrics answers 403 to every request until it is set (or METRICS_LOOPBACK=1)")
	}
	if len(c.TrustedProxies) == 0 {
		warnings = append(warnings, "TRUSTED_PROXIES is unset: forwarding headers (X-Forwarded-For, Forwarded, X-Real-IP) are ignored; behind a reverse proxy every client has the proxy's address (log-in throttling, audit log)")
	}
	return warnings, nil
}

// flag01 reads an on/off setting: unset or 0 is off, 1 is on.
func flag01(s string) (bool, error) {
	switch s {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("must be 1 or 0, not %q", s)
}

// dollarLimit reads a maximum in dollars and whole cents, from lo to hi.
func dollarLimit(s string, lo, hi models.Money) (models.Money, error) {
	m, err := models.ParseUSD(s)
	if err != nil || m%10_000 != 0 || m < lo || m > hi {
		return 0, fmt.Errorf("must be dollars in whole cents from %s to %s, not %q", models.USD(lo), models.USD(hi), s)
	}
	return m, nil
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("must be a positive duration like 90s or 3m")
	}
	return d, nil
}

func positiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errors.New("must be a whole number of at least 1")
	}
	return n, nil
}

func hexKey(s string, sizes ...int) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("must be hex")
	}
	for _, n := range sizes {
		if len(b) == n {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be %v bytes long, is %d", sizes, len(b))
}

// devSessionKeys loads or creates the development session keys under
// DataDir, so `make run` works with no set-up and sessions survive restarts.
func (c *config) devSessionKeys() error {
	if c.SessionAuthKey != nil && c.SessionEncKey != nil {
		return nil
	}
	path := filepath.Join(c.DataDir, "session.keys")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		buf := make([]byte, 64+32)
		if _, err := rand.Read(buf); err != nil {
			return err
		}
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return err
		}
		data = []byte(hex.EncodeToString(buf[:64]) + "\n" + hex.EncodeToString(buf[64:]) + "\n")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	lines := strings.Fields(string(data))
	if len(lines) != 2 {
		return fmt.Errorf("%s: want two hex lines; delete it to regenerate", path)
	}
	if c.SessionAuthKey == nil {
		if c.SessionAuthKey, err = hexKey(lines[0], 64); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if c.SessionEncKey == nil {
		if c.SessionEncKey, err = hexKey(lines[1], 32); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
