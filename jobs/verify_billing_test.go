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

// terminateAt asks to terminate at the clock's time and runs the jobs
// without moving the clock, so every machine is released at that minute.
func (w *world) terminateAt(id string) models.Cluster {
	w.t.Helper()
	if _, err := w.store.RequestTerminate(context.Background(), w.org.ID, id, "test"); err != nil {
		w.t.Fatal(err)
	}
	w.runJobs()
	c := w.cluster(id)
	if c.Status != models.StatusTerminated || c.ReleasedAt == nil || !c.ReleasedAt.Equal(w.clock.Now()) {
		w.t.Fatalf("terminate: %s released %v at %v\n%s", c.Status, c.ReleasedAt, w.clock.Now(), w.events(id))
	}
	w.clock.Advance(2 * time.Hour) // every period closed: the pass writes them all
	w.runJobs()
	return c
}

// wantBilled asserts that every machine of cluster id was billed exactly
// minutes, at the locked per-machine rate, and the ledger adds up (B1).
func (w *world) wantBilled(id string, minutes int64) {
	w.t.Helper()
	c := w.cluster(id)
	nodes, _ := w.store.NodesFor(context.Background(), id)
	amount, mins := w.machineUsage(id)
	for _, n := range nodes {
		if want := c.MachineHour * models.Money(minutes) / 60; amount[n.ID] != want || mins[n.ID] != minutes {
			w.t.Errorf("%s billed %d for %d minutes, want %d for %d minutes", n.Name, amount[n.ID], mins[n.ID], want, minutes)
		}
	}
	if minutes == 0 && len(mins) != 0 {
		w.t.Errorf("usage rows for %d machines, want none", len(mins))
	}
	w.checkBalance()
}

// X13: verifying and waiting for a swap are not billed. A 4-machine
// cluster whose node-2 fails its machine check verifies for many minutes
// (the check, the swap, the replacement's boot, the checks again), is
// handed over, runs 60 minutes and is terminated: each machine is billed
// exactly those 60 minutes, nothing before hand-over.
func TestBillingStartsAtHandOverAfterVerificationAndSwap(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultECCErrors, Node: 2, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchVerified("H100_80GB", 4, 8, "none")
		c = w.untilVerifying(c.ID)
		w.clock.Advance(time.Minute) // the cluster verifies: nothing accrues, nothing is in the burn rate
		w.tick()
		if c = w.cluster(c.ID); c.Status != models.StatusVerifying || !c.BillingHeld() {
			t.Fatalf("status %s held %v\n%s", c.Status, c.BillingHeld(), w.events(c.ID))
		}
		if burn, err := w.store.BurnRate(context.Background(), w.org.ID); err != nil || burn != 0 {
			t.Errorf("burn rate %d while verifying (%v), want 0", burn, err)
		}
		if u, err := w.store.UsageForCluster(context.Background(), w.org.ID, c.ID); err != nil || u.Accumulating != 0 {
			t.Errorf("accumulating %d while verifying (%v), want 0", u.Accumulating, err)
		}
		c = w.untilSettled(c.ID, 40*time.Minute)
		if c.Status != models.StatusReady || c.BillFrom == nil || c.BillingHeld() {
			t.Fatalf("status %s billFrom %v held %v\n%s", c.Status, c.BillFrom, c.BillingHeld(), w.events(c.ID))
		}
		if run, _ := w.report(c.ID); run.Swaps != 1 {
			t.Fatalf("swaps %d, want node-2 swapped", run.Swaps)
		}
		verifying := c.BillFrom.Sub(*c.ReadyAt)
		if verifying < 10*time.Minute {
			t.Fatalf("verification and swap took %s; the journey wants a long one", verifying)
		}
		w.clock.Set(c.BillFrom.Add(60 * time.Minute))
		w.tick()
		w.terminateAt(c.ID)
		w.wantBilled(c.ID, 60)
		if ev := w.events(c.ID); !strings.Contains(ev, "verification is not billed, billing starts at hand-over") {
			t.Errorf("no event says verification is not billed:\n%s", ev)
		}
	})
}

// degradedByVerification launches 2 machines whose node-1 fails its
// stress test twice (the one swap spent): the cluster ends degraded.
func (w *world) degradedByVerification() models.Cluster {
	w.t.Helper()
	if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultStressFails, Node: 1, Count: 2}); err != nil {
		w.t.Fatal(err)
	}
	c := w.launchVerified("H100_80GB", 2, 8, "none")
	c = w.untilSettled(c.ID, 40*time.Minute)
	if c.Status != models.StatusDegraded || !c.BillingHeld() || c.LastError != "verification_failed:node-1" {
		w.t.Fatalf("status %s (%s) held %v\n%s", c.Status, c.LastError, c.BillingHeld(), w.events(c.ID))
	}
	return c
}

// X13: a failed verification bills nothing until the customer keeps the
// cluster; from "keep it as it is" on every machine bills.
func TestBillingAfterFailedVerificationStartsAtKeep(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.degradedByVerification()
		w.run(90*time.Minute, 10*time.Minute) // hours close while it waits for the customer
		if n := w.billed(); n != 0 {
			t.Fatalf("%d usage entries before the customer kept it", n)
		}
		actor := models.Actor{OrgID: w.org.ID, Name: "owner@acme.example", Role: models.RoleOwner}
		kept, err := w.store.As(actor).KeepUnverified(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if kept.Status != models.StatusReady || kept.BillingHeld() || kept.BillFrom == nil || !kept.BillFrom.Equal(w.clock.Now()) {
			t.Fatalf("kept: %s held %v billFrom %v at %v", kept.Status, kept.BillingHeld(), kept.BillFrom, w.clock.Now())
		}
		w.clock.Set(kept.BillFrom.Add(60 * time.Minute))
		w.tick()
		w.terminateAt(c.ID)
		w.wantBilled(c.ID, 60)
	})
}

// X13: a failed verification the customer terminates instead of keeping
// bills nothing at all.
func TestBillingAfterFailedVerificationTerminatedIsZero(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.degradedByVerification()
		w.run(2*time.Hour, 15*time.Minute)
		w.terminateAt(c.ID)
		w.wantBilled(c.ID, 0)
		if bal, _ := w.store.Balance(context.Background(), w.org.ID); bal != 1000*models.Micro {
			t.Errorf("balance %d after an unkept failed verification, want the deposit %d", bal, 1000*models.Micro)
		}
	})
}

// X13 with L5: a software install before verification is billed as
// usual, from readyAt until verification starts; verification is not.
func TestBillingInstallBilledVerificationNot(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launchVerified("H100_80GB", 2, 8, "slurm")
		c = w.untilSettled(c.ID, 40*time.Minute)
		if c.Status != models.StatusReady || c.BillFrom == nil {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		evs, _ := w.store.EventsFor(context.Background(), c.ID)
		var verifyFrom time.Time
		for _, e := range evs {
			if e.Kind == "status" && e.Status == string(models.StatusVerifying) {
				verifyFrom = e.At
			}
		}
		if verifyFrom.IsZero() || !verifyFrom.After(*c.ReadyAt) || !c.BillFrom.After(verifyFrom) {
			t.Fatalf("readyAt %v verifying from %v hand-over %v", c.ReadyAt, verifyFrom, c.BillFrom)
		}
		w.clock.Set(c.BillFrom.Add(30 * time.Minute))
		w.tick()
		w.terminateAt(c.ID)
		install := int64(verifyFrom.Sub(*c.ReadyAt) / time.Minute)
		w.wantBilled(c.ID, install+30)
	})
}

// Item 8 (B6, X13): a cluster stopped while it verifies verifies again
// from the start when resumed — a new run, its window afresh — and is
// handed over only then; neither verification is billed.
func TestVerifyStoppedMidwayVerifiesAgainOnResume(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launchVerified("H100_80GB", 2, 8, "none")
		c = w.untilVerifying(c.ID)
		w.clock.Advance(time.Minute)
		w.tick()
		if run, _ := w.report(c.ID); run.Status != models.VerifyRunning || run.Run != 1 {
			t.Fatalf("before the stop: run %d %s", run.Run, run.Status)
		}
		c = w.stopNow(c.ID, models.StopByBalance)
		if models.ClusterStatus(c.StoppedFrom) != models.StatusVerifying {
			t.Fatalf("stopped from %q", c.StoppedFrom)
		}
		w.clock.Advance(20 * time.Minute)
		w.tick()
		if _, err := w.store.RequestResume(context.Background(), w.org.ID, c.ID, "test@example.com"); err != nil {
			t.Fatal(err)
		}
		var resumed models.Cluster
		for end := w.clock.Now().Add(30 * time.Minute); w.clock.Now().Before(end); {
			w.clock.Advance(time.Minute)
			w.tick()
			if resumed = w.cluster(c.ID); resumed.Status != models.StatusStopped {
				break
			}
		}
		if resumed.Status != models.StatusVerifying || !resumed.BillingHeld() {
			t.Fatalf("resumed to %s (held %v), want verifying again\n%s", resumed.Status, resumed.BillingHeld(), w.events(c.ID))
		}
		if run, _ := w.report(c.ID); run.Run != 2 || run.Rerun || run.Status != models.VerifyRunning || !run.Deadline.After(w.clock.Now().Add(20*time.Minute)) {
			t.Fatalf("after the resume: run %d rerun %v %s deadline %v", run.Run, run.Rerun, run.Status, run.Deadline)
		}
		c = w.untilSettled(c.ID, 30*time.Minute)
		if c.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		if run, _ := w.report(c.ID); run.Run != 2 || run.Status != models.VerifyPassed {
			t.Fatalf("run %d %s", run.Run, run.Status)
		}
		if !strings.Contains(w.events(c.ID), "The stop interrupted verification: it runs again from the start before hand-over") {
			t.Errorf("no event says it verifies again:\n%s", w.events(c.ID))
		}
		w.clock.Set(c.BillFrom.Add(45 * time.Minute))
		w.tick()
		w.terminateAt(c.ID)
		w.wantBilled(c.ID, 45)
	})
}

func (w *world) reportOrNone(id string) (*models.VerifyRun, models.VerifyReport) {
	run, err := w.store.VerificationFor(context.Background(), w.org.ID, id)
	if err != nil || run == nil {
		return nil, models.VerifyReport{}
	}
	return run, run.ReportOf()
}

// untilVerifying ticks a minute at a time until the cluster verifies.
func (w *world) untilVerifying(id string) models.Cluster {
	w.t.Helper()
	for end := w.clock.Now().Add(30 * time.Minute); w.clock.Now().Before(end); {
		w.clock.Advance(time.Minute)
		w.tick()
		if c := w.cluster(id); c.Status == models.StatusVerifying {
			return c
		}
	}
	w.t.Fatalf("never verifying\n%s", w.events(id))
	return models.Cluster{}
}
