package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// machineUsage sums each machine's written usage: amount charged and minutes.
func (w *world) machineUsage(id string) (map[string]models.Money, map[string]int64) {
	w.t.Helper()
	rows, err := w.store.UsageEntries(context.Background(), w.org.ID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	amount, minutes := map[string]models.Money{}, map[string]int64{}
	for _, r := range rows {
		amount[r.NodeID] -= r.Amount
		minutes[r.NodeID] += r.Minutes
	}
	return amount, minutes
}

// providerStates is every machine's state at the simulated cloud, by rank.
func (w *world) providerStates(id string) []providers.NodeState {
	w.t.Helper()
	g, err := w.cloud.DescribeGroup(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	out := make([]providers.NodeState, len(g.Nodes))
	for _, n := range g.Nodes {
		out[n.Index] = n.State
	}
	return out
}

func allIn(states []providers.NodeState, want providers.NodeState) bool {
	for _, s := range states {
		if s != want {
			return false
		}
	}
	return len(states) > 0
}

// readyCluster launches a three-machine cluster and runs it until ready.
func (w *world) readyCluster() models.Cluster {
	w.t.Helper()
	c := w.launch("H100_80GB", 3, 8)
	w.run(6*time.Minute, time.Minute)
	if c = w.cluster(c.ID); c.Status != models.StatusReady || c.ReadyAt == nil {
		w.t.Fatalf("not ready: %s\n%s", c.Status, w.events(c.ID))
	}
	return c
}

// stopNow requests a stop and ticks until the cluster is stopped.
func (w *world) stopNow(id string, reason models.StopReason) models.Cluster {
	w.t.Helper()
	ctx := context.Background()
	c, err := w.store.RequestStop(ctx, w.org.ID, id, reason, "test stop")
	if err != nil {
		w.t.Fatal(err)
	}
	if c.StopRequestedAt == nil || c.Status == models.StatusStopped {
		w.t.Fatalf("after RequestStop: %+v", c)
	}
	again, err := w.store.RequestStop(ctx, w.org.ID, id, models.StopByBudget, "again")
	if err != nil || !again.StopRequestedAt.Equal(*c.StopRequestedAt) || again.StopReason != string(reason) {
		w.t.Fatalf("a second stop request changed something: %v %+v", err, again)
	}
	w.tick()
	if c = w.cluster(id); c.Status != models.StatusStopped {
		w.t.Fatalf("not stopped after a tick: %s\n%s", c.Status, w.events(id))
	}
	return c
}

// B6, B2, X7: a stop stops every machine at the provider; compute billing
// ends exactly at the minute the cluster stopped (nothing accrues while it
// is stopped); the machines' state intervals record stopped; health and
// recovery leave a stopped cluster's machines alone.
func TestStopEndsBillingAtTheMinute(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.readyCluster()
		w.clock.Set(c.ReadyAt.Add(97*time.Minute + 40*time.Second))
		c = w.stopNow(c.ID, models.StopByBalance)
		if c.StoppedAt == nil || !c.StoppedAt.Equal(w.clock.Now()) || c.StoppedFrom != string(models.StatusReady) {
			t.Fatalf("stoppedAt %v (now %v), from %q", c.StoppedAt, w.clock.Now(), c.StoppedFrom)
		}
		if st := w.providerStates(c.ID); !allIn(st, providers.NodeStopped) {
			t.Fatalf("machines at the provider: %v", st)
		}
		nodes, _ := w.store.NodesFor(ctx, c.ID)
		for _, n := range nodes {
			if n.Status != models.NodeStopped {
				t.Errorf("%s is %s, want stopped", n.Name, n.Status)
			}
		}
		// Long after: health and recovery change nothing, billing adds nothing.
		health := &jobs.Health{Store: w.store, Providers: w.job.Providers}
		recovery := &jobs.Recovery{Store: w.store, Providers: w.job.Providers}
		for range 5 {
			w.clock.Advance(time.Hour)
			w.tick()
			if err := health.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := recovery.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := w.cluster(c.ID); got.Status != models.StatusStopped || got.LastError != "" {
			t.Fatalf("stopped cluster moved: %s %q\n%s", got.Status, got.LastError, w.events(c.ID))
		}
		if st := w.providerStates(c.ID); !allIn(st, providers.NodeStopped) {
			t.Fatalf("a stopped machine was started: %v", st)
		}
		amount, minutes := w.machineUsage(c.ID)
		for _, n := range nodes {
			if minutes[n.ID] != 97 || amount[n.ID] != c.MachineHour*97/60 {
				t.Errorf("%s: %d for %d minutes, want %d for 97", n.Name, amount[n.ID], minutes[n.ID], c.MachineHour*97/60)
			}
		}
		u, err := w.store.UsageForCluster(ctx, w.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range u.Machines {
			if m.Accumulating != 0 || m.AccumulatingMinutes != 0 {
				t.Errorf("%s accumulates while stopped: %+v", m.Name, m)
			}
			iv := m.Intervals
			if len(iv) != 2 || iv[0].State != models.MachineRunning || iv[1].State != models.MachineStopped ||
				iv[0].EndedAt == nil || !iv[0].EndedAt.Equal(*c.StoppedAt) || iv[1].EndedAt != nil {
				t.Errorf("%s intervals: %+v", m.Name, iv)
			}
		}
		w.checkBalance()
	})
}

// B6, L4: a resume starts every machine again with the launch's step
// deadlines, all or nothing. A machine that cannot start in time fails the
// resume: the cluster stays stopped with lastError, every machine is
// stopped again and nothing is billed for the attempt. A later resume
// brings every machine back; billing restarts when all joined, never
// billing the stopped span; terminate closes the last run exactly.
func TestResumeAllOrNothing(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.readyCluster()
		w.clock.Set(c.ReadyAt.Add(30 * time.Minute))
		c = w.stopNow(c.ID, models.StopByBudget)
		run1 := int64(30)
		w.clock.Advance(5 * time.Minute) // the resume lands in the hour the stop closed: its usage keys must not meet run 1's

		// One machine's start fails every time: the resume fails whole.
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultRestartFails, Group: c.ID, Node: 1}); err != nil {
			t.Fatal(err)
		}
		r, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "test@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if !r.Resuming() || r.Status != models.StatusStopped {
			t.Fatalf("after RequestResume: %s resuming=%v", r.Status, r.Resuming())
		}
		w.run(12*time.Minute, time.Minute)
		c = w.cluster(c.ID)
		if c.Status != models.StatusStopped || c.Resuming() || c.LastError != "resume_failed:timeout:running" {
			t.Fatalf("after a failed resume: %s resuming=%v %q\n%s", c.Status, c.Resuming(), c.LastError, w.events(c.ID))
		}
		if !strings.Contains(w.events(c.ID), "error|stopped|node-1|running|node-1 missed the running step's deadline") {
			t.Errorf("no event names node-1 and the step:\n%s", w.events(c.ID))
		}
		if st := w.providerStates(c.ID); !allIn(st, providers.NodeStopped) {
			t.Fatalf("machines after a failed resume: %v", st)
		}
		if c.StopRequestedAt != nil {
			t.Errorf("machines still to stop after they all stopped: %v", c.StopRequestedAt)
		}
		if _, minutes := w.machineUsage(c.ID); len(minutes) != 3 {
			t.Fatalf("usage rows for %d machines", len(minutes))
		} else {
			for id, m := range minutes {
				if m != run1 {
					t.Errorf("machine %s billed %d minutes after a failed resume, want %d", id, m, run1)
				}
			}
		}

		// Without the fault the resume succeeds.
		w.cloud.ClearFaults()
		if _, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "test@example.com"); err != nil {
			t.Fatal(err)
		}
		c = w.runUntil(c.ID, models.StatusReady, 10*time.Minute, 30*time.Second)
		if c.BillFrom == nil || c.StoppedAt != nil || c.LastError != "" || c.Resumes != 1 {
			t.Fatalf("resumed: billFrom %v stoppedAt %v lastError %q resumes %d", c.BillFrom, c.StoppedAt, c.LastError, c.Resumes)
		}
		if st := w.providerStates(c.ID); !allIn(st, providers.NodeRunning) {
			t.Fatalf("machines after the resume: %v", st)
		}
		w.clock.Set(c.BillFrom.Add(2*time.Hour + 13*time.Minute + 59*time.Second))
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.tick()
		w.clock.Advance(2 * time.Hour)
		w.tick()
		c = w.cluster(c.ID)
		if c.Status != models.StatusTerminated {
			t.Fatalf("status %s", c.Status)
		}
		run2 := int64(c.ReleasedAt.Sub(*c.BillFrom) / time.Minute)
		amount, minutes := w.machineUsage(c.ID)
		for id := range minutes {
			want := c.MachineHour*models.Money(run1)/60 + c.MachineHour*models.Money(run2)/60
			if minutes[id] != run1+run2 || amount[id] != want {
				t.Errorf("machine %s: %d for %d minutes, want %d for %d+%d", id, amount[id], minutes[id], want, run1, run2)
			}
		}
		w.checkBalance()
	})
}

// B6, R1: while a stop is carried out its machines go down on purpose:
// the health and recovery jobs neither degrade the cluster nor restart
// them. A stop asked while the cluster still provisions waits until every
// machine joined, then stops it.
func TestStopLeavesHealthAlone(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.readyCluster()
		health := &jobs.Health{Store: w.store, Providers: w.job.Providers}
		recovery := &jobs.Recovery{Store: w.store, Providers: w.job.Providers}
		if _, err := w.store.RequestStop(ctx, w.org.ID, c.ID, models.StopByBudget, "budget reached"); err != nil {
			t.Fatal(err)
		}
		// One machine already stopped at the provider, the job not yet run.
		g, err := w.cloud.DescribeGroup(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.cloud.StopNode(ctx, c.ID, g.Nodes[1].ID); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			w.clock.Advance(time.Minute)
			if err := health.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := recovery.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := w.cluster(c.ID); got.Status != models.StatusReady || got.EpisodeStartedAt != nil {
			t.Fatalf("health judged a cluster being stopped: %s episode %v\n%s", got.Status, got.EpisodeStartedAt, w.events(c.ID))
		}
		if st := w.providerStates(c.ID); st[1] != providers.NodeStopped {
			t.Fatalf("recovery restarted a machine being stopped: %v", st)
		}
		w.tick()
		if got := w.cluster(c.ID); got.Status != models.StatusStopped {
			t.Fatalf("not stopped: %s", got.Status)
		}

		// Requested mid-provision: the cluster comes up, then stops.
		p := w.launch("H100_80GB", 2, 8)
		w.tick()
		if _, err := w.store.RequestStop(ctx, w.org.ID, p.ID, models.StopByBalance, "balance ran out"); err != nil {
			t.Fatal(err)
		}
		if got := w.cluster(p.ID); got.Status != models.StatusProvisioning || got.StopRequestedAt == nil {
			t.Fatalf("mid-provision stop request: %s %v", got.Status, got.StopRequestedAt)
		}
		p = w.runUntil(p.ID, models.StatusStopped, 10*time.Minute, time.Minute)
		if p.Status != models.StatusStopped || p.ReadyAt == nil || p.StoppedAt == nil {
			t.Fatalf("mid-provision stop: %s ready %v stopped %v\n%s", p.Status, p.ReadyAt, p.StoppedAt, w.events(p.ID))
		}
		if !strings.Contains(w.events(p.ID), "request|provisioning|||Stop requested (balance)") {
			t.Errorf("no stop request event:\n%s", w.events(p.ID))
		}

		// Terminate wins over a stop under way, and over a stopped cluster.
		q := w.readyCluster()
		if _, err := w.store.RequestStop(ctx, w.org.ID, q.ID, models.StopByBudget, "budget reached"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, q.ID, "test"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{q.ID, c.ID} {
			if id == c.ID {
				if _, err := w.store.RequestTerminate(ctx, w.org.ID, id, "test"); err != nil {
					t.Fatal(err)
				}
			}
			w.tick()
			if got := w.cluster(id); got.Status != models.StatusTerminated {
				t.Errorf("terminate after a stop: %s\n%s", got.Status, w.events(id))
			}
		}
		if got, err := w.store.RequestStop(ctx, w.org.ID, q.ID, models.StopByBalance, "late"); err != nil || got.Status != models.StatusTerminated {
			t.Errorf("stop of a terminated cluster: %v %s", err, got.Status)
		}
		if _, err := w.store.RequestStop(ctx, w.org.ID, q.ID, "whim", ""); err == nil {
			t.Error("a stop reason neither balance nor budget was accepted")
		}
	})
}

// B6, L6: a stop that interrupts the software install resumes the cluster
// degraded (install_interrupted, billing running again), and the install
// retried from there brings it to ready on the machines that came back.
func TestResumeAfterInterruptedInstall(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.launchWith("H100_80GB", 2, 8, "slurm")
		c = w.untilInstalling(c.ID)
		c = w.stopNow(c.ID, models.StopByBudget)
		if c.StoppedFrom != string(models.StatusInstalling) {
			t.Fatalf("stopped from %q", c.StoppedFrom)
		}
		w.clock.Advance(10 * time.Minute)
		if _, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "test@example.com"); err != nil {
			t.Fatal(err)
		}
		c = w.runUntil(c.ID, models.StatusDegraded, 10*time.Minute, 30*time.Second)
		if c.Status != models.StatusDegraded || c.LastError != "install_interrupted" || c.BillFrom == nil {
			t.Fatalf("resumed: %s %q billFrom %v\n%s", c.Status, c.LastError, c.BillFrom, w.events(c.ID))
		}
		if _, err := w.store.RetryInstall(ctx, w.org.ID, c.ID, "test@example.com"); err != nil {
			t.Fatal(err)
		}
		if c = w.runUntil(c.ID, models.StatusReady, 20*time.Minute, 30*time.Second); c.Status != models.StatusReady {
			t.Fatalf("after the retried install: %s %q\n%s", c.Status, c.LastError, w.events(c.ID))
		}
	})
}

// noStop is a cloud that cannot stop machines (like Lambda's API).
type noStop struct{ providers.Provider }

func (noStop) StopNode(context.Context, string, string) error {
	return &providers.Error{Class: providers.ErrUnsupported, Provider: "sim", Op: "StopNode", Message: "no stop here"}
}

// B6 on a cloud that cannot stop machines: the stop terminates the cluster
// instead (every machine released, billing closed), with an event saying
// why, rather than leaving the machines running unbilled.
func TestStopOnACloudThatCannotStopTerminates(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.readyCluster()
		w.job.Providers["sim"] = noStop{w.cloud} // the registry every job of the world shares
		if _, err := w.store.RequestStop(ctx, w.org.ID, c.ID, models.StopByBalance, "test stop"); err != nil {
			t.Fatal(err)
		}
		w.run(time.Minute, time.Minute)
		got := w.cluster(c.ID)
		if got.Status != models.StatusTerminated {
			t.Fatalf("status %s, want terminated\n%s", got.Status, w.events(c.ID))
		}
		if ev := w.events(c.ID); !strings.Contains(ev, "cannot stop machines, so they are released instead") {
			t.Errorf("no event says why:\n%s", ev)
		}
		if st := w.providerStates(c.ID); !allIn(st, providers.NodeTerminated) {
			t.Errorf("machines at the provider: %v", st)
		}
		w.checkBalance()
	})
}
