package readiness

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// slurmCase runs Slurm on one testdata file. expected is a hostlist
// expression ("" judges every listed node).
type slurmCase struct {
	name     string
	file     string
	expected string
	err      error
	check    func(t *testing.T, r Report)
}

// wantReason asserts the node fails with a reason holding every fragment.
func wantReason(t *testing.T, r Report, name, state string, fragments ...string) {
	t.Helper()
	n := node(t, r, name)
	if n.OK {
		t.Fatalf("%s passes, want failing: %+v", name, n)
	}
	if state != "" && n.State != state {
		t.Errorf("%s State = %q, want %q", name, n.State, state)
	}
	for _, f := range fragments {
		if !strings.Contains(n.Reason, f) {
			t.Errorf("%s Reason = %q, want it to contain %q", name, n.Reason, f)
		}
	}
}

func wantOK(t *testing.T, r Report, names ...string) {
	t.Helper()
	for _, name := range names {
		if n := node(t, r, name); !n.OK || n.Reason != "" {
			t.Errorf("%s = %+v, want passing", name, n)
		}
	}
}

var slurmFixtures = []slurmCase{
	{
		name: "all idle, expected = its nodes", file: "slurm_sinfo_default_all_idle.txt", expected: "g-[11-12]",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 2 || r.Healthy != 2 {
				t.Fatalf("want ready with 2 nodes: %+v", r)
			}
			wantOK(t, r, "g-11", "g-12")
			if n := node(t, r, "g-11"); n.State != "idle" {
				t.Errorf("State = %q", n.State)
			}
			if r.Summary != "ready: 2/2 nodes pass" {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "all idle, one expected node absent", file: "slurm_sinfo_default_all_idle.txt", expected: "g-[11-13]",
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{"g-13"}) {
				t.Fatalf("want not ready, missing g-13: %+v", r)
			}
			if !strings.Contains(r.Summary, "1 missing: g-13") {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "all idle, only a subset expected", file: "slurm_sinfo_default_all_idle.txt", expected: "g-12",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 1 || !slices.Equal(r.Unexpected, []string{"g-11"}) {
				t.Fatalf("want ready for g-12 with g-11 unexpected: %+v", r)
			}
		},
	},
	{
		name: "man page: alloc and idle", file: "slurm_sinfo_default_manpage_alloc_idle.txt", expected: "adev[0-15]",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 16 || r.Healthy != 14 {
				t.Fatalf("want 16 nodes, 14 healthy, not ready: %+v", r)
			}
			if got := failingNames(r); !slices.Equal(got, []string{"adev8", "adev9"}) {
				t.Errorf("failing = %v", got)
			}
			wantReason(t, r, "adev8", "alloc", "allocated", "partition batch")
			wantOK(t, r, "adev0", "adev7", "adev10", "adev15")
		},
	},
	{
		name: "man page: only the debug partition's nodes expected", file: "slurm_sinfo_default_manpage_alloc_idle.txt", expected: "adev[0-7]",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Unexpected) != 8 {
				t.Fatalf("want ready, 8 unexpected: %+v", r)
			}
		},
	},
	{
		name: "man page: --states=drained", file: "slurm_sinfo_states_drained_manpage.txt", expected: "adev[6-7]",
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 0 {
				t.Fatalf("want not ready: %+v", r)
			}
			wantReason(t, r, "adev6", "drain", "drained", "partition debug")
			wantReason(t, r, "adev7", "drain", "drained")
		},
	},
	{
		name: "man page: sinfo -Nel", file: "slurm_sinfo_Nel_manpage.txt",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 16 || r.Healthy != 14 {
				t.Fatalf("want 16 nodes, 14 healthy: %+v", r)
			}
			wantReason(t, r, "adev9", "allocated", "allocated to jobs")
			wantOK(t, r, "adev3", "adev2", "adev4", "adev7", "adev15")
		},
	},
	{
		name: "man page: sinfo -Nel, idle nodes expected", file: "slurm_sinfo_Nel_manpage.txt", expected: "adev[0-7,10-15]",
		check: func(t *testing.T, r Report) {
			if !r.Ready {
				t.Fatalf("want ready: %+v", r)
			}
		},
	},
	{
		name: "man page: sinfo -R has no states", file: "slurm_sinfo_R_manpage.txt", err: ErrFormat,
	},
	{
		name: "drng@ fail* maint mix idle", file: "slurm_sinfo_default_drng_fail_maint_mix.txt",
		expected: "d[001-032],f[001-024],c[002-028],e[001-004]",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 87 || len(r.Missing) != 0 {
				t.Fatalf("want 87 nodes, not ready: %+v", r)
			}
			if f := r.Failing(); len(f) != 85 {
				t.Errorf("%d failing, want 85", len(f))
			}
			wantReason(t, r, "d001", "drng@", "draining", "pending reboot", "partition cpu")
			wantReason(t, r, "f024", "drng@", "draining")
			wantReason(t, r, "f005", "fail*", "failed", "not responding")
			wantReason(t, r, "c002", "drng@", "draining", "partition gpu")
			wantReason(t, r, "c003", "maint", "maintenance")
			wantReason(t, r, "c021", "fail*", "failed", "not responding")
			wantReason(t, r, "c006", "mix", "mixed")
			wantReason(t, r, "e003", "mix", "mixed", "partition highmem")
			// e001/e002 are idle in two partitions, "debug" and "idle".
			wantOK(t, r, "e001", "e002")
			if !strings.Contains(r.Summary, "85 of 87 nodes not passing") {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "drng@ fail* maint mix idle: only the idle nodes", file: "slurm_sinfo_default_drng_fail_maint_mix.txt", expected: "e[001-002]",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Unexpected) != 85 {
				t.Fatalf("want ready with 85 unexpected: %+v", r)
			}
		},
	},
	{
		name: "all drain", file: "slurm_sinfo_default_all_drain.txt", expected: "compute[001-003]",
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 0 || len(r.Failing()) != 3 {
				t.Fatalf("want 3 failing: %+v", r)
			}
			wantReason(t, r, "compute002", "drain", "drained", "partition compute")
		},
	},
	{
		name: "cloud: all idle~ (powered down)", file: "slurm_sinfo_default_cloud_all_idle_powered_down.txt", expected: "queue1-dy-c-1-[1-15]",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Failing()) != 15 || len(r.Unexpected) != 45 {
				t.Fatalf("want 15 failing, 45 unexpected: %+v", r)
			}
			wantReason(t, r, "queue1-dy-c-1-7", "idle~", "powered down")
		},
	},
	{
		name: "cloud: all idle~, every node", file: "slurm_sinfo_default_cloud_all_idle_powered_down.txt",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 60 || r.Healthy != 0 {
				t.Fatalf("want 60 nodes, none healthy: %+v", r)
			}
			wantReason(t, r, "queue2-dy-c-2-15", "idle~", "powered down", "partition queue2")
		},
	},
	{
		name: "cloud: down# idle~ down~ with misaligned columns", file: "slurm_sinfo_default_cloud_down_powering_idle_powered_down.txt",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 60 || r.Healthy != 0 {
				t.Fatalf("want 60 nodes, none healthy: %+v", r)
			}
			wantReason(t, r, "queue1-dy-c-1-1", "down#", "down", "powering up")
			wantReason(t, r, "queue1-dy-c-1-2", "down~", "down", "powered down")
			wantReason(t, r, "queue1-dy-c-2-15", "idle~", "powered down")
			wantReason(t, r, "queue2-dy-c-1-1", "idle~", "powered down", "partition queue2")
		},
	},
	{
		name: "709 nodes, sinfo -h -o %n,%T", file: "slurm_sinfo_h_o_n_T_many_states.txt",
		check: func(t *testing.T, r Report) {
			counts := map[string]int{}
			for _, n := range r.Nodes {
				counts[n.State]++
			}
			want := map[string]int{
				"idle": 319, "allocated": 250, "down*": 66, "mixed": 44, "drained*": 11,
				"draining": 10, "drained": 7, "fail*": 1, "down": 1,
			}
			if !maps.Equal(counts, want) {
				t.Errorf("state counts = %v, want %v", counts, want)
			}
			if len(r.Nodes) != 709 || r.Healthy != 319 || len(r.Failing()) != 390 || r.Ready {
				t.Errorf("nodes %d healthy %d failing %d ready %v", len(r.Nodes), r.Healthy, len(r.Failing()), r.Ready)
			}
			wantOK(t, r, "lxfoo0001", "lxbar0001")
			wantReason(t, r, "lxbar0003", "draining", "draining")
			wantReason(t, r, "lxbar0157", "allocated", "allocated to jobs")
			for _, n := range r.Nodes {
				if n.OK != (n.State == "idle") {
					t.Fatalf("%+v: OK must be exactly state idle", n)
				}
			}
		},
	},
	{
		name: "709 nodes, the idle ones expected", file: "slurm_sinfo_h_o_n_T_many_states.txt", expected: "lxfoo[0001-0020]",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 20 {
				t.Fatalf("want ready for 20 idle nodes: %+v", r.Summary)
			}
		},
	},
	{
		name: "scontrol show node IDLE+DRAIN with a GPU", file: "slurm_scontrol_show_node_idle_drain_gpu.txt", expected: "yigou-dev-102-68",
		check: func(t *testing.T, r Report) {
			if r.Ready || r.TotalGPUs != 1 {
				t.Fatalf("want not ready, 1 GPU: %+v", r)
			}
			wantReason(t, r, "yigou-dev-102-68", "IDLE+DRAIN", "drained", "partition compute100",
				"slurm reason: gres/gpu count reported lower than configured (0 < 1)")
			if n := node(t, r, "yigou-dev-102-68"); n.GPUs != 1 {
				t.Errorf("GPUs = %d, want 1", n.GPUs)
			}
		},
	},
	{
		name: "scontrol show nodes, truncated before State=", file: "slurm_scontrol_show_nodes_a100x8_TRUNCATED.txt", err: ErrTruncated,
	},
	// Constructed: no real `sinfo -N -h -o "%N %T"` sample exists.
	{
		name: "constructed %N %T, all idle", file: "slurm_sinfo_N_h_o_N_T_space_constructed_all_idle.txt", expected: "node-[1-3]",
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 3 {
				t.Fatalf("want ready: %+v", r)
			}
		},
	},
	{
		name: "constructed %N %T, mixed states", file: "slurm_sinfo_N_h_o_N_T_space_constructed_mixed_states.txt", expected: "node-[1-6]",
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{"node-6"}) {
				t.Fatalf("want not ready, node-6 missing: %+v", r)
			}
			wantOK(t, r, "node-1")
			wantReason(t, r, "node-2", "idle~", "powered down")
			wantReason(t, r, "node-3", "drained*", "drained", "not responding")
			wantReason(t, r, "node-4", "mixed", "mixed")
			wantReason(t, r, "node-5", "idle*", "not responding")
		},
	},
	// Constructed: no real `sinfo -N -l` sample with its timestamp line exists.
	{
		name: "constructed sinfo -N -l with timestamp and a spaced REASON", file: "slurm_sinfo_N_l_constructed_with_timestamp.txt", expected: "node-[1-3]",
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 2 {
				t.Fatalf("want not ready, 2 healthy: %+v", r)
			}
			wantReason(t, r, "node-2", "drained", "drained", "partition gpu", "slurm reason: GPU Xid 79 on GPU 3")
			wantOK(t, r, "node-1", "node-3")
		},
	},
}

func slurmFixtureNames() []string {
	var out []string
	for _, c := range slurmFixtures {
		out = append(out, c.file)
	}
	return out
}

func TestSlurmFixtures(t *testing.T) {
	for _, c := range slurmFixtures {
		t.Run(c.name, func(t *testing.T) {
			var expected []string
			if c.expected != "" {
				expected = hosts(t, c.expected)
			}
			r, err := Slurm(fixture(t, c.file), expected)
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

func TestSlurmStateOK(t *testing.T) {
	tests := []struct {
		state string
		ok    bool
		why   string
	}{
		{"idle", true, ""},
		{"IDLE", true, ""},
		{"IDLE+CLOUD", true, ""},
		{"idle*", false, "not responding"},
		{"idle~", false, "powered down"},
		{"idle#", false, "powering up"},
		{"idle%", false, "powering down"},
		{"idle!", false, "pending power down"},
		{"idle@", false, "pending reboot"},
		{"idle^", false, "reboot issued"},
		{"idle$", false, "maintenance reservation"},
		{"idle-", false, "planned"},
		{"mix", false, "mixed"},
		{"mixed-", false, "planned"},
		{"alloc", false, "allocated"},
		{"alloc+", false, "completing"},
		{"allocated", false, "allocated"},
		{"comp", false, "completing"},
		{"drain", false, "drained"},
		{"drng", false, "draining"},
		{"drained*", false, "not responding"},
		{"down", false, "down"},
		{"down*", false, "not responding"},
		{"fail", false, "failed"},
		{"failg", false, "failing"},
		{"maint", false, "maintenance"},
		{"futr", false, "future"},
		{"unk", false, "unknown"},
		{"unknown*", false, "unknown"},
		{"inval", false, "invalid"},
		{"boot^", false, "reboot issued"},
		{"pow_up", false, "powering up"},
		{"resv", false, "reservation"},
		{"plnd", false, "planned"},
		{"npc", false, "performance counters"},
		{"IDLE+DRAIN", false, "drained"},
		{"IDLE+CLOUD+POWERED_DOWN", false, "powered down"},
		{"MIXED+DRAIN", false, "drain flag"},
		{"IDLE+NOT_RESPONDING", false, "not responding"},
		{"IDLE+SOMETHING_NEW", false, "unknown state flag"},
		{"id", false, "unknown Slurm state"},
		{"", false, "no state"},
	}
	for _, tt := range tests {
		ok, why := SlurmStateOK(tt.state)
		if ok != tt.ok || !strings.Contains(why, tt.why) || (tt.ok && why != "") {
			t.Errorf("SlurmStateOK(%q) = %v, %q; want %v, containing %q", tt.state, ok, why, tt.ok, tt.why)
		}
	}
}

// Inline inputs exercise format corners. All are constructed.
func TestSlurmFormats(t *testing.T) {
	tests := []struct {
		name, output string
		expected     []string
		ready        bool
		nodes        int
	}{
		{"%N %T without -N keeps hostlists", "node-[1-3] idle\n", []string{"node-1", "node-2", "node-3"}, true, 3},
		{"-h with the default columns", "gpu* up infinite 2 idle node-[1-2]\n", []string{"node-1", "node-2"}, true, 2},
		{"empty partition row is skipped", "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\ndebug up infinite 0 n/a\ngpu* up infinite 2 idle node-[1-2]\n", []string{"node-1", "node-2"}, true, 2},
		{"CRLF line ends", "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\r\ngpu* up infinite 2 idle node-[1-2]\r\n", []string{"node-1", "node-2"}, true, 2},
		{"header only: every expected node missing", "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n", []string{"node-1"}, false, 0},
		{"header only, nothing expected", "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n", nil, false, 0},
		{"%n,%T with a hostlist", "n[1-2],idle\n", nil, true, 2},
		{"HOSTNAMES header (%n %T)", "HOSTNAMES STATE\nnode-1 idle\nnode-2 idle\n", nil, true, 2},
		{"a truncated state is not ok", "node-1,idle\nnode-2,id", []string{"node-1", "node-2"}, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Slurm(tt.output, tt.expected)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, r)
			if r.Ready != tt.ready || len(r.Nodes) != tt.nodes {
				t.Errorf("ready %v nodes %d, want %v %d: %+v", r.Ready, len(r.Nodes), tt.ready, tt.nodes, r)
			}
		})
	}
}

func TestSlurmSeveralPartitions(t *testing.T) {
	// Constructed: node-2 is idle in one partition and drained in another.
	out := "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n" +
		"gpu* up infinite 2 idle node-[1-2]\n" +
		"long up infinite 1 idle node-1\n" +
		"long up infinite 1 drain node-2\n"
	r, err := Slurm(out, []string{"node-1", "node-2"})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	wantOK(t, r, "node-1")
	wantReason(t, r, "node-2", "idle,drain", "drained (partition long)")
	if r.Ready || r.Healthy != 1 {
		t.Errorf("want not ready, 1 healthy: %+v", r)
	}
}

func TestSlurmErrors(t *testing.T) {
	header := "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n"
	tests := []struct {
		name, output string
		err          error
	}{
		{"empty", "", ErrEmpty},
		{"blank", " \n\t\n", ErrEmpty},
		{"prose", "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n", ErrFormat},
		{"JSON", `{"nodes": []}`, ErrFormat},
		{"row cut short", header + "gpu* up infinite 2\n", ErrFormat},
		{"hostlist cut short", header + "gpu* up infinite 2 idle node-[1\n", ErrFormat},
		{"NODES disagrees with NODELIST", header + "gpu* up infinite 3 idle node-[1-2]\n", ErrTruncated},
		{"NODES not a number", header + "gpu* up infinite x idle node-[1-2]\n", ErrFormat},
		{"state with odd characters", "node-1,id=le\n", ErrFormat},
		{"%n,%T line cut before the comma", "node-1,idle\nnode-\n", ErrFormat},
		{"name with a slash", "node/1 idle\n", ErrFormat},
		{"hostlist too large", "n[0-999999] idle\n", ErrFormat},
		{"scontrol without State", "NodeName=n1 Arch=x86_64\n   CPUAlloc=0\n", ErrTruncated},
		{"scontrol with a bad name", "NodeName= State=IDLE\n", ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Slurm(tt.output, []string{"node-1"})
			wantErr(t, err, tt.err)
		})
	}
}

func TestGresGPUs(t *testing.T) {
	tests := map[string]int{
		"gpu:a100:8":                 8,
		"gpu:nvidia-rtx-3090:1":      1,
		"gpu:4(S:0-1)":               4,
		"gpu:a100:4,gpu:v100:2":      6,
		"gpu:a100:4(S:0,1),mps:100":  4,
		"(null)":                     0,
		"":                           0,
		"gpu:a100:x":                 0,
		"shard:8":                    0,
		"gpu:h100:8(S:0-1),gpu:h1:1": 9,
	}
	for in, want := range tests {
		if got := gresGPUs(in); got != want {
			t.Errorf("gresGPUs(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSlurmTooManyRows(t *testing.T) {
	out := strings.Repeat("n[0-60000] idle\n", 2)
	_, err := Slurm(out, nil)
	wantErr(t, err, ErrFormat)
}

func BenchmarkSlurm709(b *testing.B) {
	out := fixture(b, "slurm_sinfo_h_o_n_T_many_states.txt")
	for b.Loop() {
		if _, err := Slurm(out, nil); err != nil {
			b.Fatal(err)
		}
	}
}
