package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/models/readiness"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// runUntil ticks every step until the cluster has status or max passed,
// and returns the cluster as it ends.
func (w *world) runUntil(id string, status models.ClusterStatus, max, step time.Duration) models.Cluster {
	w.t.Helper()
	for end := w.clock.Now().Add(max); w.clock.Now().Before(end); {
		w.clock.Advance(step)
		w.tick()
		if c := w.cluster(id); c.Status == status {
			return c
		}
	}
	return w.cluster(id)
}

// untilInstalling ticks until every machine joined and the install job
// planned node-0's install (no agent has taken it yet).
func (w *world) untilInstalling(id string) models.Cluster {
	w.t.Helper()
	c := w.runUntil(id, models.StatusInstalling, 10*time.Minute, 30*time.Second)
	if c.Status != models.StatusInstalling {
		w.t.Fatalf("status %s, want installing\n%s", c.Status, w.events(id))
	}
	return c
}

func (w *world) tasks(id string, attempt int) []models.SoftwareTask {
	w.t.Helper()
	ts, err := w.store.SoftwareTasks(context.Background(), id, attempt)
	if err != nil {
		w.t.Fatal(err)
	}
	return ts
}

// lastCheck is the attempt's latest check.
func (w *world) lastCheck(id string, attempt int) models.SoftwareTask {
	w.t.Helper()
	var last models.SoftwareTask
	for _, t := range w.tasks(id, attempt) {
		if t.Kind == models.TaskCheck {
			last = t
		}
	}
	if last.ID == "" {
		w.t.Fatalf("no check in attempt %d", attempt)
	}
	return last
}

func (w *world) token(c models.Cluster, rank int) string {
	w.t.Helper()
	nodes, err := w.store.NodesFor(context.Background(), c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return models.AgentToken(c, nodes[rank])
}

// post speaks the agent protocol over HTTP as the node holding token.
func (w *world) post(token, path string, body any) (int, string) {
	w.t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.srv.Client().Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// L5, S1, S2: each software installs on node-0 first, then on every
// worker, then passes its own check, parsed from the tool's raw output,
// on every node: installing → ready.
func TestSoftwareReady(t *testing.T) {
	for _, software := range []string{"slurm", "kubernetes", "ray"} {
		t.Run(software, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				ctx := context.Background()
				w := newWorld(t, db)
				c := w.launchWith("H100_80GB", 3, 8, software)
				c = w.untilInstalling(c.ID)
				if nodes, _ := w.store.NodesFor(ctx, c.ID); nodes[2].Step != models.StepSoftware {
					t.Errorf("an installing node's step is %q, want software (L11)", nodes[2].Step)
				}
				c = w.runUntil(c.ID, models.StatusReady, 5*time.Minute, 30*time.Second)
				if c.Status != models.StatusReady || c.LastError != "" || c.ReadyAt == nil {
					t.Fatalf("status %s lastError %q\n%s", c.Status, c.LastError, w.events(c.ID))
				}
				nodes, _ := w.store.NodesFor(ctx, c.ID)
				for _, n := range nodes {
					if n.Status != models.NodeReady || n.Step != "done" || n.SoftwareAt == nil {
						t.Errorf("%s: status %s step %s softwareAt %v", n.Name, n.Status, n.Step, n.SoftwareAt)
					}
				}
				proveEveryNode(t, w, c)
				proveHeadFirst(t, w, c)
				ev := w.events(c.ID)
				for _, want := range []string{"|node-0|software|node-0 installed " + software, "|node-2|software|node-2 installed " + software,
					"status|ready||software|", "passed its check on every node"} {
					if !strings.Contains(ev, want) {
						t.Errorf("events lack %q:\n%s", want, ev)
					}
				}
				_, err := w.store.Kubeconfig(ctx, w.org.ID, c.ID)
				if software != "kubernetes" && !errors.Is(err, models.ErrNotFound) {
					t.Errorf("kubeconfig of a %s cluster: %v, want not found", software, err)
				}
			})
		})
	}
}

// proveEveryNode parses the check that made the cluster ready: every node
// is idle (Slurm), Ready with its 8 GPUs allocatable (Kubernetes), or
// listed (Ray).
func proveEveryNode(t *testing.T, w *world, c models.Cluster) {
	t.Helper()
	check := w.lastCheck(c.ID, 1)
	if check.Status != models.TaskOK || check.Rank != 0 || !strings.HasPrefix(check.Summary, "ready") {
		t.Fatalf("last check: %s on node-%d, summary %q", check.Status, check.Rank, check.Summary)
	}
	var rep readiness.Report
	var err error
	if c.Software == "ray" {
		rep, err = readiness.RayCount(check.Output, 3)
	} else {
		rep, err = readiness.Check(c.Software, check.Output, []string{"node-0", "node-1", "node-2"}, 8)
	}
	if err != nil || !rep.Ready || rep.Healthy != 3 {
		t.Fatalf("check output does not prove 3 nodes: %v %+v\n%s", err, rep, check.Output)
	}
	switch c.Software {
	case "kubernetes":
		for _, n := range rep.Nodes {
			if n.GPUs != 8 {
				t.Errorf("%s has %d GPUs allocatable, want 8", n.Node, n.GPUs)
			}
		}
	case "ray":
		if rep.TotalGPUs != 24 {
			t.Errorf("ray lists %d GPUs, want 24", rep.TotalGPUs)
		}
	}
}

// proveHeadFirst: no worker took its install before node-0's succeeded.
func proveHeadFirst(t *testing.T, w *world, c models.Cluster) {
	t.Helper()
	var head models.SoftwareTask
	var workers []models.SoftwareTask
	for _, tk := range w.tasks(c.ID, 1) {
		switch {
		case tk.Kind == models.TaskInstall && tk.Rank == 0:
			head = tk
		case tk.Kind == models.TaskInstall:
			workers = append(workers, tk)
		}
	}
	if head.FinishedAt == nil || len(workers) != 2 {
		t.Fatalf("head %+v, %d workers", head, len(workers))
	}
	for _, tk := range workers {
		if tk.SentAt == nil || tk.SentAt.Before(*head.FinishedAt) || tk.Status != models.TaskOK {
			t.Errorf("%s install sent %v before node-0 finished %v (status %s)", tk.Node(), tk.SentAt, head.FinishedAt, tk.Status)
		}
	}
}

// S1: each role gets its configuration: slurm.conf naming every node with
// its CPUs, memory and GPUs and one munge key; kubeadm init on node-0 with
// the cluster's token and workers joining it; a Ray head and workers
// joining it with --address.
func TestSoftwareRolesAndConfig(t *testing.T) {
	cases := []struct {
		software string
		head     []string
		worker   []string
	}{
		{"slurm", []string{"apt-get install -y -q munge slurm-client slurmd slurmctld", "systemctl restart munge slurmctld slurmd"},
			[]string{"apt-get install -y -q munge slurm-client slurmd\n", "systemctl restart munge slurmd"}},
		{"kubernetes", []string{"kubeadm init --token ", "--apiserver-advertise-address 10.77.0.1", "BEGIN CLUSTERDECK KUBECONFIG"},
			[]string{"kubeadm join 10.77.0.1:6443 --token ", "--node-name node-2"}},
		{"ray", []string{"ray start --head --port=6379 --node-ip-address=10.77.0.1 --num-gpus=8"},
			[]string{"ray start --address=10.77.0.1:6379 --node-ip-address=10.77.0.3 --num-gpus=8"}},
	}
	for _, tc := range cases {
		t.Run(tc.software, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				w := newWorld(t, db)
				c := w.launchWith("H100_80GB", 3, 8, tc.software)
				c = w.runUntil(c.ID, models.StatusReady, 15*time.Minute, 30*time.Second)
				if c.Status != models.StatusReady {
					t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
				}
				byRank := map[int]models.SoftwareTask{}
				for _, tk := range w.tasks(c.ID, 1) {
					if tk.Kind == models.TaskInstall {
						byRank[tk.Rank] = tk
					}
				}
				head, worker := byRank[0].Decode(), byRank[2].Decode()
				for _, want := range tc.head {
					if !strings.Contains(head.Script, want) {
						t.Errorf("node-0's script lacks %q:\n%s", want, head.Script)
					}
				}
				for _, want := range tc.worker {
					if !strings.Contains(worker.Script, want) {
						t.Errorf("node-2's script lacks %q:\n%s", want, worker.Script)
					}
				}
				switch tc.software {
				case "slurm":
					if byRank[0].Role != "controller" || byRank[1].Role != "compute" {
						t.Errorf("roles %s, %s", byRank[0].Role, byRank[1].Role)
					}
					conf := worker.Files["/etc/slurm/slurm.conf"]
					for _, want := range []string{"SlurmctldHost=node-0(10.77.0.1)",
						"NodeName=node-2 NodeAddr=10.77.0.3 CPUs=96 RealMemory=921600 Gres=gpu:8"} {
						if !strings.Contains(conf, want) {
							t.Errorf("slurm.conf lacks %q:\n%s", want, conf)
						}
					}
					if worker.Files["/etc/slurm/gres.conf"] == "" || worker.Files["/etc/clusterdeck/munge.key.b64"] == "" {
						t.Error("gres.conf or munge key missing")
					}
				case "kubernetes":
					token := models.KubeBootstrapToken(c)
					if !strings.Contains(head.Script, "--token "+token) || !strings.Contains(worker.Script, "--token "+token) {
						t.Errorf("node-0 and workers do not share the bootstrap token %s", token)
					}
					kc, err := w.store.Kubeconfig(context.Background(), w.org.ID, c.ID)
					// node-0's own admin.conf, as its install printed it (S1).
					if err != nil || !strings.Contains(kc, "server: https://10.77.0.1:6443") || !strings.Contains(kc, "client-key-data: ") {
						t.Errorf("kubeconfig: %v\n%s", err, kc)
					}
					if _, err := w.store.Kubeconfig(context.Background(), "org_other", c.ID); !errors.Is(err, models.ErrNotFound) {
						t.Errorf("another org's kubeconfig: %v, want not found", err)
					}
				case "ray":
					if byRank[0].Role != "head" || byRank[2].Role != "worker" {
						t.Errorf("roles %s, %s", byRank[0].Role, byRank[2].Role)
					}
				}
			})
		})
	}
}

// N3: the env and the files are the same on every node but for NODE_RANK;
// vm and bare_metal get /shared/hostfile, containers the hostfile in the
// SSH user's home (V4).
func TestNodeContractIdenticalButRank(t *testing.T) {
	cases := []struct {
		software, accel string
		gpus            int
		shared          bool
	}{
		{"slurm", "H100_80GB", 8, true},
		{"ray", "L40S", 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.software, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				w := newWorld(t, db)
				c := w.launchWith(tc.accel, 3, tc.gpus, tc.software)
				c = w.runUntil(c.ID, models.StatusReady, 15*time.Minute, 30*time.Second)
				if c.Status != models.StatusReady {
					t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
				}
				var payloads []models.TaskPayload
				for _, tk := range w.tasks(c.ID, 1) {
					if tk.Kind == models.TaskInstall {
						payloads = append(payloads, tk.Decode())
					}
				}
				if len(payloads) != 3 {
					t.Fatalf("%d installs, want 3", len(payloads))
				}
				base := payloads[0]
				for rank, p := range payloads {
					if p.Env["NODE_RANK"] != string(rune('0'+rank)) || p.Env["MASTER_ADDR"] != "10.77.0.1" || p.Env["NNODES"] != "3" {
						t.Errorf("node-%d env %v", rank, p.Env)
					}
					if !sameButRank(base.Env, p.Env) {
						t.Errorf("node-%d env differs beyond NODE_RANK:\n%v\n%v", rank, base.Env, p.Env)
					}
					if len(p.Files) != len(base.Files) {
						t.Errorf("node-%d has %d files, node-0 %d", rank, len(p.Files), len(base.Files))
					}
					for path, content := range base.Files {
						if withoutRank(p.Files[path]) != withoutRank(content) {
							t.Errorf("node-%d's %s differs beyond NODE_RANK", rank, path)
						}
					}
					if !strings.Contains(p.Files["/etc/clusterdeck/env"], "export NODE_RANK="+string(rune('0'+rank))) {
						t.Errorf("node-%d env file:\n%s", rank, p.Files["/etc/clusterdeck/env"])
					}
					if !strings.Contains(p.Files["/etc/clusterdeck/hosts"], "10.77.0.3 node-2\n") {
						t.Errorf("node-%d hosts:\n%s", rank, p.Files["/etc/clusterdeck/hosts"])
					}
					_, shared := p.Files["/shared/hostfile"]
					if shared != tc.shared || !strings.Contains(p.Files["/etc/clusterdeck/hostfile"], "node-2 slots="+string(rune('0'+tc.gpus))) {
						t.Errorf("node-%d hostfile: shared %v, files %v", rank, shared, p.Files["/etc/clusterdeck/hostfile"])
					}
					if !tc.shared && !strings.Contains(p.Script, `"$home/hostfile"`) {
						t.Errorf("a container node does not get ~/hostfile:\n%s", p.Script)
					}
				}
			})
		})
	}
}

func sameButRank(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if k != "NODE_RANK" && b[k] != v {
			return false
		}
	}
	return true
}

func withoutRank(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "export NODE_RANK=") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// L6: an install that fails → degraded at once with the node and the
// tool's output in the events; machines stay up and billing runs; retry
// install runs a new attempt → ready.
func TestInstallFailsThenRetry(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultInstallFails, Node: 1, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchWith("H100_80GB", 3, 8, "slurm")
		c = w.runUntil(c.ID, models.StatusDegraded, 15*time.Minute, 30*time.Second)
		if c.Status != models.StatusDegraded || c.LastError != "install_failed:node-1" || c.ReadyAt == nil || c.EndedAt != nil {
			t.Fatalf("status %s lastError %q readyAt %v\n%s", c.Status, c.LastError, c.ReadyAt, w.events(c.ID))
		}
		if w.stock("h100.8x.vm") != 7 {
			t.Errorf("machines released after an install failure: stock %d", w.stock("h100.8x.vm"))
		}
		ev := w.events(c.ID)
		for _, want := range []string{"error|installing|node-1|software|node-1: installing Slurm as compute failed",
			"status|degraded|node-1|software|Installing Slurm failed on node-1", "503  Service Unavailable",
			"billing starts now. Installing Slurm."} { // the software's name as written, not "slurm"
			if !strings.Contains(ev, want) {
				t.Errorf("events lack %q:\n%s", want, ev)
			}
		}
		if _, err := w.store.RetryInstall(ctx, "org_other", c.ID, "mallory"); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("retry by another org: %v, want not found", err)
		}
		// Degraded stays degraded: nothing retries without the user (L6).
		if c = w.runUntil(c.ID, models.StatusReady, 3*time.Minute, 30*time.Second); c.Status != models.StatusDegraded {
			t.Fatalf("status %s without a retry", c.Status)
		}

		c, err := w.store.RetryInstall(ctx, w.org.ID, c.ID, "alice@example.com")
		if err != nil || c.Status != models.StatusInstalling || c.LastError != "" {
			t.Fatalf("retry: %v, status %s lastError %q", err, c.Status, c.LastError)
		}
		if _, err := w.store.RetryInstall(ctx, w.org.ID, c.ID, "alice@example.com"); !errors.Is(err, models.ErrConflict) {
			t.Errorf("retry while installing: %v, want conflict", err)
		}
		c = w.runUntil(c.ID, models.StatusReady, 5*time.Minute, 30*time.Second)
		if c.Status != models.StatusReady {
			t.Fatalf("after retry: %s %q\n%s", c.Status, c.LastError, w.events(c.ID))
		}
		if n := len(w.tasks(c.ID, 2)); n < 4 {
			t.Errorf("attempt 2 has %d tasks, want 3 installs and a check", n)
		}
		if !strings.Contains(w.events(c.ID), "Install retry requested by alice@example.com after install_failed:node-1") {
			t.Errorf("no retry event:\n%s", w.events(c.ID))
		}
		if _, err := w.store.RetryInstall(ctx, w.org.ID, c.ID, "alice@example.com"); !errors.Is(err, models.ErrConflict) {
			t.Errorf("retry of a ready cluster: %v, want conflict", err)
		}
	})
}

// L6, S2: a check that keeps failing is retried until the install
// deadline (15 min from readyAt for Slurm and Ray, 20 for Kubernetes),
// then the cluster is degraded naming the failing node and quoting the tool.
func TestCheckFailsDegradesAtDeadline(t *testing.T) {
	cases := []struct {
		software string
		window   time.Duration
		quote    string
	}{
		{"slurm", 15 * time.Minute, "node-2 drained"},
		{"kubernetes", 20 * time.Minute, `"reason": "KubeletNotReady"`},
		{"ray", 15 * time.Minute, "RayletUnexpectedlyDied (ip: 10.77.0.3)"},
	}
	for _, tc := range cases {
		t.Run(tc.software, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				w := newWorld(t, db)
				if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultCheckFails, Node: 2}); err != nil {
					t.Fatal(err)
				}
				c := w.launchWith("H100_80GB", 3, 8, tc.software)
				c = w.untilInstalling(c.ID)
				deadline := c.ReadyAt.Add(tc.window)
				c = w.runUntil(c.ID, models.StatusDegraded, tc.window+5*time.Minute, 30*time.Second)
				if c.Status != models.StatusDegraded || c.LastError != "check_failed:"+tc.software {
					t.Fatalf("status %s lastError %q\n%s", c.Status, c.LastError, w.events(c.ID))
				}
				if now := w.clock.Now(); now.Before(deadline) || now.After(deadline.Add(time.Minute)) {
					t.Errorf("degraded at %s, deadline %s", now, deadline)
				}
				if checks := w.lastCheck(c.ID, 1).Seq; checks < 10 {
					t.Errorf("only %d checks before the deadline; want one per tick", checks)
				}
				ev := w.events(c.ID)
				want := "status|degraded|node-2|software|"
				if !strings.Contains(ev, want) || !strings.Contains(ev, tc.quote) {
					t.Errorf("degraded event lacks %q or the tool's %q:\n%s", want, tc.quote, ev)
				}
				if n := strings.Count(ev, "check on node-0"); n > 3 {
					t.Errorf("%d check events: an unchanged verdict should be recorded once\n%s", n, ev)
				}
			})
		})
	}
}

// S1: Kubernetes is refused on container machines, and unknown software
// everywhere, as field errors, creating nothing.
func TestSoftwareRefusedAtLaunch(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		for _, tc := range []struct{ accel, software, want string }{
			{"L40S", "kubernetes", "Kubernetes needs vm or bare_metal machines; this offer runs containers"},
			{"H100_80GB", "lsf", "choose one of none, slurm, kubernetes, ray"},
		} {
			gpus := map[string]int{"L40S": 2, "H100_80GB": 8}[tc.accel]
			q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: tc.accel, Nodes: 2, GPUsPerNode: gpus})
			if err != nil {
				t.Fatal(err)
			}
			_, created, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID, Actor: "test", IdemKey: "k-" + tc.software, Workload: models.Workload{Name: "k8s", Software: tc.software}})
			var fe models.FieldErrors
			if !errors.As(err, &fe) || fe["software"] != tc.want || created {
				t.Errorf("%s on %s: %v (created %v), want software: %q", tc.software, tc.accel, err, created, tc.want)
			}
			if q, _ = w.store.QuoteForOrg(ctx, w.org.ID, q.ID); q.UsedByCluster != "" {
				t.Errorf("the refused launch used its quote")
			}
		}
		if cs, _ := w.store.ClustersForOrg(ctx, w.org.ID); len(cs) != 0 {
			t.Errorf("%d clusters created by refused launches", len(cs))
		}
		// Ray runs on containers.
		if c := w.launchWith("L40S", 2, 2, "ray"); c.Software != "ray" {
			t.Errorf("ray on containers: %+v", c)
		}
	})
}

// The task protocol: a task answers only to its own node (404 for another
// node or cluster), a repeated result changes nothing, and the server
// keeps what node-0 reports for Kubernetes (its join command for the
// workers, its kubeconfig for the customer) out of the stored output.
func TestTaskProtocol(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.launchWith("H100_80GB", 2, 8, "kubernetes")
		other := w.launchWith("H100_80GB", 2, 8, "ray")
		c = w.untilInstalling(c.ID)
		other = w.cluster(other.ID)
		tasks := w.tasks(c.ID, 1)
		if len(tasks) != 1 || tasks[0].Rank != 0 || tasks[0].Status != models.TaskPending {
			t.Fatalf("tasks after joining: %+v", tasks)
		}
		head := tasks[0]

		if code, body := w.post(w.token(c, 1), "/v1/agent/heartbeat", struct{}{}); code != 200 || !strings.Contains(body, `"task":null`) {
			t.Errorf("node-1 heartbeat: %d %s, want no task until node-0 installed", code, body)
		}
		code, body := w.post(w.token(c, 0), "/v1/agent/heartbeat", struct{}{})
		if code != 200 || !strings.Contains(body, `"id":"`+head.ID+`"`) || !strings.Contains(body, `"kind":"install"`) ||
			!strings.Contains(body, `"role":"control-plane"`) || !strings.Contains(body, `"/etc/clusterdeck/env"`) {
			t.Fatalf("node-0 heartbeat: %d %s", code, body)
		}

		const kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.77.0.1:6443\n  name: kubernetes\n"
		join := "kubeadm join 10.77.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:" + strings.Repeat("ab", 32)
		output := "Your Kubernetes control-plane has initialized successfully!\n" +
			models.BlockBegin("JOIN COMMAND") + "\n" + join + "\n" + models.BlockEnd("JOIN COMMAND") + "\n" +
			models.BlockBegin("KUBECONFIG") + "\n" + kubeconfig + models.BlockEnd("KUBECONFIG") + "\n"
		result := map[string]any{"ok": true, "output": output}
		for _, tok := range []string{w.token(c, 1), w.token(other, 0)} {
			if code, body := w.post(tok, "/v1/agent/tasks/"+head.ID, result); code != http.StatusNotFound {
				t.Errorf("another node answering node-0's task: %d %s, want 404", code, body)
			}
		}
		if code, _ := w.post(w.token(c, 0), "/v1/agent/tasks/tk_nosuchtask", result); code != http.StatusNotFound {
			t.Errorf("unknown task: %d, want 404", code)
		}
		// node-0 installs for real (the simulated kubeadm prints no join
		// command or kubeconfig); what it posts is what a real one prints.
		if _, err := w.execs[c.GroupName()+"/node-0"].Run(ctx, "install:kubernetes", head.Decode().Script); err != nil {
			t.Fatal(err)
		}
		if code, body := w.post(w.token(c, 0), "/v1/agent/tasks/"+head.ID, result); code != 200 || !strings.Contains(body, `"status":"ok"`) {
			t.Fatalf("node-0's result: %d %s", code, body)
		}
		events := len(strings.Split(w.events(c.ID), "\n"))
		again := map[string]any{"ok": false, "output": "something else"}
		if code, body := w.post(w.token(c, 0), "/v1/agent/tasks/"+head.ID, again); code != 200 || !strings.Contains(body, `"status":"ok"`) {
			t.Errorf("repeated result: %d %s, want 200 with the recorded status", code, body)
		}
		if n := len(strings.Split(w.events(c.ID), "\n")); n != events {
			t.Errorf("a repeated result wrote %d events", n-events)
		}
		stored := w.tasks(c.ID, 1)[0]
		if stored.Status != models.TaskOK || strings.Contains(stored.Output, "kind: Config") || strings.Contains(stored.Output, join) ||
			!strings.Contains(stored.Output, "initialized successfully") {
			t.Errorf("stored output:\n%s", stored.Output)
		}
		if kc, err := w.store.Kubeconfig(ctx, w.org.ID, c.ID); err != nil || kc != kubeconfig {
			t.Errorf("kubeconfig = %q, %v; want node-0's", kc, err)
		}

		c = w.runUntil(c.ID, models.StatusReady, 5*time.Minute, 30*time.Second)
		if c.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		for _, tk := range w.tasks(c.ID, 1) {
			if tk.Kind == models.TaskInstall && tk.Rank == 1 && !strings.Contains(tk.Decode().Script, join+" --node-name node-1") {
				t.Errorf("node-1 does not join with node-0's command:\n%s", tk.Decode().Script)
			}
		}
		if kc, _ := w.store.Kubeconfig(ctx, w.org.ID, c.ID); kc != kubeconfig {
			t.Errorf("node-0's kubeconfig was replaced:\n%s", kc)
		}
	})
}

// A handed-out install that is never answered goes to its node again after
// the lease; one that never reports before the deadline degrades the
// cluster naming the node (L6).
func TestInstallNeverAnswered(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.untilInstalling(w.launchWith("H100_80GB", 2, 8, "ray").ID)
		head := w.tasks(c.ID, 1)[0]
		node0 := w.token(c, 0)
		take := func() string {
			code, body := w.post(node0, "/v1/agent/heartbeat", struct{}{})
			if code != 200 {
				t.Fatalf("heartbeat: %d %s", code, body)
			}
			return body
		}
		if body := take(); !strings.Contains(body, head.ID) {
			t.Fatalf("first heartbeat: %s", body)
		}
		if body := take(); !strings.Contains(body, `"task":null`) {
			t.Errorf("a task in flight was handed out again at once: %s", body)
		}
		w.clock.Advance(models.InstallTaskLease + time.Second)
		if body := take(); !strings.Contains(body, head.ID) {
			t.Errorf("after the lease: %s, want %s again", body, head.ID)
		}
		// Hold node-0's install (taking it before its agent each tick) until the deadline.
		for end := c.ReadyAt.Add(16 * time.Minute); w.clock.Now().Before(end) && w.cluster(c.ID).Status == models.StatusInstalling; {
			w.clock.Advance(30 * time.Second)
			take()
			w.tick()
		}
		c = w.cluster(c.ID)
		if c.Status != models.StatusDegraded || c.LastError != "install_failed:node-0" {
			t.Fatalf("status %s lastError %q\n%s", c.Status, c.LastError, w.events(c.ID))
		}
		if ev := w.events(c.ID); !strings.Contains(ev, "status|degraded|node-0|software|node-0 did not install ray within 15m0s (attempt 1): its install never reported back.") {
			t.Errorf("events:\n%s", ev)
		}
		// A node that left is not a software failure: no retry install for it (R2).
		if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Update("last_error", "node_lost:health").Error; err != nil {
			t.Fatal(err)
		}
		if _, err := w.store.RetryInstall(context.Background(), w.org.ID, c.ID, "alice"); !errors.Is(err, models.ErrConflict) {
			t.Errorf("retry install of a cluster degraded by a lost node: %v, want conflict", err)
		}
	})
}
