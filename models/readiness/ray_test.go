package readiness

import (
	"slices"
	"strings"
	"testing"
)

const (
	rayNodeA = "0bf2868539ecac836c61a352462452b953710b904e9f6b0b9d4b25c1"
	rayNodeB = "9141273b0ca7727b27c33f7d427040275356cfc7a2ea43685c400099"
	rayNodeC = "328da3b1e9273cf946f6ac3dfee9404dacf429566cd0809a7f04f01c"
)

type rayCase struct {
	name     string
	file     string
	expected []string
	err      error
	check    func(t *testing.T, r Report)
}

var rayFixtures = []rayCase{
	{
		name: "2.x Healthy with GPUs: both node ids", file: "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt",
		expected: []string{"node_" + rayNodeA, rayNodeB},
		check: func(t *testing.T, r Report) {
			if !r.Ready || r.TotalGPUs != 4 || r.Healthy != 2 || len(r.Nodes) != 2 {
				t.Fatalf("want ready with 4 GPUs: %+v", r)
			}
			if n := node(t, r, rayNodeB); !n.OK || n.State != "healthy" {
				t.Errorf("node B = %+v", n)
			}
			if r.Summary != "ready: 2 live nodes, 2 expected, 4 GPUs" {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "2.x Healthy with GPUs: a third node expected", file: "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt",
		expected: []string{rayNodeA, rayNodeB, "10.77.0.3"},
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{"10.77.0.3"}) {
				t.Fatalf("want 10.77.0.3 missing: %+v", r)
			}
			if !strings.Contains(r.Summary, "2 live nodes, 3 expected") {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "2.x Healthy with GPUs: a node id prefix does not match", file: "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt",
		expected: []string{rayNodeA[:10]},
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Missing) != 1 {
				t.Fatalf("want the prefix missing: %+v", r)
			}
		},
	},
	{
		name: "2.x Healthy with GPUs: nothing expected", file: "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 2 || r.Nodes[0].Node != "node_"+rayNodeA {
				t.Fatalf("want ready listing both nodes: %+v", r)
			}
		},
	},
	{
		name: "2.8 Active/Idle verbose", file: "ray_status_v2_2023-09_active_idle_verbose.txt",
		expected: []string{rayNodeC},
		check: func(t *testing.T, r Report) {
			if !r.Ready || r.Healthy != 1 || r.TotalGPUs != 0 {
				t.Fatalf("want ready, 1 node, no GPUs: %+v", r)
			}
			if n := node(t, r, rayNodeC); n.State != "active" {
				t.Errorf("State = %q, want active", n.State)
			}
		},
	},
	{
		name: "2.8 Active/Idle verbose: two expected, one listed", file: "ray_status_v2_2023-09_active_idle_verbose.txt",
		expected: []string{rayNodeC, rayNodeA},
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{rayNodeA}) {
				t.Fatalf("want node A missing: %+v", r)
			}
		},
	},
	{
		name: "1.x pending and recent failures", file: "ray_status_v1_2021-02_pending_recent_failures.txt",
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 1 || len(r.Pending) != 2 || len(r.Failures) != 2 {
				t.Fatalf("want not ready, 1 healthy, 2 pending, 2 failures: %+v", r)
			}
			if r.Pending[0] != "10.0.0.53: cpu_4_ondemand, waiting-for-ssh" || r.Failures[1] != "10.0.0.38: cpu_4_ondemand" {
				t.Errorf("pending %q failures %q", r.Pending, r.Failures)
			}
			if !strings.Contains(r.Summary, "pending: 10.0.0.53") || !strings.Contains(r.Summary, "recent failures: 10.0.0.61") {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "1.x pending and recent failures: expected IPs", file: "ray_status_v1_2021-02_pending_recent_failures.txt",
		expected: []string{"10.0.0.53", "10.0.0.61", "10.0.0.5"},
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{"10.0.0.5"}) {
				t.Fatalf("want 10.0.0.5 missing (no prefix match of 10.0.0.53): %+v", r)
			}
			wantReason(t, r, "10.0.0.53", "pending", "pending: 10.0.0.53: cpu_4_ondemand, waiting-for-ssh")
			wantReason(t, r, "10.0.0.61", "failed", "recent failure: 10.0.0.61: cpu_4_ondemand")
		},
	},
	{
		name: "1.x pending, failures, demands", file: "ray_status_v1_2021-03_pending_failures_demands.txt",
		expected: []string{"cpu_4_ondemand", "10.0.0.226", "10.0.0.157"},
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 2 || len(r.Pending) != 2 || len(r.Failures) != 1 {
				t.Fatalf("want 2 healthy, 2 pending, 1 failure: %+v", r)
			}
			// Node types match their group line.
			if n := node(t, r, "cpu_4_ondemand"); !n.OK || n.State != "healthy" {
				t.Errorf("cpu_4_ondemand = %+v", n)
			}
			wantReason(t, r, "10.0.0.226", "pending", "setting-up")
			wantReason(t, r, "10.0.0.157", "failed", "custom1")
		},
	},
	{
		name: "2.x test fixture: pending launches, a failure, GPUs", file: "ray_status_testfixture_gpu_pending_failures_verbose.txt",
		expected: []string{"192.168.1.1", "1.2.3.6", "1.2.3.4"},
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 22 || r.TotalGPUs != 2 || len(r.Pending) != 3 || len(r.Failures) != 1 {
				t.Fatalf("want 22 healthy, 2 GPUs, 3 pending, 1 failure: %+v", r)
			}
			// The verbose "Node: 192.168.1.1" section names a live node.
			if n := node(t, r, "192.168.1.1"); !n.OK {
				t.Errorf("192.168.1.1 = %+v", n)
			}
			wantReason(t, r, "1.2.3.6", "failed", "RayletUnexpectedlyDied (ip: 1.2.3.6)")
			wantReason(t, r, "1.2.3.4", "pending", "waiting-for-ssh")
		},
	},
}

func rayFixtureNames() []string {
	var out []string
	for _, c := range rayFixtures {
		out = append(out, c.file)
	}
	return out
}

func TestRayFixtures(t *testing.T) {
	for _, c := range rayFixtures {
		t.Run(c.name, func(t *testing.T) {
			r, err := Ray(fixture(t, c.file), c.expected)
			if c.err != nil {
				wantErr(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, r)
			c.check(t, r)
		})
	}
}

func TestParseRayStatus(t *testing.T) {
	st, err := ParseRayStatus(fixture(t, "ray_status_testfixture_gpu_pending_failures_verbose.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []RayGroup{{"healthy", 2, "p3.2xlarge"}, {"healthy", 20, "m4.4xlarge"}}
	if !slices.Equal(st.Groups, want) || st.Healthy != 22 || st.PendingCount != 4 {
		t.Errorf("groups %+v healthy %d pending %d", st.Groups, st.Healthy, st.PendingCount)
	}
	// The cluster total, not the per-node "0.7/1 GPU" of the Node: section.
	if !st.HasGPUs || st.GPUs != 2 || st.UsedGPUs != 2 {
		t.Errorf("GPUs %v/%v", st.UsedGPUs, st.GPUs)
	}
	if !slices.Equal(st.Nodes, []string{"192.168.1.1"}) {
		t.Errorf("Nodes = %q", st.Nodes)
	}

	st, err = ParseRayStatus(fixture(t, "ray_status_v2_2023-09_active_idle_verbose.txt"))
	if err != nil || len(st.Groups) != 1 || st.Groups[0].Section != "active" || st.HasGPUs ||
		!slices.Equal(st.Nodes, []string{rayNodeC}) {
		t.Errorf("2.8 verbose: %+v, %v", st, err)
	}

	st, err = ParseRayStatus(fixture(t, "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt"))
	if err != nil || st.GPUs != 4 || st.UsedGPUs != 4 {
		t.Errorf("2.x GPUs: %+v, %v", st, err)
	}
}

func TestRayCount(t *testing.T) {
	healthy := fixture(t, "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt")
	for n, ready := range map[int]bool{1: true, 2: true, 3: false} {
		r, err := RayCount(healthy, n)
		if err != nil || r.Ready != ready {
			t.Errorf("RayCount(%d) = %+v, %v; want ready=%v", n, r, err, ready)
		}
		checkInvariants(t, r)
	}
	// Two live nodes, but nodes pending: not ready.
	r, err := RayCount(fixture(t, "ray_status_v1_2021-03_pending_failures_demands.txt"), 2)
	if err != nil || r.Ready {
		t.Errorf("pending cluster: %+v, %v", r, err)
	}
	if _, err := RayCount(healthy, 0); err == nil {
		t.Error("RayCount(0): want an error")
	}
}

// Constructed: Ray 2.8+ output of a hand-started 3-node cluster with an
// idle node, and Ray 1.x's no-node-types form.
func TestRayConstructed(t *testing.T) {
	out := "======== Autoscaler status: 2025-06-02 10:15:04.000000 ========\n" +
		"Node status\n" +
		"---------------------------------------------------------------\n" +
		"Active:\n 1 node_aaaa\n 1 node_bbbb\n" +
		"Idle:\n 1 node_cccc\n" +
		"Pending:\n (no pending nodes)\n" +
		"Recent failures:\n (no failures)\n\n" +
		"Resources\n" +
		"---------------------------------------------------------------\n" +
		"Total Usage:\n 0.0/672.0 CPU\n 0.0/24.0 GPU\n 0B/1.50TiB memory\n\n" +
		"Total Demands:\n (no resource demands)\n"
	r, err := Ray(out, []string{"aaaa", "node_bbbb", "cccc"})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	if !r.Ready || r.TotalGPUs != 24 || node(t, r, "cccc").State != "idle" {
		t.Errorf("want ready with 24 GPUs and cccc idle: %+v", r)
	}

	legacy := "======== Cluster status: 2021-01-01 00:00:00 ========\n" +
		"Node status\n------------------------------------------------------------\n" +
		" 2 node(s) with resources: {'CPU': 8.0, 'GPU': 1.0}\n\n" +
		"Resources\n------------------------------------------------------------\n" +
		"Usage:\n 0.0/16.0 CPU\n 0.0/2.0 GPU\n\nDemands:\n (no resource demands)\n"
	r, err = RayCount(legacy, 2)
	if err != nil || !r.Ready || r.Healthy != 2 || r.TotalGPUs != 2 {
		t.Errorf("no-node-types form: %+v, %v", r, err)
	}
}

func TestRayErrors(t *testing.T) {
	full := fixture(t, "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt")
	cut := full[:strings.Index(full, "Resources")]
	tests := []struct {
		name, output string
		err          error
	}{
		{"empty", "", ErrEmpty},
		{"not running", "No cluster status.\n", ErrFormat},
		{"connection error", "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable.\n", ErrFormat},
		{"cut before Resources", cut, ErrTruncated},
		{"cut after the Node status header", full[:strings.Index(full, "Healthy:")], ErrTruncated},
		{"bad node line", strings.Replace(full, " 1 node_0bf2", " x node_0bf2", 1), ErrFormat},
		{"stray top-level line", strings.Replace(full, "Pending:", "garbage here\nPending:", 1), ErrFormat},
		{"sinfo output", fixture(t, "slurm_sinfo_default_all_idle.txt"), ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ray(tt.output, nil)
			wantErr(t, err, tt.err)
		})
	}
}

func TestTokenMatch(t *testing.T) {
	tests := []struct {
		s, want string
		ok      bool
	}{
		{"node_10.0.0.1", "10.0.0.1", true},
		{"node_10.0.0.15", "10.0.0.1", false},
		{"110.0.0.1", "10.0.0.1", false},
		{"p3.2xlarge: RayletUnexpectedlyDied (ip: 1.2.3.6)", "1.2.3.6", true},
		{"10.0.0.53: cpu_4_ondemand, waiting-for-ssh", "10.0.0.53", true},
		{"node_" + rayNodeA, rayNodeA, true},
		{"node_" + rayNodeA, "node_" + rayNodeA, true},
		{"node_" + rayNodeA, rayNodeA[:8], false},
		{"10.0.0.1 10.0.0.10", "10.0.0.10", true},
		{"abc", "", false},
	}
	for _, tt := range tests {
		if got := tokenMatch(tt.s, tt.want); got != tt.ok {
			t.Errorf("tokenMatch(%q, %q) = %v", tt.s, tt.want, got)
		}
	}
}

func BenchmarkRay(b *testing.B) {
	out := fixture(b, "ray_status_testfixture_gpu_pending_failures_verbose.txt")
	for b.Loop() {
		if _, err := Ray(out, []string{"192.168.1.1", "1.2.3.6"}); err != nil {
			b.Fatal(err)
		}
	}
}

// Constructed after newer Ray 2.x output as printed through `ray exec`:
// preamble lines (one indented), several Active groups, "(unavailable …)"
// placeholders, "Pending Demands:" and a trailing ssh line.
func TestRayNewerLayoutWithNoise(t *testing.T) {
	out := "Loaded cached provider configuration\n" +
		"/usr/lib/python3/boto3/compat.py:89: PythonDeprecationWarning: Boto3 will no longer support Python 3.9\n" +
		"  warnings.warn(warning, PythonDeprecationWarning)\n" +
		"Fetched IP: 10.0.2.177\n" +
		"======== Autoscaler status: 2026-01-20 04:28:21.914768 ========\n" +
		"Node status\n" +
		"---------------------------------------------------------------\n" +
		"Active:\n 8 x86_worker_node\n 8 arm_worker_node\n 1 head_node\n" +
		"Idle:\n (no idle nodes)\n" +
		"Pending:\n (unavailable in history server)\n" +
		"Recent failures:\n (no failures)\n\n" +
		"Resources\n" +
		"---------------------------------------------------------------\n" +
		"Total Usage:\n 68.0/68.0 CPU\n 0.0/8.0 Graviton\n 0B/368.27GiB memory\n\n" +
		"From request_resources:\n (none)\n" +
		"Pending Demands:\n {'CPU': 1.0}: 408+ pending tasks/actors\n" +
		"Shared connection to 10.0.2.177 closed.\n"
	r, err := RayCount(out, 17)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	if !r.Ready || r.Healthy != 17 || r.TotalGPUs != 0 || len(r.Nodes) != 3 {
		t.Fatalf("want ready, 17 live nodes in 3 groups: %+v", r)
	}
}
