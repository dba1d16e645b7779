// Package jobs runs Clusterdeck's time-driven work beside the web server:
// each job loads work from models, calls providers, and records the outcome
// through models, in that order. Every schedule is listed in register.go.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/robfig/cron/v3"
)

// Job is one named, idempotent unit of periodic work.
type Job interface {
	Name() string
	Run(ctx context.Context) error
}

// ErrUnknownJob is returned by RunNow for a name no job has.
var ErrUnknownJob = errors.New("jobs: unknown job")

type entry struct {
	spec    string
	job     Job
	timeout time.Duration
}

// Scheduler wraps robfig/cron: UTC, SkipIfStillRunning then Recover (the
// order that survives a panic, robfig/cron#366), a per-tick timeout, a
// database lease so a tick runs once across instances (OP4), and one log
// line per tick.
type Scheduler struct {
	store  *models.Store
	log    *slog.Logger
	cron   *cron.Cron
	holder string
	mu     sync.Mutex
	jobs   map[string]entry
	// running serialises this process's ticks of each job: the database
	// lease keeps other instances out but lets its own holder in again, so
	// a scheduled tick and a "run now" must not overlap here.
	running map[string]*sync.Mutex
	metrics *Metrics // nil: not instrumented
	before  func(context.Context) error
	wall    func() time.Time // leases run on real time (time.Now), whatever the store's clock
	// kicked are the ticks Kick started; Stop waits for them like the
	// scheduled ones (stopped refuses new ones).
	kicked sync.WaitGroup
	// ticks is the context of every scheduled, kicked and clock-following
	// tick; Stop cancels it, so a running tick sees the shutdown.
	ticks   context.Context
	cancel  context.CancelFunc
	stopped bool
	// timeout gives a tick its deadline (context.WithTimeout on the wall).
	timeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
	// follow is set by FollowClock: the jobs whose ticks are a minute or
	// more apart run on the store's clock (clocked), in the order added.
	follow  bool
	clocked []*clockedJob
	dueMu   sync.Mutex // one RunDue at a time
}

// clockedJob is a job that follows the store's clock: its schedule and the
// next time it is due on that clock.
type clockedJob struct {
	name  string
	sched cron.Schedule
	next  time.Time
}

// FollowClock makes the jobs added after it whose ticks are a minute or more
// apart (billing, budgets, the GPU watch, the catalog…) run on the store's
// clock instead of the wall's: with the development fake clock, moving it
// N minutes makes those jobs due, and RunDue runs them. Jobs that poll every
// few seconds (provision, install, mail…) keep their wall-clock ticks, since
// they wait for agents and providers, not for time to pass. Without a fake
// clock the store's clock is the wall's and FollowClock is not called.
func (s *Scheduler) FollowClock() {
	s.follow = true
	// Another instance (or POST /dev/clock on one) may move the shared
	// clock: look every two seconds for jobs that fell due.
	_, _ = s.cron.AddFunc("@every 2s", func() { _, _ = s.RunDue(s.ticks) })
}

// RunDue runs, once each, the clock-following jobs that fell due on the
// store's clock since their last tick, in the order they were added, and
// returns their names. Ticks are coalesced: a move of 30 minutes runs a
// per-minute job once, at the new time, as cron does after a pause, because
// every such job works from the time it reads (billing accrues every minute
// up to now; the GPU watch measures a stall from its first sample). A job
// another instance already ran for this tick (its last run, recorded on the
// same clock, is not a whole period ago) is skipped.
func (s *Scheduler) RunDue(ctx context.Context) ([]string, error) {
	s.dueMu.Lock()
	defer s.dueMu.Unlock()
	if s.before != nil {
		if err := s.before(ctx); err != nil {
			return nil, err
		}
	}
	var ran []string
	var errs []error
	for _, c := range s.clocked {
		now := s.store.Now()
		if now.Before(c.next) {
			continue
		}
		sched := c.sched
		due := func(ctx context.Context) bool {
			last, err := s.store.JobLastStarted(ctx, c.name)
			return err != nil || last.IsZero() || !sched.Next(last).After(now)
		}
		c.next = sched.Next(now)
		ok, err := s.tickIf(ctx, c.name, due)
		if ok {
			ran = append(ran, c.name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return ran, errors.Join(errs...)
}

// KickTimeout is a kicked tick's deadline: a customer's action is carried
// out within it or on the next scheduled tick.
const KickTimeout = 30 * time.Second

// TimeoutsOn gives every tick its deadline with f instead of the wall's
// context.WithTimeout: tests put the ticks' real deadlines on their clock.
func (s *Scheduler) TimeoutsOn(f func(context.Context, time.Duration) (context.Context, context.CancelFunc)) {
	s.timeout = f
}

// Timeout is a job's scheduled tick deadline, 0 for an unknown job.
func (s *Scheduler) Timeout(name string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[name].timeout
}

// BeforeTick sets what runs before each tick that holds its lease (the
// development fake clock loads the time other instances moved it to).
func (s *Scheduler) BeforeTick(f func(context.Context) error) { s.before = f }

// NewScheduler builds a stopped scheduler.
func NewScheduler(store *models.Store, log *slog.Logger) *Scheduler {
	host, _ := os.Hostname()
	cl := cronLogger{log}
	ticks, cancel := context.WithCancel(context.Background())
	return &Scheduler{
		ticks:   ticks,
		cancel:  cancel,
		store:   store,
		log:     log,
		holder:  fmt.Sprintf("%s:%d:%s", host, os.Getpid(), models.NewID("sch")),
		jobs:    map[string]entry{},
		running: map[string]*sync.Mutex{},
		wall:    time.Now,
		timeout: context.WithTimeout,
		cron: cron.New(cron.WithLocation(time.UTC),
			cron.WithChain(cron.SkipIfStillRunning(cl), cron.Recover(cl)),
			cron.WithLogger(cl)),
	}
}

// Add schedules job at spec ("@every 5s", "2 * * * *").
func (s *Scheduler) Add(spec string, job Job, timeout time.Duration) error {
	s.mu.Lock()
	s.jobs[job.Name()] = entry{spec: spec, job: job, timeout: timeout}
	s.running[job.Name()] = &sync.Mutex{}
	s.mu.Unlock()
	s.metrics.scheduled(job.Name())
	if s.follow {
		sched, err := cron.ParseStandard(spec)
		if err != nil {
			return err
		}
		if first := sched.Next(time.Unix(0, 0).UTC()); sched.Next(first).Sub(first) >= time.Minute {
			s.mu.Lock()
			s.clocked = append(s.clocked, &clockedJob{name: job.Name(), sched: sched, next: sched.Next(s.store.Now())})
			s.mu.Unlock()
			return nil
		}
	}
	_, err := s.cron.AddFunc(spec, func() { _ = s.tick(s.ticks, job.Name()) })
	return err
}

// Names lists the scheduled jobs.
func (s *Scheduler) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.jobs))
	for n := range s.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Schedule is a job's cron spec ("@every 1m"), "" for an unknown job.
func (s *Scheduler) Schedule(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[name].spec
}

// Start begins ticking.
func (s *Scheduler) Start() { s.cron.Start() }

// Stop is the shutdown: no tick starts after it, the running ones, scheduled
// or kicked, see their context cancelled (a job stops between steps and its
// transaction rolls back; every job is idempotent, so the next start picks
// up where it left), and Stop waits for them up to ctx's deadline.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		<-s.cron.Stop().Done()
		s.kicked.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("jobs: stop: %w", ctx.Err())
	}
}

// WaitKicked waits until every kicked tick has ended, without cancelling
// them (Stop cancels): a caller that kicked a job and must see its outcome,
// as the real-clock provision tests do, waits here.
func (s *Scheduler) WaitKicked() { s.kicked.Wait() }

// Kick runs one tick of the named job soon, in the background, so a
// customer's action is carried out without waiting for the next scheduled
// tick. The tick belongs to the scheduler: Stop cancels and waits for it,
// and no kick starts once Stop was called. An unknown
// job is ignored.
func (s *Scheduler) Kick(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[name]; !ok || s.stopped {
		return
	}
	s.kicked.Add(1)
	go func() {
		defer s.kicked.Done()
		ctx, cancel := s.timeout(s.ticks, KickTimeout)
		defer cancel()
		_ = s.tick(ctx, name)
	}()
}

// RunNow runs one tick of the named job at once and returns its error
// (development demos, "recover now", tests).
func (s *Scheduler) RunNow(ctx context.Context, name string) error {
	s.mu.Lock()
	_, ok := s.jobs[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	return s.tick(ctx, name)
}

func (s *Scheduler) tick(parent context.Context, name string) error {
	_, err := s.tickIf(parent, name, nil)
	return err
}

// tickIf runs one tick under the job's lease when due (nil: always) still
// holds once the lease is held, and reports whether the job ran.
func (s *Scheduler) tickIf(parent context.Context, name string, due func(context.Context) bool) (bool, error) {
	s.mu.Lock()
	e, running := s.jobs[name], s.running[name]
	s.mu.Unlock()
	running.Lock()
	defer running.Unlock()
	ctx, cancel := s.timeout(parent, e.timeout)
	defer cancel()
	ok, err := s.store.AcquireLease(ctx, name, s.holder, s.wall(), e.timeout+time.Minute)
	if err != nil {
		s.log.Error("job lease", "job", name, "error", err)
		return false, err
	}
	if !ok {
		s.log.Debug("job skipped: another instance holds the lease", "job", name)
		s.metrics.ran(name, outcomeSkipped, 0)
		return false, nil
	}
	defer func() { _ = s.store.ReleaseLease(context.WithoutCancel(ctx), name, s.holder) }()
	if s.before != nil {
		if err := s.before(ctx); err != nil {
			s.log.Warn("job: before tick", "job", name, "error", err)
		}
	}
	if due != nil && !due(ctx) {
		s.metrics.ran(name, outcomeSkipped, 0)
		return false, nil
	}
	// The run is recorded on the store's clock, the one the job reads, so
	// /admin/jobs and the next due tick agree with the fake clock in
	// development; how long it took is measured on the wall.
	at := s.store.Now()
	started := time.Now()
	runErr := e.job.Run(ctx)
	finished := time.Now()
	if err := s.store.RecordJobRun(context.WithoutCancel(ctx), name, at, at.Add(finished.Sub(started)), runErr); err != nil {
		s.log.Warn("job run record", "job", name, "error", err)
	}
	outcome := outcomeOK
	if runErr != nil {
		outcome = outcomeError
	}
	s.metrics.ran(name, outcome, finished.Sub(started))
	if runErr != nil {
		s.log.Error("job failed", "job", name, "duration", finished.Sub(started), "error", runErr)
	} else {
		s.log.Debug("job done", "job", name, "duration", finished.Sub(started))
	}
	return true, runErr
}

// cronLogger adapts slog for robfig/cron, keeping its chatter at Debug.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err)...)
}
