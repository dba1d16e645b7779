package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// testKey is an SSH public key launched with a workload.
const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0cC9sYXB0b3Aga2V5IGZvciB0ZXN0cyBvbmx5 ada@laptop"

// launchWorkload launches a cluster of offer accel with the workload wl and testKey.
func (w *world) launchWorkload(accel string, nodes, gpus int, wl models.Workload) models.Cluster {
	w.t.Helper()
	ctx := context.Background()
	q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: accel, Nodes: nodes, GPUsPerNode: gpus})
	if err != nil {
		w.t.Fatal(err)
	}
	c, _, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID, Actor: "test@example.com", Workload: wl,
		SSHKeys: []string{testKey}})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// ran returns the start command runs of machine rank, and its ports steps.
func (w *world) ran(c models.Cluster, rank int) (starts, ports []sim.Ran) {
	for _, r := range w.cloud.Ran(c.GroupName(), rank) {
		switch r.Step {
		case "start":
			starts = append(starts, r)
		case sim.PortsStep:
			ports = append(ports, r)
		}
	}
	return starts, ports
}

// keySteps returns the SSH key steps of machine rank.
func (w *world) keySteps(c models.Cluster, rank int) []sim.Ran {
	var out []sim.Ran
	for _, r := range w.cloud.Ran(c.GroupName(), rank) {
		if r.Step == sim.KeysStep {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) nodeStarts(c models.Cluster) map[int]models.NodeStart {
	w.t.Helper()
	rows, err := w.store.NodeStarts(context.Background(), w.org.ID, c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[int]models.NodeStart{}
	for _, r := range rows {
		out[r.Rank] = r
	}
	return out
}

// N3: the start command and the ports go through the placement request to
// every machine's agent, which, once the cluster is ready (L5), opens the
// ports to its peers (publishing them on a vm with public addresses) and
// runs the start command once per boot, as the SSH user, in the node env;
// its output lands in the node's log and its exit is kept and shown.
func TestStartCommandAndPortsReachEveryNode(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		const cmd = "echo hello from the workload; sleep 90; echo done; exit 3"
		c := w.launchWorkload("H100_80GB", 3, 8, models.Workload{Name: "train", Software: "ray", StartCommand: cmd,
			Env: map[string]string{"WANDB_PROJECT": "llama"}, Ports: []int{8888, 6006}})
		// Nothing starts before the cluster is ready: not while machines
		// join, not while the software installs.
		for i := 0; i < 40 && w.cluster(c.ID).Status != models.StatusReady; i++ {
			for rank := range 3 {
				if starts, ports := w.ran(c, rank); len(starts)+len(ports) > 0 {
					t.Fatalf("node-%d ran %v %v while the cluster is %s", rank, starts, ports, w.cluster(c.ID).Status)
				}
			}
			w.clock.Advance(30 * time.Second)
			w.tick()
		}
		if st := w.cluster(c.ID).Status; st != models.StatusReady {
			t.Fatalf("status %s, want ready\n%s", st, w.events(c.ID))
		}
		w.clock.Advance(10 * time.Second)
		w.tick()
		nodes, _ := w.store.NodesFor(ctx, c.ID)
		for _, n := range nodes {
			starts, ports := w.ran(c, n.Rank)
			if len(starts) != 1 || len(ports) != 1 {
				t.Fatalf("%s: %d starts, %d ports steps; want 1 each", n.Name, len(starts), len(ports))
			}
			s := starts[0]
			if s.Script != cmd || s.User != "ubuntu" {
				t.Errorf("%s started %q as %q", n.Name, s.Script, s.User)
			}
			for k, v := range map[string]string{"WANDB_PROJECT": "llama", "NODE_RANK": string(rune('0' + n.Rank)),
				"MASTER_ADDR": "10.77.0.1", "NNODES": "3", "WORLD_SIZE": "24"} {
				if s.Env[k] != v {
					t.Errorf("%s: env %s = %q, want %q", n.Name, k, s.Env[k], v)
				}
			}
			script := ports[0].Script
			for _, peer := range nodes {
				if got := strings.Contains(script, "allow_peer '"+peer.PrivateIP+"'\n"); got != (peer.Rank != n.Rank) {
					t.Errorf("%s: ports script opens peer %s: %v\n%s", n.Name, peer.PrivateIP, got, script)
				}
			}
			for _, p := range []string{"8888", "6006"} {
				if !strings.Contains(script, "publish_port "+p+"\n") {
					t.Errorf("%s: port %s not published on a vm with public addresses:\n%s", n.Name, p, script)
				}
			}
			if keys := w.keySteps(c, n.Rank); len(keys) != 1 || !strings.Contains(keys[0].Script, "user='ubuntu'\n") ||
				!strings.Contains(keys[0].Script, "add_key '"+testKey+"'\n") {
				t.Errorf("%s: SSH key steps %+v", n.Name, keys)
			}
		}
		w.clock.Advance(10 * time.Second)
		w.tick() // the next heartbeat carries the state
		starts := w.nodeStarts(c)
		for rank := range 3 {
			if st := starts[rank]; st.State != models.StartRunning || st.ExitCode != nil {
				t.Errorf("node-%d start state %+v, want running", rank, st)
			}
		}
		// Heartbeats go on: the start command is not run again in this boot.
		w.run(3*time.Minute, 10*time.Second)
		for rank := range 3 {
			if starts, _ := w.ran(c, rank); len(starts) != 1 {
				t.Errorf("node-%d ran the start command %d times in one boot", rank, len(starts))
			}
		}
		starts = w.nodeStarts(c)
		for rank := range 3 {
			st := starts[rank]
			if st.State != models.StartExited || st.ExitCode == nil || *st.ExitCode != 3 || st.EndedAt == nil ||
				st.EndedAt.Sub(st.StartedAt) != 90*time.Second {
				t.Errorf("node-%d start state %+v, want exited 3 after 90 s", rank, st)
			}
		}
		logs, _ := w.store.TailNodeLogs(ctx, w.org.ID, c.ID, 2, 200)
		var text []string
		for _, l := range logs {
			text = append(text, l.Text)
		}
		all := strings.Join(text, "\n")
		for _, want := range []string{"hello from the workload", "done", "start command exited with code 3"} {
			if !strings.Contains(all, want) {
				t.Errorf("node-2's log lacks %q:\n%s", want, all)
			}
		}
		if ev := w.events(c.ID); strings.Count(ev, "start command exited with code 3") != 3 || strings.Count(ev, "start command started") != 3 {
			t.Errorf("events:\n%s", ev)
		}

		// A reboot is a new boot: node-1 runs it again, the others do not.
		if err := w.cloud.RestartNode(ctx, c.GroupName(), nodes[1].ProviderNodeID); err != nil {
			t.Fatal(err)
		}
		w.run(3*time.Minute, 10*time.Second)
		for rank, want := range []int{1, 2, 1} {
			if starts, _ := w.ran(c, rank); len(starts) != want {
				t.Errorf("after node-1's reboot node-%d ran the start command %d times, want %d", rank, len(starts), want)
			}
		}
		if st := w.nodeStarts(c)[1]; !st.StartedAt.After(starts[1].StartedAt) {
			t.Errorf("node-1's state after the reboot is the old boot's: %+v", st)
		}
	})
}

// N3: a container machine (and a site without public addresses) opens the
// ports between the nodes only: nothing is published.
func TestPortsNotPublishedOnContainers(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launchWorkload("L40S", 2, 2, models.Workload{Name: "serve", Software: "none", Ports: []int{8000}})
		w.run(4*time.Minute, 30*time.Second)
		if st := w.cluster(c.ID).Status; st != models.StatusReady {
			t.Fatalf("status %s\n%s", st, w.events(c.ID))
		}
		for rank := range 2 {
			starts, ports := w.ran(c, rank)
			if len(starts) != 0 || len(ports) != 1 {
				t.Fatalf("node-%d: %d starts (no start command), %d ports steps", rank, len(starts), len(ports))
			}
			if strings.Contains(ports[0].Script, "publish_port 8000") || !strings.Contains(ports[0].Script, "allow_peer '10.77.0.") {
				t.Errorf("node-%d ports script:\n%s", rank, ports[0].Script)
			}
		}
		if starts := w.nodeStarts(c); len(starts) != 0 {
			t.Errorf("start states without a start command: %+v", starts)
		}
	})
}
