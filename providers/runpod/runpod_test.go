package runpod_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

var ctx = context.Background()

func strictDecode(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func topKeys(t *testing.T, v any) []string {
	t.Helper()
	data, _ := json.Marshal(v)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The documented examples decode into the adapter's types with no field
// left over, and the fake answers pods with the example's fields.
func TestFixturesMatchTypesAndFake(t *testing.T) {
	var pod runpod.Pod
	strictDecode(t, "testdata/pod.json", &pod)
	if pod.Status != runpod.StatusRunning || pod.SSH.Direct == nil || pod.SSH.Direct.Port != 34446 || *pod.DataCenterID != "US-KS-2" {
		t.Fatalf("pod example: %+v", pod)
	}
	var created runpod.Pod
	strictDecode(t, "testdata/create-pod-response.json", &created)
	var list struct {
		Pods []runpod.Pod `json:"pods"`
	}
	strictDecode(t, "testdata/pods.json", &list)
	var gpus struct {
		GPUs []runpod.GpuType `json:"gpus"`
	}
	strictDecode(t, "testdata/gpus.json", &gpus)
	var cr runpod.CreatePodRequest
	strictDecode(t, "testdata/create-pod-request.json", &cr)

	e := newEnv(t)
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-KS-2"}] = 8
	if _, err := e.cloud.PlaceGroup(ctx, request("cl_fx", "US-KS-2", 1)); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5 * time.Minute)
	live := e.fake.Live()
	want := topKeys(t, map[string]any{})
	{
		var m map[string]any
		data, _ := os.ReadFile("testdata/pod.json")
		_ = json.Unmarshal(data, &m)
		for k := range m {
			want = append(want, k)
		}
		slices.Sort(want)
	}
	if got := topKeys(t, live[0]); !slices.Equal(got, want) {
		t.Errorf("fake pod fields %v, documented %v", got, want)
	}
	// Error bodies: the fake's problem objects have the documented shape.
	var errs map[string]runpod.Problem
	strictDecode(t, "testdata/errors.json", &errs)
	req, _ := http.NewRequest(http.MethodGet, e.url+"/v2/pods/nope", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p runpod.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 404 || p.Status != errs["404"].Status || p.Title != errs["404"].Title {
		t.Errorf("404 answer %d %+v %v", resp.StatusCode, p, err)
	}
	if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
		t.Error("every authenticated answer carries RateLimit and RateLimit-Policy")
	}
}

// Offers: one per GPU type, pod size and data center; the stock level is a
// yes/no for us (NodesAvailable nil), per data center and per size; the
// price is the secure cloud's per GPU-hour in micro-dollars.
func TestListOffers(t *testing.T) {
	e := newEnv(t, func(c *runpod.Config) { c.DataCenters = []string{"US-KS-2", "US-TX-3"} })
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-KS-2"}] = 4
	offers, err := e.cloud.ListOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]providers.Offer{}
	for _, o := range offers {
		if o.Location == "EU-RO-1" {
			t.Fatalf("data center outside RUNPOD_DATACENTERS offered: %+v", o)
		}
		if o.NodesAvailable != nil {
			t.Fatalf("a stock level is not a count: %+v", o)
		}
		by[o.OfferID] = o
	}
	h4 := by[runpod.OfferID("US-KS-2", 4, h100)]
	if !h4.Available || h4.GPUsPerNode != 4 || h4.PerGPUHourUSD != 2_990_000 || h4.Accelerator != "H100_80GB" ||
		h4.MachineKind != providers.Container || h4.Provider != "runpod" || h4.LocationName != "US Kansas 2" {
		t.Errorf("4 × H100 in Kansas: %+v", h4)
	}
	if by[runpod.OfferID("US-KS-2", 8, h100)].Available || by[runpod.OfferID("US-TX-3", 1, h100)].Available {
		t.Error("8 GPUs of 4 free, or a data center without stock, offered as available")
	}
	rtx := by[runpod.OfferID("US-TX-3", 1, "NVIDIA GeForce RTX 4090")]
	if rtx.PerGPUHourUSD != 440_000 || rtx.Accelerator != "RTX_4090" {
		t.Errorf("RTX 4090: %+v", rtx)
	}
	if len(offers) != 2*2*4 {
		t.Errorf("%d offers, want 2 GPU types × 2 data centers × 4 sizes", len(offers))
	}
}

// A placement creates one pod per machine in the offer's data center, each
// with its own agent token in the container's command, the group and rank
// in its environment, SSH on with the cluster's own keys in PUBLIC_KEY; the
// account's registered keys are left as they are (no operator key is
// configured) and never added to. Pods only count as running once RunPod
// publishes their SSH endpoint.
func TestPlaceGroup(t *testing.T) {
	e := newEnv(t)
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 16
	req := request("cl_a", "US-TX-3", 2)
	// An operator's key already registered stays registered, alone.
	put, _ := http.NewRequest(http.MethodPut, e.url+"/v2/account/ssh-keys", strings.NewReader(`{"keys":["ssh-ed25519 AAAAoperator op@desk"]}`))
	put.Header.Set("Content-Type", "application/json")
	put.Header.Set("Authorization", "Bearer "+testKey)
	if resp, err := http.DefaultClient.Do(put); err != nil || resp.StatusCode != 200 {
		t.Fatal(err, resp)
	}
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 2 || g.Location != "US-TX-3" || g.Nodes[0].State != providers.NodePending {
		t.Fatalf("group %+v", g)
	}
	if keys := e.fake.SSHKeys(); !slices.Equal(keys, []string{"ssh-ed25519 AAAAoperator op@desk"}) {
		t.Errorf("registered keys %q", keys)
	}
	for i, c := range e.fake.Creates() {
		if !slices.Equal(c.DataCenterIDs, []string{"US-TX-3"}) || c.GPU.ID != h100 || c.GPU.Count != 8 || !c.StartSSH ||
			c.Env[runpod.EnvGroup] != "cl_a" || c.Env[runpod.EnvIndex] != string(rune('0'+i)) || c.Name != "cl_a-"+string(rune('0'+i)) ||
			c.Image != runpod.DefaultImage || !slices.Contains(c.Ports, "22/tcp") || c.Env[runpod.EnvPublicKey] != req.SSHKeys[0] {
			t.Errorf("create %d: %+v", i, c)
		}
		enc := strings.TrimSuffix(strings.TrimPrefix(c.Args, "sh -c 'echo "), " | base64 -d | sh'")
		script, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("args %q: %v", c.Args, err)
		}
		if !strings.Contains(string(script), "CLUSTERDECK_TOKEN="+req.Agent.Tokens[i]+"\n") ||
			!strings.Contains(string(script), "exec /opt/clusterdeck/clusterdeck agent") || strings.Contains(string(script), "systemctl") {
			t.Errorf("pod %d start-up:\n%s", i, script)
		}
	}
	e.clk.Advance(150 * time.Second) // past two thirds of the boot: RUNNING without SSH
	g, err = e.cloud.DescribeGroup(ctx, "cl_a")
	if err != nil || g.Nodes[0].State != providers.NodePending || g.Nodes[0].PublicHost != "" {
		t.Fatalf("RUNNING without an SSH endpoint is not running yet: %+v %v", g, err)
	}
	if e.fake.Live()[0].Status != runpod.StatusRunning {
		t.Fatal("the fake should report RUNNING by now")
	}
	e.clk.Advance(time.Minute)
	g, err = e.cloud.DescribeGroup(ctx, "cl_a")
	if err != nil || g.Nodes[1].State != providers.NodeRunning || g.Nodes[1].PublicHost == "" || g.Nodes[1].SSHPort < 30000 || g.Nodes[1].SSHUser != "root" {
		t.Fatalf("booted: %+v %v", g, err)
	}
	if got := e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}]; got != 0 {
		t.Errorf("stock %d after two 8-GPU pods of 16", got)
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_a"); err != nil {
		t.Fatal(err)
	}
	if len(e.fake.Live()) != 0 || e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] != 16 {
		t.Error("terminate left pods or held stock")
	}
}

// Every documented error status maps onto its class (the spec's retry
// table); 429 and 5xx are retried with backoff, honouring Retry-After; a
// create whose answer was lost is adopted, not made twice.
func TestErrors(t *testing.T) {
	capacity := "There are no longer any instances available with the requested specifications. Please refresh and try again."
	for _, c := range []struct {
		status int
		detail string
		want   error
	}{
		{400, capacity, providers.ErrNoCapacity},
		{400, "cross-field rule broken", providers.ErrValidation},
		{422, "Request validation failed.", providers.ErrValidation},
		{402, "insufficient balance", providers.ErrQuota},
		{403, "access denied", providers.ErrQuota}, // on create: this pool is closed to the account
		{401, "missing bearer token", providers.ErrAuth},
	} {
		e := newEnv(t)
		e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 8
		e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/pods", Status: c.status, Detail: c.detail})
		_, err := e.cloud.PlaceGroup(ctx, request("cl_e", "US-TX-3", 1))
		if !errors.Is(err, c.want) {
			t.Errorf("%d %q: want %v, got %v", c.status, c.detail, c.want, err)
		}
		if e.fake.Requests("POST /v2/pods") != 1 {
			t.Errorf("%d: the create was repeated", c.status)
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Error("the key leaked into an error")
		}
	}
	// Auth everywhere else.
	e := newEnv(t, func(c *runpod.Config) { c.APIKey = "wrong" })
	if _, err := e.cloud.ListOffers(ctx); !errors.Is(err, providers.ErrAuth) {
		t.Errorf("bad key: %v", err)
	}
	// 429 with Retry-After, then 503: retried, waiting at least what was asked.
	e = newEnv(t)
	e.fake.Inject(fake.Fault{Method: "GET", Path: "/v2/pods", Status: 429, Detail: "rate limit exceeded for the minute window", RetryAfter: "17"},
		fake.Fault{Method: "GET", Path: "/v2/pods", Status: 503, Detail: ""})
	if _, err := e.cloud.DescribeGroups(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if s := e.clk.Slept(); len(s) != 2 || s[0] < 17*time.Second || s[1] != 4*time.Second {
		t.Errorf("waits %v: want ≥ 17 s (Retry-After) then the doubled backoff", s)
	}
	// A transient failure is not retried without end.
	e = newEnv(t, func(c *runpod.Config) { c.Retries = 1 })
	e.fake.Inject(fake.Fault{Method: "GET", Path: "/v2/pods", Status: 500, Detail: "boom"}, fake.Fault{Method: "GET", Path: "/v2/pods", Status: 500, Detail: "boom"})
	if _, err := e.cloud.DescribeGroups(ctx, nil); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("500 twice with one retry: %v", err)
	}
	// A lost create answer: the pod exists; the retry adopts it.
	e = newEnv(t)
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 16
	e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/pods", Status: 502, Apply: true})
	g, err := e.cloud.PlaceGroup(ctx, request("cl_lost", "US-TX-3", 2))
	if err != nil || len(e.fake.Live()) != 2 || len(g.Nodes) != 2 || g.Nodes[0].ID == "" {
		t.Fatalf("lost answer: %+v %v, %d live", g, err, len(e.fake.Live()))
	}
}

// The minute window is respected: when RunPod says a window has no
// request left, the adapter waits for its reset instead of drawing 429s.
func TestRateLimitWindow(t *testing.T) {
	e := newEnv(t, func(c *runpod.Config) { c.Reserve = -1 })
	e.fake.PerMinute = 3
	for range 7 {
		if _, err := e.cloud.DescribeGroups(ctx, []string{"a"}); err != nil {
			t.Fatal(err)
		}
	}
	if e.fake.TooMany() != 0 {
		t.Errorf("%d answers 429: the adapter ignored the RateLimit header", e.fake.TooMany())
	}
	if s := e.clk.Slept(); len(s) != 2 {
		t.Errorf("waits %v: want one per spent window", s)
	}
}

// When the minute window runs short, terminates go first (L7): the last
// requests of the window (Reserve) are kept for releases, so a terminate
// goes out at once while a placement of the same tick waits for the reset
// (here past the tick's deadline: nothing is created, the next tick goes
// on).
func TestTerminatesGoFirstWhenBudgetShort(t *testing.T) {
	e := newEnv(t) // the default reserve: 6
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 8 * 8
	if _, err := e.cloud.PlaceGroup(ctx, request("cl_gone", "US-TX-3", 1)); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute) // a new window
	e.fake.PerMinute = 10
	for range 4 { // the budget runs short: 6 left, the terminate's 3 and enough for a placement
		if _, err := e.cloud.DescribeGroups(ctx, []string{"cl_gone"}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.clk.Now()
	if err := e.cloud.TerminateGroup(ctx, "cl_gone"); err != nil {
		t.Fatal(err)
	}
	if e.fake.Requests("DELETE /v2/pods/"+"pod0000001x") != 1 || len(e.fake.Live()) != 0 || !e.clk.Now().Equal(before) {
		t.Fatalf("the terminate waited or did not go out: %d deletes, %d live, waited %s",
			e.fake.Requests("DELETE /v2/pods/pod0000001x"), len(e.fake.Live()), e.clk.Now().Sub(before))
	}
	tick, cancel := e.clk.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := e.cloud.PlaceGroup(tick, request("cl_new", "US-TX-3", 1)); err == nil {
		t.Fatal("a placement spent the terminates' reserve")
	}
	if n := e.fake.Requests("POST /v2/pods"); n != 1 || e.fake.TooMany() != 0 {
		t.Errorf("%d creates (want the first alone), %d answers 429", n, e.fake.TooMany())
	}
}

// Stop, start, restart: RunPod's actions; a pod in ERROR cannot be
// brought back; a pod of another group, or gone, is not found; stop of a
// stopped pod is refused.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 16
	g, err := e.cloud.PlaceGroup(ctx, request("cl_l", "US-TX-3", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[0].ID); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("restart while provisioning: %v", err)
	}
	e.clk.Advance(5 * time.Minute)
	id := g.Nodes[0].ID
	if err := e.cloud.StopNode(ctx, "cl_l", id); err != nil {
		t.Fatal(err)
	}
	if err := e.cloud.StopNode(ctx, "cl_l", id); !errors.Is(err, providers.ErrValidation) {
		t.Errorf("stop of a stopped pod: %v", err)
	}
	if g, _ := e.cloud.DescribeGroup(ctx, "cl_l"); g.Nodes[0].State != providers.NodeStopped || g.Nodes[0].PublicHost != "" {
		t.Errorf("stopped: %+v", g.Nodes[0])
	}
	if err := e.cloud.RestartNode(ctx, "cl_l", id); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Minute)
	if g, _ := e.cloud.DescribeGroup(ctx, "cl_l"); g.Nodes[0].State != providers.NodeRunning {
		t.Errorf("started: %+v", g.Nodes[0])
	}
	if err := e.cloud.RestartNode(ctx, "cl_other", id); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("a pod of another group: %v", err)
	}
	e.fake.SetStatus(g.Nodes[1].ID, runpod.StatusError)
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[1].ID); !errors.Is(err, providers.ErrUnrecoverable) {
		t.Errorf("ERROR pod: %v", err)
	}
	if g, _ := e.cloud.DescribeGroup(ctx, "cl_l"); g.Nodes[1].State != providers.NodeFailed {
		t.Errorf("ERROR: %+v", g.Nodes[1])
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_l"); err != nil {
		t.Fatal(err)
	}
	if err := e.cloud.StopNode(ctx, "cl_l", id); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("stop of a deleted pod: %v", err)
	}
}

func TestConfig(t *testing.T) {
	if _, err := runpod.New(runpod.Config{APIKey: "k"}); err == nil {
		t.Error("an agent URL is required")
	}
	if _, err := runpod.New(runpod.Config{Agent: bootstrap.AgentInstall{URL: "https://x/cd"}}); err == nil {
		t.Error("a key is required")
	}
	cfg := runpod.Config{APIKey: testKey}
	if s := cfg.String(); strings.Contains(s, testKey) {
		t.Errorf("config shows the key: %s", s)
	}
	if !reflect.DeepEqual(runpod.GPUCounts, []int{1, 2, 4, 8}) {
		t.Error("pod sizes")
	}
}

// Two customers on one RunPod account (A3, X19, OP1): each pod and
// each Instant Cluster member trusts exactly its own cluster's keys and
// the operator's, never the other customer's. RunPod's startSsh installs
// every key registered on the account unless the create sets PUBLIC_KEY
// (the description, played by the fake): the adapter sets it on every
// create, registers no customer key, and with an operator key configured
// leaves only that key registered, removing the customer keys an earlier
// version added. Placements run at once, both ways of placing.
func TestTwoCustomersKeysStayApart(t *testing.T) {
	const op, old = "ssh-ed25519 AAAAoperator op@desk", "ssh-ed25519 AAAAstale carol@old"
	for _, operator := range []string{op, ""} {
		t.Run("operator key "+strconv.FormatBool(operator != ""), func(t *testing.T) {
			e := newEnv(t, func(c *runpod.Config) { c.OperatorKey = operator })
			cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
			e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 8*8, true
			e.fake.Stock[fake.Cap{GPU: h100, DC: "US-KS-2"}] = 8 * 8
			e.fake.SetSSHKeys(old) // a customer's key an earlier version registered
			keys := map[string]string{}
			errs := make(chan error, 4)
			for i, shape := range []struct {
				dc      string
				cluster bool
			}{{"US-TX-3", true}, {"US-KS-2", false}, {"US-TX-3", true}, {"US-KS-2", false}} {
				group := "cl_org" + string(rune('a'+i))
				keys[group] = "ssh-ed25519 AAAAkey" + string(rune('a'+i)) + " user" + strconv.Itoa(i) + "@org" + strconv.Itoa(i)
				req := request(group, shape.dc, 2)
				req.SSHKeys = []string{keys[group]}
				if shape.cluster {
					req.Agent.Token = "cdb_" + group
				}
				go func() {
					_, err := e.cloud.PlaceGroup(ctx, req)
					errs <- err
				}()
			}
			for range 4 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if e.fake.Requests("POST /v2/clusters") != 2 || e.fake.Requests("POST /v2/pods") != 4 {
				t.Fatalf("%d cluster creates, %d pod creates: want 2 and 4", e.fake.Requests("POST /v2/clusters"), e.fake.Requests("POST /v2/pods"))
			}
			trusted := e.fake.Trusted()
			if len(trusted) != 8 {
				t.Fatalf("%d pods: %v", len(trusted), trusted)
			}
			for name, got := range trusted {
				group := name[:strings.LastIndex(name, "-")]
				want := []string{keys[group]}
				if operator != "" {
					want = append(want, operator)
				}
				if !slices.Equal(got, want) {
					t.Errorf("pod %s trusts %q, want exactly its cluster's %q", name, got, want)
				}
			}
			registered := e.fake.SSHKeys()
			want := []string{old}
			if operator != "" {
				want = []string{operator}
			}
			if !slices.Equal(registered, want) {
				t.Errorf("the account's registered keys are %q, want %q", registered, want)
			}
		})
	}
}
