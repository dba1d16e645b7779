package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// atJob records the store's time at each run.
type atJob struct {
	name  string
	store *models.Store
	runs  atomic.Int64
	at    atomic.Value // time.Time
}

func (j *atJob) Name() string { return j.name }
func (j *atJob) Run(context.Context) error {
	j.runs.Add(1)
	j.at.Store(j.store.Now())
	return nil
}

// OP4, X15 with the development fake clock: the jobs a minute or more
// apart follow the store's clock. Moving it makes them due and RunDue runs
// each once (ticks coalesced), with the store's time; jobs polling every few
// seconds stay on the wall; the run is recorded on the fake clock (what
// /admin/jobs shows); a second instance on the same database does not run
// a tick the first one ran.
func TestSchedulerFollowsTheFakeClock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		t0 := time.Date(2026, 12, 1, 9, 0, 30, 0, time.UTC)
		clock := models.NewFakeClock(t0)
		store := models.NewStore(db, clock)
		s := jobs.NewScheduler(store, log)
		s.FollowClock()
		minute := &atJob{name: "minutely", store: store}
		fast := &atJob{name: "fast", store: store}
		if err := s.Add("@every 1m", minute, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Add("@every 5s", fast, time.Minute); err != nil {
			t.Fatal(err)
		}
		if ran, err := s.RunDue(ctx); err != nil || len(ran) != 0 {
			t.Fatalf("nothing is due while the clock stands still: %v %v", ran, err)
		}
		clock.Advance(10 * time.Minute)
		ran, err := s.RunDue(ctx)
		if err != nil || strings.Join(ran, ",") != "minutely" {
			t.Fatalf("after 10 minutes RunDue ran %v (%v), want the per-minute job", ran, err)
		}
		if n, at := minute.runs.Load(), minute.at.Load(); n != 1 || !at.(time.Time).Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("per-minute job ran %d times at %v, want once at the fake %s", n, at, t0.Add(10*time.Minute))
		}
		if fast.runs.Load() != 0 {
			t.Fatal("a job polling every 5 s ran on the fake clock's move")
		}
		runs, err := store.JobRuns(ctx)
		if err != nil || len(runs) != 1 || !runs[0].StartedAt.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("recorded runs %+v (%v), want minutely started at the fake %s", runs, err, t0.Add(10*time.Minute))
		}
		clock.Advance(30 * time.Second)
		if ran, _ := s.RunDue(ctx); len(ran) != 0 {
			t.Fatalf("half a minute later %v ran again", ran)
		}
		// A second instance on the same database, same clock: the tick the
		// first one ran is not run again.
		other := jobs.NewScheduler(models.NewStore(modelstest.SecondInstance(t, db), clock), log)
		other.FollowClock()
		if err := other.Add("@every 1m", minute, time.Minute); err != nil {
			t.Fatal(err)
		}
		clock.Advance(31 * time.Second)
		if ran, _ := s.RunDue(ctx); len(ran) != 1 {
			t.Fatalf("a minute after its run the job is due again, ran %v", ran)
		}
		if ran, _ := other.RunDue(ctx); len(ran) != 0 || minute.runs.Load() != 2 {
			t.Fatalf("the second instance ran %v for a tick already run (runs %d)", ran, minute.runs.Load())
		}
	})
}

// X15 walked on the fake clock as `make walk` does (one minute per move):
// the GPU watch follows the clock, so a 10-minute stall rule names the idle
// machine at the 10-minute mark and its mail says "for 10 minutes".
func TestStallRuleOnTheFakeClockMailsTheSetTime(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		g := newGPUWorld(t, db, 2)
		s := jobs.NewScheduler(g.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		s.FollowClock()
		if err := s.Add("@every 1m", g.watch, time.Minute); err != nil {
			t.Fatal(err)
		}
		g.watch = nil // minute() only reports; the scheduler runs the watch
		stalled := func(rank, _ int) (int, bool) {
			if rank == 1 {
				return 0, false
			}
			return 97, false
		}
		for i := range 14 {
			g.minute(i, stalled)
			if _, err := s.RunDue(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		m := g.mails("idle while")
		if len(m) != 1 {
			t.Fatalf("stall mails %v\n%s", m, g.events(g.c.ID))
		}
		if !strings.Contains(g.events(g.c.ID), "for 10 minutes") {
			t.Fatalf("the stall is not named at the set time\n%s", g.events(g.c.ID))
		}
	})
}
