package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
	"gorm.io/gorm"
)

// deck is a real Clusterdeck (web.New over a migrated database) served by
// httptest, with a catalog, an organisation with a balance and an API key.
type deck struct {
	url   string
	store *models.Store
	clock *models.FakeClock
	org   models.Org
	env   models.Environment
	user  models.User
	key   string
}

func ip(n int) *int { return &n }

func cliOffer(id, loc string, gpus int, perGPU models.Money, avail *int) models.Offer {
	return models.Offer{
		ProviderOffer: id, Location: loc, LocationName: "Loc " + loc, Interconnect: "infiniband",
		MachineKind: "vm", Accelerator: "H100_80GB", GPUsPerNode: gpus, PerGPUHour: perGPU,
		RootDiskGB: 500, DiskGBHour: 100, NodesAvailable: avail, Available: avail == nil || *avail > 0,
		BootSeconds: 240, PublicIPs: true, VCPUs: 96, MemoryGB: 1024,
	}
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
	ctx := context.Background()
	clock := models.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	store := models.NewStoreWith(db, clock, deckSettings(set))
	e := web.New(web.Deps{
		Config: web.Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: static.FS, FakeClock: clock,
		LogPoll: 5 * time.Millisecond,
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	community := cliOffer("c4090", "home-lab", 8, 400_000, ip(6))
	community.Accelerator, community.Community = "H100_80GB", true
	if err := store.ReplaceOffers(ctx, "sim", []models.Offer{
		cliOffer("h100x8", "us-east", 8, 2_490_000, ip(20)),
		cliOffer("h100x8eu", "eu-west", 8, 2_990_000, nil),
		community,
	}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	u, org, err := store.Signup(ctx, models.SignupInput{Email: "cli@example.com", Name: "CLI User",
		Password: "correct horse battery", OrgName: "CLI Org"}, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.DefaultEnvironment(ctx, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := store.CreateAPIKey(ctx, org.ID, env.ID, u.ID, "cli")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deposit(ctx, org.ID, 500*models.Micro, "cli-test-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	return &deck{url: srv.URL, store: store, clock: clock, org: org, env: env, user: u, key: tok}
}

// eachDeck runs fn on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
func eachDeck(t *testing.T, fn func(t *testing.T, d *deck)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newDeck(t, db)) })
}

// eachDeckSet is eachDeck with set applied to the store's settings.
func eachDeckSet(t *testing.T, set func(*models.Settings), fn func(t *testing.T, d *deck)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newDeckSet(t, db, set)) })
}

// eachDeckInTurn is eachDeck with the two runs one after the other, for a
// test that changes what the whole process shares (t.Chdir).
func eachDeckInTurn(t *testing.T, fn func(t *testing.T, d *deck)) {
	modelstest.EachInTurn(t, func(t *testing.T, db *gorm.DB) { fn(t, newDeck(t, db)) })
}

func (d *deck) getenv(k string) string {
	switch k {
	case "CLUSTERDECK_API":
		return d.url
	case "CLUSTERDECK_API_KEY":
		return d.key
	}
	return ""
}

func exitCode(err error) int {
	var code Exit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	return 1
}

// gpu runs `clusterdeck gpu args…` against the deck.
func (d *deck) gpu(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), args, d.getenv, &out, &errOut)
	return out.String(), errOut.String(), exitCode(err)
}

// watchBuffer is an output the test can wait on while the CLI runs.
type watchBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newWatchBuffer() *watchBuffer { return &watchBuffer{changed: make(chan struct{}, 1)} }

func (b *watchBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (b *watchBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor blocks until the output matches re (or the CLI ended, or 30 s).
func (b *watchBuffer) waitFor(t *testing.T, re *regexp.Regexp, done <-chan int) []string {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m
		}
		select {
		case <-b.changed:
		case code := <-done:
			t.Fatalf("the CLI ended (exit %d) before printing %v:\n%s", code, re, b.String())
		case <-limit:
			t.Fatalf("no %v in:\n%s", re, b.String())
		}
	}
}

// background runs the CLI in a goroutine; its exit code arrives on done.
func (d *deck) background(ctx context.Context, args ...string) (out, errOut *watchBuffer, done chan int) {
	out, errOut, done = newWatchBuffer(), newWatchBuffer(), make(chan int, 1)
	go func() {
		done <- exitCode(Run(ctx, args, d.getenv, out, errOut))
	}()
	return out, errOut, done
}

func waitExit(t *testing.T, done <-chan int, out, errOut *watchBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("the CLI did not end:\n%s\n%s", out, errOut)
	}
	return -1
}

// launch creates a provisioning cluster through the models (2 × 8 H100).
func (d *deck) launch(t *testing.T, name string) models.Cluster {
	t.Helper()
	ctx := context.Background()
	q, err := d.store.CreateQuote(ctx, d.org.ID, d.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, Location: "us-east"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := d.store.LaunchCluster(ctx, models.LaunchParams{OrgID: d.org.ID, EnvID: d.env.ID, QuoteID: q.ID, Actor: "test", Workload: models.Workload{Name: name, Software: "none", Env: map[string]string{"HF_TOKEN": "x y"}}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// join walks a launched cluster through placement and every node step (L4, L5).
func (d *deck) join(t *testing.T, id string, nodes int) {
	t.Helper()
	ctx := context.Background()
	var placed []models.PlacedNode
	for i := 0; i < nodes; i++ {
		placed = append(placed, models.PlacedNode{Rank: i, ProviderNodeID: fmt.Sprintf("m%d", i),
			PrivateIP: fmt.Sprintf("10.77.0.%d", i+1), PublicHost: fmt.Sprintf("n%d.example.net", i), User: "ubuntu", SSHPort: 22})
	}
	if err := d.store.MarkPlaced(ctx, id, placed); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		for _, step := range models.ProvisionSteps {
			if _, err := d.store.MarkNodeStep(ctx, id, i, step, fmt.Sprintf("node-%d passed %s", i, step)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := d.store.MarkJoined(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status == models.StatusVerifying { // X13: handed over verified, as the verify job would
		run, err := d.store.VerifyRunFor(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		rep := run.ReportOf()
		rep.Summary = "Every machine passed its GPU, error and stress check."
		if _, err := d.store.FinishVerification(ctx, c, run, rep, "", "", rep.Summary, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func mustJSON(t *testing.T, what, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: --json did not print JSON (%v):\n%s", what, err, s)
	}
	return m
}

// O3, O5 from the command line: the picker's table, community hosts only when asked.
func TestGPUOffers(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "offers", "--accelerator", "H100_80GB", "--nodes", "4")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// 4 machines × (8 × $2.49 + 500 GB × $0.0001) = 4 × $19.97
		mustContain(t, "offers", out, "OFFER", "LOCATION", "INTERCONNECT", "$/H CLUSTER", "$/H MACHINE", "$/GPU-H", "FREE", "AVAILABILITY",
			"sim:h100x8", "us-east", "infiniband", "8 × H100_80GB", "$79.88/h", "$19.97/h", "$2.49/h", "can start now", "not counted")
		if strings.Contains(out, "home-lab") {
			t.Errorf("community host shown without --include-community:\n%s", out)
		}
		if !regexp.MustCompile(`sim:h100x8 +us-east .* 20 +can start now`).MatchString(out) {
			t.Errorf("us-east row should say 20 free:\n%s", out)
		}
		out, _, _ = d.gpu(t, "offers", "--accelerator", "H100_80GB", "--nodes", "16", "--include-community")
		mustContain(t, "offers with community", out, "home-lab", "vm (community)", "keep secrets off them", "reserved ahead", "not in stock")

		// Public: no key needed. --json is the API's JSON.
		d.key = ""
		out, errOut, code = d.gpu(t, "offers", "--nodes", "2", "--json")
		if code != 0 {
			t.Fatalf("offers without a key: %d %s", code, errOut)
		}
		if m := mustJSON(t, "offers", out); m["count"].(float64) != 2 || m["groups"] == nil {
			t.Errorf("offers JSON: %v", m)
		}
		_, errOut, code = d.gpu(t, "offers", "--nodes", "1")
		if code != 1 || !strings.Contains(errOut, "nodes: A cluster has 2 to 64 machines.") {
			t.Errorf("bad nodes: %d %s", code, errOut)
		}
		// --sort reaches the API (O3): gpu_price lists (the community host's
		// $0.40/GPU-h first), an unknown sort is the API's field error.
		out, errOut, code = d.gpu(t, "offers", "--accelerator", "H100_80GB", "--nodes", "2", "--include-community", "--sort", "gpu_price")
		if code != 0 || !regexp.MustCompile(`(?s)sim:c4090 .*sim:h100x8 .*sim:h100x8eu `).MatchString(out) {
			t.Errorf("--sort gpu_price: %d %s\n%s", code, errOut, out)
		}
		_, errOut, code = d.gpu(t, "offers", "--nodes", "2", "--sort", "cheapest")
		if code != 1 || !strings.Contains(errOut, "sort: Sort by the cluster's price, the price per GPU-hour or the track record.") {
			t.Errorf("--sort cheapest: %d %s", code, errOut)
		}
	})
}

// Q1–Q4, X1: the locked price, its line items and expiry; no_capacity exits 3 with reason, shape and advice.
func TestGPUQuote(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8",
			"--persistent-gb", "1000", "--max-hourly-price", "100")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		mustContain(t, "quote", out, "Quote qt_", "2 × 8 GPUs H100_80GB at us-east", "$40.077/h for the whole cluster",
			"Locked until", "(in 15m)", "Availability", "high", "Ceiling", "$100.00/h", "Volume", "1000 GB",
			"gpus", "2 × 8 GPUs at $2.49/GPU-h", "$39.84", "root_disks", "volume", "total", "launch --quote-id qt_")

		_, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "30", "--gpus-per-node", "8")
		if code != 3 {
			t.Errorf("no_capacity: exit %d, want 3", code)
		}
		mustContain(t, "no_capacity", errOut, "No offer can start this shape now", "no_capacity, HTTP 409",
			"reason: no_location_with_n_nodes", "shape:  30 × 8 GPUs H100_80GB", "Try fewer machines.", "Try another location.")
		_, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--max-hourly-price", "5")
		if code != 3 || !strings.Contains(errOut, "above_max_hourly_price") || !strings.Contains(errOut, "ceiling $5.00/h") {
			t.Errorf("ceiling: %d %s", code, errOut)
		}

		// Field errors (A4) exit 1; a missing flag is a usage error (2).
		_, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "9")
		if code != 1 || !strings.Contains(errOut, "gpusPerNode: 1 to 8 GPUs per machine") {
			t.Errorf("field error: %d %s", code, errOut)
		}
		_, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB")
		if code != 2 || !strings.Contains(errOut, "--nodes, --gpus-per-node") {
			t.Errorf("missing flags: %d %s", code, errOut)
		}

		out, _, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--json")
		if m := mustJSON(t, "quote", out); code != 0 || !strings.HasPrefix(m["id"].(string), "qt_") || m["usdPerHour"] != "39.94" {
			t.Errorf("quote JSON: %d %v", code, m)
		}
		// --json on a refusal: the API's error body on stdout, the message on stderr.
		out, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "30", "--gpus-per-node", "8", "--json")
		if m := mustJSON(t, "no_capacity", out); code != 3 || m["error"].(map[string]any)["reason"] != "no_location_with_n_nodes" || errOut == "" {
			t.Errorf("no_capacity JSON: %d %v %s", code, m, errOut)
		}
	})
}

// L1, Q5, L2: launch with an env file and an Idempotency-Key (the same key
// gives the same cluster), price_changed and quota refusals exit 3.
func TestGPULaunch(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		envFile := filepath.Join(t.TempDir(), "train.env")
		os.WriteFile(envFile, []byte("# training settings\n\nexport HF_TOKEN=\"hf abc\"\nWANDB_MODE=offline\nEMPTY=\n"), 0o600)
		quote := func() string {
			out, errOut, code := d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--json")
			if code != 0 {
				t.Fatalf("quote: %d %s", code, errOut)
			}
			return mustJSON(t, "quote", out)["id"].(string)
		}
		qid := quote()
		args := []string{"clusters", "launch", "--quote-id", qid, "--env-file", envFile, "--env", "MALLOC_ARENA_MAX=1",
			"--name", "train", "--port", "8888", "--start-command", "python train.py", "--idempotency-key", "cli-test-1"}
		out, errOut, code := d.gpu(t, args...)
		if code != 0 {
			t.Fatalf("launch: %d %s", code, errOut)
		}
		m := regexp.MustCompile(`Launched (cl_\w+) "train": 2 × 8 GPUs H100_80GB at us-east, \$39\.94/h \(provisioning\)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("launch output:\n%s", out)
		}
		id := m[1]
		if strings.Contains(errOut, "Idempotency-Key:") {
			t.Errorf("a given key is not announced again: %s", errOut)
		}
		cl, err := d.store.ClusterForOrg(ctx, d.org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		env := cl.Env()
		if env["HF_TOKEN"] != "hf abc" || env["WANDB_MODE"] != "offline" || env["MALLOC_ARENA_MAX"] != "1" || len(env) != 4 ||
			cl.StartCommand != "python train.py" || len(cl.Ports()) != 1 {
			t.Errorf("workload not sent as given: env %v, start %q, ports %v", env, cl.StartCommand, cl.Ports())
		}
		out, _, code = d.gpu(t, args...)
		if code != 0 || !strings.Contains(out, "Already launched as "+id) {
			t.Errorf("the same key again: %d\n%s", code, out)
		}
		out, _, code = d.gpu(t, append(args, "--json")...)
		if m := mustJSON(t, "launch", out); code != 0 || m["id"] != id {
			t.Errorf("the same key with --json: %d %v", code, m)
		}
		var n int64
		d.store.DB().Model(&models.Cluster{}).Count(&n)
		if n != 1 {
			t.Errorf("%d clusters after three launches with one key", n)
		}

		// Without a key, a fresh one is made and printed so a retry can reuse it.
		_, errOut, code = d.gpu(t, "clusters", "launch", "--quote-id", quote(), "--name", "second")
		if code != 0 || !regexp.MustCompile(`Idempotency-Key: cli-[0-9a-f]{24} \(to retry this launch safely, repeat it with --idempotency-key cli-`).MatchString(errOut) {
			t.Errorf("fresh key: %d %s", code, errOut)
		}

		// Q5, X1: a priced field repeated with another value → price_changed, old and new, exit 3.
		_, errOut, code = d.gpu(t, "clusters", "launch", "--quote-id", quote(), "--nodes", "3")
		if code != 3 {
			t.Errorf("price_changed: exit %d", code)
		}
		mustContain(t, "price_changed", errOut, "price_changed, HTTP 409", "reason: field:nodes", "Quoted before", "$39.94/h",
			"The price now", "$59.91/h", "Launch at the new price with --quote-id qt_")

		// Straight from an offer: the accelerator and GPUs per machine come from the catalog.
		out, errOut, code = d.gpu(t, "clusters", "launch", "--offer-id", "sim:h100x8eu", "--nodes", "2", "--name", "from-offer", "--json")
		if m := mustJSON(t, "launch from offer", out); code != 0 || m["offerId"] != "sim:h100x8eu" || m["gpusPerNode"].(float64) != 8 {
			t.Errorf("launch from an offer: %d %v %s", code, m, errOut)
		}

		// L2: quotas count every machine → quota_exceeded, exit 3.
		d.store.SetOrgQuota(ctx, d.org.ID, 7, 512)
		_, errOut, code = d.gpu(t, "clusters", "launch", "--quote-id", quote())
		if code != 3 || !strings.Contains(errOut, "quota_exceeded, HTTP 403") {
			t.Errorf("quota: %d %s", code, errOut)
		}
		// Usage errors: exit 2, nothing sent.
		for _, bad := range [][]string{
			{"clusters", "launch"},
			{"clusters", "launch", "--offer-id", "sim:h100x8"},
			{"clusters", "launch", "--quote-id", "qt_x", "--env", "NOEQUALS"},
			{"clusters", "launch", "--quote-id", "qt_x", "--port", "http"},
			{"clusters", "launch", "--quote-id", "qt_x", "--software", "nomad"},
			{"clusters", "launch", "--quote-id", "qt_x", "--env-file", filepath.Join(t.TempDir(), "missing.env")},
			{"clusters", "launch", "--quote-id", "qt_x", "--bogus"},
		} {
			if _, errOut, code := d.gpu(t, bad...); code != 2 || errOut == "" {
				t.Errorf("%v: exit %d, want 2: %s", bad, code, errOut)
			}
		}
		os.WriteFile(envFile, []byte("GOOD=1\nnot a pair\n"), 0o600)
		if _, errOut, code := d.gpu(t, "clusters", "launch", "--quote-id", "qt_x", "--env-file", envFile); code != 2 || !strings.Contains(errOut, "train.env:2") {
			t.Errorf("bad env file: %d %s", code, errOut)
		}
	})
}

var launchedRE = regexp.MustCompile(`Launched (cl_\w+)`)

// L3–L5, L11: launch --wait follows the cluster, printing events and node
// steps, until ready (exit 0), failed (exit 1) or the timeout (exit 1).
func TestGPULaunchWait(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		launchArgs := func(name string, extra ...string) []string {
			out, _, _ := d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--location", "us-east", "--json")
			qid := mustJSON(t, "quote", out)["id"].(string)
			return append([]string{"clusters", "launch", "--quote-id", qid, "--name", name, "--wait", "--poll-interval", "2ms"}, extra...)
		}

		out, errOut, done := d.background(ctx, launchArgs("ready-one")...)
		id := out.waitFor(t, launchedRE, done)[1]
		out.waitFor(t, regexp.MustCompile(`status: provisioning`), done)
		d.join(t, id, 2)
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("launch --wait to ready: exit %d\n%s\n%s", code, out, errOut)
		}
		mustContain(t, "launch --wait", out.String(), "All 2 machines reserved in Loc us-east.", "node-1 mesh:  node-1 passed mesh",
			"Every machine is up and reached every other", "status: ready",
			"Cluster "+id+" is ready (billing since", "Connect: clusterdeck gpu clusters connections "+id)
		if !regexp.MustCompile(`nodes: .*node-0 done`).MatchString(out.String()) {
			t.Errorf("node steps not shown:\n%s", out)
		}

		// A failure (L4) ends the wait with lastError and exit 1.
		out, errOut, done = d.background(ctx, launchArgs("fails")...)
		id = out.waitFor(t, launchedRE, done)[1]
		if _, err := d.store.FailCluster(ctx, id, models.StepTimeout(models.StepAgent), "node-1", "agent", "node-1's agent did not check in", nil); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, done, out, errOut); code != 1 {
			t.Errorf("failed cluster: exit %d", code)
		}
		mustContain(t, "failed wait", errOut.String(), "cluster "+id+" is failed: timeout:agent", "nothing was billed")
		mustContain(t, "failed wait", out.String(), "node-1 agent:  node-1's agent did not check in")

		// --timeout: gives up following, leaves the cluster as it is.
		_, errOut2, code := d.gpu(t, launchArgs("slow", "--timeout", "1ms", "--poll-interval", "1h")...)
		if code != 1 || !strings.Contains(errOut2, "is still provisioning after 1ms; it is left as it is") {
			t.Errorf("timeout: %d %s", code, errOut2)
		}

		// Ctrl-C stops following (exit 130) and leaves the cluster as it is.
		cctx, cancel := context.WithCancel(ctx)
		out, errOut, done = d.background(cctx, launchArgs("interrupted")...)
		id = out.waitFor(t, launchedRE, done)[1]
		cancel()
		if code := waitExit(t, done, out, errOut); code != 130 || !strings.Contains(errOut.String(), "stopped following "+id+" (provisioning)") {
			t.Errorf("Ctrl-C: exit %d %s", code, errOut)
		}

		// --wait --json: progress on stderr, the final cluster as JSON on stdout.
		out, errOut, done = d.background(ctx, launchArgs("json-wait", "--json")...)
		id = errOut.waitFor(t, launchedRE, done)[1]
		d.join(t, id, 2)
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("--wait --json: exit %d %s", code, errOut)
		}
		if m := mustJSON(t, "launch --wait --json", out.String()); m["id"] != id || m["status"] != "ready" || m["readyAt"] == nil {
			t.Errorf("final JSON: %v", m)
		}
	})
}

// L8, N5, N6: list, get, connections and logs of a ready cluster, as tables and as JSON.
func TestGPUClusterViews(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		out, _, code := d.gpu(t, "clusters", "list")
		if code != 0 || !strings.Contains(out, "No clusters yet") {
			t.Errorf("empty list: %d %s", code, out)
		}
		cl := d.launch(t, "viewer")
		d.join(t, cl.ID, 2)

		out, errOut, code := d.gpu(t, "clusters", "list")
		if code != 0 {
			t.Fatalf("list: %d %s", code, errOut)
		}
		mustContain(t, "list", out, "ID", "STATUS", "READY AT", cl.ID, "viewer", "ready", "2 × 8 GPUs H100_80GB at us-east", "$39.94/h")
		out, _, _ = d.gpu(t, "clusters", "list", "--json")
		if m := mustJSON(t, "list", out); len(m["clusters"].([]any)) != 1 {
			t.Errorf("list JSON: %v", m)
		}

		out, errOut, code = d.gpu(t, "clusters", "get", cl.ID)
		if code != 0 {
			t.Fatalf("get: %d %s", code, errOut)
		}
		mustContain(t, "get", out, "Cluster", cl.ID, `"viewer"`, "Status", "ready", "Ready at", "(billing since)",
			"NODE", "RANK", "STEP", "ADDRESS", "node-1", "10.77.0.2", "n1.example.net", "Events:", "All 2 machines reserved")
		if strings.Contains(out, "Last error") {
			t.Errorf("a ready cluster has no last error:\n%s", out)
		}
		// Flags may follow the id.
		out, _, code = d.gpu(t, "clusters", "get", cl.ID, "--json")
		if m := mustJSON(t, "get", out); code != 0 || m["id"] != cl.ID || len(m["nodes"].([]any)) != 2 || m["events"] == nil {
			t.Errorf("get JSON: %d %v", code, m)
		}

		out, errOut, code = d.gpu(t, "clusters", "connections", cl.ID)
		if code != 0 {
			t.Fatalf("connections: %d %s", code, errOut)
		}
		mustContain(t, "connections", out, "Primary (node-0):  ssh", "n0.example.net", "node-1", "10.77.0.2", "n1.example.net",
			"export MASTER_ADDR=10.77.0.1", "export HF_TOKEN='x y'", "Hostfile (/shared/hostfile)", "node-1 slots=8",
			"# torchrun", "--nnodes=2", "MALLOC_ARENA_MAX=1", "infrastructure")
		out, _, _ = d.gpu(t, "clusters", "connections", "--json", cl.ID)
		if m := mustJSON(t, "connections", out); m["env"].(map[string]any)["WORLD_SIZE"] != "16" {
			t.Errorf("connections JSON: %v", m)
		}

		// Logs: the stored lines (rank 0 by default, --node N), then followed live.
		d.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: d.clock.Now(), Text: "head says hi"}})
		d.store.AppendNodeLogs(ctx, cl, 1, []models.LogInput{{At: d.clock.Now(), Text: "worker one"}, {At: d.clock.Now(), Text: "worker two"}})
		out, _, code = d.gpu(t, "clusters", "logs", cl.ID, "--follow=false")
		if code != 0 || out != "head says hi\n" {
			t.Errorf("logs rank 0: %d %q", code, out)
		}
		out, _, code = d.gpu(t, "clusters", "logs", cl.ID, "--node", "1", "--follow=false")
		if code != 0 || out != "worker one\nworker two\n" {
			t.Errorf("logs node 1: %d %q", code, out)
		}
		out, _, _ = d.gpu(t, "clusters", "logs", cl.ID, "--node", "1", "--follow=false", "--json")
		if m := mustJSON(t, "logs", out); len(m["lines"].([]any)) != 2 {
			t.Errorf("logs JSON: %v", m)
		}
		if _, errOut, code := d.gpu(t, "clusters", "logs", cl.ID, "--node", "5"); code != 1 || !strings.Contains(errOut, "node: a rank from 0 to 1") {
			t.Errorf("node out of range: %d %s", code, errOut)
		}

		lout, lerr, done := d.background(ctx, "clusters", "logs", cl.ID, "--node", "1")
		lout.waitFor(t, regexp.MustCompile(`worker two\n`), done)
		d.store.AppendNodeLogs(ctx, cl, 1, []models.LogInput{{At: d.clock.Now(), Text: "worker three"}})
		lout.waitFor(t, regexp.MustCompile(`worker three\n`), done)
		if _, err := d.store.MarkTerminated(ctx, cl.ID); err != nil { // the stream ends with the cluster
			t.Fatal(err)
		}
		if code := waitExit(t, done, lout, lerr); code != 0 || lout.String() != "worker one\nworker two\nworker three\n" {
			t.Errorf("followed logs: %d %q %s", code, lout, lerr)
		}

		// Ctrl-C ends following quietly.
		cl2 := d.launch(t, "ctrl-c")
		d.store.AppendNodeLogs(ctx, cl2, 0, []models.LogInput{{At: d.clock.Now(), Text: "first"}})
		cctx, cancel := context.WithCancel(ctx)
		lout, lerr, done = d.background(cctx, "clusters", "logs", cl2.ID)
		lout.waitFor(t, regexp.MustCompile(`first\n`), done)
		cancel()
		if code := waitExit(t, done, lout, lerr); code != 0 {
			t.Errorf("Ctrl-C on logs: exit %d %s", code, lerr)
		}

		// Connections before the machines are up: the API's 409, exit 1.
		if _, errOut, code := d.gpu(t, "clusters", "connections", cl2.ID); code != 1 || !strings.Contains(errOut, "not_connectable") {
			t.Errorf("connections while provisioning: %d %s", code, errOut)
		}
	})
}

// L7: terminate is accepted in any state; --wait follows until every machine is released.
func TestGPUTerminate(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cl := d.launch(t, "ender")
		d.join(t, cl.ID, 2)
		out, errOut, done := d.background(ctx, "clusters", "terminate", cl.ID, "--wait", "--poll-interval", "2ms")
		out.waitFor(t, regexp.MustCompile(`Terminate accepted for `+cl.ID), done)
		out.waitFor(t, regexp.MustCompile(`status: ready \(terminating\)`), done)
		if _, err := d.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("terminate --wait: exit %d %s", code, errOut)
		}
		mustContain(t, "terminate --wait", out.String(), "Every machine released; billing ended.",
			"status: terminated", "Cluster "+cl.ID+" is terminated.")
		if strings.Contains(out.String(), "All 2 machines reserved") {
			t.Errorf("terminate --wait replays the history:\n%s", out)
		}
		out2, _, code := d.gpu(t, "clusters", "terminate", cl.ID)
		if code != 0 || !strings.Contains(out2, "already terminated") {
			t.Errorf("terminate again: %d %s", code, out2)
		}

		// Mid-provision, without --wait; --json is the API's 202 body.
		cl2 := d.launch(t, "early")
		out2, _, code = d.gpu(t, "clusters", "terminate", cl2.ID, "--json")
		if m := mustJSON(t, "terminate", out2); code != 0 || m["terminateRequestedAt"] == nil || m["status"] != "provisioning" {
			t.Errorf("terminate JSON: %d %v", code, m)
		}
		// A failed cluster: accepted, nothing changes, --wait returns at once.
		cl3 := d.launch(t, "failed")
		d.store.FailCluster(ctx, cl3.ID, models.ProviderRejected(models.RejectedNoCapacity), "", "reserved", "no room", nil)
		out2, _, code = d.gpu(t, "clusters", "terminate", cl3.ID, "--wait")
		if code != 0 || !strings.Contains(out2, "had failed") || !strings.Contains(out2, "is failed.") {
			t.Errorf("terminate failed cluster: %d %s", code, out2)
		}
	})
}

// A4, API2: clear errors, exit codes, and no panic on whatever comes back.
func TestGPUErrors(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		good := d.key
		d.key = "cdk_not_a_real_key"
		_, errOut, code := d.gpu(t, "clusters", "list")
		if code != 1 {
			t.Errorf("bad key: exit %d", code)
		}
		mustContain(t, "bad key", errOut, "That API key is not valid", "invalid_api_key, HTTP 401", "Check --key or CLUSTERDECK_API_KEY")
		// --key wins over the environment.
		if out, errOut, code := d.gpu(t, "clusters", "list", "--key", good); code != 0 || !strings.Contains(out, "No clusters yet") {
			t.Errorf("--key: %d %s", code, errOut)
		}
		d.key = ""
		if _, errOut, code := d.gpu(t, "clusters", "get", "cl_x"); code != 2 || !strings.Contains(errOut, "no API key") {
			t.Errorf("no key: %d %s", code, errOut)
		}
		d.key = good
		if _, errOut, code := d.gpu(t, "clusters", "get", "cl_nope"); code != 1 || !strings.Contains(errOut, "not_found, HTTP 404") {
			t.Errorf("unknown cluster: %d %s", code, errOut)
		}
		// Insufficient balance (L2): a 402 refusal, exit 3, with the shortfall.
		ctx := context.Background()
		u, org, err := d.store.Signup(ctx, models.SignupInput{Email: "poor@example.com", Name: "Poor", Password: "correct horse battery", OrgName: "Poor"}, "192.0.2.2")
		if err != nil {
			t.Fatal(err)
		}
		env, _ := d.store.DefaultEnvironment(ctx, org.ID)
		_, d.key, _ = d.store.CreateAPIKey(ctx, org.ID, env.ID, u.ID, "poor")
		_, errOut, code = d.gpu(t, "clusters", "launch", "--offer-id", "sim:h100x8", "--nodes", "2", "--gpus-per-node", "8", "--accelerator", "H100_80GB")
		if code != 3 || !strings.Contains(errOut, "insufficient_balance, HTTP 402") || !strings.Contains(errOut, "add $39.94") {
			t.Errorf("balance: %d %s", code, errOut)
		}
		// L2 sets aside one hour of what already runs: $50 starts one $39.94/h
		// cluster, and the second launch is refused with that hour named.
		if _, err := d.store.Deposit(ctx, org.ID, 50*models.Micro, "poor-dep", "test"); err != nil {
			t.Fatal(err)
		}
		launch := []string{"clusters", "launch", "--offer-id", "sim:h100x8", "--nodes", "2", "--gpus-per-node", "8", "--accelerator", "H100_80GB"}
		if _, errOut, code := d.gpu(t, launch...); code != 0 {
			t.Fatalf("first launch: %d %s", code, errOut)
		}
		_, errOut, code = d.gpu(t, launch...)
		mustContain(t, "committed", errOut, "insufficient_balance, HTTP 402", "balance $50.00, less $39.94/h already running or starting", "add $29.88")
		// Another organisation's cluster is not found (A3).
		cl := d.launch(t, "not-yours")
		if _, errOut, code := d.gpu(t, "clusters", "get", cl.ID); code != 1 || !strings.Contains(errOut, "not_found") {
			t.Errorf("another org's cluster: %d %s", code, errOut)
		}
		d.key = good

		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"clusters", "recovery", "cl_x"}, "--mode is required"},
			{[]string{"clusters", "recover"}, "give the cluster's id"},
			{[]string{"clusters", "explode"}, `unknown command "clusters explode"`},
			{[]string{"teleport"}, `unknown command "teleport"`},
			{[]string{"clusters", "get", "a", "b"}, `unexpected argument "b"`},
			{[]string{"clusters", "list", "--nope"}, "flag provided but not defined: -nope"},
			{[]string{"clusters", "get", "cl_x", "--api", "not a url"}, "is not an http(s) URL"},
		} {
			if _, errOut, code := d.gpu(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, want 2 and %q: %s", c.args, code, c.want, errOut)
			}
		}
		if out, _, code := d.gpu(t, "help"); code != 0 || !strings.Contains(out, "recovery") {
			t.Errorf("help: %d %s", code, out)
		}
		// Not Clusterdeck's API, nothing listening.
		if _, errOut, code := d.gpu(t, "clusters", "list", "--api", d.url+"/static"); code != 1 || !strings.Contains(errOut, "is --api Clusterdeck's URL?") {
			t.Errorf("wrong --api: %d %s", code, errOut)
		}
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		if _, errOut, code := d.gpu(t, "clusters", "list", "--api", dead.URL); code != 1 || !strings.Contains(errOut, "cannot reach the API at") {
			t.Errorf("unreachable: %d %s", code, errOut)
		}
	})
}

// Odd JSON from a server never panics: every command ends with a message.
func TestGPUOddAnswers(t *testing.T) {
	answers := map[string]string{
		"/v1/gpu/offers":                    `{"groups":[{"offers":[{"id":"x","nodes_available":"many"}]}]}`,
		"/v1/gpu/clusters":                  `{"clusters":"none"}`,
		"/v1/gpu/clusters/cl_1":             `{"id":"cl_1","nodes":[null,{}],"events":[{}],"lastError":null}`,
		"/v1/gpu/clusters/cl_1/terminate":   `[]`,
		"/v1/gpu/clusters/cl_1/connections": `{"primary":null,"nodes":null,"env":{"A":"1"},"commands":[{}]}`,
		"/v1/gpu/clusters/cl_1/logs":        "",
		"/v1/gpu/clusters/quote":            `{"error":"nope"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		switch {
		case r.URL.Path == "/v1/gpu/clusters/cl_1/logs" && r.URL.Query().Get("follow") != "false":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: line\ndata: not json\n\nevent: line\ndata: {\"id\":\"x\"}\n\n: comment\nevent: end\ndata: bye\n\n")
		case r.URL.Path == "/v1/gpu/clusters/quote":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, body)
		case ok:
			fmt.Fprint(w, body)
		default:
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprint(w, "<html>teapot</html>")
		}
	}))
	defer srv.Close()
	d := &deck{url: srv.URL, key: "cdk_x"}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"offers"}, 1},
		{[]string{"clusters", "list"}, 1},
		{[]string{"clusters", "get", "cl_1"}, 0},
		{[]string{"clusters", "terminate", "cl_1"}, 1},
		{[]string{"clusters", "connections", "cl_1"}, 0},
		{[]string{"clusters", "logs", "cl_1", "--follow=false"}, 1},
		{[]string{"clusters", "logs", "cl_1"}, 0},
		{[]string{"clusters", "quote", "--accelerator", "A", "--nodes", "2", "--gpus-per-node", "1"}, 1},
		{[]string{"clusters", "get", "cl_2"}, 1},
		{[]string{"clusters", "launch", "--quote-id", "qt_1", "--wait"}, 1},
	} {
		out, errOut, code := d.gpu(t, c.args...)
		if code != c.code || (code != 0 && errOut == "") {
			t.Errorf("%v: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, code, c.code, out, errOut)
		}
	}
	if out, _, _ := d.gpu(t, "clusters", "logs", "cl_1"); out != "not json\n{\"id\":\"x\"}\n" {
		t.Errorf("odd log events: %q", out)
	}
}
