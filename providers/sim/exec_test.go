package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// execOf is machine index's executor.
func execOf(t *testing.T, c *Cloud, group string, index int) *executor {
	t.Helper()
	e, err := c.Executor(group, index)
	if err != nil {
		t.Fatal(err)
	}
	return e.(*executor)
}

// installAll installs software on every machine of the group.
func installAll(t *testing.T, c *Cloud, group, software string, n int) {
	t.Helper()
	for i := range n {
		if out, err := execOf(t, c, group, i).Run(context.Background(), "install:"+software, "#!/bin/sh\n"); err != nil {
			t.Fatalf("install %s on node-%d: %v\n%s", software, i, err, out)
		}
	}
}

func TestReach(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	mustInject(t, c,
		Fault{Kind: FaultPeerUnreachable, Group: "g", Node: 2},
		Fault{Kind: FaultNeverBoots, Group: "g", Node: 3},
	)
	place(t, c, "g", offCt, 4)
	place(t, c, "other", offCt, 2)
	clk.Advance(time.Hour)
	tests := []struct {
		from int
		addr string
		ok   bool
	}{
		{0, "10.77.0.2", true},
		{1, "10.77.0.1:22", true},
		{0, "10.77.0.3", true},  // node 2 can be reached...
		{2, "10.77.0.1", false}, // ...but reaches no one
		{0, "10.77.0.4", false}, // node 3 never booted
		{0, "10.77.0.9", false}, // no such machine
		{0, "192.0.2.1", false},
	}
	for _, tt := range tests {
		err := execOf(t, c, "g", tt.from).Reach(ctx, tt.addr)
		if (err == nil) != tt.ok {
			t.Errorf("node-%d Reach(%s) = %v, want ok %v", tt.from, tt.addr, err, tt.ok)
		}
	}
	// Another group's 10.77.0.2 is not on this network: only this group's is.
	if err := c.TerminateGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := execOf(t, c, "other", 0).Reach(ctx, "10.77.0.2"); err != nil {
		t.Errorf("other group: %v", err)
	}
	if _, err := c.Executor("g", 0); err == nil {
		t.Error("Executor of a terminated group")
	}
}

func TestExecutorNeedsARunningMachine(t *testing.T) {
	c, _ := newTestCloud(t)
	place(t, c, "g", offCt, 2)
	e := execOf(t, c, "g", 0)
	if err := e.Reach(context.Background(), "10.77.0.2"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Reach from a pending machine = %v", err)
	}
	if _, err := e.Run(context.Background(), "install:slurm", ""); err == nil {
		t.Error("Run on a pending machine succeeded")
	}
}

func TestRunInstall(t *testing.T) {
	tests := []struct {
		software   string
		head, node string // a line of node-0's and of node-1's output
	}{
		{Slurm, "Setting up slurmctld (21.08.5-2ubuntu1) ...", "Setting up slurmd (21.08.5-2ubuntu1) ..."},
		{Kubernetes, "Your Kubernetes control-plane has initialized successfully!", "This node has joined the cluster:"},
		{Ray, "Ray runtime started.", "Local node IP: 10.77.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.software, func(t *testing.T) {
			c, clk := newTestCloud(t)
			place(t, c, "g", offCt, 2)
			clk.Advance(time.Hour)
			for i, want := range []string{tt.head, tt.node} {
				out, err := execOf(t, c, "g", i).Run(context.Background(), "install:"+tt.software, "")
				if err != nil || !strings.Contains(out, want) || strings.Count(out, "\n") < 3 {
					t.Errorf("node-%d install: %v\n%s", i, err, out)
				}
			}
		})
	}
}

func TestRunUnknownStep(t *testing.T) {
	c, clk := newTestCloud(t)
	place(t, c, "g", offCt, 1)
	clk.Advance(time.Hour)
	for _, step := range []string{"install:lsf", "check:", "reboot", "check:nccl", ""} {
		if _, err := execOf(t, c, "g", 0).Run(context.Background(), step, ""); err == nil || !strings.Contains(err.Error(), "unknown step") {
			t.Errorf("Run(%q) = %v", step, err)
		}
	}
}

func TestInstallFailsCountsInstalls(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t)
	mustInject(t, c, Fault{Kind: FaultInstallFails, Node: 1, Software: Slurm, Count: 1})
	place(t, c, "g", offCt, 2)
	clk.Advance(time.Hour)
	e1 := execOf(t, c, "g", 1)
	if _, err := e1.Run(ctx, "install:ray", ""); err != nil {
		t.Errorf("another software's install failed: %v", err)
	}
	if _, err := execOf(t, c, "g", 0).Run(ctx, "install:slurm", ""); err != nil {
		t.Errorf("another node's install failed: %v", err)
	}
	out, err := e1.Run(ctx, "install:slurm", "")
	if err == nil || err.Error() != "exit status 100" || !strings.Contains(out, "E: Unable to fetch some archives") {
		t.Fatalf("faulted install = %v\n%s", err, out)
	}
	if _, err := e1.Run(ctx, "check:slurm", ""); err == nil {
		t.Error("check ran where the install failed")
	}
	if _, err := e1.Run(ctx, "install:slurm", ""); err != nil {
		t.Errorf("retried install: %v", err)
	}
}

func TestInstallFailureOutputs(t *testing.T) {
	for _, sw := range softwares {
		c, clk := newTestCloud(t)
		mustInject(t, c, Fault{Kind: FaultInstallFails})
		place(t, c, "g", offCt, 1)
		clk.Advance(time.Hour)
		out, err := execOf(t, c, "g", 0).Run(context.Background(), "install:"+sw, "")
		if err == nil || !strings.HasPrefix(err.Error(), "exit status ") || out == "" {
			t.Errorf("%s: %v\n%s", sw, err, out)
		}
	}
}

// sinfoLine is one line of `sinfo -N -h -o "%N %T %G"`.
var sinfoLine = regexp.MustCompile(`^(\S+) ([a-z]+\*?) (gpu:\d+|\(null\))$`)

func parseSinfo(t *testing.T, out string) map[string]string {
	t.Helper()
	states := map[string]string{}
	out, _, _ = strings.Cut(out, slurmJobBegin)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := sinfoLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not an sinfo line: %q", line)
		}
		states[m[1]] = m[2]
	}
	return states
}

// checkCluster places a 4-node cluster with node 1 check_fails, node 2
// never booting and node 3 without the software, installs it on the
// others, and returns node-0's check output.
func checkCluster(t *testing.T, software string) (*Cloud, string) {
	t.Helper()
	c, clk := newTestCloud(t)
	mustInject(t, c,
		Fault{Kind: FaultCheckFails, Node: 1, Software: software},
		Fault{Kind: FaultNeverBoots, Node: 2},
	)
	place(t, c, "g", offCounted, 4)
	clk.Advance(time.Hour)
	installAll(t, c, "g", software, 2)
	out, err := execOf(t, c, "g", 0).Run(context.Background(), "check:"+software, "")
	if err != nil {
		t.Fatalf("check:%s: %v\n%s", software, err, out)
	}
	return c, out
}

func TestCheckSlurm(t *testing.T) {
	_, out := checkCluster(t, Slurm)
	got := parseSinfo(t, out)
	want := map[string]string{"node-0": "idle", "node-1": "drained", "node-2": "down*", "node-3": "down*"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sinfo states = %v, want %v\n%s", got, want, out)
	}
	// Not every node is idle: no test job runs.
	if !strings.Contains(out, slurmJobBegin+"\ntest job not started: not every node is idle\n"+slurmJobEnd) {
		t.Errorf("test job section:\n%s", out)
	}
}

func TestCheckSlurmAllIdle(t *testing.T) {
	c, clk := newTestCloud(t)
	place(t, c, "g", offCt, 3)
	clk.Advance(time.Hour)
	installAll(t, c, "g", Slurm, 3)
	out, err := execOf(t, c, "g", 2).Run(context.Background(), "check:slurm", "")
	want := "node-0 idle gpu:1\nnode-1 idle gpu:1\nnode-2 idle gpu:1\n" + slurmJobBegin +
		"\nnode-0 node-0 gpus=1\nnode-1 node-1 gpus=1\nnode-2 node-2 gpus=1\n" + slurmJobEnd + "\n"
	if err != nil || out != want {
		t.Errorf("check:slurm = %v\n%q", err, out)
	}
}

// nodeList is the part of `kubectl get nodes -o json` the checks read.
type nodeList struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Items      []struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Allocatable map[string]string `json:"allocatable"`
			Conditions  []struct {
				Type, Status, Reason string
			} `json:"conditions"`
			Addresses []struct {
				Address, Type string
			} `json:"addresses"`
		} `json:"status"`
	} `json:"items"`
}

func TestCheckKubernetes(t *testing.T) {
	c, out := checkCluster(t, Kubernetes)
	var list nodeList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if list.Kind != "List" || list.APIVersion != "v1" || !strings.HasPrefix(out, "{\n    \"apiVersion\": \"v1\",") {
		t.Errorf("list header: kind %q apiVersion %q\n%.80s", list.Kind, list.APIVersion, out)
	}
	type row struct{ ready, gpus, ip string }
	got := map[string]row{}
	for _, it := range list.Items {
		r := row{gpus: it.Status.Allocatable["nvidia.com/gpu"], ip: it.Status.Addresses[0].Address}
		for _, cond := range it.Status.Conditions {
			if cond.Type == "Ready" {
				r.ready = cond.Status
			}
		}
		if it.Kind != "Node" {
			t.Errorf("item kind %q", it.Kind)
		}
		got[it.Metadata.Name] = r
	}
	want := map[string]row{
		"node-0": {"True", "8", "10.77.0.1"},
		"node-1": {"False", "0", "10.77.0.2"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}

	// A joined node that goes down reads Ready Unknown.
	g := describe(t, c, "g")
	if err := c.RestartNode(context.Background(), "g", g.Nodes[1].ID); err != nil {
		t.Fatal(err)
	}
	out, _ = execOf(t, c, "g", 0).Run(context.Background(), "check:kubernetes", "")
	if !strings.Contains(out, `"reason": "NodeStatusUnknown"`) || !strings.Contains(out, `"status": "Unknown"`) {
		t.Errorf("restarting node not Unknown:\n%s", out)
	}
}

var rayNode = regexp.MustCompile(`^ (?:1 )?node_([0-9a-f]{56})(?:: RayletUnexpectedlyDied \(ip: ([0-9.]+)\))?$`)

// parseRayStatus returns the node ids per section of `ray status` and the
// GPU total of Total Usage.
func parseRayStatus(t *testing.T, out string) (map[string][]string, string) {
	t.Helper()
	sections := map[string][]string{}
	var section, gpus string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			section = strings.TrimSuffix(line, ":")
		case strings.HasSuffix(line, " GPU") && section == "Total Usage":
			gpus = strings.TrimSpace(strings.TrimSuffix(line, " GPU"))
		default:
			if m := rayNode.FindStringSubmatch(line); m != nil {
				sections[section] = append(sections[section], m[1])
			}
		}
	}
	return sections, gpus
}

func TestCheckRay(t *testing.T) {
	c, out := checkCluster(t, Ray)
	if !strings.HasPrefix(out, "======== Autoscaler status: 2025-03-01 13:00:00.000000 ========\n") ||
		!strings.Contains(out, "\nNode status\n---") || !strings.Contains(out, "Total Demands:\n (no resource demands)\n") {
		t.Errorf("not the ray status layout:\n%s", out)
	}
	sections, gpus := parseRayStatus(t, out)
	g := c.groups["g"]
	id := func(i int) string { return c.rayNodeID(g.nodes[i]) }
	if got := sections["Active"]; len(got) != 1 || got[0] != id(0) {
		t.Errorf("Active = %v, want node-0 %s\n%s", got, id(0), out)
	}
	if got := sections["Recent failures"]; len(got) != 1 || got[0] != id(1) || !strings.Contains(out, "(ip: 10.77.0.2)") {
		t.Errorf("Recent failures = %v, want node-1 %s\n%s", got, id(1), out)
	}
	if gpus != "0.0/8.0" || !strings.Contains(out, " 0.0/1.0 accelerator_type:H100\n") {
		t.Errorf("GPU usage %q\n%s", gpus, out)
	}
}

func TestCheckRayHealthy(t *testing.T) {
	c, clk := newTestCloud(t)
	place(t, c, "g", offCounted, 3)
	clk.Advance(time.Hour)
	installAll(t, c, "g", Ray, 3)
	out, err := execOf(t, c, "g", 1).Run(context.Background(), "check:ray", "")
	if err != nil {
		t.Fatal(err)
	}
	sections, gpus := parseRayStatus(t, out)
	if len(sections["Active"]) != 3 || len(sections["Recent failures"]) != 0 || gpus != "0.0/24.0" ||
		!strings.Contains(out, "Recent failures:\n (no failures)\n") {
		t.Errorf("healthy ray cluster: %v, %s GPU\n%s", sections, gpus, out)
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		software string
		missing  string // output where the software is not installed
		headDown string // output when node-0 is down
	}{
		{Slurm, "sinfo: command not found", "Unable to contact slurm controller"},
		{Kubernetes, "kubectl: command not found", "The connection to the server 10.77.0.1:6443 was refused"},
		{Ray, "ray: command not found", "Could not find any running Ray instance"},
	}
	for _, tt := range tests {
		t.Run(tt.software, func(t *testing.T) {
			ctx := context.Background()
			c, clk := newTestCloud(t)
			g := place(t, c, "g", offCt, 2)
			clk.Advance(time.Hour)
			e1 := execOf(t, c, "g", 1)
			out, err := e1.Run(ctx, "check:"+tt.software, "")
			if err == nil || err.Error() != "exit status 127" || !strings.Contains(out, tt.missing) {
				t.Errorf("not installed: %v %q", err, out)
			}
			installAll(t, c, "g", tt.software, 2)
			if err := c.RestartNode(ctx, "g", g.Nodes[0].ID); err != nil {
				t.Fatal(err)
			}
			out, err = e1.Run(ctx, "check:"+tt.software, "")
			if err == nil || err.Error() != "exit status 1" || !strings.Contains(out, tt.headDown) {
				t.Errorf("head down: %v %q", err, out)
			}
			clk.Advance(time.Minute) // the head is back
			if _, err := e1.Run(ctx, "check:"+tt.software, ""); err != nil {
				t.Errorf("head back: %v", err)
			}
		})
	}
}

func TestCheckOutputIsDeterministic(t *testing.T) {
	_, a := checkCluster(t, Kubernetes)
	_, b := checkCluster(t, Kubernetes)
	if a != b {
		t.Error("same seed, same moment, different kubectl output")
	}
}
