package main

// `clusterdeck gpu …`: the CLI that speaks the REST API (API3). It uses only
// the standard library and the API's JSON, never the database, so it works
// against any Clusterdeck from anywhere.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const gpuUsage = `clusterdeck gpu — Clusterdeck's REST API from the command line (API3).

Usage:
  clusterdeck gpu offers --accelerator H100_80GB --nodes 4 [--include-community]
        [--interconnect I] [--machine-kind K] [--gpus-per-node G] [--max-price USD]
  clusterdeck gpu clusters quote --accelerator A --nodes N --gpus-per-node G
        [--persistent-gb GB] [--max-hourly-price USD] [--location L] [--offer-id ID]
        [--include-community]
  clusterdeck gpu clusters launch (--quote-id ID | --offer-id ID --nodes N --gpus-per-node G)
        [--name NAME] [--software none|slurm|kubernetes|ray] [--env K=V]... [--env-file FILE]
        [--port N]... [--ssh-key-id ID]... [--image IMAGE] [--start-command CMD]
        [--idempotency-key K] [--wait [--timeout 30m]]
  clusterdeck gpu clusters list
  clusterdeck gpu clusters get ID
  clusterdeck gpu clusters connections ID
  clusterdeck gpu clusters logs ID [--node N] [--follow=false]
  clusterdeck gpu clusters terminate ID [--wait [--timeout 30m]]
  clusterdeck gpu clusters recovery ID --mode restart|off [--max-attempts 3] [--cooldown-minutes 5]
  clusterdeck gpu clusters recover ID [--wait [--timeout 30m]]

Every command takes:
  --api URL   Clusterdeck's URL (env CLUSTERDECK_API; default http://127.0.0.1:8080)
  --key KEY   an API key, cdk_… (env CLUSTERDECK_API_KEY; create one under Settings → API keys)
  --json      print the API's JSON as it came instead of tables

Exit status: 0 done; 1 error (the API's message and field errors on stderr); 2 usage
error; 3 refused: no_capacity, price_changed, quota_exceeded, insufficient_balance.
A launch without --idempotency-key gets a fresh one, printed on stderr: repeat the
launch with it to retry safely (the same key and body give the same cluster, L1).

"clusters recovery" sets the automatic recovery policy (R3); "clusters recover" makes
one recovery attempt at once (R5).

"clusterdeck gpu clusters launch --help" (and so on) lists every flag.
`

// Exit statuses of `clusterdeck gpu`.
const (
	exitFailed      = 1
	exitUsage       = 2
	exitRefused     = 3 // no_capacity, price_changed, quota_exceeded, insufficient_balance
	exitInterrupted = 130
)

// cliExit is an exit status whose message the CLI has already printed; main
// exits with it and prints nothing more.
type cliExit int

func (e cliExit) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// usageError is a mistake in the command line (exit 2).
type usageError string

func (e usageError) Error() string { return string(e) }

// apiError is a non-2xx answer: the API's {"error":{"code","message",…}}, or
// a description of whatever else came back.
type apiError struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
	Extra   map[string]json.RawMessage // reason, shape, advice, old, new, balance, …
	Body    []byte
}

func (e *apiError) Error() string { return e.Message }

func (e *apiError) exitCode() int {
	switch e.Code {
	case "no_capacity", "price_changed", "quota_exceeded", "insufficient_balance":
		return exitRefused
	}
	return exitFailed
}

// gpuCLI is one invocation's settings and outputs.
type gpuCLI struct {
	ctx            context.Context
	stdout, stderr io.Writer
	api, key       string
	json           bool
	client         *http.Client // no overall timeout: log streams last; requests carry their own
	requestTimeout time.Duration
}

// runGPU is `clusterdeck gpu …`.
func runGPU(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c := &gpuCLI{ctx: ctx, stdout: stdout, stderr: stderr, api: getenv("CLUSTERDECK_API"), key: getenv("CLUSTERDECK_API_KEY"),
		client: &http.Client{}, requestTimeout: 60 * time.Second}
	if c.api == "" {
		c.api = "http://127.0.0.1:8080"
	}
	// Common flags may come before the command too: `gpu --api URL clusters list`.
	fs := c.flagSet("gpu", "")
	fs.Usage = func() { fmt.Fprint(stderr, gpuUsage) }
	rest, err := parseFlags(fs, args, 0)
	if err != nil {
		return c.fail(err)
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, gpuUsage)
		return cliExit(exitUsage)
	}
	cmd, rest := rest[0], rest[1:]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, gpuUsage)
		return nil
	case "offers":
		return c.fail(c.offers(rest))
	case "clusters", "cluster":
		if len(rest) == 0 {
			return c.fail(usageError("name a clusters command: quote, launch, list, get, connections, logs, terminate, recovery or recover"))
		}
		sub, rest := rest[0], rest[1:]
		var err error
		switch sub {
		case "quote":
			err = c.quote(rest)
		case "launch":
			err = c.launch(rest)
		case "list", "ls":
			err = c.list(rest)
		case "get", "show":
			err = c.get(rest)
		case "connections":
			err = c.connections(rest)
		case "logs":
			err = c.logs(rest)
		case "terminate":
			err = c.terminate(rest)
		case "recovery":
			err = c.recoveryPolicy(rest)
		case "recover":
			err = c.recoverNow(rest)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, gpuUsage)
		default:
			err = usageError(fmt.Sprintf("unknown command \"clusters %s\"", sub))
		}
		return c.fail(err)
	default:
		return c.fail(usageError(fmt.Sprintf("unknown command %q", cmd)))
	}
}

// fail prints err for a person (and, with --json, the API's error body on
// stdout) and turns it into the exit status.
func (c *gpuCLI) fail(err error) error {
	if err == nil {
		return nil
	}
	var exit cliExit
	var ue usageError
	var ae *apiError
	switch {
	case errors.As(err, &exit):
		if exit == 0 {
			return nil
		}
		return exit
	case errors.Is(err, flag.ErrHelp):
		return nil
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "clusterdeck: %s\nRun \"clusterdeck gpu help\" for usage.\n", ue)
		return cliExit(exitUsage)
	case errors.As(err, &ae):
		if c.json && json.Valid(ae.Body) {
			c.stdout.Write(withNewline(ae.Body))
		}
		c.printAPIError(ae)
		return cliExit(ae.exitCode())
	case c.ctx.Err() != nil:
		fmt.Fprintln(c.stderr, "clusterdeck: interrupted")
		return cliExit(exitInterrupted)
	}
	fmt.Fprintln(c.stderr, "clusterdeck:", err)
	return cliExit(exitFailed)
}

// ---- flags ----

// flagSet has the common flags; synopsis is the command's usage line.
func (c *gpuCLI) flagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.StringVar(&c.api, "api", c.api, "Clusterdeck's `URL` (env CLUSTERDECK_API)")
	fs.StringVar(&c.key, "key", c.key, "an API `key`, cdk_… (env CLUSTERDECK_API_KEY)")
	fs.BoolVar(&c.json, "json", c.json, "print the API's JSON instead of tables")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: clusterdeck gpu %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags wherever they are among the arguments (`get ID
// --json` works) and returns the positional arguments. It stops at the
// first positional when maxPositional is 0 (the `gpu` level, whose
// positionals are subcommands with flags of their own).
func parseFlags(fs *flag.FlagSet, args []string, maxPositional int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, cliExit(exitUsage) // the flag package printed the problem and the usage
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), checkPositional(fs, pos, rest, maxPositional)
		}
		if len(rest) == 0 {
			return pos, checkPositional(fs, pos, nil, maxPositional)
		}
		if maxPositional == 0 {
			return rest, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func checkPositional(fs *flag.FlagSet, pos, extra []string, max int) error {
	if max > 0 && len(pos)+len(extra) > max {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", fs.Name(), append(pos, extra...)[max]))
	}
	return nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// noArgs parses a command that takes flags only.
func noArgs(fs *flag.FlagSet, args []string, hint string) error {
	pos, err := parseFlags(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		msg := fmt.Sprintf("%s takes no arguments (got %q)", fs.Name(), pos[0])
		if hint != "" {
			msg += "; " + hint
		}
		return usageError(msg)
	}
	return nil
}

// oneID reads `command ID [flags]`.
func (c *gpuCLI) oneID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return "", usageError(fs.Name() + ": give the cluster's id (cl_…); \"clusterdeck gpu clusters list\" lists them")
	}
	return strings.TrimSpace(pos[0]), nil
}

// ---- HTTP ----

func (c *gpuCLI) endpoint(path string, q url.Values) string {
	u := strings.TrimRight(c.api, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (c *gpuCLI) needKey() error {
	if strings.TrimSpace(c.key) == "" {
		return usageError("no API key: pass --key cdk_… or set CLUSTERDECK_API_KEY (create one under Settings → API keys)")
	}
	return nil
}

func (c *gpuCLI) newRequest(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	if _, err := url.ParseRequestURI(c.api); err != nil || !strings.HasPrefix(c.api, "http") {
		return nil, usageError(fmt.Sprintf("--api %q is not an http(s) URL", c.api))
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(path, q), rd)
	if err != nil {
		return nil, usageError(fmt.Sprintf("--api %q: %v", c.api, err))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "clusterdeck-cli")
	if k := strings.TrimSpace(c.key); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	return req, nil
}

// call sends one request and returns the status and body of a 2xx answer;
// anything else is an *apiError.
func (c *gpuCLI) call(method, path string, q url.Values, body any, header http.Header) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.requestTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, c.transportError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, c.transportError(err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, raw, decodeAPIError(resp, raw, req.URL.String())
	}
	if !json.Valid(raw) {
		return resp.StatusCode, raw, fmt.Errorf("%s answered HTTP %d with something that is not JSON (%s); is --api Clusterdeck's URL?",
			req.URL.Redacted(), resp.StatusCode, contentType(resp))
	}
	return resp.StatusCode, raw, nil
}

func (c *gpuCLI) transportError(err error) error {
	if c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach the API at %s: %v", c.api, err)
}

func contentType(resp *http.Response) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return "no content type"
	}
	return ct
}

// decodeAPIError reads {"error":{"code","message","fields",…}}, or says what
// came back instead.
func decodeAPIError(resp *http.Response, raw []byte, where string) *apiError {
	ae := &apiError{Status: resp.StatusCode, Body: raw}
	var env struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		_ = json.Unmarshal(env.Error["code"], &ae.Code)
		_ = json.Unmarshal(env.Error["message"], &ae.Message)
		_ = json.Unmarshal(env.Error["fields"], &ae.Fields)
		ae.Extra = map[string]json.RawMessage{}
		for k, v := range env.Error {
			if k != "code" && k != "message" && k != "fields" {
				ae.Extra[k] = v
			}
		}
	}
	if ae.Code == "" {
		ae.Code = "http_" + strconv.Itoa(resp.StatusCode)
	}
	if ae.Message == "" {
		ae.Message = fmt.Sprintf("%s answered HTTP %d %s (%s)", where, resp.StatusCode, http.StatusText(resp.StatusCode), contentType(resp))
		if resp.StatusCode == http.StatusNotFound {
			ae.Message += "; is --api Clusterdeck's URL?"
		}
	}
	return ae
}

// getJSON calls and decodes into v; raw is the body as it came.
func (c *gpuCLI) getJSON(path string, q url.Values, v any) ([]byte, error) {
	_, raw, err := c.call(http.MethodGet, path, q, nil, nil)
	if err != nil {
		return nil, err
	}
	return raw, decodeInto(raw, v)
}

func decodeInto(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("could not read the API's answer: %v", err)
	}
	return nil
}

// decodeCluster reads a cluster the CLI goes on to use by its id.
func decodeCluster(raw []byte) (apiCluster, error) {
	var cl apiCluster
	if err := decodeInto(raw, &cl); err != nil {
		return cl, err
	}
	if cl.ID == "" {
		return cl, errors.New("could not read the API's answer: it names no cluster id")
	}
	return cl, nil
}

func withNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b[:len(b):len(b)], '\n')
	}
	return b
}

// printRaw is --json's output: the body as the API sent it.
func (c *gpuCLI) printRaw(raw []byte) { c.stdout.Write(withNewline(raw)) }

// ---- the API's JSON (only what the CLI reads; unknown fields are ignored) ----

type apiOffer struct {
	ID                string `json:"id"`
	Provider          string `json:"provider"`
	Location          string `json:"location"`
	LocationName      string `json:"locationName"`
	Interconnect      string `json:"interconnect"`
	MachineKind       string `json:"machineKind"`
	Accelerator       string `json:"accelerator"`
	GPUsPerNode       int    `json:"gpusPerNode"`
	Community         bool   `json:"community"`
	NodesAvailable    *int   `json:"nodes_available"`
	MaxNodes          int    `json:"max_nodes"`
	Nodes             int    `json:"nodes"`
	Availability      string `json:"availability"`
	USDPerMachineHour string `json:"usdPerMachineHour"`
	USDPerHour        string `json:"usdPerHour"`
}

type apiOffers struct {
	Accelerator      string `json:"accelerator"`
	Nodes            int    `json:"nodes"`
	IncludeCommunity bool   `json:"include_community"`
	Count            int    `json:"count"`
	Groups           []struct {
		Location     string     `json:"location"`
		LocationName string     `json:"locationName"`
		Nodes        int        `json:"nodes"`
		Offers       []apiOffer `json:"offers"`
	} `json:"groups"`
}

type apiLineItem struct {
	Name       string `json:"name"`
	Quantity   string `json:"quantity"`
	USDPerHour string `json:"usdPerHour"`
}

type apiQuote struct {
	ID                string         `json:"id"`
	Accelerator       string         `json:"accelerator"`
	Nodes             int            `json:"nodes"`
	GPUsPerNode       int            `json:"gpusPerNode"`
	Storage           map[string]int `json:"storage"`
	MaxHourlyPrice    *string        `json:"maxHourlyPrice"`
	Location          string         `json:"location"`
	OfferID           string         `json:"offerId"`
	Provider          string         `json:"provider"`
	MachineKind       string         `json:"machineKind"`
	Interconnect      string         `json:"interconnect"`
	IncludeCommunity  bool           `json:"include_community"`
	USDPerHour        string         `json:"usdPerHour"`
	USDPerMachineHour string         `json:"usdPerMachineHour"`
	LineItems         []apiLineItem  `json:"lineItems"`
	Availability      string         `json:"availability"`
	ExpiresAt         time.Time      `json:"expiresAt"`
}

type apiNode struct {
	Name       string `json:"name"`
	Rank       int    `json:"rank"`
	Status     string `json:"status"`
	Step       string `json:"step"`
	Address    string `json:"address"`
	PublicHost string `json:"publicHost"`
}

type apiEvent struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"`
	Node    string    `json:"node"`
	Step    string    `json:"step"`
	Message string    `json:"message"`
}

type apiCluster struct {
	ID                   string      `json:"id"`
	Name                 string      `json:"name"`
	Status               string      `json:"status"`
	Accelerator          string      `json:"accelerator"`
	NodeCount            int         `json:"nodeCount"`
	GPUsPerNode          int         `json:"gpusPerNode"`
	Location             string      `json:"location"`
	Provider             string      `json:"provider"`
	OfferID              string      `json:"offerId"`
	QuoteID              string      `json:"quoteId"`
	MachineKind          string      `json:"machineKind"`
	Interconnect         string      `json:"interconnect"`
	Software             string      `json:"software"`
	USDPerHour           string      `json:"usdPerHour"`
	USDPerMachineHour    string      `json:"usdPerMachineHour"`
	ReadyAt              *time.Time  `json:"readyAt"`
	LastError            *string     `json:"lastError"`
	CreatedAt            time.Time   `json:"createdAt"`
	TerminateRequestedAt *time.Time  `json:"terminateRequestedAt"`
	EndedAt              *time.Time  `json:"endedAt"`
	Nodes                []apiNode   `json:"nodes"`
	Recovery             apiRecovery `json:"recovery"`
	Events               []apiEvent  `json:"events"`
}

func (cl apiCluster) lastError() string {
	if cl.LastError == nil {
		return ""
	}
	return *cl.LastError
}

type apiCommand struct {
	Name    string `json:"name"`
	RunOn   string `json:"runOn"`
	Command string `json:"command"`
	Note    string `json:"note"`
}

type apiConnNode struct {
	Name       string `json:"name"`
	Rank       int    `json:"rank"`
	Address    string `json:"address"`
	PublicHost string `json:"publicHost"`
	SSH        string `json:"ssh"`
}

type apiConnections struct {
	Cluster         string            `json:"cluster"`
	Status          string            `json:"status"`
	Gateway         *string           `json:"gateway"`
	Env             map[string]string `json:"env"`
	EnvBlock        string            `json:"envBlock"`
	EnvNote         string            `json:"envNote"`
	MallocHint      string            `json:"mallocHint"`
	Readiness       string            `json:"readiness"`
	ReadinessScript string            `json:"readinessScript"`
	Hostfile        string            `json:"hostfile"`
	HostfilePath    string            `json:"hostfilePath"`
	Primary         *apiConnNode      `json:"primary"`
	Nodes           []apiConnNode     `json:"nodes"`
	Commands        []apiCommand      `json:"commands"`
}

type apiLogLine struct {
	ID   int64     `json:"id"`
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// ---- gpu offers ----

func (c *gpuCLI) offers(args []string) error {
	fs := c.flagSet("offers", "offers --accelerator H100_80GB --nodes 4 [--include-community] [flags]")
	accel := fs.String("accelerator", "", "accelerator, e.g. H200_141GB, H100_80GB, A100_80GB, L40S, RTX_4090 (all when empty)")
	nodes := fs.Int("nodes", 2, "machines in the cluster, 2–64 (prices are for the whole cluster)")
	community := fs.Bool("include-community", false, "include community hosts (keep secrets off them)")
	interconnect := fs.String("interconnect", "", "ethernet, infiniband or roce")
	kind := fs.String("machine-kind", "", "vm, bare_metal or container")
	gpus := fs.Int("gpus-per-node", 0, "GPUs per machine: 1, 2, 4 or 8")
	maxPrice := fs.String("max-price", "", "a ceiling in dollars per hour for the whole cluster")
	if err := noArgs(fs, args, "use --accelerator and --nodes"); err != nil {
		return err
	}
	q := url.Values{"nodes": {strconv.Itoa(*nodes)}}
	for k, v := range map[string]string{"accelerator": *accel, "interconnect": *interconnect, "machine_kind": *kind, "max_price": *maxPrice} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *gpus != 0 {
		q.Set("gpus_per_node", strconv.Itoa(*gpus))
	}
	if *community {
		q.Set("include_community", "true")
	}
	var out apiOffers
	raw, err := c.getJSON("/v1/gpu/offers", q, &out)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printOffers(c.stdout, out)
	return nil
}

// ---- gpu clusters quote ----

// shapeFlags are the priced fields (Q1), shared by quote and launch.
type shapeFlags struct {
	accelerator, maxHourlyPrice, location, offerID string
	nodes, gpusPerNode, persistentGB               int
	community                                      bool
}

func (s *shapeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.accelerator, "accelerator", "", "accelerator, e.g. H200_141GB, H100_80GB")
	fs.IntVar(&s.nodes, "nodes", 0, "machines, 2–64")
	fs.IntVar(&s.gpusPerNode, "gpus-per-node", 0, "GPUs per machine, 1–8")
	fs.IntVar(&s.persistentGB, "persistent-gb", 0, "a persistent volume shared by every node, in GB")
	fs.StringVar(&s.maxHourlyPrice, "max-hourly-price", "", "a ceiling for the whole cluster in dollars per hour, e.g. 100")
	fs.StringVar(&s.location, "location", "", "a location id (else the cheapest that fits)")
	fs.StringVar(&s.offerID, "offer-id", "", "an offer id from \"clusterdeck gpu offers\"")
	fs.BoolVar(&s.community, "include-community", false, "allow community hosts (keep secrets off them)")
}

// quoteFields is the quote body's priced fields; a nil field is not sent.
type quoteFields struct {
	Accelerator      *string       `json:"accelerator,omitempty"`
	Nodes            *int          `json:"nodes,omitempty"`
	GPUsPerNode      *int          `json:"gpusPerNode,omitempty"`
	Storage          *storageField `json:"storage,omitempty"`
	MaxHourlyPrice   *string       `json:"maxHourlyPrice,omitempty"`
	Location         *string       `json:"location,omitempty"`
	OfferID          *string       `json:"offerId,omitempty"`
	IncludeCommunity *bool         `json:"include_community,omitempty"`
}

type storageField struct {
	PersistentGB int `json:"persistentGb"`
}

// fields returns the priced fields the command line set.
func (s *shapeFlags) fields(set map[string]bool) quoteFields {
	var f quoteFields
	if set["accelerator"] {
		f.Accelerator = &s.accelerator
	}
	if set["nodes"] {
		f.Nodes = &s.nodes
	}
	if set["gpus-per-node"] {
		f.GPUsPerNode = &s.gpusPerNode
	}
	if set["persistent-gb"] {
		f.Storage = &storageField{PersistentGB: s.persistentGB}
	}
	if set["max-hourly-price"] {
		p := strings.TrimPrefix(strings.TrimSpace(s.maxHourlyPrice), "$")
		f.MaxHourlyPrice = &p
	}
	if set["location"] {
		f.Location = &s.location
	}
	if set["offer-id"] {
		f.OfferID = &s.offerID
	}
	if set["include-community"] {
		f.IncludeCommunity = &s.community
	}
	return f
}

func (c *gpuCLI) quote(args []string) error {
	fs := c.flagSet("quote", "clusters quote --accelerator A --nodes N --gpus-per-node G [flags]")
	var shape shapeFlags
	shape.register(fs)
	if err := noArgs(fs, args, "use --accelerator, --nodes and --gpus-per-node"); err != nil {
		return err
	}
	set := setFlags(fs)
	var missing []string
	for _, f := range []string{"accelerator", "nodes", "gpus-per-node"} {
		if !set[f] {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 {
		return usageError("quote needs " + strings.Join(missing, ", "))
	}
	if err := c.needKey(); err != nil {
		return err
	}
	_, raw, err := c.call(http.MethodPost, "/v1/gpu/clusters/quote", nil, shape.fields(set), nil)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	var q apiQuote
	if err := decodeInto(raw, &q); err != nil {
		return err
	}
	printQuote(c.stdout, q, time.Now())
	fmt.Fprintf(c.stdout, "\nLaunch it:  clusterdeck gpu clusters launch --quote-id %s --wait\n", q.ID)
	return nil
}

// ---- gpu clusters launch ----

type launchRequest struct {
	QuoteID string `json:"quoteId,omitempty"`
	quoteFields
	Name         string            `json:"name,omitempty"`
	Software     string            `json:"software,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Ports        []int             `json:"ports,omitempty"`
	SSHKeyIDs    []string          `json:"sshKeyIds,omitempty"`
	Image        string            `json:"image,omitempty"`
	StartCommand string            `json:"startCommand,omitempty"`
}

// waitFlags are --wait, --timeout and --poll-interval.
type waitFlags struct {
	wait          bool
	timeout, poll time.Duration
}

func (w *waitFlags) register(fs *flag.FlagSet, what string) {
	fs.BoolVar(&w.wait, "wait", false, "follow the cluster until it is "+what)
	fs.DurationVar(&w.timeout, "timeout", 30*time.Minute, "with --wait: give up following after this long (the cluster is left as it is)")
	fs.DurationVar(&w.poll, "poll-interval", 3*time.Second, "with --wait: how often to look at the cluster")
}

func (c *gpuCLI) launch(args []string) error {
	fs := c.flagSet("launch", "clusters launch (--quote-id ID | --offer-id ID --nodes N --gpus-per-node G) [flags]")
	var shape shapeFlags
	shape.register(fs)
	quoteID := fs.String("quote-id", "", "launch from this quote (qt_…); priced flags repeated with another value answer price_changed")
	name := fs.String("name", "", "the cluster's name (default: from the shape)")
	software := fs.String("software", "", "none (default), slurm, kubernetes or ray")
	var envs, ports, keys listFlag
	fs.Var(&envs, "env", "`KEY=VALUE` on every node (repeatable; wins over --env-file)")
	envFile := fs.String("env-file", "", "a `file` of KEY=VALUE lines (# comments, blank lines and \"export \" allowed)")
	fs.Var(&ports, "port", "a `port` to open (repeatable)")
	fs.Var(&keys, "ssh-key-id", "an SSH key `id` to install on every node (repeatable; see Settings → SSH keys)")
	image := fs.String("image", "", "the image every node runs")
	startCmd := fs.String("start-command", "", "the command every node starts")
	idem := fs.String("idempotency-key", "", "the launch's Idempotency-Key (default: a fresh one, printed so a retry can reuse it)")
	var w waitFlags
	w.register(fs, "ready (exit 0), or failed, degraded, stopped or terminated (exit 1)")
	if err := noArgs(fs, args, "use --quote-id or --offer-id"); err != nil {
		return err
	}
	set := setFlags(fs)
	body := launchRequest{QuoteID: strings.TrimSpace(*quoteID), quoteFields: shape.fields(set),
		Name: *name, Software: *software, Image: *image, StartCommand: *startCmd, SSHKeyIDs: keys}
	switch {
	case body.QuoteID == "" && shape.offerID == "":
		return usageError("launch needs --quote-id ID (from \"clusters quote\"), or --offer-id ID with --nodes N and --gpus-per-node G")
	case body.QuoteID == "" && !set["nodes"]:
		return usageError("launch --offer-id needs --nodes N (and --gpus-per-node G)")
	}
	if *software != "" && !slices.Contains([]string{"none", "slurm", "kubernetes", "ray"}, *software) {
		return usageError("--software is none, slurm, kubernetes or ray")
	}
	env := map[string]string{}
	if *envFile != "" {
		fileEnv, err := readEnvFile(*envFile)
		if err != nil {
			return err
		}
		env = fileEnv
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return usageError(fmt.Sprintf("--env %q: write KEY=VALUE", kv))
		}
		env[strings.TrimSpace(k)] = v
	}
	if len(env) > 0 {
		body.Env = env
	}
	for _, p := range ports {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return usageError(fmt.Sprintf("--port %q: a port number", p))
		}
		body.Ports = append(body.Ports, n)
	}
	if err := c.needKey(); err != nil {
		return err
	}
	if body.QuoteID == "" && (body.Accelerator == nil || body.GPUsPerNode == nil) {
		if err := c.completeFromOffer(&body.quoteFields, shape); err != nil {
			return err
		}
	}
	key := strings.TrimSpace(*idem)
	if key == "" {
		key = newIdempotencyKey()
		fmt.Fprintf(c.stderr, "Idempotency-Key: %s (to retry this launch safely, repeat it with --idempotency-key %s)\n", key, key)
	}
	status, raw, err := c.call(http.MethodPost, "/v1/gpu/clusters", nil, body, http.Header{"Idempotency-Key": {key}})
	if err != nil {
		return err
	}
	cl, err := decodeCluster(raw)
	if err != nil {
		return err
	}
	progress := c.stdout
	if c.json {
		progress = c.stderr
		if !w.wait {
			c.printRaw(raw)
			return nil
		}
	}
	if status == http.StatusCreated {
		fmt.Fprintf(progress, "Launched %s %q: %s, %s (%s).\n", cl.ID, cl.Name, clusterShape(cl), perHour(cl.USDPerHour), cl.Status)
	} else {
		fmt.Fprintf(progress, "Already launched as %s %q with this Idempotency-Key (%s); nothing new was started.\n", cl.ID, cl.Name, cl.Status)
	}
	if !w.wait {
		fmt.Fprintf(progress, "Follow it: clusterdeck gpu clusters get %s (or launch with --wait)\n", cl.ID)
		return nil
	}
	final, finalRaw, err := c.watch(cl, raw, w, progress, false, launchDone)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(finalRaw)
	}
	if isReady(final.Status) {
		fmt.Fprintf(progress, "Cluster %s is %s (billing since %s). Ready is infrastructure readiness only: run your own\n"+
			"application check before sending traffic (\"connections\" shows one).\n", final.ID, final.Status, fmtTimePtr(final.ReadyAt))
		fmt.Fprintf(progress, "Connect: clusterdeck gpu clusters connections %s\n", final.ID)
		return nil
	}
	msg := fmt.Sprintf("cluster %s is %s", final.ID, final.Status)
	if le := final.lastError(); le != "" {
		msg += ": " + le
	}
	switch final.Status {
	case "failed":
		msg += " (every machine was released; nothing was billed)"
	case "degraded":
		msg += " (machines stay up and billing runs: retry the install from the dashboard, or terminate)"
	}
	fmt.Fprintln(c.stderr, "clusterdeck:", msg)
	return cliExit(exitFailed)
}

// completeFromOffer fills the accelerator and GPUs per machine a launch
// straight from an offer needs, from the public catalog.
func (c *gpuCLI) completeFromOffer(f *quoteFields, shape shapeFlags) error {
	var out apiOffers
	q := url.Values{"nodes": {strconv.Itoa(shape.nodes)}, "include_community": {"true"}}
	if _, err := c.getJSON("/v1/gpu/offers", q, &out); err != nil {
		return err
	}
	for _, g := range out.Groups {
		for _, o := range g.Offers {
			if o.ID != shape.offerID {
				continue
			}
			if f.Accelerator == nil {
				f.Accelerator = &o.Accelerator
			}
			if f.GPUsPerNode == nil {
				f.GPUsPerNode = &o.GPUsPerNode
			}
			return nil
		}
	}
	return fmt.Errorf("offer %s is not in the catalog now (\"clusterdeck gpu offers\" lists what can start); or pass --accelerator and --gpus-per-node", shape.offerID)
}

func newIdempotencyKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "cli-" + hex.EncodeToString(b[:])
}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readEnvFile reads KEY=VALUE lines; blank lines and # comments are
// skipped, "export " is allowed, and one pair of surrounding quotes is
// taken off a value.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError("--env-file: " + err.Error())
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKeyRE.MatchString(k) {
			return nil, usageError(fmt.Sprintf("%s:%d: write KEY=VALUE (a name of letters, digits and _)", path, n))
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, usageError(fmt.Sprintf("--env-file %s: %v", path, err))
	}
	return env, nil
}

// ---- following a cluster (--wait) ----

func isReady(status string) bool { return status == "ready" || status == "running" }

// launchDone: a launch is over when the cluster is ready or can no longer become ready by itself.
func launchDone(cl apiCluster) bool {
	switch cl.Status {
	case "ready", "running", "failed", "degraded", "stopped", "terminated":
		return true
	}
	return false
}

// terminateDone: every machine is released.
func terminateDone(cl apiCluster) bool { return cl.Status == "terminated" || cl.Status == "failed" }

// watch polls the cluster until done, printing each new event and each
// node's step as it changes (events already in cl are skipped with
// onlyNew). It returns the last cluster and its raw JSON.
func (c *gpuCLI) watch(cl apiCluster, raw []byte, w waitFlags, out io.Writer, onlyNew bool, done func(apiCluster) bool) (apiCluster, []byte, error) {
	if w.poll <= 0 {
		w.poll = time.Millisecond
	}
	var deadline <-chan time.Time
	if w.timeout > 0 {
		t := time.NewTimer(w.timeout)
		defer t.Stop()
		deadline = t.C
	}
	seen := map[string]bool{}
	key := func(e apiEvent) string {
		return e.At.Format(time.RFC3339Nano) + "\x00" + e.Kind + "\x00" + e.Node + "\x00" + e.Step + "\x00" + e.Message
	}
	if onlyNew {
		for _, e := range cl.Events {
			seen[key(e)] = true
		}
	}
	nodeState := map[string]string{}
	status := ""
	show := func(cl apiCluster) {
		for _, e := range cl.Events {
			k := key(e)
			if !seen[k] {
				seen[k] = true
				fmt.Fprintln(out, eventLine(e))
			}
		}
		var changed []string
		for _, n := range cl.Nodes {
			st := n.Status + "/" + n.Step
			if nodeState[n.Name] != st {
				nodeState[n.Name] = st
				changed = append(changed, nodeProgress(n))
			}
		}
		if len(changed) > 0 {
			fmt.Fprintln(out, "  nodes: "+strings.Join(changed, ", "))
		}
		if cl.Status != status {
			status = cl.Status
			fmt.Fprintf(out, "  status: %s\n", statusText(cl))
		}
	}
	show(cl)
	var transient error
	for !done(cl) {
		select {
		case <-c.ctx.Done():
			fmt.Fprintf(c.stderr, "clusterdeck: stopped following %s (%s); the cluster is left as it is (\"clusterdeck gpu clusters get %s\")\n",
				cl.ID, cl.Status, cl.ID)
			return cl, raw, cliExit(exitInterrupted)
		case <-deadline:
			return cl, raw, fmt.Errorf("cluster %s is still %s after %s; it is left as it is (follow it with \"clusterdeck gpu clusters get %s\")",
				cl.ID, cl.Status, w.timeout, cl.ID)
		case <-time.After(w.poll):
		}
		var next apiCluster
		nextRaw, err := c.getJSON("/v1/gpu/clusters/"+url.PathEscape(cl.ID), nil, &next)
		var ae *apiError
		switch {
		case c.ctx.Err() != nil:
			continue // the select above says so
		case errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusTooManyRequests:
			return cl, raw, err
		case err != nil:
			if transient == nil {
				fmt.Fprintf(c.stderr, "clusterdeck: %v (still trying)\n", err)
			}
			transient = err
			continue
		}
		transient = nil
		cl, raw = next, nextRaw
		show(cl)
	}
	return cl, raw, nil
}

// ---- list, get, connections ----

func (c *gpuCLI) list(args []string) error {
	fs := c.flagSet("list", "clusters list")
	if err := noArgs(fs, args, ""); err != nil {
		return err
	}
	if err := c.needKey(); err != nil {
		return err
	}
	var out struct {
		Clusters []apiCluster `json:"clusters"`
	}
	raw, err := c.getJSON("/v1/gpu/clusters", nil, &out)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printClusterList(c.stdout, out.Clusters)
	return nil
}

func (c *gpuCLI) get(args []string) error {
	fs := c.flagSet("get", "clusters get ID")
	id, err := c.oneID(fs, args)
	if err != nil {
		return err
	}
	if err := c.needKey(); err != nil {
		return err
	}
	var cl apiCluster
	raw, err := c.getJSON("/v1/gpu/clusters/"+url.PathEscape(id), nil, &cl)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printCluster(c.stdout, cl)
	return nil
}

func (c *gpuCLI) connections(args []string) error {
	fs := c.flagSet("connections", "clusters connections ID")
	id, err := c.oneID(fs, args)
	if err != nil {
		return err
	}
	if err := c.needKey(); err != nil {
		return err
	}
	var conn apiConnections
	raw, err := c.getJSON("/v1/gpu/clusters/"+url.PathEscape(id)+"/connections", nil, &conn)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printConnections(c.stdout, conn)
	return nil
}

// ---- logs ----

func (c *gpuCLI) logs(args []string) error {
	fs := c.flagSet("logs", "clusters logs ID [--node N] [--follow=false]")
	node := fs.Int("node", 0, "the node's rank (0 is the primary)")
	follow := fs.Bool("follow", true, "follow new lines until the cluster ends or Ctrl-C; --follow=false prints the stored lines")
	stamps := fs.Bool("timestamps", false, "prefix each line with its time")
	id, err := c.oneID(fs, args)
	if err != nil {
		return err
	}
	if *node < 0 {
		return usageError("--node is a rank: 0, 1, …")
	}
	if err := c.needKey(); err != nil {
		return err
	}
	path := "/v1/gpu/clusters/" + url.PathEscape(id) + "/logs"
	q := url.Values{"node": {strconv.Itoa(*node)}}
	if !*follow {
		q.Set("follow", "false")
		var out struct {
			Lines []apiLogLine `json:"lines"`
		}
		raw, err := c.getJSON(path, q, &out)
		if err != nil {
			return err
		}
		if c.json {
			c.printRaw(raw)
			return nil
		}
		for _, l := range out.Lines {
			c.printLogLine(l, *stamps)
		}
		return nil
	}
	return c.streamLogs(path, q, *stamps)
}

func (c *gpuCLI) printLogLine(l apiLogLine, stamps bool) {
	if stamps {
		fmt.Fprintf(c.stdout, "%s %s\n", l.At.Local().Format("2006-01-02 15:04:05"), l.Text)
		return
	}
	fmt.Fprintln(c.stdout, l.Text)
}

// streamLogs follows the server-sent events: "line" events carry a JSON
// line, "end" says the cluster ended. A dropped connection is opened again
// (lines already printed are skipped by id); Ctrl-C ends it quietly.
func (c *gpuCLI) streamLogs(path string, q url.Values, stamps bool) error {
	var last int64
	failures := 0
	for {
		ended, progressed, err := c.streamOnce(path, q, stamps, &last)
		switch {
		case c.ctx.Err() != nil:
			return nil
		case ended:
			return nil
		}
		var ae *apiError
		if errors.As(err, &ae) || errors.As(err, new(usageError)) {
			return err
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > 5 {
			if err == nil {
				err = errors.New("the log stream keeps closing")
			}
			return err
		}
		reason := "the stream closed"
		if err != nil {
			reason = err.Error()
		}
		fmt.Fprintf(c.stderr, "clusterdeck: %s; reconnecting\n", reason)
		select {
		case <-c.ctx.Done():
			return nil
		case <-time.After(time.Duration(failures) * time.Second):
		}
	}
}

func (c *gpuCLI) streamOnce(path string, q url.Values, stamps bool, last *int64) (ended, progressed bool, err error) {
	req, err := c.newRequest(c.ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return false, false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		return false, false, c.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, false, decodeAPIError(resp, raw, req.URL.String())
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, false, fmt.Errorf("%s did not answer with an event stream (%s); is --api Clusterdeck's URL?", req.URL.Redacted(), contentType(resp))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var event string
	var data []string
	dispatch := func() bool {
		defer func() { event, data = "", nil }()
		payload := strings.Join(data, "\n")
		switch event {
		case "end":
			return true
		case "line", "":
			if len(data) == 0 {
				return false
			}
			var l apiLogLine
			if json.Unmarshal([]byte(payload), &l) != nil {
				fmt.Fprintln(c.stdout, payload) // not the JSON we know: show it as it came
				progressed = true
				return false
			}
			if l.ID != 0 && l.ID <= *last {
				return false // already printed before a reconnect
			}
			if l.ID != 0 {
				*last = l.ID
			}
			progressed = true
			if c.json {
				fmt.Fprintln(c.stdout, payload)
			} else {
				c.printLogLine(l, stamps)
			}
		}
		return false
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			if dispatch() {
				return true, progressed, nil
			}
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			}
		}
	}
	if len(data) > 0 && dispatch() {
		return true, progressed, nil
	}
	return false, progressed, sc.Err()
}

// ---- terminate ----

func (c *gpuCLI) terminate(args []string) error {
	fs := c.flagSet("terminate", "clusters terminate ID [--wait]")
	var w waitFlags
	w.register(fs, "terminated (every machine released)")
	id, err := c.oneID(fs, args)
	if err != nil {
		return err
	}
	if err := c.needKey(); err != nil {
		return err
	}
	_, raw, err := c.call(http.MethodPost, "/v1/gpu/clusters/"+url.PathEscape(id)+"/terminate", nil, nil, nil)
	if err != nil {
		return err
	}
	cl, err := decodeCluster(raw)
	if err != nil {
		return err
	}
	progress := c.stdout
	if c.json {
		progress = c.stderr
		if !w.wait {
			c.printRaw(raw)
			return nil
		}
	}
	switch cl.Status {
	case "terminated":
		fmt.Fprintf(progress, "%s %q is already terminated.\n", cl.ID, cl.Name)
	case "failed":
		fmt.Fprintf(progress, "%s %q had failed: every machine was already released and nothing was billed.\n", cl.ID, cl.Name)
	default:
		fmt.Fprintf(progress, "Terminate accepted for %s %q: every machine is released together and billing ends.\n", cl.ID, cl.Name)
	}
	if !w.wait {
		return nil
	}
	final, finalRaw, err := c.watch(cl, raw, w, progress, true, terminateDone)
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(finalRaw)
	}
	fmt.Fprintf(progress, "Cluster %s is %s.\n", final.ID, final.Status)
	return nil
}
