package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// newJoinWorld is the health world (provision, install, join, health and
// recovery jobs, real agents) with one ready cluster of nodes machines
// running software.
func newJoinWorld(t *testing.T, db *gorm.DB, nodes int, software string) *healthWorld {
	t.Helper()
	h := newHealthWorldWith(t, db, nodes, software)
	for range 30 {
		if c := h.cluster(h.c.ID); c.Status == models.StatusReady {
			return h
		}
		h.run(time.Minute, time.Minute)
	}
	t.Fatalf("setup: status %s\n%s", h.cluster(h.c.ID).Status, h.events(h.c.ID))
	return nil
}

// nodes lists the cluster's node rows by rank.
func (h *healthWorld) nodes() []models.ClusterNode {
	h.t.Helper()
	nodes, err := h.store.NodesFor(context.Background(), h.c.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return nodes
}

// usageBy sums the cluster's written usage per node id: amount and minutes.
func (h *healthWorld) usageBy() (map[string]models.Money, map[string]int64) {
	h.t.Helper()
	rows, err := h.store.UsageEntries(context.Background(), h.org.ID, h.c.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	amount, minutes := map[string]models.Money{}, map[string]int64{}
	for _, r := range rows {
		amount[r.NodeID] -= r.Amount
		minutes[r.NodeID] += r.Minutes
	}
	return amount, minutes
}

// untilJoined passes (1-minute health passes) until no machine is joining.
func (h *healthWorld) untilJoined(limit int) {
	h.t.Helper()
	for range limit {
		joining := false
		for _, n := range h.nodes() {
			joining = joining || n.JoinKind != ""
		}
		if !joining {
			return
		}
		h.pass(time.Minute)
	}
	h.t.Fatalf("still joining after %d minutes\n%s", limit, h.events(h.c.ID))
}

// L10: an added worker is placed alone (one more machine of the offer's
// stock), takes the node steps, every node installs Slurm again with the
// new node list, node-0's check lists it, and it joins: node count,
// hostfile, env and commands have it, and it bills from when it joined,
// on its own line, while the others bill on from readyAt.
func TestAddWorkerJoinsAndBillsFromItsUpTime(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "slurm")
		ctx := context.Background()
		ready := *h.cluster(h.c.ID).ReadyAt
		h.run(20*time.Minute, time.Minute)

		c, n, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n.Rank != 2 || n.Name != "node-2" || n.PrivateIP != "" || c.Nodes != 3 || c.USDPerHour != 3*c.MachineHour {
			t.Fatalf("after add: %+v, cluster nodes %d at %d/h", n, c.Nodes, c.USDPerHour)
		}
		if _, _, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID); !errors.Is(err, models.ErrJoinInProgress) {
			t.Fatalf("second add while one joins = %v, want ErrJoinInProgress", err)
		}
		h.tick()
		if got := h.stock("h100.8x.vm"); got != 7 {
			t.Fatalf("stock after the worker's placement = %d, want 7 (10 − 2 − 1)", got)
		}
		h.untilJoined(40)
		c = h.cluster(h.c.ID)
		nodes := h.nodes()
		if c.Status != models.StatusReady || c.Nodes != 3 || len(nodes) != 3 {
			t.Fatalf("after join: %s with %d machines, %d rows\n%s", c.Status, c.Nodes, len(nodes), h.events(c.ID))
		}
		w2 := nodes[2]
		// No address is assumed for the worker: the simulated cloud's placement gave it 10.77.0.3 (OP1, N1).
		if w2.Status != models.NodeReady || w2.MeshAt == nil || w2.SoftwareAt == nil || w2.ProviderNodeID == "" || w2.HeartbeatAt == nil ||
			w2.PrivateIP != "10.77.0.3" {
			t.Fatalf("node-2 = %+v", w2)
		}
		if w2.ClaimedBy != w2.ProviderNodeID || w2.ClaimedAt == nil {
			t.Errorf("node-2 claimed by %q at %v, want its machine %s with the bootstrap token (OP1)", w2.ClaimedBy, w2.ClaimedAt, w2.ProviderNodeID)
		}
		joinedAt := *w2.SoftwareAt
		ev := h.events(c.ID)
		for _, want := range []string{"request|ready|node-2|join|Worker node-2 requested", "|node-2|reserved|The added machine",
			"|node-2|agent|", "|node-2|mesh|", "node-2 installed slurm as compute (join 1)", "node-0 installed slurm as controller (join 1)",
			"|node-2|join|node-2 joined the cluster"} {
			if !strings.Contains(ev, want) {
				t.Errorf("events lack %q:\n%s", want, ev)
			}
		}
		// Every node was handed the new node list: hostfile, env, slurm.conf.
		tasks, err := h.store.JoinTasks(ctx, c.ID, w2.JoinSeq)
		if err != nil {
			t.Fatal(err)
		}
		installed := map[int]bool{}
		for _, tk := range tasks {
			if tk.Kind != models.TaskInstall {
				continue
			}
			installed[tk.Rank] = tk.Status == models.TaskOK
			p := tk.Decode()
			if !strings.Contains(p.Files["/etc/clusterdeck/hostfile"], "node-2") ||
				!strings.Contains(p.Files["/etc/clusterdeck/env"], "NNODES=3") || !strings.Contains(p.Files["/etc/clusterdeck/env"], "WORLD_SIZE=24") {
				t.Errorf("node-%d join install: hostfile %q env %q", tk.Rank, p.Files["/etc/clusterdeck/hostfile"], p.Files["/etc/clusterdeck/env"])
			}
		}
		if len(installed) != 3 || !installed[0] || !installed[1] || !installed[2] {
			t.Errorf("join installs = %v, want all three nodes done", installed)
		}
		// The cluster's own contract (connections panel, start orders) has it now.
		spec := models.ClusterSpec(c, nodes, models.Offer{})
		if !strings.Contains(spec.Hostfile(), "node-2") || !strings.Contains(spec.EnvBlock(0), "WORLD_SIZE=24") {
			t.Errorf("cluster spec after join: hostfile %q env %q", spec.Hostfile(), spec.EnvBlock(0))
		}

		// X7: the worker's own span starts when it joined.
		ivs, err := h.store.MachineIntervals(ctx, h.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if iv := ivs[w2.ID]; len(iv) != 1 || !iv[0].StartedAt.Equal(joinedAt) || iv[0].State != models.MachineRunning {
			t.Errorf("node-2 intervals = %+v, want one running from %s", iv, joinedAt)
		}
		// Billing: past two hour marks, then terminate.
		h.run(2*time.Hour, 10*time.Minute)
		if _, err := h.store.RequestTerminate(ctx, h.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		h.tick()
		h.run(time.Hour, 30*time.Minute) // the final period is written after the release
		c = h.cluster(c.ID)
		if c.Status != models.StatusTerminated || c.ReleasedAt == nil {
			t.Fatalf("after terminate: %s", c.Status)
		}
		amount, minutes := h.usageBy()
		end := *c.ReleasedAt
		for _, n := range nodes {
			from := ready
			if n.Rank == 2 {
				from = joinedAt
			}
			want := int64(end.Sub(from) / time.Minute)
			if minutes[n.ID] != want || amount[n.ID] != c.MachineHour*models.Money(want)/60 {
				t.Errorf("%s billed %d minutes for %d, want %d minutes (from %s) for %d", n.Name, minutes[n.ID], amount[n.ID],
					want, from.Format("15:04"), c.MachineHour*models.Money(want)/60)
			}
		}
		if got := h.stock("h100.8x.vm"); got != 10 {
			t.Errorf("stock after terminate = %d, want 10", got)
		}
		h.checkBalance()
	})
}

// L10: a worker that never boots misses its running deadline; only that
// machine is released, the cluster is as it was (machines, rate, rows,
// the other machines' state), an event says why, and nothing was billed
// for it.
func TestAddWorkerFailureReleasesOnlyThatMachine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "none")
		ctx := context.Background()
		before := h.cluster(h.c.ID)
		h.inject(sim.FaultNeverBoots, 2, func(f *sim.Fault) { f.Count = 1 })
		if _, _, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID); err != nil {
			t.Fatal(err)
		}
		h.tick()
		if got := h.stock("h100.8x.vm"); got != 7 {
			t.Fatalf("stock after placement = %d, want 7", got)
		}
		h.untilJoined(20)
		c := h.cluster(h.c.ID)
		nodes := h.nodes()
		if c.Status != models.StatusReady || c.Nodes != 2 || c.USDPerHour != before.USDPerHour || len(nodes) != 2 {
			t.Fatalf("after the failed add: %s, %d machines at %d/h (was %d), %d rows\n%s",
				c.Status, c.Nodes, c.USDPerHour, before.USDPerHour, len(nodes), h.events(c.ID))
		}
		for _, n := range nodes {
			if n.Status != models.NodeReady {
				t.Errorf("%s is %s, want ready (untouched)", n.Name, n.Status)
			}
		}
		if got := h.stock("h100.8x.vm"); got != 8 {
			t.Errorf("stock after the release = %d, want 8 (only the worker released)", got)
		}
		g, err := h.cloud.DescribeGroup(ctx, c.ID)
		if err != nil || len(g.Nodes) != 2 {
			t.Fatalf("group at the provider = %+v, %v; want the 2 original machines", g.Nodes, err)
		}
		if ev := h.events(c.ID); !strings.Contains(ev, "error|ready|node-2|running|Adding node-2 failed at step running: It missed the running step's deadline") {
			t.Errorf("no failure event:\n%s", ev)
		}
		h.run(2*time.Hour, 20*time.Minute)
		amount, _ := h.usageBy()
		if len(amount) != 2 || amount[nodes[0].ID] == 0 {
			t.Errorf("usage lines = %v, want the 2 original machines only", amount)
		}
		// The cluster takes another worker afterwards, at the same rank.
		if _, n, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID); err != nil || n.Rank != 2 {
			t.Fatalf("add after a failure: %+v, %v", n, err)
		}
		h.untilJoined(20)
		if c, nodes := h.cluster(h.c.ID), h.nodes(); c.Nodes != 3 || len(nodes) != 3 || nodes[2].Status != models.NodeReady {
			t.Fatalf("second add: %d machines, %d rows\n%s", c.Nodes, len(nodes), h.events(c.ID))
		}
	})
}

// L10 with L4: a worker whose nvidia-smi shows fewer GPUs than the offer
// is released at its check-in, naming the mismatch; the cluster is as it was.
func TestAddWorkerWithMissingGPUIsReleased(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "none")
		h.inject(sim.FaultGPUMissing, 2, func(f *sim.Fault) { f.Count = 1 })
		if _, _, err := h.store.As(h.actor).AddWorker(context.Background(), h.c.ID); err != nil {
			t.Fatal(err)
		}
		h.untilJoined(15)
		c := h.cluster(h.c.ID)
		if c.Nodes != 2 || len(h.nodes()) != 2 || h.stock("h100.8x.vm") != 8 {
			t.Fatalf("after the GPU mismatch: %d machines, %d rows, stock %d\n%s", c.Nodes, len(h.nodes()), h.stock("h100.8x.vm"), h.events(c.ID))
		}
		if ev := h.events(c.ID); !strings.Contains(ev, "Adding node-2 failed at step agent:") || !strings.Contains(ev, "GPU") {
			t.Errorf("no mismatch event:\n%s", ev)
		}
	})
}

// L10 with L2: a worker is admitted against the quotas and the balance
// like a launch; a refusal changes nothing.
func TestAddWorkerAdmission(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "none")
		ctx := context.Background()
		before := h.events(h.c.ID)
		if err := db.Model(&models.Org{}).Where("id = ?", h.org.ID).Update("max_machines", 2).Error; err != nil {
			t.Fatal(err)
		}
		_, _, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID)
		var qe *models.QuotaError
		if !errors.As(err, &qe) || qe.Resource != "machines" || qe.InUse != 2 {
			t.Fatalf("add over the machine quota = %v, want a machines QuotaError", err)
		}
		if err := db.Model(&models.Org{}).Where("id = ?", h.org.ID).Update("max_machines", 64).Error; err != nil {
			t.Fatal(err)
		}
		// Spend the balance down to less than what one more hour needs.
		bal, _ := h.store.Balance(ctx, h.org.ID)
		c := h.cluster(h.c.ID)
		if _, err := h.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: h.org.ID, Kind: models.LedgerAdjustment,
			Amount: -(bal - c.USDPerHour - c.MachineHour/2), IdemKey: "spend", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		_, _, err = h.store.As(h.actor).AddWorker(ctx, h.c.ID)
		var be *models.InsufficientBalanceError
		if !errors.As(err, &be) {
			t.Fatalf("add without the balance = %v, want InsufficientBalanceError", err)
		}
		if got := h.cluster(h.c.ID); got.Nodes != 2 || len(h.nodes()) != 2 || got.USDPerHour != c.USDPerHour {
			t.Fatalf("a refused add changed the cluster: %d machines, %d rows", got.Nodes, len(h.nodes()))
		}
		if after := h.events(h.c.ID); after != before {
			t.Errorf("a refused add wrote events:\n%s", strings.TrimPrefix(after, before))
		}
	})
}

// X5: a machine that cannot come back is replaced by a new one with the
// same rank, name and interconnect address, joined through the agent
// (check-in, peers) under its own deadlines; the old machine's agent token
// stops working; it bills on the same line, not between the release of the
// old machine and the join of the new one; the cluster is ready again.
func TestReplaceNodeKeepsRankNameAddressAndBillingLine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 3, "none")
		ctx := context.Background()
		ready := *h.cluster(h.c.ID).ReadyAt
		old := h.nodes()[1]
		oldToken := models.AgentToken(h.cluster(h.c.ID), old)
		h.inject(sim.FaultUnrecoverable, 1)
		var c models.Cluster
		for range 5 {
			c = h.pass(time.Minute)
		}
		if c.Status != models.StatusDegraded || h.nodes()[1].Status != models.NodeDown {
			t.Fatalf("before replace: %s, node-1 %s\n%s", c.Status, h.nodes()[1].Status, h.events(c.ID))
		}
		if _, _, err := h.store.As(h.actor).ReplaceNode(ctx, h.c.ID, 0); !errors.Is(err, models.ErrNotReplaceable) {
			t.Fatalf("replace of a running machine = %v, want ErrNotReplaceable", err)
		}
		c, n, err := h.store.As(h.actor).ReplaceNode(ctx, h.c.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if old.ClaimedBy != old.ProviderNodeID {
			t.Fatalf("node-1 was claimed by %q, want its machine %s (OP1)", old.ClaimedBy, old.ProviderNodeID)
		}
		if n.ID != old.ID || n.Status != models.NodeJoining || c.Nodes != 3 || c.USDPerHour != 3*c.MachineHour || n.ClaimedBy != "" || n.ClaimedAt != nil {
			t.Fatalf("after the request: %+v; cluster %d machines at %d/h", n, c.Nodes, c.USDPerHour)
		}
		// The old machine holds the bootstrap token too: until the
		// replacement is placed its claim gets nothing (OP1, X5).
		if _, _, err := h.store.ClaimRank(ctx, models.BootstrapToken(c), models.Claim{MachineID: old.ProviderNodeID}); !errors.Is(err, models.ErrNotPlaced) {
			t.Errorf("the old machine's claim while the replacement waits = %v, want ErrNotPlaced", err)
		}
		if _, _, err := h.store.NodeForAgentToken(ctx, oldToken); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("the old machine's token = %v, want refused", err)
		}
		for range 3 { // while the new machine joins the cluster is not healthy yet
			if c = h.pass(time.Minute); c.Status != models.StatusDegraded || h.nodes()[1].Status != models.NodeJoining {
				t.Fatalf("while node-1 is replaced: cluster %s, node-1 %s\n%s", c.Status, h.nodes()[1].Status, h.events(c.ID))
			}
		}
		h.untilJoined(20)
		c = h.pass(time.Minute)
		c = h.pass(time.Minute)
		nodes := h.nodes()
		got := nodes[1]
		if c.Status != models.StatusReady || got.ID != old.ID || got.Rank != 1 || got.Name != "node-1" || got.PrivateIP != old.PrivateIP ||
			got.ProviderNodeID == old.ProviderNodeID || got.Status != models.NodeReady || got.MeshAt == nil {
			t.Fatalf("after the replacement: cluster %s, node %+v (was %+v)\n%s", c.Status, got, old, h.events(c.ID))
		}
		if _, m, err := h.store.NodeForAgentToken(ctx, models.AgentToken(c, got)); err != nil || m.ID != got.ID {
			t.Errorf("the new machine's token: %v", err)
		}
		if got.ClaimedBy != got.ProviderNodeID {
			t.Errorf("node-1 claimed by %q, want the replacement %s with the bootstrap token (OP1)", got.ClaimedBy, got.ProviderNodeID)
		}
		if _, _, err := h.store.ClaimRank(ctx, models.BootstrapToken(c), models.Claim{MachineID: old.ProviderNodeID}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("the old machine's claim after the replacement = %v, want ErrUnknownMachine", err)
		}
		ev := h.events(c.ID)
		for _, want := range []string{"Replacement of node-1 (10.77.0.2) requested", "The replacement machine (the old one is released) of node-1 reserved",
			"|node-1|agent|", "|node-1|mesh|node-1 reached both its peers", "node-1 replaced the machine that was down"} {
			if !strings.Contains(ev, want) {
				t.Errorf("events lack %q:\n%s", want, ev)
			}
		}
		var placedAt, joinedAt time.Time
		evs, _ := h.store.EventsFor(ctx, c.ID)
		for _, e := range evs {
			if e.Node == "node-1" && e.Step == "reserved" {
				placedAt = e.At
			}
			if e.Node == "node-1" && e.Step == "join" && e.Kind == "step" {
				joinedAt = e.At
			}
		}
		h.run(2*time.Hour, 20*time.Minute)
		if _, err := h.store.RequestTerminate(ctx, h.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		h.run(time.Hour, 30*time.Minute)
		c = h.cluster(c.ID)
		amount, minutes := h.usageBy()
		if len(amount) != 3 {
			t.Fatalf("usage lines for %d machines, want 3 (the replacement on node-1's line)", len(amount))
		}
		total := c.ReleasedAt.Sub(ready)
		want1 := int64((total - joinedAt.Sub(placedAt)) / time.Minute)
		if minutes[old.ID] != want1 || amount[old.ID] != c.MachineHour*models.Money(want1)/60 {
			t.Errorf("node-1 billed %d minutes for %d, want %d (all but %s unbilled while replaced)",
				minutes[old.ID], amount[old.ID], want1, joinedAt.Sub(placedAt))
		}
		if want0 := int64(total / time.Minute); minutes[nodes[0].ID] != want0 {
			t.Errorf("node-0 billed %d minutes, want %d", minutes[nodes[0].ID], want0)
		}
		h.checkBalance()
	})
}

// L10 for Kubernetes (the worker runs the join command node-0 reported)
// and Ray (it starts against the head): node-0's own check lists the new
// node before it has joined.
func TestAddWorkerJoinsKubernetesAndRay(t *testing.T) {
	for _, software := range []string{"kubernetes", "ray"} {
		t.Run(software, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				h := newJoinWorld(t, db, 2, software)
				if _, _, err := h.store.As(h.actor).AddWorker(context.Background(), h.c.ID); err != nil {
					t.Fatal(err)
				}
				h.untilJoined(40)
				nodes := h.nodes()
				if c := h.cluster(h.c.ID); c.Status != models.StatusReady || len(nodes) != 3 || nodes[2].Status != models.NodeReady {
					t.Fatalf("%s: %s with %d nodes\n%s", software, c.Status, len(nodes), h.events(h.c.ID))
				}
				if ev := h.events(h.c.ID); !strings.Contains(ev, "check on node-0 (join 1, check") || !strings.Contains(ev, "node-2 joined the cluster") {
					t.Errorf("%s: events:\n%s", software, ev)
				}
				tasks, _ := h.store.JoinTasks(context.Background(), h.c.ID, nodes[2].JoinSeq)
				for _, tk := range tasks {
					if software == "kubernetes" && tk.Kind == models.TaskInstall && tk.Rank == 2 && !strings.Contains(tk.Decode().Script+fmt.Sprint(tk.Decode().Env), "kubeadm join") {
						t.Errorf("node-2's Kubernetes install does not join: %s", tk.Decode().Script)
					}
				}
			})
		})
	}
}

// X5: a replacement that fails its software install is released alone:
// the node stays down, unbilled, and an event says why; the other
// machines are untouched.
func TestReplaceNodeFailureLeavesTheSlotDown(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 3, "slurm")
		ctx := context.Background()
		h.inject(sim.FaultUnrecoverable, 2)
		for range 5 {
			h.pass(time.Minute)
		}
		if h.nodes()[2].Status != models.NodeDown {
			t.Fatalf("node-2 = %s, want down\n%s", h.nodes()[2].Status, h.events(h.c.ID))
		}
		h.inject(sim.FaultInstallFails, 2, func(f *sim.Fault) { f.Software, f.Count = "slurm", 1 })
		stock := h.stock("h100.8x.vm")
		if _, _, err := h.store.As(h.actor).ReplaceNode(ctx, h.c.ID, 2); err != nil {
			t.Fatal(err)
		}
		h.untilJoined(30)
		c := h.cluster(h.c.ID)
		nodes := h.nodes()
		if c.Status != models.StatusDegraded || nodes[2].Status != models.NodeDown || nodes[0].Status != models.NodeReady || nodes[1].Status != models.NodeReady {
			t.Fatalf("after the failed replacement: %s, nodes %s %s %s\n%s", c.Status, nodes[0].Status, nodes[1].Status, nodes[2].Status, h.events(c.ID))
		}
		if ev := h.events(c.ID); !strings.Contains(ev, "Replacing node-2 failed at step software: Installing Slurm on node-2 failed") {
			t.Errorf("no failure event:\n%s", ev)
		}
		if got := h.stock("h100.8x.vm"); got != stock {
			t.Errorf("stock %d → %d: the failed replacement was not released", stock, got)
		}
		g, _ := h.cloud.DescribeGroup(ctx, c.ID)
		if len(g.Nodes) < 2 || g.Nodes[0].State != "running" || g.Nodes[1].State != "running" || len(g.Nodes) == 3 && g.Nodes[2].State != "terminated" {
			t.Errorf("machines at the provider: %+v", g.Nodes)
		}
		// The slot is billed until the old machine was released (it was
		// held, down, at the locked rate: R2), not after.
		var placedAt time.Time
		evs, _ := h.store.EventsFor(ctx, c.ID)
		for _, e := range evs {
			if e.Node == "node-2" && e.Step == "reserved" {
				placedAt = e.At
			}
		}
		h.run(2*time.Hour, 20*time.Minute)
		_, minutes := h.usageBy()
		if want := int64(placedAt.Sub(*c.ReadyAt) / time.Minute); placedAt.IsZero() || minutes[nodes[2].ID] != want {
			t.Errorf("node-2 billed %d minutes, want %d (until its old machine was released at %s)", minutes[nodes[2].ID], want, placedAt)
		}
		if minutes[nodes[0].ID] <= minutes[nodes[2].ID]+60 {
			t.Errorf("node-0 billed %d minutes, want it billed on", minutes[nodes[0].ID])
		}
	})
}

// B5, B6 with L10: a worker is refused while the environment's budget is
// reached, like a launch. A stop requested while a worker joins waits for
// the join job, which releases the worker (the join fails, nothing is
// billed for it, the cluster is back to its machines); then every machine
// that was there is stopped. While the stop is under way no machine can be
// added.
func TestStopDuringJoinReleasesTheWorkerFirst(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "none")
		ctx := context.Background()
		h.run(10*time.Minute, time.Minute)
		if _, err := h.store.As(h.actor).SetBudget(ctx, h.env.ID, models.Micro); err != nil {
			t.Fatal(err)
		}
		var reached *models.BudgetReachedError
		if _, _, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID); !errors.As(err, &reached) {
			t.Fatalf("add while the budget is reached = %v, want a BudgetReachedError", err)
		}
		if c := h.cluster(h.c.ID); c.Nodes != 2 || len(h.nodes()) != 2 || c.USDPerHour != 2*c.MachineHour {
			t.Fatalf("a refused worker changed the cluster: %d machines at %d/h", c.Nodes, c.USDPerHour)
		}
		if _, err := h.store.As(h.actor).SetBudget(ctx, h.env.ID, 100000*models.Micro); err != nil {
			t.Fatal(err)
		}
		_, w2, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID)
		if err != nil {
			t.Fatal(err)
		}
		h.tick()
		if placed := h.nodes()[2]; placed.JoinPlacedAt == nil || placed.ProviderNodeID == "" {
			t.Fatalf("node-2 not placed: %+v\n%s", placed, h.events(h.c.ID))
		}
		if _, err := h.store.RequestStop(ctx, h.org.ID, h.c.ID, models.StopByBudget, "budget reached"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.store.As(h.actor).AddWorker(ctx, h.c.ID); !errors.Is(err, models.ErrJoinStopping) {
			t.Fatalf("add while stopping = %v, want ErrJoinStopping", err)
		}
		if err := h.stop.Run(ctx); err != nil { // the stop job alone: it waits for the join
			t.Fatal(err)
		}
		if c := h.cluster(h.c.ID); c.Status != models.StatusReady || c.StoppedAt != nil {
			t.Fatalf("the stop did not wait for the joining machine: %s\n%s", c.Status, h.events(h.c.ID))
		}
		for range 5 {
			if h.cluster(h.c.ID).Status == models.StatusStopped {
				break
			}
			h.tick()
		}
		c := h.cluster(h.c.ID)
		nodes := h.nodes()
		if c.Status != models.StatusStopped || c.Nodes != 2 || c.USDPerHour != 2*c.MachineHour || len(nodes) != 2 {
			t.Fatalf("after the stop: %s, %d machines at %d/h, %d rows\n%s", c.Status, c.Nodes, c.USDPerHour, len(nodes), h.events(c.ID))
		}
		for _, n := range nodes {
			if n.Status != models.NodeStopped {
				t.Errorf("%s is %s, want stopped", n.Name, n.Status)
			}
		}
		ev := h.events(c.ID)
		for _, want := range []string{"Adding node-2 failed", "being stopped (the environment's budget was reached)", "Every machine is stopped"} {
			if !strings.Contains(ev, want) {
				t.Errorf("events lack %q:\n%s", want, ev)
			}
		}
		states := h.providerStates(c.ID)
		if states[0] != providers.NodeStopped || states[1] != providers.NodeStopped {
			t.Errorf("machines 0 and 1 at the provider: %v", states)
		}
		if len(states) > 2 && (states[2] == providers.NodeRunning || states[2] == providers.NodeStopped) {
			t.Errorf("the worker was not released: %v", states)
		}
		h.clock.Advance(2 * time.Hour)
		h.tick()
		if amount, _ := h.usageBy(); amount[w2.ID] != 0 {
			t.Errorf("the released worker was billed %d", amount[w2.ID])
		}
	})
}
