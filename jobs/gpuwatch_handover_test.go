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

// X15, L7: the idle and stall clocks run only while the cluster is handed
// over. Two verified launches take over half an hour to hand over
// (10-minute boots, Slurm's install, verification with a swap) while
// their GPUs report: one idle
// throughout, under a 1-hour idle rule that stops; one with node-1 idle
// while node-0 is busy, under the 10-minute stall alert. The idle mail
// comes an hour after the hand-over, not an hour after the launch (which
// stopped a cluster 42 minutes after its start command began); the stall
// is named 10 minutes after the hand-over, not at once. A stopped cluster
// is not watched, and after a resume both clocks start again.
func TestWatchClocksStartAtHandOver(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		owner := models.User{ID: models.NewID("usr"), Email: "owner@acme.example", CreatedAt: start}
		if err := db.Create(&owner).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: w.org.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: start}).Error; err != nil {
			t.Fatal(err)
		}
		actor := models.Actor{OrgID: w.org.ID, UserID: owner.ID, Role: models.RoleOwner, Name: owner.Email}
		watch := &jobs.GPUWatch{Store: w.store, Mail: &models.ClusterNotify{BaseURL: "https://deck.example"}}
		idle := w.launchVerified("A100_80GB", 2, 4, "slurm") // 10-minute boots, then the install
		split := w.launchVerified("A100_80GB", 2, 4, "slurm")
		p := models.DefaultWatchPolicy()
		p.IdleOn, p.IdleHours, p.IdleAction, p.IdleGraceMinutes = true, 1, models.IdleStop, 10
		if _, err := w.store.As(actor).SetGPUWatch(ctx, idle.ID, p); err != nil {
			t.Fatal(err)
		}
		util := map[string]func(rank int) int{idle.ID: func(int) int { return 0 }, split.ID: func(rank int) int { return 95 * (1 - rank) }}
		reporting := []string{idle.ID, split.ID}
		report := func() {
			t.Helper()
			for _, id := range reporting {
				c := w.cluster(id)
				nodes, err := w.store.NodesFor(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					pct, mem, total, power := util[id](n.Rank), 70000, 81559, 80+util[id](n.Rank)*5+w.clock.Now().Minute()%4*40
					var samples []models.GPUSample
					for g := range c.GPUsPerNode {
						samples = append(samples, models.GPUSample{At: w.clock.Now().Add(-10 * time.Second), Index: g, UUID: "GPU-" + id + n.Name + string(rune('a'+g)),
							UtilPct: &pct, MemUsedMiB: &mem, MemTotalMiB: &total, PowerW: &power})
					}
					if err := w.store.RecordGPUReport(ctx, c, n, models.GPUReport{Samples: samples}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := watch.Run(ctx); err != nil {
				t.Fatalf("gpu-watch: %v", err)
			}
		}
		events := func(id, sub string) int {
			evs, _ := w.store.EventsFor(ctx, id)
			n := 0
			for _, e := range evs {
				if strings.Contains(e.Message, sub) {
					n++
				}
			}
			return n
		}
		// The placement waits 30 minutes (the jobs do not run), then the
		// machines boot and are verified: GPUs report all along.
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultECCErrors, Node: 1, Count: 2}); err != nil {
			t.Fatal(err) // a swap during verification makes the start slow
		}
		for w.cluster(idle.ID).Status != models.StatusReady || w.cluster(split.ID).Status != models.StatusReady {
			if w.clock.Now().Sub(start) > 80*time.Minute {
				t.Fatalf("not handed over: %s, %s\n%s", w.cluster(idle.ID).Status, w.cluster(split.ID).Status, w.events(idle.ID))
			}
			w.clock.Advance(time.Minute)
			w.tick()
			report()
		}
		handOver := *w.cluster(idle.ID).HandedOverAt
		if took := handOver.Sub(start); took < 30*time.Minute {
			t.Fatalf("handed over %s after the launch, want the half hour of a slow start", took)
		}
		if events(idle.ID, "Idle:") != 0 || events(split.ID, "GPU stall:") != 0 {
			t.Fatalf("at hand-over: idle %d, stall %d events", events(idle.ID, "Idle:"), events(split.ID, "GPU stall:"))
		}
		stallAt, mailAt := time.Duration(0), time.Duration(0)
		for w.clock.Now().Sub(handOver) < 75*time.Minute {
			step := 2 * time.Minute // minute points every 2 minutes: within the watch's 3-minute gap
			if stallAt == 0 {
				step = time.Minute
			}
			w.clock.Advance(step)
			report()
			since := w.clock.Now().Sub(handOver)
			if stallAt == 0 && events(split.ID, "GPU stall: node-1 idle while 1 machine") > 0 {
				stallAt, reporting = since, reporting[:1]
			}
			if mailAt == 0 && events(idle.ID, "Idle: Every GPU has been below 5 % for") > 0 {
				mailAt = since
			}
		}
		if stallAt < 10*time.Minute || stallAt > 12*time.Minute {
			t.Errorf("stall named %s after the hand-over, want at the 10-minute mark\n%s", stallAt, w.events(split.ID))
		}
		if mailAt < time.Hour || mailAt > 62*time.Minute {
			t.Errorf("idle mail %s after the hand-over, want an hour after it\n%s", mailAt, w.events(idle.ID))
		}
		c := w.cluster(idle.ID)
		if c.StopRequestedAt == nil || c.StopRequestedAt.Sub(handOver) < 70*time.Minute {
			t.Fatalf("idle stop requested at %v, want after the hour and the 10-minute grace from %v", c.StopRequestedAt, handOver)
		}

		// Stopped: not watched; resumed: the clocks start again.
		w.tick()
		if c = w.cluster(idle.ID); c.Status != models.StatusStopped {
			t.Fatalf("status %s after the idle stop\n%s", c.Status, w.events(idle.ID))
		}
		if _, err := w.store.As(actor).Resume(ctx, idle.ID); err != nil {
			t.Fatal(err)
		}
		for w.cluster(idle.ID).Status == models.StatusStopped {
			if w.clock.Now().Sub(handOver) > 3*time.Hour {
				t.Fatalf("not resumed\n%s", w.events(idle.ID))
			}
			w.clock.Advance(time.Minute)
			w.tick()
			report()
		}
		resumedAt := *w.cluster(idle.ID).HandedOverAt
		if !resumedAt.After(handOver.Add(70 * time.Minute)) {
			t.Fatalf("hand-over after the resume %v, want the resume's", resumedAt)
		}
		mails := events(idle.ID, "Idle: Every GPU")
		for w.clock.Now().Sub(resumedAt) < 58*time.Minute {
			w.clock.Advance(2 * time.Minute)
			report()
		}
		if n := events(idle.ID, "Idle: Every GPU"); n != mails {
			t.Fatalf("idle mailed again %s after the resume, want only an hour after it\n%s", w.clock.Now().Sub(resumedAt), w.events(idle.ID))
		}
		for range 2 {
			w.clock.Advance(2 * time.Minute)
			report()
		}
		if n := events(idle.ID, "Idle: Every GPU"); n != mails+1 {
			t.Fatalf("no idle mail an hour after the resume\n%s", w.events(idle.ID))
		}
	})
}
