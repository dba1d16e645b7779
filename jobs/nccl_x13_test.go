package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// ncclAfter ticks a ready cluster n times and returns its NCCL check.
func (w *world) ncclAfter(id string, n int) *models.NCCLCheck {
	w.t.Helper()
	for range n {
		w.clock.Advance(30 * time.Second)
		w.tick()
	}
	ch, err := w.store.NCCLCheckFor(context.Background(), w.org.ID, id)
	if err != nil || ch == nil {
		w.t.Fatalf("no NCCL check (%v)\n%s", err, w.events(id))
	}
	return ch
}

// X4 with X13: a cluster verified before hand-over does not repeat the
// ring on the customer's GPUs: its NCCL check is the verification's ring
// reading, never handed to an agent.
func TestNCCLCheckVerifiedClusterRecordsItsRing(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		w.nccl = &jobs.NCCLCheck{Store: w.store}
		c := w.launchVerified("H100_80GB", 2, 8, "none")
		if c = w.untilSettled(c.ID, 30*time.Minute); c.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		_, rep := w.report(c.ID)
		ch := w.ncclAfter(c.ID, 6)
		if ch.Status != models.NCCLMeasured || ch.SentAt != nil || rep.Ring == nil || ch.BusBW != rep.Ring.BusBW || ch.Percent != rep.Ring.Percent ||
			!strings.Contains(ch.Summary, "Measured before hand-over by verification run 1's ring all-reduce") {
			t.Fatalf("NCCL check %+v, ring %+v", ch, rep.Ring)
		}
		if ev := w.events(c.ID); strings.Contains(ev, "NCCL check planned") {
			t.Errorf("an all-reduce was planned on a verified cluster:\n%s", ev)
		}
	})
}

// X4 with X13: an unverified cluster's start command runs on every GPU
// from hand-over: no all-reduce is run across them, and the check says why.
func TestNCCLCheckSkippedWhenStartCommandRuns(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		w.nccl = &jobs.NCCLCheck{Store: w.store}
		c := w.launchWorkload("H100_80GB", 2, 8, models.Workload{Name: "train", Software: "none", StartCommand: "python train.py"})
		if c = w.runUntil(c.ID, models.StatusReady, 30*time.Minute, 30*time.Second); c.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", c.Status, w.events(c.ID))
		}
		ch := w.ncclAfter(c.ID, 6)
		if ch.Status != models.NCCLSkipped || ch.SentAt != nil || !strings.Contains(ch.Summary, "start command runs on every GPU from hand-over") {
			t.Fatalf("NCCL check %+v", ch)
		}
		if ev := w.events(c.ID); !strings.Contains(ev, "The NCCL check is skipped") || strings.Contains(ev, "NCCL check planned") {
			t.Errorf("events:\n%s", ev)
		}
	})
}
