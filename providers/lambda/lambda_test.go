package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
	"github.com/clusterdeck/clusterdeck/providers/providerstest"
)

// The catalog of the documented instance-types example becomes one offer
// per GPU type and region: a yes/no capacity signal is NodesAvailable nil
// with Available telling which, never a guessed count; the price per
// machine-hour in cents becomes micro-dollars per GPU-hour (O1, OP1).
func TestListOffersFromDocumentedCatalog(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		file := map[string]string{"/api/v1/instance-types": "testdata/instance-types.json", "/api/v1/regions": "testdata/regions.json"}[r.URL.Path]
		if r.Method != http.MethodGet || file == "" {
			http.NotFound(w, r)
			return
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	clk := newClock()
	c := must(lambda.New(lambda.Config{APIKey: testKey, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now,
		Sleep: clk.Sleep, Agent: lambda.AgentInstall{URL: "https://deck.example.com/clusterdeck"}}))
	offers := must(c.ListOffers(context.Background()))
	if len(offers) != 2 {
		t.Fatalf("want the H100 type in 2 regions (the CPU type is not sold), got %+v", offers)
	}
	east, west := offers[0], offers[1]
	if east.Location != "us-east-1" || west.Location != "us-west-1" {
		t.Fatalf("regions: %s, %s", east.Location, west.Location)
	}
	want := providers.Offer{Provider: "lambda", OfferID: "gpu_8x_h100_sxm5gdr.us-west-1", Location: "us-west-1",
		LocationName: "California, USA", Interconnect: providers.Ethernet, MachineKind: providers.VM,
		Accelerator: "H100_80GB", GPUsPerNode: 8, VCPUs: 208, MemoryGB: 1800, PerGPUHourUSD: 4_490_000,
		RootDiskGB: 24780, Available: true, BootTime: lambda.BootTime, PublicIPs: true}
	if west != want {
		t.Errorf("us-west-1 offer\n got %+v\nwant %+v", west, want)
	}
	if west.NodesAvailable != nil || east.NodesAvailable != nil {
		t.Error("a yes/no capacity signal must leave NodesAvailable nil")
	}
	if east.Available || east.OfferID != "gpu_8x_h100_sxm5gdr.us-east-1" || east.PerGPUHourUSD != 4_490_000 {
		t.Errorf("us-east-1 has no capacity listed: %+v", east)
	}
	if west.MachineHourUSD() != 35_920_000 {
		t.Errorf("machine-hour %d µ$, want $35.92 as listed", west.MachineHourUSD())
	}
	if len(auth) != 2 || auth[0] != "Bearer "+testKey {
		t.Errorf("auth headers %q", auth)
	}
}

// LAMBDA_REGIONS limits the offers (and placements) to the allowed regions.
func TestRegionsAllowed(t *testing.T) {
	e := newEnv(t, func(c *lambda.Config) { c.Regions = []string{"us-east-1"} })
	e.fake.SetCapacity(h100, "us-east-1", 1)
	offers := must(e.cloud.ListOffers(context.Background()))
	for _, o := range offers {
		if o.Location != "us-east-1" {
			t.Errorf("offer in %s", o.Location)
		}
	}
	if len(offers) != 2 { // H100 and A10 in us-east-1
		t.Errorf("offers: %+v", offers)
	}
	_, err := e.cloud.PlaceGroup(context.Background(), request("cl_x", "us-west-1", 1))
	if !errors.Is(err, providers.ErrValidation) {
		t.Errorf("placing outside LAMBDA_REGIONS: %v", err)
	}
	if len(e.fake.Launches()) != 0 {
		t.Error("a refused region must not be launched into")
	}
}

func TestAccelerator(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity("gpu_1x_a10", "us-west-1", 1)
	offers := must(e.cloud.ListOffers(context.Background()))
	var a10 []providers.Offer
	for _, o := range offers {
		if o.Accelerator == "A10_24GB" {
			a10 = append(a10, o)
		}
	}
	if len(a10) != 3 || a10[0].PerGPUHourUSD != 750_000 || a10[0].GPUsPerNode != 1 {
		t.Fatalf("A10 offers %+v", a10)
	}
	for _, o := range a10 {
		if o.Available != (o.Location == "us-west-1") {
			t.Errorf("%s available=%v", o.Location, o.Available)
		}
	}
}

// Placement launches one machine per call, each named and tagged with the
// group, at least 12 s apart; the machines boot, get addresses and are
// described together (OP1, R1).
func TestPlaceGroupLaunchesEachMachine(t *testing.T) {
	e := newEnv(t)
	e.fake.RequestInterval = time.Second // the documented 1 request/s, enforced with 429s
	e.fake.SetCapacity(h100, "us-west-1", 3)
	ctx := context.Background()
	g := must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 3)))
	if g.Name != "cl_1" || g.Location != "us-west-1" || len(g.Nodes) != 3 {
		t.Fatalf("group %+v", g)
	}
	launches := e.fake.Launches()
	if len(launches) != 3 {
		t.Fatalf("%d launches, want one per machine", len(launches))
	}
	if n := e.fake.TooMany(); n != 0 {
		t.Errorf("the fake answered 429 %d times: the adapter must keep to 1 request/s and 1 launch/12 s", n)
	}
	for i, l := range launches {
		if l.Status != http.StatusOK {
			t.Errorf("launch %d answered %d: the pacing must keep below the limits", i, l.Status)
		}
		if i > 0 && l.At.Sub(launches[i-1].At) < 12*time.Second {
			t.Errorf("launch %d came %v after the previous one", i, l.At.Sub(launches[i-1].At))
		}
		r := l.Request
		if r.Name != "cl_1-"+string(rune('0'+i)) || r.RegionName != "us-west-1" || r.InstanceTypeName != h100 ||
			len(r.SSHKeyNames) != 1 || !slices.Contains(r.Tags, lambda.Tag{Key: lambda.TagGroup, Value: "cl_1"}) {
			t.Errorf("launch %d request %+v", i, r)
		}
	}
	for i, n := range g.Nodes {
		if n.Index != i || n.State != providers.NodePending || n.ID == "" {
			t.Errorf("node %d %+v", i, n)
		}
		// Each machine carries its own agent token, never another's.
		ud := e.fake.UserData(n.ID)
		if !strings.Contains(ud, "CLUSTERDECK_TOKEN=agt_cl_1_"+string(rune('a'+i))+"\n") || strings.Count(ud, "agt_cl_1_") != 1 {
			t.Errorf("node %d user_data carries the wrong token:\n%s", i, ud)
		}
	}
	e.clk.Advance(5 * time.Minute)
	g = must(e.cloud.DescribeGroup(ctx, "cl_1"))
	for i, n := range g.Nodes {
		if n.State != providers.NodeRunning || n.PublicHost == "" || n.PrivateIP == "" || n.SSHPort != 22 || n.SSHUser != "ubuntu" {
			t.Errorf("booted node %d: %+v", i, n)
		}
	}
	if e.fake.Free(h100, "us-west-1") != 0 {
		t.Error("three machines took the region's three")
	}
	if n := e.fake.TooMany(); n != 0 {
		t.Errorf("429 answers: %d", n)
	}
}

// A retried placement adopts the group's machines: nothing is launched twice.
func TestPlaceGroupIdempotent(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	ctx := context.Background()
	first := must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 2)))
	again := must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 2)))
	if len(e.fake.Launches()) != 2 || len(e.fake.Live()) != 2 {
		t.Fatalf("%d launches, %d live after a retry", len(e.fake.Launches()), len(e.fake.Live()))
	}
	for i := range first.Nodes {
		if first.Nodes[i].ID != again.Nodes[i].ID {
			t.Errorf("node %d: %s then %s", i, first.Nodes[i].ID, again.Nodes[i].ID)
		}
	}
	// The same group name for another shape is refused, and nothing is launched.
	other := request("cl_1", "us-west-1", 2)
	other.OfferID = lambda.OfferID("gpu_1x_a10", "us-west-1")
	if _, err := e.cloud.PlaceGroup(ctx, other); !errors.Is(err, providers.ErrValidation) || len(e.fake.Launches()) != 2 {
		t.Fatalf("the group asked again as A10s: %v, %d launches", err, len(e.fake.Launches()))
	}
	if _, err := e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 1)); !errors.Is(err, providers.ErrValidation) {
		t.Fatalf("the group of 2 asked again as 1: %v", err)
	}
	if len(e.fake.Live()) != 2 {
		t.Fatal("a conflicting request must not roll back the live group")
	}
	// A refusal mid-way rolls the new group back.
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 400, Code: "global/invalid-parameters", Message: "boom"})
	_, err := e.cloud.PlaceGroup(ctx, request("cl_2", "us-west-1", 2))
	if !errors.Is(err, providers.ErrValidation) {
		t.Fatalf("want the refusal, got %v", err)
	}
	if len(e.fake.Live()) != 2 {
		t.Fatalf("a refused group leaves nothing: %d live", len(e.fake.Live()))
	}
}

// All or nothing: the catalog says yes, the third launch says no capacity;
// the two machines already launched are terminated before the error returns.
func TestPlaceGroupRollsBackOnCapacityMidway(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 2)
	ctx := context.Background()
	_, err := e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 3))
	if !errors.Is(err, providers.ErrNoCapacity) {
		t.Fatalf("want ErrNoCapacity, got %v", err)
	}
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Code != "instance-operations/launch/insufficient-capacity" || pe.Location != "us-west-1" {
		t.Errorf("error %+v", pe)
	}
	if n := len(e.fake.Launches()); n != 3 {
		t.Errorf("%d launches", n)
	}
	if live := e.fake.Live(); len(live) != 0 {
		t.Errorf("rolled-back group left %d machines running", len(live))
	}
	if e.fake.Free(h100, "us-west-1") != 2 {
		t.Errorf("capacity %d after the rollback, want 2 back", e.fake.Free(h100, "us-west-1"))
	}
	g := must(e.cloud.DescribeGroup(ctx, "cl_1"))
	for _, n := range g.Nodes {
		if n.State != providers.NodeTerminated {
			t.Errorf("node %+v after rollback", n)
		}
	}
	// The same ranks can be placed again later; the terminated ones do not count.
	e.fake.SetCapacity(h100, "us-west-1", 3)
	g = must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 3)))
	if len(e.fake.Live()) != 3 || len(g.Nodes) != 3 {
		t.Fatalf("retry placed %d", len(e.fake.Live()))
	}
	g = must(e.cloud.DescribeGroup(ctx, "cl_1"))
	for _, n := range g.Nodes {
		if n.State != providers.NodePending {
			t.Errorf("describe after re-placement prefers the live machine: %+v", n)
		}
	}
}

// No capacity listed for the region: refused before any launch (launches are
// rate-limited; the catalog is the cheap question).
func TestPlaceGroupNoCapacityListed(t *testing.T) {
	e := newEnv(t)
	_, err := e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 2))
	if !errors.Is(err, providers.ErrNoCapacity) || len(e.fake.Launches()) != 0 {
		t.Fatalf("err %v, %d launches", err, len(e.fake.Launches()))
	}
}

// Quota and an unknown SSH key are refusals of their own class, rolled back.
func TestPlaceGroupQuotaAndValidation(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	e.fake.Quota = 1
	_, err := e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 2))
	if !errors.Is(err, providers.ErrQuota) || len(e.fake.Live()) != 0 {
		t.Fatalf("quota: %v, %d live", err, len(e.fake.Live()))
	}
	e2 := newEnv(t, func(c *lambda.Config) { c.SSHKeyName = "missing-key" })
	e2.fake.SetCapacity(h100, "us-west-1", 5)
	_, err = e2.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 1))
	var pe *providers.Error
	if !errors.Is(err, providers.ErrValidation) || !errors.As(err, &pe) || pe.Code != "global/object-does-not-exist" {
		t.Fatalf("unknown key on launch is a validation refusal, got %v", err)
	}
	if len(e2.fake.Live()) != 0 {
		t.Fatal("nothing placed")
	}
}

// V4 on Lambda: the adapter cannot attach a volume to a machine, so a
// placement with one is refused as unsupported before anything launches.
func TestPlaceGroupWithVolumeRefused(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	req := request("cl_1", "us-west-1", 2)
	req.Volume = &providers.Volume{ID: "vol_1", Name: "ckpt", SizeGB: 100}
	_, err := e.cloud.PlaceGroup(context.Background(), req)
	var pe *providers.Error
	if !errors.Is(err, providers.ErrUnsupported) || !errors.As(err, &pe) || pe.Code != "unsupported" {
		t.Fatalf("a placement with a volume: %v, want unsupported", err)
	}
	if len(e.fake.Launches()) != 0 || len(e.fake.Live()) != 0 {
		t.Fatalf("%d launches, %d live after the refusal", len(e.fake.Launches()), len(e.fake.Live()))
	}
	req.Volume = nil
	if _, err := e.cloud.PlaceGroup(context.Background(), req); err != nil {
		t.Fatalf("the same placement without a volume: %v", err)
	}
}

// Two customers on one Lambda account (A3, X19, OP1): every launch
// names the operator's key (LAMBDA_SSH_KEY_NAME), never a customer's, and
// no customer key is registered on the account; each machine's own
// cluster keys travel in its user_data workload (the agent installs them),
// never another customer's. Without the operator's key nothing launches.
func TestSSHKeys(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 4)
	keys := map[string]string{"cl_orga": "ssh-ed25519 AAAAkeya alice@orga", "cl_orgb": "ssh-ed25519 AAAAkeyb bob@orgb"}
	for _, group := range []string{"cl_orga", "cl_orgb"} {
		req := request(group, "us-west-1", 2)
		req.SSHKeys = []string{keys[group]}
		must(e.cloud.PlaceGroup(ctx, req))
	}
	if ks := e.fake.SSHKeys(); len(ks) != 1 || ks[0].Name != "my-public-key" {
		t.Errorf("the account's keys are %+v: no customer key may be added", ks)
	}
	trusted := e.fake.Trusted()
	if len(trusted) != 4 {
		t.Fatalf("machines %v", trusted)
	}
	for name, k := range trusted {
		if k != "ssh-ed25519 AAAAC3Nza my-public-key" {
			t.Errorf("machine %s was launched with key %q, want the operator's", name, k)
		}
	}
	for _, in := range e.fake.Live() {
		group := in.Name[:strings.LastIndex(in.Name, "-")]
		ud := e.fake.UserData(in.ID)
		for other, key := range keys {
			if has := strings.Contains(ud, `"sshKeys":["`+key+`"]`); has != (other == group) {
				t.Errorf("machine %s of %s: its workload holds %s's key: %v", in.Name, group, other, has)
			}
		}
	}
	e2 := newEnv(t, func(c *lambda.Config) { c.SSHKeyName = "" })
	e2.fake.SetCapacity(h100, "us-west-1", 1)
	if _, err := e2.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 1)); !errors.Is(err, providers.ErrValidation) ||
		!strings.Contains(err.Error(), "LAMBDA_SSH_KEY_NAME") || len(e2.fake.Launches()) != 0 || len(e2.fake.SSHKeys()) != 1 {
		t.Errorf("no operator key: %v, %d launches", err, len(e2.fake.Launches()))
	}
}

// DescribeGroups answers many groups with one list call (R1); after
// terminate the machines are terminated, then unknown (ErrNotFound).
func TestDescribeAfterTerminate(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	ctx := context.Background()
	must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 2)))
	must(e.cloud.PlaceGroup(ctx, request("cl_2", "us-west-1", 1)))
	e.clk.Advance(5 * time.Minute)
	before := e.fake.Requests("GET /api/v1/instances")
	gs := must(e.cloud.DescribeGroups(ctx, []string{"cl_1", "cl_2", "cl_unknown"}))
	if e.fake.Requests("GET /api/v1/instances")-before != 1 {
		t.Error("describing many groups must be one list call")
	}
	if len(gs) != 2 || len(gs["cl_1"].Nodes) != 2 || len(gs["cl_2"].Nodes) != 1 {
		t.Fatalf("groups %+v", gs)
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_1"); err != nil {
		t.Fatal(err)
	}
	g := must(e.cloud.DescribeGroup(ctx, "cl_1"))
	for _, n := range g.Nodes {
		if n.State != providers.NodeTerminated {
			t.Errorf("after terminate: %+v", n)
		}
	}
	if g := must(e.cloud.DescribeGroup(ctx, "cl_2")); g.Nodes[0].State != providers.NodeRunning {
		t.Errorf("the other group is untouched: %+v", g.Nodes[0])
	}
	e.clk.Advance(10 * time.Minute) // gone from Lambda's list
	if _, err := e.cloud.DescribeGroup(ctx, "cl_1"); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("a group Lambda no longer lists is ErrNotFound, got %v", err)
	}
	if _, err := e.cloud.DescribeGroup(ctx, "cl_unknown"); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("unknown group: %v", err)
	}
}

// Terminating a group Lambda does not know, twice, or one whose machine
// vanished between the list and the call, is success.
func TestTerminateMissingIsSuccess(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	ctx := context.Background()
	if err := e.cloud.TerminateGroup(ctx, "cl_never"); err != nil {
		t.Fatal(err)
	}
	must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 2)))
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/terminate", Status: 404,
		Code: "global/object-does-not-exist", Message: "Specified instance does not exist."})
	if err := e.cloud.TerminateGroup(ctx, "cl_1"); err != nil {
		t.Fatal(err)
	}
	if len(e.fake.Live()) != 0 {
		t.Error("every machine is terminated even after a 404 on the batch")
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_1"); err != nil {
		t.Errorf("second terminate: %v", err)
	}
}

// Restart: refused while booting (409, ErrTransient), then accepted; the
// machine reads restarting, then running; unknown or foreign machines are
// ErrNotFound; a preempted one cannot come back (R3).
func TestRestartNode(t *testing.T) {
	e := newEnv(t, func(c *lambda.Config) { c.Retries = -1 })
	e.fake.SetCapacity(h100, "us-west-1", 5)
	ctx := context.Background()
	g := must(e.cloud.PlaceGroup(ctx, request("cl_1", "us-west-1", 2)))
	id := g.Nodes[1].ID
	err := e.cloud.RestartNode(ctx, "cl_1", id)
	var pe *providers.Error
	if !errors.Is(err, providers.ErrTransient) || !errors.As(err, &pe) || pe.Code != "global/conflict" {
		t.Fatalf("restart while booting: %v", err)
	}
	e.clk.Advance(5 * time.Minute)
	if err := e.cloud.RestartNode(ctx, "cl_1", id); err != nil {
		t.Fatal(err)
	}
	if e.fake.Requests("POST /api/v1/instance-operations/restart") != 2 {
		t.Error("restart goes through the restart endpoint")
	}
	g = must(e.cloud.DescribeGroup(ctx, "cl_1"))
	if g.Nodes[1].State != providers.NodeRestarting || g.Nodes[0].State != providers.NodeRunning {
		t.Errorf("during restart: %+v", g.Nodes)
	}
	e.clk.Advance(3 * time.Minute)
	if g = must(e.cloud.DescribeGroup(ctx, "cl_1")); g.Nodes[1].State != providers.NodeRunning {
		t.Errorf("after restart: %+v", g.Nodes[1])
	}
	if err := e.cloud.RestartNode(ctx, "cl_other", id); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("another group's machine: %v", err)
	}
	if err := e.cloud.RestartNode(ctx, "cl_1", strings.Repeat("f", 32)); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("unknown machine: %v", err)
	}
	e.fake.SetStatus(g.Nodes[0].ID, lambda.StatusPreempted)
	if err := e.cloud.RestartNode(ctx, "cl_1", g.Nodes[0].ID); !errors.Is(err, providers.ErrUnrecoverable) {
		t.Errorf("preempted machine: %v", err)
	}
	if g = must(e.cloud.DescribeGroup(ctx, "cl_1")); g.Nodes[0].State != providers.NodeFailed {
		t.Errorf("preempted reads failed: %+v", g.Nodes[0])
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_1"); err != nil {
		t.Fatal(err)
	}
	if err := e.cloud.RestartNode(ctx, "cl_1", id); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("terminating machine: %v", err)
	}
}

// A wrong key or an inactive account is ErrAuth, not retried, and the key
// never appears in an error.
func TestAuthErrors(t *testing.T) {
	e := newEnv(t, func(c *lambda.Config) { c.APIKey = "wrong_key_987" })
	_, err := e.cloud.ListOffers(context.Background())
	var pe *providers.Error
	if !errors.Is(err, providers.ErrAuth) || !errors.As(err, &pe) || pe.Code != "global/invalid-api-key" {
		t.Fatalf("wrong key: %v", err)
	}
	if strings.Contains(err.Error(), "wrong_key_987") || strings.Contains(err.Error(), testKey) {
		t.Errorf("error shows the key: %v", err)
	}
	if n := e.fake.Requests("GET /api/v1/instance-types"); n != 1 {
		t.Errorf("an auth failure is not retried: %d requests", n)
	}
	e2 := newEnv(t)
	e2.fake.Inactive = true
	if err := e2.cloud.TerminateGroup(context.Background(), "cl_1"); !errors.Is(err, providers.ErrAuth) {
		t.Errorf("inactive account: %v", err)
	}
	if s := (lambda.Config{APIKey: testKey}).String(); strings.Contains(s, testKey) {
		t.Errorf("config prints its key: %s", s)
	}
}

// A 429 with Retry-After is waited out on the fake clock, then the launch
// succeeds; the next launch keeps its 12 s distance from the accepted one.
func TestRateLimitHonoured(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 429, Code: "global/too-many-requests",
		Message: "Too many requests.", RetryAfter: "30"})
	start := e.clk.Now()
	must(e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 2)))
	if !slices.Contains(e.clk.Slept(), 30*time.Second) {
		t.Errorf("Retry-After 30 s not honoured: slept %v", e.clk.Slept())
	}
	l := e.fake.Launches()
	if len(l) != 2 || l[0].At.Sub(start) < 30*time.Second || l[1].At.Sub(l[0].At) < 12*time.Second {
		t.Errorf("launch times %v, %v (start %v)", l[0].At, l[1].At, start)
	}
	// Without Retry-After a rate-limited launch still waits the documented 12 s.
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 429, Code: "global/too-many-requests"})
	before := len(e.clk.Slept())
	must(e.cloud.PlaceGroup(context.Background(), request("cl_2", "us-west-1", 1)))
	waited := time.Duration(0)
	for _, d := range e.clk.Slept()[before:] {
		waited += d
	}
	if waited < 12*time.Second {
		t.Errorf("waited %v after a bare 429", waited)
	}
}

// Only transient failures are retried, with growing backoff; refusals are not.
func TestRetriesOnlyTransient(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.fake.Inject(
		fake.Fault{Path: "/api/v1/instance-types", Status: 503, Code: "provider/internal-unavailable", Message: "Provider unavailable"},
		fake.Fault{Path: "/api/v1/instance-types", Status: 502}, // a proxy's page, not JSON
	)
	must(e.cloud.ListOffers(ctx))
	if n := e.fake.Requests("GET /api/v1/instance-types"); n != 3 {
		t.Errorf("%d requests, want 2 transient failures then success", n)
	}
	if s := e.clk.Slept(); len(s) < 2 || s[1] <= s[0] {
		t.Errorf("backoff does not grow: %v", s)
	}

	e = newEnv(t)
	e.fake.Inactive = true // 403 global/account-inactive, as the description spells it
	if _, err := e.cloud.ListOffers(ctx); !errors.Is(err, providers.ErrAuth) {
		t.Errorf("403: %v", err)
	}
	if n := e.fake.Requests("GET /api/v1/instance-types"); n != 1 {
		t.Errorf("a refusal was retried: %d requests", n)
	}

	e = newEnv(t, func(c *lambda.Config) { c.Retries = 2 })
	for range 3 {
		e.fake.Inject(fake.Fault{Path: "/api/v1/instances", Status: 500, Code: "provider/internal-unavailable"})
	}
	if _, err := e.cloud.DescribeGroup(ctx, "cl_1"); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("retries exhausted: %v", err)
	}
	if n := e.fake.Requests("GET /api/v1/instances"); n != 3 {
		t.Errorf("%d attempts, want 1 + 2 retries", n)
	}
}

// A launch whose answer is lost but which happened is adopted, not repeated;
// one that did not happen is sent again.
func TestLaunchLostAnswer(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 5)
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 502, Apply: true},
		fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 503, Code: "provider/internal-unavailable"})
	g := must(e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 2)))
	live := e.fake.Live()
	if len(live) != 2 {
		t.Fatalf("%d machines for a group of 2", len(live))
	}
	if g.Nodes[0].ID != live[0].ID || g.Nodes[1].ID != live[1].ID {
		t.Errorf("nodes %+v, live %+v", g.Nodes, live)
	}
}

// Every documented error body (testdata/errors.json) maps onto its class
// (the Lambda Cloud API v1 error table); a bare 429 is a rate limit, a
// proxy's 5xx page transient. Refusals carry Lambda's code and message.
func TestErrorTable(t *testing.T) {
	want := map[string]error{
		"instance-operations/launch/insufficient-capacity":       providers.ErrNoCapacity,
		"global/quota-exceeded":                                  providers.ErrQuota,
		"global/invalid-parameters":                              providers.ErrValidation,
		"instance-operations/launch/file-system-in-wrong-region": providers.ErrValidation,
		"global/duplicate":                                       providers.ErrValidation,
		"global/not-found":                                       providers.ErrNotFound,
		"global/invalid-api-key":                                 providers.ErrAuth,
		"global/account-inactive":                                providers.ErrAuth,
		"global/invalid-address":                                 providers.ErrAuth,
		"global/forbidden":                                       providers.ErrAuth,
		"global/conflict":                                        providers.ErrTransient,
		"provider/internal-unavailable":                          providers.ErrTransient,
	}
	type answer struct {
		status int
		body   []byte
	}
	var cur answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(cur.status)
		_, _ = w.Write(cur.body)
	}))
	defer srv.Close()
	clk := newClock()
	c := must(lambda.New(lambda.Config{APIKey: testKey, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now,
		Sleep: clk.Sleep, Retries: -1, Agent: lambda.AgentInstall{URL: "https://deck.example.com/clusterdeck"}}))
	seen := 0
	for status, list := range readJSON(t, "testdata/errors.json") {
		for _, item := range list.([]any) {
			e := item.(map[string]any)["error"].(map[string]any)
			code := e["code"].(string)
			cur = answer{status: atoi(t, status), body: must(json.Marshal(item))}
			class, ok := want[code]
			if code == "global/object-does-not-exist" {
				// On a launch it names a missing SSH key or file system; elsewhere the instance is gone.
				class, ok = providers.ErrNotFound, true
			}
			if !ok {
				t.Errorf("no expectation for documented code %s", code)
				continue
			}
			err := c.TerminateGroup(context.Background(), "cl_1")
			var pe *providers.Error
			if !errors.Is(err, class) || !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, e["message"].(string)) {
				t.Errorf("%s %s: got %v, want %v", status, code, err, class)
			}
			seen++
		}
	}
	if seen < len(want) {
		t.Errorf("only %d documented errors checked", seen)
	}
	for _, c2 := range []struct {
		status int
		want   error
	}{{429, providers.ErrRateLimited}, {502, providers.ErrTransient}, {500, providers.ErrTransient}, {401, providers.ErrAuth}} {
		cur = answer{status: c2.status, body: []byte("<html>not json</html>")}
		if err := c.TerminateGroup(context.Background(), "cl_1"); !errors.Is(err, c2.want) {
			t.Errorf("bare %d: %v", c2.status, err)
		}
	}
	// The same code on a launch is a validation refusal.
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 1)
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 400, Code: "global/object-does-not-exist", Message: "no such key"})
	if _, err := e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 1)); !errors.Is(err, providers.ErrValidation) {
		t.Errorf("object-does-not-exist on launch: %v", err)
	}
	// 1.8.3 also lists it as the launch's 404 (ApiErrorLaunchResourceNotFound):
	// a named resource missing, still a refusal, not a machine gone.
	e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 404, Code: "global/object-does-not-exist", Message: "no such key"})
	if _, err := e.cloud.PlaceGroup(context.Background(), request("cl_2", "us-west-1", 1)); !errors.Is(err, providers.ErrValidation) {
		t.Errorf("object-does-not-exist (404) on launch: %v", err)
	}
}

// The gap list stays true: each thing 1.8.3 added over the 1.6.0 copy kept
// before (and a status it lists for some operation) is one the document
// has, so that listing it as a gap fails the load; the kept list loads
// (OP1).
func TestDescriptionGapsStayTrue(t *testing.T) {
	for _, g := range []providerstest.Gap{
		{Schema: "InstanceLaunchRequest", Property: "hostname"},
		{Schema: "InstanceLaunchRequest", Property: "tags"},
		{Schema: "Instance", Property: "tags"},
		{Schema: "InstanceStatus", Value: "preempted"},
		{Status: 409},
		{Operation: "POST /api/v1/instance-operations/restart", Status: 404},
		{Operation: "GET /api/v1/instances"},
	} {
		if err := description.Lacks(g); err == nil {
			t.Errorf("gap %+v: the copy has it, yet it reads as a gap", g)
		}
	}
	for _, g := range []providerstest.Gap{
		{Operation: "POST /api/v1/instance-operations/terminate", Status: 409},
		{Schema: "Instance", Property: "no_such_field"},
	} {
		if err := description.Lacks(g); err != nil {
			t.Errorf("gap %+v: %v", g, err)
		}
	}
}

// Lambda's description says provider/ errors come from its upstream
// services and include "quota limitations or resource exhaustion" beside
// outages and unavailability. A capacity or quota answer of that family is
// refused at once — one launch request, no retries — while an outage stays
// transient and is retried (OP1). Only provider/internal-unavailable
// is documented; the other two bodies are shapes the description allows.
func TestProviderErrorsFollowTheDescription(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		want          error
		launches      int
	}{
		{"provider/resource-exhausted", "Upstream capacity exhausted in us-west-1", providers.ErrNoCapacity, 1},
		{"provider/quota-exceeded", "Upstream quota reached", providers.ErrQuota, 1},
		{"provider/internal-unavailable", "Provider unavailable", providers.ErrTransient, 5},
	} {
		t.Run(tc.code, func(t *testing.T) {
			e := newEnv(t)
			e.fake.SetCapacity(h100, "us-west-1", 1)
			for range 5 {
				e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", Status: 503, Code: tc.code, Message: tc.message})
			}
			_, err := e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 1))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if n := e.fake.Requests("POST /api/v1/instance-operations/launch"); n != tc.launches {
				t.Fatalf("%d launch requests, want %d", n, tc.launches)
			}
		})
	}
}

// Within a job tick (a providers.Memo), every cluster the tick describes
// shares one listing of the account's machines (R1): Lambda's requests
// are paced one a second, so N listings would take N seconds of the tick.
func TestDescribeGroupsOneListingPerTick(t *testing.T) {
	e := newEnv(t)
	tick := providers.WithMemo(context.Background())
	for _, g := range []string{"cl_1", "cl_2", "cl_3"} {
		if _, err := e.cloud.DescribeGroups(tick, []string{g}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.fake.Requests("GET /api/v1/instances"); n != 1 {
		t.Errorf("%d listings in one tick, want 1", n)
	}
	if _, err := e.cloud.DescribeGroups(context.Background(), []string{"cl_1"}); err != nil || e.fake.Requests("GET /api/v1/instances") != 2 {
		t.Errorf("outside a tick the listing is read afresh: %v", err)
	}
}

// The price Lambda bills is read after create (OP1, Q2): a described
// machine carries its instance type's price per machine-hour.
func TestDescribeReportsBilledPrice(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 2)
	must(e.cloud.PlaceGroup(context.Background(), request("cl_1", "us-west-1", 2)))
	g, err := e.cloud.DescribeGroup(context.Background(), "cl_1")
	if err != nil || len(g.Nodes) != 2 || g.Nodes[0].MachineHourUSD != 3592*10_000 || g.MachineHourUSD() != 3592*10_000 {
		t.Fatalf("billed price %+v %v, want $35.92 per machine-hour", g, err)
	}
}
