package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/client"
	"github.com/clusterdeck/clusterdeck/internal/mcpserver"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/gorm"
)

// testCloud is one location with an H100 VM offer (boot 4 m), 40 machines counted
// (launches hold them until they are released).
const testCloud = `{
  "locations": [{
    "id": "test-1", "name": "Testville",
    "offers": [
      {"id": "h100.8x.vm", "accelerator": "H100_80GB", "machine_kind": "vm", "interconnect": "infiniband", "nics": 8, "nic_gbps": 400,
       "gpus_per_node": 8, "vcpus": 96, "memory_gb": 1000, "per_gpu_hour_usd": 2490000,
       "root_disk_gb": 500, "disk_gb_hour_usd": 100, "nodes_available": 40, "boot_time": "4m"}
    ]}]}`

// deck is a whole Clusterdeck at test scale on one fake clock: the real
// router (httptest), a migrated database, the simulated cloud whose
// machines run the real agent against the server, and the catalog and
// provision jobs. The organisation has a balance and an API key.
type deck struct {
	t     *testing.T
	store *models.Store
	clock *models.FakeClock
	srv   *httptest.Server
	cloud *sim.Cloud
	cat   *jobs.Catalog
	job   *jobs.Provision
	term  *jobs.Terminate
	join  *jobs.Join
	// verify hands clusters over verified (X13), as every launch asks.
	verify *jobs.Verify
	// health and recovery are run by healthPass only (R1–R5).
	health   *jobs.Health
	recovery *jobs.Recovery
	acct
	clientOpts *mcp.ClientOptions // the agent's client's (nil: the defaults)
}

// acct is an organisation, its default environment, its owner and an API key.
type acct struct {
	org   models.Org
	env   models.Environment
	user  models.User
	key   string // the token, cdk_…
	keyID string
}

// deckSettings are the store's settings, as main builds them, with set
// applied (nil: none).
func deckSettings(set func(*models.Settings)) models.Settings {
	s := models.Settings{
		MachineKeySecret:   []byte(strings.Repeat("s", 32)), // seals webhook secrets, as main sets it
		WebhookClusterView: web.WebhookClusterView,
	}
	if set != nil {
		set(&s)
	}
	return s
}

func newDeck(t *testing.T, db *gorm.DB) *deck { return newDeckSet(t, db, nil) }

// newDeckSet is newDeck with set applied to the store's settings.
func newDeckSet(t *testing.T, db *gorm.DB, set func(*models.Settings)) *deck {
	t.Helper()
	clock := models.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	store := models.NewStoreWith(db, clock, deckSettings(set))
	// The event feed looks for new rows every 5 ms, not every second: a
	// wait_for_cluster call sees each event as the test writes it.
	srv := httptest.NewServer(web.New(web.Deps{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: static.FS,
		LogPoll: 5 * time.Millisecond,
		Config:  web.Config{BaseURL: "http://127.0.0.1", SessionAuthKey: make([]byte, 64), SessionEncKey: make([]byte, 32)}}))
	t.Cleanup(srv.Close)
	cfg, err := sim.ParseConfig([]byte(testCloud), "json")
	if err != nil {
		t.Fatal(err)
	}
	cloud := sim.New(cfg, sim.WithClock(clock.Now), sim.WithAgents(func(m sim.Machine) sim.MachineAgent {
		return agent.New(agent.Config{Server: m.ServerURL, Token: m.Token, MachineID: m.NodeID, Exec: m.Exec, HTTP: srv.Client(),
			Hostname: m.Name, PrivateIP: m.PrivateIP, Now: clock.Now})
	}))
	reg := providers.Registry{"sim": cloud}
	d := &deck{t: t, store: store, clock: clock, srv: srv, cloud: cloud,
		cat: &jobs.Catalog{Store: store, Providers: reg}, job: &jobs.Provision{Store: store, Providers: reg, ServerURL: srv.URL}, term: &jobs.Terminate{Store: store, Providers: reg},
		join: &jobs.Join{Store: store, Providers: reg, ServerURL: srv.URL}, verify: &jobs.Verify{Store: store},
		health: &jobs.Health{Store: store, Providers: reg}, recovery: &jobs.Recovery{Store: store, Providers: reg}}
	if err := d.cat.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.acct = d.signup("agent@example.com", "Agents Inc", 500)
	return d
}

// eachDeck runs fn on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
func eachDeck(t *testing.T, fn func(t *testing.T, d *deck)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newDeck(t, db)) })
}

// eachDeckSet is eachDeck with set applied to the store's settings.
func eachDeckSet(t *testing.T, set func(*models.Settings), fn func(t *testing.T, d *deck)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newDeckSet(t, db, set)) })
}

// signup makes an organisation with dollars of balance and an API key.
func (d *deck) signup(email, org string, dollars int) acct {
	d.t.Helper()
	ctx := context.Background()
	u, o, err := d.store.Signup(ctx, models.SignupInput{Email: email, Name: "Agent Owner", Password: "correct horse battery", OrgName: org}, "192.0.2.1")
	if err != nil {
		d.t.Fatal(err)
	}
	env, err := d.store.DefaultEnvironment(ctx, o.ID)
	if err != nil {
		d.t.Fatal(err)
	}
	k, key, err := d.store.CreateAPIKey(ctx, o.ID, env.ID, u.ID, "agent")
	if err != nil {
		d.t.Fatal(err)
	}
	if dollars > 0 {
		if _, err := d.store.Deposit(ctx, o.ID, models.Money(dollars)*models.Micro, "deposit:"+o.ID, "test"); err != nil {
			d.t.Fatal(err)
		}
	}
	return acct{org: o, env: env, user: u, key: key, keyID: k.ID}
}

// tick is a minute of the world: the provision job, every running
// machine's agent one step over HTTP, the catalog, the provision job again.
func (d *deck) tick() {
	d.t.Helper()
	ctx := context.Background()
	d.clock.Advance(time.Minute)
	if err := d.job.Run(ctx); err != nil {
		d.t.Fatalf("provision: %v", err)
	}
	if err := d.term.Run(ctx); err != nil {
		d.t.Fatalf("terminate: %v", err)
	}
	if err := d.cloud.StepAgents(ctx); err != nil && !errors.Is(err, agent.ErrRevoked) {
		d.t.Logf("agents: %v", err)
	}
	if err := d.cat.Run(ctx); err != nil {
		d.t.Fatalf("catalog: %v", err)
	}
	if err := d.job.Run(ctx); err != nil {
		d.t.Fatalf("provision: %v", err)
	}
	if err := d.join.Run(ctx); err != nil {
		d.t.Fatalf("join: %v", err)
	}
	if err := d.verify.Run(ctx); err != nil {
		d.t.Fatalf("verify: %v", err)
	}
}

// healthPass is a tick, then a recovery pass and a health pass (recovery
// first: it acts on the previous pass's verdict), as the jobs run them.
func (d *deck) healthPass() {
	d.t.Helper()
	d.tick()
	ctx := context.Background()
	if err := d.recovery.Run(ctx); err != nil {
		d.t.Fatalf("recovery: %v", err)
	}
	if err := d.health.Run(ctx); err != nil {
		d.t.Fatalf("health: %v", err)
	}
}

// readyCluster quotes and launches a 2-machine cluster through the tools
// and ticks until it is ready; its id.
func (d *deck) readyCluster(cs *mcp.ClientSession, name string) string {
	d.t.Helper()
	qid := str(ok(d.t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
	id := str(ok(d.t, cs, "launch_cluster", map[string]any{"quote_id": qid, "name": name}).data["id"])
	for range 15 {
		d.tick()
		if cl, err := d.store.ClusterForOrg(context.Background(), d.org.ID, id); err == nil && cl.Status == models.StatusReady {
			return id
		}
	}
	d.t.Fatalf("cluster %s never became ready", id)
	return ""
}

// A way in: the SDK's own client connected to the tools acting with key.
type way struct {
	name    string
	connect func(t *testing.T, d *deck, key string) (*mcp.ClientSession, error)
}

var ways = []way{
	{"in-memory", connectInMemory},
	{"http", connectHTTP},
	{"stdio", connectStdio},
}

func newClient(d *deck) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, d.clientOpts)
}

// connectInMemory serves the tools (over the REST API at the deck's URL)
// on the SDK's in-memory transport, as `clusterdeck mcp` does on stdio.
func connectInMemory(t *testing.T, d *deck, key string) (*mcp.ClientSession, error) {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(client.New(d.srv.URL, key)).Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := newClient(d).Connect(ctx, ct, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// connectStdio runs `clusterdeck mcp` (Command) with CLUSTERDECK_API and
// CLUSTERDECK_API_KEY, its stdin and stdout piped to the SDK's client.
func connectStdio(t *testing.T, d *deck, key string) (*mcp.ClientSession, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env := map[string]string{"CLUSTERDECK_API": d.srv.URL, "CLUSTERDECK_API_KEY": key}
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Command(context.Background(), nil, func(k string) string { return env[k] }, inR, outW, io.Discard)
		outW.Close()
	}()
	cs, err := newClient(d).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		return nil, err
	}
	t.Cleanup(func() {
		cs.Close() // closes the command's stdin: it ends
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("clusterdeck mcp did not end when its stdin closed")
		}
	})
	return cs, nil
}

// connectHTTP is the SDK's Streamable HTTP client against the real router's /mcp.
func connectHTTP(t *testing.T, d *deck, key string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: d.srv.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{key}}}
	cs, err := newClient(d).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// bearer sends an API key with every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func mustConnect(t *testing.T, w way, d *deck, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := w.connect(t, d, key)
	if err != nil {
		t.Fatalf("connect (%s): %v", w.name, err)
	}
	return cs
}

// result is a tool call's answer as an agent reads it.
type result struct {
	isError bool
	text    string         // every text content, joined
	data    map[string]any // the structured content
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var r result
	r.isError = res.IsError
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	r.text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(raw, &r.data)
	}
	return r
}

// ok calls a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	r := callTool(t, cs, name, args)
	if r.isError {
		t.Fatalf("%s(%v) failed:\n%s", name, args, r.text)
	}
	return r
}

// refused calls a tool that must fail with the API's code.
func refused(t *testing.T, cs *mcp.ClientSession, name string, args any, code string, wants ...string) result {
	t.Helper()
	r := callTool(t, cs, name, args)
	if !r.isError {
		t.Fatalf("%s(%v) succeeded, want %s:\n%s", name, args, code, r.text)
	}
	if e, _ := r.data["error"].(map[string]any); code != "" && (e == nil || e["code"] != code) {
		t.Errorf("%s(%v): structured error %v, want code %s", name, args, r.data, code)
	}
	for _, w := range append([]string{code}, wants...) {
		if !strings.Contains(r.text, w) {
			t.Errorf("%s(%v) error lacks %q:\n%s", name, args, w, r.text)
		}
	}
	return r
}

func (d *deck) clusterCount(orgID string) int {
	d.t.Helper()
	list, err := d.store.ClustersForOrg(context.Background(), orgID)
	if err != nil {
		d.t.Fatal(err)
	}
	return len(list)
}

func str(v any) string { return fmt.Sprint(v) }

// privateOffer is X9 as the operator does it: a quote request of a's
// organisation, marked quoted, turned into a private offer of the test
// cloud's H100 offer for nodes machines at price dollars per machine-hour
// until the end of 2026-12-05.
func (d *deck) privateOffer(a acct, nodes int, price string) models.PrivateOffer {
	d.t.Helper()
	ctx := context.Background()
	n := models.CapacityNotify{BaseURL: "http://127.0.0.1"}
	customer := d.store.As(models.Actor{OrgID: a.org.ID, EnvID: a.env.ID, UserID: a.user.ID, Role: models.RoleOwner, Name: a.user.Email})
	req, err := customer.RequestCapacity(ctx, models.QuoteRequestInput{Accelerator: "H100_80GB", Nodes: nodes, GPUsPerNode: 8,
		Fabric: "infiniband", StartDate: "2026-12-02", Duration: 2, DurationUnit: "weeks", Budget: "900",
		ContactName: "Agent Owner", ContactEmail: a.user.Email}, n)
	if err != nil {
		d.t.Fatal(err)
	}
	op := d.store.As(models.Actor{UserID: "usr_operator", Name: "ops@clusterdeck.test", IP: "192.0.2.9"})
	if _, _, err := op.SetQuoteRequestStatus(ctx, req.ID, "quoted", "", n); err != nil {
		d.t.Fatal(err)
	}
	po, err := op.CreatePrivateOffer(ctx, models.PrivateOfferInput{RequestID: req.ID, OfferID: "sim:h100.8x.vm", Nodes: nodes,
		Price: price, ValidUntil: "2026-12-05"}, n)
	if err != nil {
		d.t.Fatal(err)
	}
	return po
}
