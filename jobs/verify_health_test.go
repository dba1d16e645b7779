package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// Item 8 (X13): the health job watches verifying clusters. A machine that
// stops mid-verification is swapped through verification's path within a
// few minutes, not when the window ends, and the cluster is handed over.
func TestHealthSwapsMachineLostMidVerification(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		health := &jobs.Health{Store: w.store, Providers: w.job.Providers, Verify: w.verify}
		c := w.launchVerified("H100_80GB", 4, 8, "none")
		c = w.untilVerifying(c.ID)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultGoesDown, Group: c.ID, Node: 1}); err != nil {
			t.Fatal(err)
		}
		lost := w.clock.Now()
		var run models.VerifyRun
		for range 4 {
			w.clock.Advance(time.Minute)
			w.tick()
			if err := health.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if run, _ = w.report(c.ID); run.Swaps > 0 {
				break
			}
		}
		_, rep := w.report(c.ID)
		if run.Swaps != 1 || len(rep.Swaps) != 1 || rep.Swaps[0].Node != "node-1" || !strings.Contains(rep.Swaps[0].Reason, "went down during verification") {
			t.Fatalf("4 minutes after node-1 stopped: swaps %d %+v\n%s", run.Swaps, rep.Swaps, w.events(c.ID))
		}
		if d := rep.Swaps[0].At.Sub(lost); d > 3*time.Minute {
			t.Errorf("swapped %s after the machine stopped", d)
		}
		if len(w.typedEvents(c.ID, models.TypeNodeVerificationFailed)) == 0 {
			t.Errorf("no node.verification_failed event:\n%s", w.events(c.ID))
		}
		for range 40 {
			w.clock.Advance(time.Minute)
			w.tick()
			if err := health.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c = w.cluster(c.ID); c.Status != models.StatusVerifying {
				break
			}
		}
		if c.Status != models.StatusReady {
			t.Fatalf("status %s (%s)\n%s", c.Status, c.LastError, w.events(c.ID))
		}
	})
}

// Item 8 (X13): when the machine lost mid-verification cannot be swapped
// (its cluster's one swap is spent), verification ends at once naming it.
func TestHealthNamesMachineLostMidVerificationWhenNoSwapLeft(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		health := &jobs.Health{Store: w.store, Providers: w.job.Providers, Verify: w.verify}
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultECCErrors, Node: 1, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchVerified("H100_80GB", 2, 8, "none")
		for end := w.clock.Now().Add(40 * time.Minute); w.clock.Now().Before(end); {
			w.clock.Advance(time.Minute)
			w.tick()
			if _, rep := w.reportOrNone(c.ID); len(rep.Swaps) == 1 && rep.Swaps[0].Outcome == "joined" {
				break
			}
		}
		if c = w.cluster(c.ID); c.Status != models.StatusVerifying {
			t.Fatalf("status %s after the swap\n%s", c.Status, w.events(c.ID))
		}
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultGoesDown, Group: c.ID, Node: 0}); err != nil {
			t.Fatal(err)
		}
		lost := w.clock.Now()
		for range 4 {
			w.clock.Advance(time.Minute)
			w.tick()
			if err := health.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c = w.cluster(c.ID); c.Status != models.StatusVerifying {
				break
			}
		}
		run, rep := w.report(c.ID)
		if c.Status != models.StatusDegraded || c.LastError != "verification_failed:node-0" || run.Status != models.VerifyFailed {
			t.Fatalf("4 minutes after node-0 stopped: %s (%s) run %s\n%s", c.Status, c.LastError, run.Status, w.events(c.ID))
		}
		if !strings.Contains(rep.Summary, "node-0 failed verification (node-0 went down during verification") || !strings.Contains(rep.Summary, "spent") {
			t.Errorf("summary %q", rep.Summary)
		}
		if run.FinishedAt == nil || run.FinishedAt.Sub(lost) > 3*time.Minute || !run.FinishedAt.Before(run.Deadline) {
			t.Errorf("ended at %v, lost at %v, deadline %v", run.FinishedAt, lost, run.Deadline)
		}
	})
}
