package runpod_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

// A group that fits an Instant Cluster is placed with one POST /v2/clusters
// in the one data center (OP1): every member pod runs the same
// start-up script with the cluster's bootstrap token, and its agent claims
// its rank with RUNPOD_POD_ID, the id the placement returned; the overlay
// address is the private address; stop is ErrUnsupported; terminate is one
// DELETE /v2/clusters/{id}.
func TestInstantCluster(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 4*8, true
	req := request("cl_group", "US-TX-3", 3)
	req.Agent.Token = "cdb_cl_group_mac"
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Requests("POST /v2/clusters"); n != 1 || e.fake.Requests("POST /v2/pods") != 0 {
		t.Fatalf("%d cluster creates and %d pod creates: want one cluster create", n, e.fake.Requests("POST /v2/pods"))
	}
	cc := e.fake.ClusterCreates()[0]
	if cc.Name != "cl_group" || cc.Compute != (runpod.ClusterCompute{GPUTypeID: h100, GPUCountPerPod: 8, PodCount: 3}) ||
		len(cc.DataCenterIDs) != 1 || cc.DataCenterIDs[0] != "US-TX-3" || !cc.StartSSH || cc.Env[runpod.EnvGroup] != "cl_group" {
		t.Fatalf("cluster create %+v", cc)
	}
	enc := strings.TrimSuffix(strings.TrimPrefix(cc.Args, "sh -c 'echo "), " | base64 -d | sh'")
	script, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || !strings.Contains(string(script), "CLUSTERDECK_TOKEN=cdb_cl_group_mac\n") ||
		!strings.Contains(string(script), "${RUNPOD_POD_ID:-}") || strings.Contains(string(script), "agt_") {
		t.Fatalf("the one script must carry the bootstrap token and the pod id, no node token (%v):\n%s", err, script)
	}
	live := e.fake.Live()
	if len(g.Nodes) != 3 || len(live) != 3 {
		t.Fatalf("nodes %+v, live %d", g.Nodes, len(live))
	}
	for i, n := range g.Nodes {
		p := live[i]
		if n.Index != i || n.ID != p.ID || p.Cluster == nil || p.Cluster.Rank == nil || *p.Cluster.Rank != i || n.PrivateIP != *p.Cluster.IP ||
			!strings.HasPrefix(n.PrivateIP, "10.") || p.Args != cc.Args {
			t.Fatalf("node %d %+v for pod %+v", i, n, p)
		}
	}
	// A retry adopts the cluster.
	if again, err := e.cloud.PlaceGroup(ctx, req); err != nil || again.Nodes[2].ID != g.Nodes[2].ID || e.fake.Requests("POST /v2/clusters") != 1 {
		t.Fatalf("retry: %+v %v", again, err)
	}
	e.clk.Advance(5 * time.Minute)
	d, err := e.cloud.DescribeGroup(ctx, "cl_group")
	if err != nil || len(d.Nodes) != 3 || d.Location != "US-TX-3" {
		t.Fatalf("describe %+v %v", d, err)
	}
	for _, n := range d.Nodes {
		if n.State != providers.NodeRunning || n.PublicHost == "" || n.PrivateIP == "" {
			t.Fatalf("booted member %+v", n)
		}
	}
	if err := e.cloud.StopNode(ctx, "cl_group", d.Nodes[1].ID); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("stop of a cluster's pod: want ErrUnsupported, got %v", err)
	}
	// Member pods "cannot be modified or deleted via the pod endpoints":
	// a restart is refused before any pod action is sent (OP1).
	if err := e.cloud.RestartNode(ctx, "cl_group", d.Nodes[1].ID); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("restart of a cluster's pod: want ErrUnsupported, got %v", err)
	}
	if n := e.fake.Requests("POST /v2/pods/" + d.Nodes[1].ID + "/action"); n != 0 {
		t.Fatalf("%d pod actions sent for a member pod", n)
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_group"); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Requests("DELETE /v2/clusters/" + e.fake.ClusterCreatesIDs()[0]); n != 1 || len(e.fake.Live()) != 0 || len(e.fake.Clusters()) != 0 {
		t.Fatalf("%d cluster deletes, %d pods left", n, len(e.fake.Live()))
	}
	if e.fake.Stock[cp] != 4*8 {
		t.Fatalf("stock %d after the delete", e.fake.Stock[cp])
	}
	if err := e.cloud.TerminateGroup(ctx, "cl_group"); err != nil {
		t.Fatalf("second terminate: %v", err)
	}
}

// The per-pod path stays where the shape does not fit a cluster: no
// bootstrap token, a size the clusters do not come in (one pod: the
// description's podCount has minimum 2), or a data center
// without Instant Clusters (OP1).
func TestInstantClusterFallsBackToPods(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		count    int
		token    string
		clusters bool
	}{
		"no bootstrap token": {2, "", true},
		"one machine":        {1, "cdb_x_mac", true},
		"no clusters sold":   {2, "cdb_x_mac", false},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
			e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 9*8, tc.clusters
			req := request("cl_pods", "US-TX-3", tc.count)
			req.Agent.Token = tc.token
			if _, err := e.cloud.PlaceGroup(ctx, req); err != nil {
				t.Fatal(err)
			}
			if e.fake.Requests("POST /v2/clusters") != 0 || e.fake.Requests("POST /v2/pods") != tc.count {
				t.Fatalf("%d cluster creates, %d pod creates", e.fake.Requests("POST /v2/clusters"), e.fake.Requests("POST /v2/pods"))
			}
		})
	}
}

// The cluster fixtures decode into the adapter's types with nothing left
// over, and the fake's clusters and member pods have the schema's fields.
func TestClusterFixturesMatchTypesAndFake(t *testing.T) {
	var cr runpod.CreateClusterRequest
	strictDecode(t, "testdata/create-cluster-request.json", &cr)
	var cl runpod.Cluster
	strictDecode(t, "testdata/cluster.json", &cl)
	var members struct {
		Pods []runpod.Pod `json:"pods"`
	}
	strictDecode(t, "testdata/cluster-pods.json", &members)
	if cr.Compute.PodCount != 2 || cl.Primary == nil || cl.Network == nil || len(members.Pods) != 1 ||
		members.Pods[0].Cluster == nil || *members.Pods[0].Cluster.IP != "10.65.0.2" {
		t.Fatalf("fixtures: %+v %+v %+v", cr, cl, members)
	}
	e := newEnv(t)
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 2*8, true
	req := request("cl_fx", "US-TX-3", 2)
	req.Agent.Token = "cdb_cl_fx_mac"
	if _, err := e.cloud.PlaceGroup(ctx, req); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5 * time.Minute)
	var want map[string]any
	data, _ := os.ReadFile("testdata/cluster.json")
	_ = json.Unmarshal(data, &want)
	wantKeys := slices.Sorted(maps.Keys(want))
	if got := topKeys(t, e.fake.Clusters()[0]); !slices.Equal(got, wantKeys) {
		t.Errorf("fake cluster fields %v, schema's %v", got, wantKeys)
	}
	p := e.fake.Live()[0]
	// An APPLICATION cluster's members have no role (the description's
	// PodCluster.role: "omitted for TRAINING/APPLICATION members").
	if p.Cluster == nil || p.Cluster.Rank == nil || *p.Cluster.Rank != 0 || p.Cluster.Role != nil || p.Cluster.IP == nil {
		t.Errorf("fake member pod's cluster %+v", p.Cluster)
	}
}

// A cluster create whose answer was lost (a 502 after the create went
// through) is found by name, not created twice.
func TestInstantClusterLostAnswer(t *testing.T) {
	e := newEnv(t)
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 4*8, true
	e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/clusters", Status: 502, Apply: true})
	req := request("cl_lost", "US-TX-3", 2)
	req.Agent.Token = "cdb_cl_lost_mac"
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Clusters()); n != 1 || len(g.Nodes) != 2 || e.fake.Requests("POST /v2/clusters") != 1 {
		t.Fatalf("%d clusters, %d creates, nodes %+v", n, e.fake.Requests("POST /v2/clusters"), g.Nodes)
	}
}

// A cluster priced above the placement's ceiling is not used: the pods,
// priced as the offer was quoted, are placed one by one instead (Q2).
func TestInstantClusterAboveCeilingFallsBackToPods(t *testing.T) {
	e := newEnv(t)
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 2*8, true
	e.fake.ClusterPrices = map[string]float64{h100: 3.49}
	req := request("cl_dear", "US-TX-3", 2)
	req.Agent.Token = "cdb_cl_dear_mac"
	req.MaxMachineHourUSD = 8 * 2_990_000 // the pods' price, quoted
	if _, err := e.cloud.PlaceGroup(ctx, req); err != nil {
		t.Fatal(err)
	}
	if e.fake.Requests("POST /v2/clusters") != 0 || e.fake.Requests("POST /v2/pods") != 2 {
		t.Fatalf("%d cluster creates, %d pod creates", e.fake.Requests("POST /v2/clusters"), e.fake.Requests("POST /v2/pods"))
	}
}

// RunPod lists a new cluster's members with "rank": null and no "ip" until
// it assigns them during provisioning (the description's PodCluster). The
// placement waits for them on its clock, deletes nothing, creates one
// cluster, and maps each pod to the rank it was given, never to rank 0 for
// a null (OP1).
func TestInstantClusterAwaitsRanks(t *testing.T) {
	e := newEnv(t)
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 9*8, true
	e.fake.RankDelay = 20 * time.Second
	req := request("cl_rank", "US-TX-3", 9) // more than 8: the description's podCount goes to 250
	req.Agent.Token = "cdb_cl_rank_mac"
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n, d := e.fake.Requests("POST /v2/clusters"), e.fake.Requests("DELETE /v2/clusters/"+e.fake.ClusterCreatesIDs()[0]); n != 1 || d != 0 {
		t.Fatalf("%d cluster creates and %d deletes: want one create, no delete", n, d)
	}
	if e.fake.Requests("GET /v2/clusters/"+e.fake.ClusterCreatesIDs()[0]+"/pods") < 2 {
		t.Fatal("the members were read once: the null ranks were not awaited")
	}
	byID := map[string]runpod.Pod{}
	for _, p := range e.fake.Live() {
		byID[p.ID] = p
	}
	seen := map[string]bool{}
	for i, n := range g.Nodes {
		p := byID[n.ID]
		if n.Index != i || p.Cluster == nil || p.Cluster.Rank == nil || *p.Cluster.Rank != i || seen[n.ID] ||
			p.Cluster.IP == nil || n.PrivateIP != *p.Cluster.IP {
			t.Fatalf("node %d %+v for pod %+v", i, n, p.Cluster)
		}
		seen[n.ID] = true
	}
}

// When the ranks take longer than one placement call waits, the call
// answers ErrTransient and keeps the cluster; the next call adopts it
// (no second create, no delete) and completes once the ranks are there.
// Describing the group meanwhile never reports an unranked member as
// rank 0 (OP1).
func TestInstantClusterRanksAcrossCalls(t *testing.T) {
	e := newEnv(t, func(c *runpod.Config) { c.MemberWait = 10 * time.Second })
	cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
	e.fake.Stock[cp], e.fake.ClusterCaps[cp] = 2*8, true
	e.fake.RankDelay = 2 * time.Minute
	req := request("cl_slow", "US-TX-3", 2)
	req.Agent.Token = "cdb_cl_slow_mac"
	_, err := e.cloud.PlaceGroup(ctx, req)
	if !errors.Is(err, providers.ErrTransient) || !strings.Contains(err.Error(), "no rank yet") {
		t.Fatalf("want a transient wait naming the unassigned ranks, got %v", err)
	}
	id := e.fake.ClusterCreatesIDs()[0]
	if len(e.fake.Clusters()) != 1 || e.fake.Requests("DELETE /v2/clusters/"+id) != 0 {
		t.Fatalf("the cluster was rolled back for a state the description allows: %d clusters", len(e.fake.Clusters()))
	}
	d, err := e.cloud.DescribeGroups(ctx, []string{"cl_slow"})
	if err != nil {
		t.Fatal(err)
	}
	if nodes := d["cl_slow"].Nodes; len(nodes) != 0 {
		t.Fatalf("unranked members described as %+v", nodes)
	}
	e.clk.Advance(2 * time.Minute)
	g, err := e.cloud.PlaceGroup(ctx, req)
	if err != nil || len(g.Nodes) != 2 || e.fake.Requests("POST /v2/clusters") != 1 {
		t.Fatalf("adopting call: %+v %v (%d creates)", g, err, e.fake.Requests("POST /v2/clusters"))
	}
	if g.Nodes[0].ID == g.Nodes[1].ID || g.Nodes[0].PrivateIP == "" || g.Nodes[1].PrivateIP == "" {
		t.Fatalf("nodes %+v", g.Nodes)
	}
}
