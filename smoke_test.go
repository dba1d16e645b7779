package main

// Smoke tests of the real binary: `clusterdeck serve` started as a
// process on a free port, and `clusterdeck agent` run against it. They need
// only Go, so they never skip; their PostgreSQL runs follow TEST_DATABASE_URL
// (required under CI=true) like every database test.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binary builds ./clusterdeck once per test run.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "clusterdeck-smoke-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "clusterdeck")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// syncBuffer collects a process's output for the failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// process is a started command whose exit is awaited in the background.
type process struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan error
	dryRun string // an agent's --dry-run directory: the scripts it did not run
}

// start runs the binary with args. An agent always runs with --dry-run (a
// directory of the test's): the test host is not a cluster machine, so its
// steps — the mounts' /etc/fstab, /etc/exports and /shared, the SSH keys,
// the ports, installs, the start command — are written there, never run;
// and guardHost checks, when the test ends, that the host is as it was.
func start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	var dry string
	if len(args) > 0 && args[0] == "agent" {
		guardHost(t)
		if i := slices.Index(args, "--dry-run"); i >= 0 && i+1 < len(args) {
			dry = args[i+1]
		} else {
			dry = t.TempDir()
			args = append(args, "--dry-run", dry)
		}
	}
	p := &process{cmd: exec.Command(binary(t), args...), out: &syncBuffer{}, done: make(chan error, 1), dryRun: dry}
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// dryScripts are the scripts of step (e.g. "mounts") the agent wrote
// instead of running them.
func (p *process) dryScripts(t *testing.T, step string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(p.dryRun, "*-"+step+".sh"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// hostPaths are what an agent's steps change on a cluster machine (V4's
// mounts, N3's SSH keys); run on the test host, they must not.
func hostPaths() []string {
	paths := []string{"/etc/fstab", "/etc/exports", "/shared"}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".ssh", "authorized_keys"))
	}
	return paths
}

// guardHost records hostPaths now and, when the test ends (after its
// agents were stopped), requires each file byte-identical, or still
// absent, and /shared still absent when it was.
func guardHost(t *testing.T) {
	t.Helper()
	type snap struct {
		exists bool
		data   []byte
	}
	read := func(path string) snap {
		fi, err := os.Lstat(path)
		if err != nil {
			return snap{}
		}
		if fi.IsDir() {
			return snap{exists: true}
		}
		b, _ := os.ReadFile(path)
		return snap{exists: true, data: b}
	}
	before := map[string]snap{}
	for _, p := range hostPaths() {
		before[p] = read(p)
	}
	t.Cleanup(func() {
		for path, b := range before {
			if a := read(path); a.exists != b.exists || !bytes.Equal(a.data, b.data) {
				t.Errorf("the test's agents changed the host's %s (existed before: %v, after: %v)", path, b.exists, a.exists)
			}
		}
	})
}

// stop sends SIGTERM and requires a clean exit (status 0) within 30 s.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM:\n%s", p.cmd.Args[1], err, p.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after SIGTERM:\n%s", p.cmd.Args[1], p.out)
	}
}

// server is `clusterdeck serve` on a free port with its own database, and the
// demo credentials `clusterdeck demo` printed for it.
type server struct {
	*process
	url, dataDir, databaseURL string
	email, password, apiKey   string
	env                       []string
	st                        *models.Store // its database, once opened (store)
}

// eachDatabase runs fn on SQLite and, when TEST_DATABASE_URL is set (always
// under CI=true), on a fresh PostgreSQL schema. The two runs start their own
// servers on their own ports, data directories and databases, so they run in
// parallel (once the calling test function returns: eachDatabase is the
// last thing its caller does), and so does the calling test with the
// package's other parallel tests: no two share a port, a file or a process.
func eachDatabase(t *testing.T, fn func(t *testing.T, databaseURL string)) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); fn(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); fn(t, modelstest.PostgresSchemaURL(t)) })
}

// extraEnv adds settings (CLUSTERDECK_FAKE_CLOCK=1, session keys, …).
func startServer(t *testing.T, databaseURL string, extraEnv ...string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{url: "http://" + addr, dataDir: t.TempDir(), databaseURL: databaseURL}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dataDir, "DATA_DIR=" + s.dataDir,
		"ADDR=" + addr, "BASE_URL=" + s.url, "PROVIDERS=sim", "DATABASE_URL=" + databaseURL,
		"SIM_AGENT_EVERY=100ms"} // the simulated machines' agents round every 100 ms, not 2 s: the tests wait on rounds (agentRound)
	env = append(env, extraEnv...)
	s.env = env

	demo := exec.Command(binary(t), "demo")
	demo.Env = env
	out, err := demo.Output()
	if err != nil {
		t.Fatalf("clusterdeck demo: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "email":
			s.email = v
		case "password":
			s.password = v
		case "api_key":
			s.apiKey = v
		}
	}
	if s.email == "" || s.password == "" || s.apiKey == "" {
		t.Fatalf("clusterdeck demo printed no credentials:\n%s", out)
	}

	s.serve(t)
	return s
}

// serve starts (or, after a kill, starts again) `clusterdeck serve` on the
// server's address, data and database, and waits until it is ready.
func (s *server) serve(t *testing.T) {
	t.Helper()
	s.process = start(t, s.env, "serve")
	deadline := time.Now().Add(90 * time.Second)
	for {
		if res, err := http.Get(s.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve exited before it was ready (%v):\n%s", err, s.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 90 s:\n%s", s.out)
		}
	}
}

// api calls the REST API with the demo key and decodes the JSON answer.
func (s *server) api(t *testing.T, method, path string, body, out any, header ...string) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, data)
	}
	return res.StatusCode
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// TestServeSmoke starts the real binary, signs in through the log-in form
// and the API, scrapes /metrics, and requires a clean exit on SIGTERM.
func TestServeSmoke(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		s := startServer(t, databaseURL)

		var me struct {
			Org   struct{ Name string }
			Actor string
		}
		if code := s.api(t, http.MethodGet, "/v1/me", nil, &me); code != 200 || me.Org.Name != "Demo Org" || !strings.HasPrefix(me.Actor, "api_key:") {
			t.Errorf("GET /v1/me: %d %+v, want 200, Demo Org and the API key", code, me)
		}

		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		page := get(t, browser, s.url+"/login")
		m := csrfInput.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF field on /login:\n%s", page)
		}
		res, err := browser.PostForm(s.url+"/login", url.Values{"email": {s.email}, "password": {s.password}, "_csrf": {m[1]}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if clusters := get(t, browser, s.url+"/clusters"); !strings.Contains(clusters, `action="/logout"`) {
			t.Errorf("/clusters after logging in is not a signed-in page:\n%.2000s", clusters)
		}

		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(get(t, http.DefaultClient, s.url+"/metrics")))
		if err != nil {
			t.Fatal(err)
		}
		series := map[string]bool{}
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				if (m.Counter != nil && m.GetCounter().GetValue() > 0) || (m.Histogram != nil && m.GetHistogram().GetSampleCount() > 0) {
					series[name+"{"+strings.Join(labels, ",")+"}"] = true
				}
			}
		}
		for _, want := range []string{
			"clusterdeck_job_runs_total{job_name=catalog,outcome=ok}", // the catalog runs once before serving
			"clusterdeck_http_request_duration_seconds{code=200,method=GET,route=/v1/me}",
		} {
			if !series[want] {
				t.Errorf("/metrics lacks a non-zero %s", want)
			}
		}

		s.stop(t)
		if !strings.Contains(s.out.String(), "shutting down") {
			t.Errorf("no graceful shutdown in the log:\n%s", s.out)
		}
	})
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, data)
	}
	return string(data)
}

// TestAgentSmoke launches a cluster on the simulated cloud with node-1's
// simulated agent silenced (a fault narrowed by the offer id the API shows),
// runs `clusterdeck agent` with node-1's token, and requires the server to
// see it check in, heartbeat and ship its log, and the agent to exit cleanly.
// The agent checks in with what nvidia-smi prints, and a node whose GPUs are
// not its offer's — or that has no nvidia-smi at all — fails its cluster
// (L4), so the agent's PATH gets an nvidia-smi that prints the offer's one
// RTX 4090, and the test requires the server to show it.
func TestAgentSmoke(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		s := startServer(t, databaseURL)

		var quote struct{ ID, OfferID string }
		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/quote",
			map[string]any{"accelerator": "RTX_4090", "nodes": 2, "gpusPerNode": 1}, &quote); code != http.StatusCreated {
			t.Fatalf("quote: %d", code)
		}
		fault := []map[string]any{{"kind": "agent_silent", "offer": quote.OfferID, "node": 1, "count": 1}}
		if code := s.api(t, http.MethodPost, "/dev/sim/faults", fault, nil); code != 200 {
			t.Fatalf("inject agent_silent on %s: %d", quote.OfferID, code)
		}
		var cl struct{ ID string }
		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters", map[string]any{"quoteId": quote.ID, "name": "smoke", "software": "none"},
			&cl, "Idempotency-Key", "smoke-"+quote.ID); code >= 300 || cl.ID == "" {
			t.Fatalf("launch: %d %+v", code, cl)
		}
		if code := s.api(t, http.MethodPost, "/dev/jobs/provision/run", nil, nil); code != 200 {
			t.Fatalf("provision tick: %d", code)
		}

		store := openStore(t, s)
		token := models.AgentToken(node(t, store, cl.ID, 1))

		agent := start(t, []string{"PATH=" + fakeNvidiaSMI(t) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + s.dataDir},
			"agent", "--server", s.url, "--token", token, "--every", "200ms")
		var first time.Time
		waitFor(t, agent, "node-1 to check in and heartbeat twice", func() bool {
			_, n := node(t, store, cl.ID, 1)
			if n.AgentAt == nil || n.HeartbeatAt == nil {
				return false
			}
			if first.IsZero() {
				first = *n.HeartbeatAt
			}
			return n.HeartbeatAt.After(first)
		})
		waitFor(t, agent, "node-1's log to reach the server", func() bool {
			var logs struct{ Lines []struct{ Text string } }
			s.api(t, http.MethodGet, "/v1/gpu/clusters/"+cl.ID+"/logs?node=1&follow=false", nil, &logs)
			for _, l := range logs.Lines {
				if strings.Contains(l.Text, "checked in as node-1") {
					return true
				}
			}
			return false
		})
		var got struct {
			Nodes []struct {
				Rank int
				GPUs string
			}
		}
		s.api(t, http.MethodGet, "/v1/gpu/clusters/"+cl.ID, nil, &got)
		if len(got.Nodes) != 2 || got.Nodes[1].GPUs != "1 × NVIDIA GeForce RTX 4090 (24564 MiB), driver 550.90.07" {
			t.Errorf("node-1's GPUs as the API shows them: %+v", got.Nodes)
		}
		agent.stop(t)
		s.stop(t)
	})
}

// fakeNvidiaSMI is a directory holding an nvidia-smi that answers the
// agent's GPU query as a machine with one RTX 4090 does.
func fakeNvidiaSMI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf 'index, name, memory.total [MiB], driver_version\\n0, NVIDIA GeForce RTX 4090, 24564 MiB, 550.90.07\\n'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openStore(t *testing.T, s *server) *models.Store {
	t.Helper()
	db, err := models.Open(s.databaseURL, filepath.Join(s.dataDir, "clusterdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return models.NewStore(db, nil)
}

func node(t *testing.T, store *models.Store, clusterID string, rank int) (models.Cluster, models.ClusterNode) {
	t.Helper()
	ctx := context.Background()
	c, err := store.ClusterByID(ctx, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := store.NodesFor(ctx, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Rank == rank {
			return c, n
		}
	}
	t.Fatalf("cluster %s has no node of rank %d", clusterID, rank)
	return c, models.ClusterNode{}
}

// waitFor polls ok for up to 60 s while p runs.
func waitFor(t *testing.T, p *process, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		select {
		case err := <-p.done:
			t.Fatalf("waiting for %s: %s exited (%v):\n%s", what, p.cmd.Args[1], err, p.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 60 s:\n%s", what, p.out)
		}
	}
}

// untilMounted waits, on a cluster whose machine kind gets /shared (V4),
// for every node's agent to report its mounts step mounted, and checks
// that the agents were handed the real mounts scripts — node-0 exporting
// /shared, the others adding it to /etc/fstab — and wrote them into their
// --dry-run directory instead of running them on this host.
func untilMounted(t *testing.T, s *server, id string, agents []*process) {
	t.Helper()
	st := openStore(t, s)
	ctx := context.Background()
	c, err := st.ClusterByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !models.HasSharedFolder(c.MachineKind) {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows, err := st.NodeMounts(ctx, c.OrgID, id)
		if err != nil {
			t.Fatal(err)
		}
		mounted := 0
		for _, r := range rows {
			if r.State == models.MountsFailed {
				t.Fatalf("%s's mounts failed: %s", r.Node, r.Error)
			}
			if r.State == models.MountsMounted {
				mounted++
			}
		}
		if mounted == c.Nodes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes mounted after 60 s: %+v\nevents:\n%s", mounted, c.Nodes, rows, eventsOf(t, s, id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var exports, fstab int
	for _, a := range agents {
		for _, sc := range a.dryScripts(t, "mounts") {
			if strings.Contains(sc, "exportfs -rav") {
				exports++
			}
			if strings.Contains(sc, ":/shared /shared nfs defaults,_netdev 0 0' >> /etc/fstab") {
				fstab++
			}
		}
	}
	if exports != 1 || fstab != c.Nodes-1 {
		t.Errorf("the agents' mounts scripts: %d exporting /shared (want 1), %d adding it to /etc/fstab (want %d)", exports, fstab, c.Nodes-1)
	}
}
