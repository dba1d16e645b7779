package shadeform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	"github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

var ctx = context.Background()

func strictDecode(t *testing.T, file string, v any) map[string]any {
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
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The documented examples decode into the adapter's types with nothing
// left over, and the fake's instances carry the documented fields.
func TestFixturesMatchTypesAndFake(t *testing.T) {
	var info shadeform.Instance
	doc := strictDecode(t, "testdata/instance-info.json", &info)
	if info.Status != shadeform.StatusActive || info.SSHUser != "shadeform" || info.Cloud != "hyperstack" || info.HourlyPrice != 210 {
		t.Fatalf("instance example: %+v", info)
	}
	var types struct {
		InstanceTypes []shadeform.InstanceType `json:"instance_types"`
	}
	strictDecode(t, "testdata/instance-types.json", &types)
	var list struct {
		Instances []shadeform.Instance `json:"instances"`
	}
	strictDecode(t, "testdata/instances.json", &list)
	var cr shadeform.CreateRequest
	strictDecode(t, "testdata/create-request.json", &cr)
	var sk struct {
		SSHKeys []shadeform.SSHKey `json:"ssh_keys"`
	}
	strictDecode(t, "testdata/sshkeys.json", &sk)

	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "hyperstack", Type: h100, Region: "canada-1"}] = 1
	g, err := e.cloud.PlaceGroup(ctx, request("cl_fx", "hyperstack", "canada-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Minute)
	req, _ := http.NewRequest(http.MethodGet, e.url+"/v1/instances/"+g.Nodes[0].ID+"/info", nil)
	req.Header.Set("X-API-KEY", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	// Fields the fake leaves out are optional in the spec and unused here.
	optional := []string{"status_details", "volume_ids", "auto_delete", "alert", "volume_mount", "envs", "port_mappings"}
	var want []string
	for _, k := range keys(doc) {
		if !slices.Contains(optional, k) {
			want = append(want, k)
		}
	}
	if k := keys(got); !slices.Equal(k, want) {
		t.Errorf("fake instance fields %v, documented %v", k, want)
	}
}

// Offers keep the upstream cloud (Offer.Upstream and the offer id); the
// region's yes/no is Available with NodesAvailable nil; the price is the
// type's cents per machine-hour as micro-dollars per GPU-hour.
func TestListOffers(t *testing.T) {
	e := newEnv(t, func(c *shadeform.Config) { c.Regions = []string{"us-east-1", "canada-1"} })
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
	offers, err := e.cloud.ListOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]providers.Offer{}
	for _, o := range offers {
		if o.Location == "us-central-1" || o.NodesAvailable != nil || o.Provider != "shadeform" || o.Upstream == "" {
			t.Fatalf("offer %+v", o)
		}
		by[o.OfferID] = o
	}
	l := by["lambdalabs/"+h100+"/us-east-1"]
	if !l.Available || l.Upstream != "lambdalabs" || l.GPUsPerNode != 8 || l.PerGPUHourUSD != 2_990_000 || l.Accelerator != "H100_80GB" ||
		l.BootTime != 10*time.Minute || l.LocationName != "US, Virginia" || l.VCPUs != 208 || l.MachineKind != providers.VM {
		t.Errorf("Lambda's H100 through Shadeform: %+v", l)
	}
	h := by["hyperstack/"+h100+"/us-east-1"]
	if h.Available || h.Upstream != "hyperstack" || h.PerGPUHourUSD != 2_380_000 {
		t.Errorf("Hyperstack's H100, none free: %+v", h)
	}
	if a := by["hyperstack/A6000/canada-1"]; a.PerGPUHourUSD != 2_100_000 || a.Accelerator != "A6000" {
		t.Errorf("A6000: %+v", a)
	}
	if len(offers) != 3*2 {
		t.Errorf("%d offers, want 3 types × 2 regions", len(offers))
	}
}

// A placement creates one machine per rank with the same cloud, type and
// region, tags for the group and the rank, no customer key registered on
// the account (the create names the account's default key), and a
// start-up script holding that machine's token; machines are running only
// once active with their address.
func TestPlaceGroup(t *testing.T) {
	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
	req := request("cl_a", "lambdalabs", "us-east-1", 2)
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ks := e.fake.SSHKeys(); len(ks) != 0 {
		t.Fatalf("keys registered: %+v", ks)
	}
	for i, c := range e.fake.Creates() {
		if c.Cloud != "lambdalabs" || c.Region != "us-east-1" || c.ShadeInstanceType != h100 || !c.ShadeCloud || c.SSHKeyID != "" ||
			c.Name != "cl_a-"+string(rune('0'+i)) || !slices.Equal(c.Tags, []string{"clusterdeck-group=cl_a", "clusterdeck-index=" + string(rune('0'+i))}) ||
			c.LaunchConfiguration == nil || c.LaunchConfiguration.Type != "script" {
			t.Errorf("create %d: %+v", i, c)
		}
		script := e.fake.Script(g.Nodes[i].ID)
		if !strings.Contains(script, "CLUSTERDECK_TOKEN="+req.Agent.Tokens[i]+"\n") || !strings.Contains(script, "systemctl enable --now clusterdeck-agent.service") {
			t.Errorf("machine %d start-up:\n%s", i, script)
		}
	}
	e.clk.Advance(4 * time.Minute)
	g, err = e.cloud.DescribeGroup(ctx, "cl_a")
	if err != nil || g.Nodes[0].State != providers.NodePending || g.Nodes[0].PublicHost != "" {
		t.Fatalf("pending: %+v %v", g, err)
	}
	e.clk.Advance(2 * time.Minute)
	g, err = e.cloud.DescribeGroup(ctx, "cl_a")
	if err != nil || g.Nodes[1].State != providers.NodeRunning || g.Nodes[1].PublicHost == "" || g.Nodes[1].SSHPort != 22 || g.Nodes[1].SSHUser != "shadeform" {
		t.Fatalf("active: %+v %v", g, err)
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_a"); err != nil {
		t.Fatal(err)
	}
	if g, err := e.cloud.DescribeGroup(ctx, "cl_a"); err != nil || g.Nodes[0].State != providers.NodeTerminated {
		t.Fatalf("deleting counts as terminated: %+v %v", g, err)
	}
	e.clk.Advance(2 * time.Minute)
	if _, err := e.cloud.DescribeGroup(ctx, "cl_a"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("deleted machines leave the list: %v", err)
	}
}

// Errors map onto their classes; transient ones and 429 are retried with
// backoff and Retry-After; a lost create answer is adopted.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		status    int
		code, msg string
		want      error
	}{
		{409, "INSUFFICIENT_FUNDS", "Balance must be a minimum of $5 to launch an instance.", providers.ErrQuota},
		{409, "OUT_OF_CAPACITY", "out of capacity", providers.ErrNoCapacity},
		{400, "INVALID_REQUEST", "The selected instance is not available in this region", providers.ErrNoCapacity},
		{400, "INVALID_REQUEST", "name is required", providers.ErrValidation},
		{401, "UNAUTHORIZED", "invalid API key", providers.ErrAuth},
		{403, "FORBIDDEN", "no access", providers.ErrAuth},
	} {
		e := newEnv(t)
		e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
		e.fake.Inject(fake.Fault{Path: "/instances/create", Status: c.status, ErrorCode: c.code, Error: c.msg})
		_, err := e.cloud.PlaceGroup(ctx, request("cl_e", "lambdalabs", "us-east-1", 1))
		if !errors.Is(err, c.want) {
			t.Errorf("%d %s: want %v, got %v", c.status, c.code, c.want, err)
		}
		if n := e.fake.Requests("POST /instances/create"); n != 1 {
			t.Errorf("%d %s: %d creates", c.status, c.code, n)
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Error("the key leaked into an error")
		}
	}
	e := newEnv(t)
	e.fake.Broke = true
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
	if _, err := e.cloud.PlaceGroup(ctx, request("cl_b", "lambdalabs", "us-east-1", 1)); !errors.Is(err, providers.ErrQuota) {
		t.Errorf("no balance: %v", err)
	}
	e = newEnv(t, func(c *shadeform.Config) { c.APIKey = "wrong" })
	if _, err := e.cloud.ListOffers(ctx); !errors.Is(err, providers.ErrAuth) {
		t.Errorf("bad key: %v", err)
	}
	e = newEnv(t)
	e.fake.Inject(fake.Fault{Path: "/instances", Status: 429, ErrorCode: "RATE_LIMITED", Error: "slow down", RetryAfter: "9"},
		fake.Fault{Path: "/instances", Status: 502})
	if _, err := e.cloud.DescribeGroups(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if s := e.clk.Slept(); len(s) != 2 || s[0] != 9*time.Second || s[1] != 4*time.Second {
		t.Errorf("waits %v: want 9 s (Retry-After) then the doubled backoff", s)
	}
	e = newEnv(t, func(c *shadeform.Config) { c.Retries = -1 })
	e.fake.Inject(fake.Fault{Path: "/instances", Status: 500, ErrorCode: "INTERNAL", Error: "boom"})
	if _, err := e.cloud.DescribeGroups(ctx, nil); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("500 without retries: %v", err)
	}
	e = newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
	e.fake.Inject(fake.Fault{Path: "/instances/create", Status: 504, Apply: true})
	g, err := e.cloud.PlaceGroup(ctx, request("cl_lost", "lambdalabs", "us-east-1", 2))
	if err != nil || len(e.fake.Live()) != 2 || g.Nodes[0].ID == "" {
		t.Fatalf("lost answer: %+v %v, %d live", g, err, len(e.fake.Live()))
	}
	// With the documented-free rate limit scripted, 429s are waited out.
	e = newEnv(t)
	e.fake.PerMinute = 2
	for range 5 {
		if _, err := e.cloud.DescribeGroups(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Restart: only active machines; error is unrecoverable; another group's
// or a deleted machine is not found. Stop is refused.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "hyperstack", Type: h100, Region: "canada-1"}] = 2
	g, err := e.cloud.PlaceGroup(ctx, request("cl_l", "hyperstack", "canada-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[0].ID); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("restart while creating: %v", err)
	}
	e.clk.Advance(10 * time.Minute)
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[0].ID); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Requests("POST /instances/" + g.Nodes[0].ID + "/restart"); n != 1 {
		t.Errorf("%d restart calls", n)
	}
	if err := e.cloud.RestartNode(ctx, "cl_other", g.Nodes[0].ID); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("another group's machine: %v", err)
	}
	if err := e.cloud.StopNode(ctx, "cl_l", g.Nodes[0].ID); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("stop: %v", err)
	}
	e.fake.SetStatus(g.Nodes[1].ID, shadeform.StatusError)
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[1].ID); !errors.Is(err, providers.ErrUnrecoverable) {
		t.Errorf("error machine: %v", err)
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_l"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Minute)
	if err := e.cloud.RestartNode(ctx, "cl_l", g.Nodes[0].ID); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("deleted machine: %v", err)
	}
}

func TestConfig(t *testing.T) {
	if _, err := shadeform.New(shadeform.Config{APIKey: "k"}); err == nil {
		t.Error("an agent URL is required")
	}
	if _, err := shadeform.New(shadeform.Config{Agent: bootstrap.AgentInstall{URL: "https://x/cd"}}); err == nil {
		t.Error("a key is required")
	}
	if s := (shadeform.Config{APIKey: testKey}).String(); strings.Contains(s, testKey) {
		t.Errorf("config shows the key: %s", s)
	}
}

// A restart refused because the machine is changing state (409) may work
// later: transient, not a refusal.
func TestRestartConflictIsTransient(t *testing.T) {
	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "hyperstack", Type: h100, Region: "canada-1"}] = 1
	g, err := e.cloud.PlaceGroup(ctx, request("cl_r", "hyperstack", "canada-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Minute)
	e.fake.Inject(fake.Fault{Path: "/instances/" + g.Nodes[0].ID + "/restart", Status: 409, ErrorCode: "INVALID_STATE", Error: "instance is busy"})
	cloud, err := shadeform.New(shadeform.Config{APIKey: testKey, BaseURL: e.url + "/v1", Now: e.clk.Now, Sleep: e.clk.Sleep, Retries: -1,
		Agent: bootstrap.AgentInstall{URL: "https://x/cd"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cloud.RestartNode(ctx, "cl_r", g.Nodes[0].ID); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("409 on restart: %v", err)
	}
}

// Two customers on one Shadeform account (A3, X19, OP1): a create
// names one account key, the operator's (SHADEFORM_SSH_KEY_ID), never a
// customer's, and no customer key is registered; each machine's own
// cluster keys travel in its start-up script (the agent installs them),
// never another customer's.
func TestTwoCustomersKeysStayApart(t *testing.T) {
	const op = "5e1f0a2b-0000-4000-8000-00000000000f"
	e := newEnv(t, func(c *shadeform.Config) { c.SSHKeyID = op })
	e.fake.AddSSHKey("ssh-default-customer", "customer-default", "ssh-ed25519 AAAAstale carol@old") // the default
	e.fake.AddSSHKey(op, "operator", "ssh-ed25519 AAAAoperator op@desk")
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 4
	keys := map[string]string{"cl_orga": "ssh-ed25519 AAAAkeya alice@orga", "cl_orgb": "ssh-ed25519 AAAAkeyb bob@orgb"}
	ids := map[string][]string{}
	for group, key := range keys {
		req := request(group, "lambdalabs", "us-east-1", 2)
		req.SSHKeys = []string{key}
		g, err := e.cloud.PlaceGroup(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range g.Nodes {
			ids[group] = append(ids[group], n.ID)
		}
	}
	if ks := e.fake.SSHKeys(); len(ks) != 2 {
		t.Errorf("the account's keys are %+v: no customer key may be added", ks)
	}
	trusted := e.fake.Trusted()
	if len(trusted) != 4 {
		t.Fatalf("machines %v", trusted)
	}
	for name, k := range trusted {
		if k != "ssh-ed25519 AAAAoperator op@desk" {
			t.Errorf("machine %s was created with key %q, want the operator's", name, k)
		}
	}
	for group := range keys {
		for _, id := range ids[group] {
			script := e.fake.Script(id)
			for other, okey := range keys {
				if has := strings.Contains(script, strings.Fields(okey)[1]); has != (other == group) {
					t.Errorf("machine %s of %s: start-up holds %s's key: %v", id, group, other, has)
				}
			}
		}
	}
}

// The price Shadeform bills is read after create (OP1, Q2): a described
// machine carries its hourly price.
func TestDescribeReportsBilledPrice(t *testing.T) {
	e := newEnv(t)
	e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 2
	if _, err := e.cloud.PlaceGroup(ctx, request("cl_p", "lambdalabs", "us-east-1", 2)); err != nil {
		t.Fatal(err)
	}
	g, err := e.cloud.DescribeGroup(ctx, "cl_p")
	if err != nil || len(g.Nodes) != 2 || g.Nodes[1].MachineHourUSD != 2392*10_000 || g.MachineHourUSD() != 2392*10_000 {
		t.Fatalf("billed price %+v %v, want $23.92 per machine-hour", g, err)
	}
}
