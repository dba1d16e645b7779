package readiness

import (
	"strings"
	"testing"
)

// slurmCheck builds the Slurm check's output: sinfo `-N -h -o "%N %T %G"`
// lines, then the test job's section.
func slurmCheck(sinfo string, job ...string) string {
	out := sinfo + SlurmJobBegin + "\n"
	for _, l := range job {
		out += l + "\n"
	}
	return out + SlurmJobEnd + "\n"
}

func TestSlurmReadyNeedsTheJobOnEveryNode(t *testing.T) {
	idle := "node-0 idle gpu:2\nnode-1 idle gpu:2\n"
	nodes := []string{"node-0", "node-1"}

	rep, err := SlurmReady(slurmCheck(idle, "node-0 host-a gpus=2", "node-1 host-b gpus=2"), nodes, 2)
	if err != nil || !rep.Ready || rep.Healthy != 2 || rep.TotalGPUs != 4 {
		t.Fatalf("both ran with their GPUs: %+v, %v", rep, err)
	}

	// Idle in sinfo, but the job failed to launch (S2: idle is not "works").
	rep, err = SlurmReady(slurmCheck(idle, "node-0 host-a gpus=2",
		"srun: error: task 1 launch failed: Plugin initialization failed"), nodes, 2)
	if err != nil || rep.Ready {
		t.Fatalf("node-1 never ran the job but the report is ready: %+v, %v", rep, err)
	}
	if f := rep.Failing(); len(f) != 1 || f[0].Node != "node-1" || !strings.Contains(f[0].Reason, "Plugin initialization failed") {
		t.Fatalf("failing = %+v, want node-1 with srun's error", f)
	}

	// The job saw fewer GPUs than the node has.
	rep, _ = SlurmReady(slurmCheck(idle, "node-0 host-a gpus=2", "node-1 host-b gpus=1"), nodes, 2)
	if f := rep.Failing(); rep.Ready || len(f) != 1 || !strings.Contains(f[0].Reason, "saw 1 of 2 GPUs") {
		t.Fatalf("short of GPUs: %+v", rep)
	}

	// sinfo alone (an older check, or the job section cut off) is never ready.
	rep, err = SlurmReady(idle, nodes, 0)
	if err != nil || rep.Ready || !strings.Contains(rep.Summary, "no test job output") {
		t.Fatalf("no job section: %+v, %v", rep, err)
	}

	// A node that is not idle keeps sinfo's reason, job or not.
	rep, _ = SlurmReady(slurmCheck("node-0 idle (null)\nnode-1 down* (null)\n", "node-0 h gpus=0"), nodes, 0)
	if f := rep.Failing(); rep.Ready || len(f) != 1 || f[0].Node != "node-1" || !strings.Contains(f[0].Reason, "not responding") {
		t.Fatalf("down node: %+v", rep)
	}
	// Without GPUs, one line per node is enough; task lines name the Slurm
	// node (slurmd -N), whatever the host name.
	rep, _ = SlurmReady(slurmCheck("node-[0-1] idle (null)\n", "node-1 box2 gpus=0", "node-0 box1 gpus=0"), nodes, 0)
	if !rep.Ready || rep.TotalGPUs != 0 {
		t.Fatalf("0 GPUs: %+v", rep)
	}
}

func TestSinfoGres(t *testing.T) {
	for out, want := range map[string]int{
		"node-0 idle gpu:8\n":                      8,
		"node-0 idle gpu:a100:4(S:0-1)\n":          4,
		"node-0 idle gpu:a100:4,gpu:v100:2\n":      6,
		"node-0 idle (null)\n":                     0,
		"NODELIST STATE GRES\nnode-0 idle gpu:2\n": 2,
	} {
		rows, err := ParseSlurm(out)
		if err != nil || len(rows) != 1 || rows[0].GPUs != want {
			t.Errorf("%q: %+v, %v; want %d GPUs", out, rows, err, want)
		}
	}
}
