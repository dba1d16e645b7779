package jobs_test

import (
	"context"
	"strconv"
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

// runWorld is the world with the jobs a run lives by: health (R1), the
// GPU watch (X15) and the runs job (X17).
type runWorld struct {
	*world
	health *jobs.Health
	watch  *jobs.GPUWatch
	runs   *jobs.Runs
}

func newRunWorld(t testing.TB, db *gorm.DB) *runWorld { return newRunWorldOn(t, db, testCloud) }

func newRunWorldOn(t testing.TB, db *gorm.DB, cloud string) *runWorld {
	w := newWorldOn(t, db, cloud)
	return &runWorld{world: w, health: &jobs.Health{Store: w.store, Providers: providers.Registry{"sim": w.cloud}},
		watch: &jobs.GPUWatch{Store: w.store}, runs: &jobs.Runs{Store: w.store}}
}

// step advances the clock by d and runs every job once (agents between).
func (w *runWorld) step(d time.Duration) {
	w.t.Helper()
	ctx := context.Background()
	w.clock.Advance(d)
	w.tick()
	for _, j := range []interface {
		Run(context.Context) error
		Name() string
	}{w.health, w.watch, w.runs} {
		if err := j.Run(ctx); err != nil {
			w.t.Fatalf("%s: %v", j.Name(), err)
		}
	}
	w.runJobs() // a replacement asked for by the runs job is placed in the same step
}

func (w *runWorld) run(id string) models.Run {
	w.t.Helper()
	r, err := w.store.RunForOrg(context.Background(), w.org.ID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *runWorld) submit(sp models.RunSpec) models.Run {
	w.t.Helper()
	r, created, err := w.store.As(models.Actor{OrgID: w.org.ID, EnvID: w.env.ID, Name: "ada@example.com", Role: models.RoleOwner}).
		SubmitRun(context.Background(), sp)
	if err != nil || !created {
		w.t.Fatalf("submit: created %v, %v", created, err)
	}
	return r
}

// trainSpec is a run of the simulated training program: steps of 60 s.
func trainSpec(nodes, steps int) models.RunSpec {
	cmd := sim.TrainProgram + " " + strconv.Itoa(steps) + " 60"
	return models.RunSpec{Accelerator: "H100_80GB", Nodes: nodes, GPUsPerNode: 8, VolumeGB: 100, Command: cmd,
		ResumeCommand: cmd + " --resume", CheckpointDir: "ckpt", CheckpointSeconds: 60, RestartBudget: 2}
}

// X17 on the simulated cloud: a run of a program that checkpoints its
// step and refuses to repeat one launches verified, starts every rank,
// survives the death of one machine (detected within a minute, that
// machine alone replaced, every rank resumed with the resume command),
// finishes when every rank exits 0 and releases its machines. The healthy
// machine is never re-provisioned; the checkpoint reaches the last step.
func TestRunSurvivesAMachineDeath(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newRunWorld(t, db)
		ctx := context.Background()
		r := w.submit(trainSpec(2, 60))
		if r.Status != models.RunLaunching || r.ClusterID == "" || r.USDPerHour <= 0 {
			t.Fatalf("submitted %+v", r)
		}
		for i := 0; i < 60 && w.run(r.ID).Status == models.RunLaunching; i++ {
			w.step(30 * time.Second)
		}
		r = w.run(r.ID)
		if r.Status != models.RunRunning {
			t.Fatalf("run %s (%s), want running\n%s", r.Status, r.Message, w.events(r.ClusterID))
		}
		c := w.cluster(r.ClusterID)
		before, _ := w.store.NodesFor(ctx, c.ID)
		starts, _ := w.ran(c, 0)
		if len(starts) != 1 || starts[0].Env[models.CheckpointEnv] != models.SharedVolumeDir+"/ckpt" || starts[0].Env[models.AttemptEnv] != "0" {
			t.Fatalf("node-0's first start: %+v", starts)
		}
		w.step(20 * time.Minute) // twenty steps train
		killedAt := w.clock.Now()
		if ok, err := w.cloud.KillNow(c.GroupName(), 1); !ok || err != nil {
			t.Fatalf("kill: %v %v", ok, err)
		}
		for i := 0; i < 30; i++ { // the death, its detection and the replacement, 30 s at a time
			w.step(30 * time.Second)
		}
		for i := 0; i < 60 && w.run(r.ID).Status != models.RunFinished; i++ {
			w.step(time.Minute)
			if w.run(r.ID).Status == models.RunFailed {
				break
			}
		}
		r = w.run(r.ID)
		if r.Status != models.RunFinished {
			t.Fatalf("run %s (%s), want finished\n%s", r.Status, r.Message, w.events(r.ClusterID))
		}
		ints, _ := w.store.RunInterruptions(ctx, w.org.ID, r.ID)
		if len(ints) != 1 || ints[0].Cause != models.CauseMachineDead || ints[0].Node != "node-1" || !ints[0].Replaced || ints[0].ResumedAt == nil {
			t.Fatalf("interruptions %+v", ints)
		}
		if d := ints[0].DetectedAt.Sub(killedAt); d > time.Minute {
			t.Errorf("detected %s after the death, want within a minute", d)
		}
		if ints[0].LostSeconds > 60 {
			t.Errorf("lost %d s, want at most one checkpoint interval", ints[0].LostSeconds)
		}
		after, _ := w.store.NodesFor(ctx, c.ID)
		if after[0].ProviderNodeID != before[0].ProviderNodeID {
			t.Errorf("healthy node-0 re-provisioned: %s -> %s", before[0].ProviderNodeID, after[0].ProviderNodeID)
		}
		if after[1].ProviderNodeID == before[1].ProviderNodeID || after[1].PrivateIP != before[1].PrivateIP {
			t.Errorf("node-1 not replaced in place: %s/%s -> %s/%s", before[1].ProviderNodeID, before[1].PrivateIP, after[1].ProviderNodeID, after[1].PrivateIP)
		}
		starts = nil
		for _, x := range w.cloud.Ran(c.GroupName(), 0) {
			if strings.HasPrefix(x.Step, "start") {
				starts = append(starts, x)
			}
		}
		if len(starts) != 2 || !strings.HasSuffix(starts[1].Script, "--resume") || starts[1].Env[models.AttemptEnv] != "1" {
			t.Errorf("node-0's starts: %+v", starts)
		}
		if got := w.cloud.Checkpoint(c.VolumeID, models.SharedVolumeDir+"/ckpt"); got != 60 {
			t.Errorf("checkpoint at step %d, want 60", got)
		}
		if r.Restarts != 1 || r.Generation != 1 {
			t.Errorf("restarts %d generation %d", r.Restarts, r.Generation)
		}
		all, _ := w.store.EventsFor(ctx, c.ID)
		var types []string
		for _, e := range all {
			if strings.HasPrefix(e.Type, "run.") {
				types = append(types, e.Type)
			}
		}
		if strings.Join(types, ",") != "run.started,run.interrupted,run.resumed,run.finished" {
			t.Errorf("run events %v", types)
		}
		w.step(time.Minute)
		if c := w.cluster(c.ID); c.Status != models.StatusTerminated {
			t.Errorf("cluster %s after the run finished, want terminated (released)", c.Status)
		}
		bill, err := w.store.RunBill(ctx, r, w.clock.Now())
		if err != nil || bill.PaidMachineMinutes <= 0 || bill.ProductiveMinutes <= 0 || bill.ETTRPermille <= 0 || bill.ETTRPermille > 1000 {
			t.Errorf("bill %+v %v", bill, err)
		}
	})
}

// X17: a spent restart budget fails the run, says so, releases the
// machines and keeps the checkpoints on the volume.
func TestRunFailsWhenItsRestartBudgetIsSpent(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newRunWorld(t, db)
		sp := trainSpec(2, 600)
		sp.RestartBudget = 1
		r := w.submit(sp)
		for i := 0; i < 60 && w.run(r.ID).Status == models.RunLaunching; i++ {
			w.step(30 * time.Second)
		}
		c := w.cluster(r.ClusterID)
		for kill := 0; kill < 2; kill++ {
			w.step(10 * time.Minute)
			if ok, err := w.cloud.KillNow(c.GroupName(), 1); !ok || err != nil {
				t.Fatalf("kill %d: %v %v (run %s)\n%s", kill, ok, err, w.run(r.ID).Status, w.events(c.ID))
			}
			interrupted := false
			for i := 0; i < 40; i++ {
				w.step(30 * time.Second)
				st := w.run(r.ID).Status
				interrupted = interrupted || st != models.RunRunning
				if st == models.RunRunning && interrupted || st == models.RunFailed {
					break
				}
			}
		}
		r = w.run(r.ID)
		if r.Status != models.RunFailed || !strings.Contains(r.Message, "restart budget is spent (1 of 1") ||
			!strings.Contains(r.Message, "checkpoints stay") {
			t.Fatalf("run %s: %s\n%s", r.Status, r.Message, w.events(c.ID))
		}
		w.step(time.Minute)
		if got := w.cluster(c.ID); got.Status != models.StatusTerminated {
			t.Errorf("cluster %s, want terminated", got.Status)
		}
		if w.cloud.Checkpoint(c.VolumeID, models.SharedVolumeDir+"/ckpt") == 0 {
			t.Error("no checkpoint kept")
		}
	})
}

// X17, B6: a stop for the balance is known ahead (the grace after the
// balance ran out): two minutes before it every rank is warned (the
// agent sends SIGUSR1; the training program checkpoints), then the stop
// interrupts the run as planned and warned, and the ranks resume with the
// resume command once the cluster runs again.
func TestRunWarnsRanksBeforeABalanceStop(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newRunWorld(t, db)
		ctx := context.Background()
		r := w.submit(trainSpec(2, 600))
		for i := 0; i < 60 && w.run(r.ID).Status == models.RunLaunching; i++ {
			w.step(30 * time.Second)
		}
		w.step(10 * time.Minute)
		if w.run(r.ID).WarnedAt != nil {
			t.Fatal("warned without a stop coming")
		}
		exhausted := w.clock.Now().Add(-models.DefaultBalanceGrace + 90*time.Second) // the stop comes in 90 s
		if err := db.Create(&models.BalanceEpisode{OrgID: w.org.ID, StartedAt: exhausted, ExhaustedAt: &exhausted, UpdatedAt: exhausted}).Error; err != nil {
			t.Fatal(err)
		}
		w.step(10 * time.Second) // the runs job warns
		w.step(10 * time.Second) // the agents take the warning with their heartbeat
		if got := w.run(r.ID); got.WarnedAt == nil || got.Status != models.RunRunning || !strings.Contains(got.WarnReason, "balance ran out") {
			t.Fatalf("run %+v", got)
		}
		for rank := range 2 {
			lines, err := w.store.NodeLogs(ctx, w.org.ID, r.ClusterID, rank, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			warned := 0
			for _, l := range lines {
				if strings.Contains(l.Text, "SIGUSR1 to the start command so it checkpoints") {
					warned++
				}
			}
			if warned != 1 {
				t.Errorf("node-%d warned %d times, want once", rank, warned)
			}
		}
		c := w.cluster(r.ClusterID)
		if _, err := w.store.RequestStop(ctx, w.org.ID, c.ID, models.StopByBalance, "the balance ran out"); err != nil {
			t.Fatal(err)
		}
		w.step(15 * time.Second)
		got := w.run(r.ID)
		ints, _ := w.store.RunInterruptions(ctx, w.org.ID, r.ID)
		if got.Status != models.RunRecovering || len(ints) != 1 || ints[0].Cause != models.CausePlanned || !ints[0].Warned {
			t.Fatalf("run %s, interruptions %+v\n%s", got.Status, ints, w.events(c.ID))
		}
		for i := 0; i < 20 && w.cluster(c.ID).Status != models.StatusStopped; i++ {
			w.step(15 * time.Second)
		}
		db.Where("org_id = ?", w.org.ID).Delete(&models.BalanceEpisode{}) // topped up
		if _, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "ada@example.com"); err != nil {
			t.Fatalf("resume: %v (%s)", err, w.cluster(c.ID).Status)
		}
		for i := 0; i < 60 && w.run(r.ID).Status != models.RunRunning; i++ {
			w.step(30 * time.Second)
		}
		if got := w.run(r.ID); got.Status != models.RunRunning || got.Generation != 1 || got.WarnedAt != nil {
			t.Fatalf("after the resume: %s gen %d (%s)\n%s", got.Status, got.Generation, got.Message, w.events(c.ID))
		}
	})
}

// A budget stop (B5, X6) warns every rank once the budget's 100 % alert is
// recorded and its stop is within models.WarnLead; the stop is then a
// warned planned interruption.
func TestRunWarnsRanksBeforeABudgetStop(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newRunWorld(t, db)
		ctx := context.Background()
		r := w.submit(trainSpec(2, 600))
		for i := 0; i < 60 && w.run(r.ID).Status == models.RunLaunching; i++ {
			w.step(30 * time.Second)
		}
		c := w.cluster(r.ClusterID)
		env := c.EnvID
		if env == "" {
			env = "env-runbudget"
			if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Update("env_id", env).Error; err != nil {
				t.Fatal(err)
			}
		}
		now := w.clock.Now()
		if err := db.Create(&models.Budget{EnvID: env, OrgID: w.org.ID, Amount: 100 * models.Micro, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		w.step(10 * time.Minute)
		if w.run(r.ID).WarnedAt != nil {
			t.Fatal("warned without a budget stop coming")
		}
		at := w.clock.Now().Add(90 * time.Second) // the stop comes in 90 s
		if err := db.Create(&models.BudgetAlert{ID: "ba-run", OrgID: w.org.ID, EnvID: env, Month: models.MonthOf(w.clock.Now()).Month(),
			Percent: 100, Budget: 100 * models.Micro, Mailed: true, CreatedAt: w.clock.Now(), EnforceAt: &at}).Error; err != nil {
			t.Fatal(err)
		}
		w.step(10 * time.Second)
		w.step(10 * time.Second)
		if got := w.run(r.ID); got.WarnedAt == nil || got.Status != models.RunRunning || !strings.Contains(got.WarnReason, "budget is reached") {
			t.Fatalf("run %+v", got)
		}
		lines, err := w.store.NodeLogs(ctx, w.org.ID, r.ClusterID, 1, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		warned := 0
		for _, l := range lines {
			if strings.Contains(l.Text, "SIGUSR1 to the start command so it checkpoints") {
				warned++
			}
		}
		if warned != 1 {
			t.Errorf("node-1 warned %d times, want once", warned)
		}
		if _, err := w.store.RequestStop(ctx, w.org.ID, c.ID, models.StopByBudget, "the budget is reached"); err != nil {
			t.Fatal(err)
		}
		w.step(15 * time.Second)
		ints, _ := w.store.RunInterruptions(ctx, w.org.ID, r.ID)
		if got := w.run(r.ID); got.Status != models.RunRecovering || len(ints) != 1 || ints[0].Cause != models.CausePlanned || !ints[0].Warned ||
			!strings.Contains(ints[0].Message, "budget") {
			t.Fatalf("run %s, interruptions %+v\n%s", got.Status, ints, w.events(c.ID))
		}
	})
}
