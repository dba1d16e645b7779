package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// heldJob counts its runs; the first run holds on until released, so a
// second instance's tick lands while the first one is still running.
type heldJob struct {
	runs    atomic.Int64
	started chan struct{}
	release chan struct{}
	deaf    bool // waits for release only, not for its context to end
}

func (j *heldJob) Name() string { return "held" }

func (j *heldJob) Run(ctx context.Context) error {
	if j.runs.Add(1) == 1 {
		close(j.started)
		if j.deaf {
			<-j.release
			return nil
		}
		select {
		case <-j.release:
		case <-ctx.Done():
		}
	}
	return nil
}

// OP4: two schedulers on one database (two instances of the server) tick
// the same job at the same time: the database lease lets one run it.
func TestSchedulerLeaseRunsATickOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		job := &heldJob{started: make(chan struct{}), release: make(chan struct{})}
		var instances [2]*jobs.Scheduler
		for i := range instances {
			instances[i] = jobs.NewScheduler(models.NewStore(db, nil), log)
			if err := instances[i].Add("@every 1h", job, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if got := instances[0].Schedule(job.Name()); got != "@every 1h" { // the admin's jobs page shows it (OP2)
			t.Errorf("Schedule = %q", got)
		}
		first := make(chan error, 1)
		go func() { first <- instances[0].RunNow(ctx, job.Name()) }()
		select {
		case <-job.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the first instance never ran the job")
		}
		if err := instances[1].RunNow(ctx, job.Name()); err != nil {
			t.Fatalf("second instance: %v", err)
		}
		if n := job.runs.Load(); n != 1 {
			t.Errorf("the job ran %d times for one tick on two instances, want 1", n)
		}
		close(job.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		// Once the first tick is over the lease is free again.
		if err := instances[1].RunNow(ctx, job.Name()); err != nil || job.runs.Load() != 2 {
			t.Errorf("the next tick: err %v, runs %d, want 2", err, job.runs.Load())
		}
	})
}

// countJob counts its runs.
type countJob struct{ runs atomic.Int64 }

func (j *countJob) Name() string                  { return "count" }
func (j *countJob) Run(ctx context.Context) error { j.runs.Add(1); return nil }

// OP4 with the development fake clock: job leases run on real time. A lease
// left by a killed instance lapses after its ttl of wall time even while the
// fake clock stands an hour behind (it used to be read on the fake clock, so
// a restarted server with a still clock never ran the job again), and a live
// lease is honoured even when the fake clock has been moved hours ahead.
func TestSchedulerLeaseRunsOnWallTime(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		wall := time.Now()
		for _, tc := range []struct {
			name      string
			fakeNow   time.Time
			leaseFrom time.Time // when the other instance took its one-minute lease
			wantRuns  int64
		}{
			{"dead holder, fake clock behind", wall.Add(-time.Hour), wall.Add(-2 * time.Minute), 1},
			{"live holder, fake clock ahead", wall.Add(3 * time.Hour), wall, 0},
		} {
			store := models.NewStore(db, models.NewFakeClock(tc.fakeNow))
			job := &countJob{}
			sched := jobs.NewScheduler(store, log)
			if err := sched.Add("@every 1h", job, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := store.ReleaseLease(ctx, job.Name(), "other-instance"); err != nil {
				t.Fatal(err)
			}
			if ok, err := store.AcquireLease(ctx, job.Name(), "other-instance", tc.leaseFrom, time.Minute); !ok || err != nil {
				t.Fatalf("%s: plant lease: %v %v", tc.name, ok, err)
			}
			if err := sched.RunNow(ctx, job.Name()); err != nil {
				t.Fatal(err)
			}
			if got := job.runs.Load(); got != tc.wantRuns {
				t.Errorf("%s: job ran %d times, want %d", tc.name, got, tc.wantRuns)
			}
		}
	})
}

// overlapJob records how many of its runs were ever under way at once; the
// first run holds on until released.
type overlapJob struct {
	now, most, runs atomic.Int64
	started         chan struct{}
	release         chan struct{}
}

func (j *overlapJob) Name() string { return "overlap" }

func (j *overlapJob) Run(ctx context.Context) error {
	n := j.now.Add(1)
	defer j.now.Add(-1)
	for m := j.most.Load(); n > m && !j.most.CompareAndSwap(m, n); m = j.most.Load() {
	}
	if j.runs.Add(1) == 1 {
		close(j.started)
		<-j.release
	}
	return nil
}

// OP4 inside one process: the lease lets its own holder in again, so a
// "run now" that lands while the scheduled tick of the same job is under
// way waits for it instead of running beside it (with a real cloud that
// placed one machine twice).
func TestSchedulerTicksOfOneJobNeverOverlapInProcess(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		job := &overlapJob{started: make(chan struct{}), release: make(chan struct{})}
		sched := jobs.NewScheduler(models.NewStore(db, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := sched.Add("@every 1h", job, time.Minute); err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- sched.RunNow(ctx, job.Name()) }()
		<-job.started
		second := make(chan error, 1)
		go func() { second <- sched.RunNow(ctx, job.Name()) }()
		select {
		case err := <-second:
			t.Fatalf("the second tick finished while the first still ran: %v", err)
		case <-time.After(200 * time.Millisecond): // only a bound on a failure; success never waits on it
		}
		close(job.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if job.runs.Load() != 2 || job.most.Load() != 1 {
			t.Errorf("runs %d, most at once %d; want 2 runs, never 2 at once", job.runs.Load(), job.most.Load())
		}
	})
}

// A kicked tick belongs to the scheduler: Stop waits for one under way
// (this one does not listen to its context), and once Stop was called no
// kick starts another (OP4).
func TestSchedulerKickStopsWithIt(t *testing.T) {
	db := modelstest.Open(t, "sqlite")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := jobs.NewScheduler(models.NewStore(db, nil), log)
	job := &heldJob{started: make(chan struct{}), release: make(chan struct{}), deaf: true}
	if err := s.Add("@every 1h", job, time.Minute); err != nil {
		t.Fatal(err)
	}
	s.Kick("no-such-job") // ignored
	s.Kick(job.Name())
	select {
	case <-job.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the kicked tick never ran")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the kicked tick was still running", err)
	case <-time.After(200 * time.Millisecond): // a wait for a non-event: bounded, and only a failure waits it out
	}
	close(job.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	s.Kick(job.Name())
	if s.Stop(context.Background()); job.runs.Load() != 1 {
		t.Errorf("the job ran %d times; a kick after Stop must not run it", job.runs.Load())
	}
}

// cancelSeen is a job whose tick runs until its context ends and records why.
type cancelSeen struct {
	started chan struct{}
	saw     chan error
}

func (cancelSeen) Name() string { return "cancel-seen" }
func (j cancelSeen) Run(ctx context.Context) error {
	close(j.started)
	<-ctx.Done()
	j.saw <- ctx.Err()
	return ctx.Err()
}

// The shutdown cancels the ticks (OP4): a tick under way sees its context
// cancelled when Stop is called, and Stop returns cleanly once it ended,
// well before its own deadline.
func TestSchedulerStopCancelsARunningTick(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		s := jobs.NewScheduler(models.NewStore(db, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
		job := cancelSeen{started: make(chan struct{}), saw: make(chan error, 1)}
		if err := s.Add("@every 1h", job, time.Hour); err != nil {
			t.Fatal(err)
		}
		s.Start()
		s.Kick(job.Name())
		select {
		case <-job.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the tick never ran")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a failure only
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v; want a clean stop once the cancelled tick ended", err)
		}
		select {
		case err := <-job.saw:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the tick saw %v; want context.Canceled", err)
			}
		default:
			t.Fatal("Stop returned but the running tick never saw its context end")
		}
		if ctx.Err() != nil {
			t.Error("Stop ran into its deadline: the tick was not cancelled")
		}
	})
}
