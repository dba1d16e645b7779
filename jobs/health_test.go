package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// healthWorld is the provision world plus the health and recovery jobs,
// an owner who receives the mails, and one ready 3-machine cluster.
type healthWorld struct {
	*world
	health   *jobs.Health
	recovery *jobs.Recovery
	c        models.Cluster
	actor    models.Actor
}

func newHealthWorld(t *testing.T, db *gorm.DB) *healthWorld {
	t.Helper()
	return newHealthWorldSet(t, db, models.Settings{})
}

// newHealthWorldSet is newHealthWorld with the store built with set.
func newHealthWorldSet(t *testing.T, db *gorm.DB, set models.Settings) *healthWorld {
	t.Helper()
	h := newHealthWorldOn(t, db, 3, "none", set)
	if c := h.cluster(h.c.ID); c.Status != models.StatusReady {
		t.Fatalf("setup: status %s\n%s", c.Status, h.events(c.ID))
	}
	return h
}

// newHealthWorldWith launches nodes machines running software and runs
// six minutes.
func newHealthWorldWith(t *testing.T, db *gorm.DB, nodes int, software string) *healthWorld {
	t.Helper()
	return newHealthWorldOn(t, db, nodes, software, models.Settings{})
}

// newHealthWorldOn is newHealthWorldWith with the store built with set.
func newHealthWorldOn(t *testing.T, db *gorm.DB, nodes int, software string, set models.Settings) *healthWorld {
	t.Helper()
	w := newWorldOnSet(t, db, testCloud, set)
	owner := models.User{ID: models.NewID("usr"), Email: "owner@acme.example", CreatedAt: start}
	if err := db.Create(&owner).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&models.Membership{OrgID: w.org.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: start}).Error; err != nil {
		t.Fatal(err)
	}
	notify := &models.ClusterNotify{BaseURL: "https://deck.example"}
	reg := providers.Registry{"sim": w.cloud}
	h := &healthWorld{world: w,
		health:   &jobs.Health{Store: w.store, Providers: reg, Mail: notify},
		recovery: &jobs.Recovery{Store: w.store, Providers: reg, Mail: notify},
		actor:    models.Actor{OrgID: w.org.ID, UserID: owner.ID, Role: models.RoleOwner, Name: owner.Email}}
	h.c = w.launchWith("H100_80GB", nodes, 8, software)
	w.tick()
	w.run(6*time.Minute, time.Minute)
	return h
}

// pass advances the clock, lets the agents beat, and runs one recovery and
// one health pass (recovery first: it acts on the previous pass's verdict).
func (h *healthWorld) pass(d time.Duration) models.Cluster {
	h.t.Helper()
	h.clock.Advance(d)
	h.tick()
	ctx := context.Background()
	if err := h.recovery.Run(ctx); err != nil {
		h.t.Fatalf("recovery: %v", err)
	}
	if err := h.health.Run(ctx); err != nil {
		h.t.Fatalf("health: %v", err)
	}
	return h.cluster(h.c.ID)
}

func (h *healthWorld) inject(kind sim.FaultKind, node int, extra ...func(*sim.Fault)) {
	h.t.Helper()
	f := sim.Fault{Kind: kind, Group: h.c.ID, Node: node}
	for _, e := range extra {
		e(&f)
	}
	if err := h.cloud.Inject(f); err != nil {
		h.t.Fatal(err)
	}
}

func (h *healthWorld) setPolicy(maxAttempts, cooldown int) {
	h.t.Helper()
	if _, err := h.store.As(h.actor).SetRecoveryPolicy(context.Background(), h.c.ID,
		models.RecoveryPolicy{Mode: models.RecoveryRestart, MaxAttempts: maxAttempts, CooldownMinutes: cooldown}); err != nil {
		h.t.Fatal(err)
	}
}

// mails lists the queued subjects that contain sub.
func (h *healthWorld) mails(sub string) []string {
	h.t.Helper()
	all, err := views.RenderedMails(h.store.OutboxMails(context.Background(), 200))
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, m := range all {
		if strings.Contains(m.Subject, sub) {
			out = append(out, m.Subject)
		}
	}
	return out
}

func (h *healthWorld) node(rank int) models.ClusterNode {
	h.t.Helper()
	nodes, err := h.store.NodesFor(context.Background(), h.c.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return nodes[rank]
}

func (h *healthWorld) count(sub string) int { return strings.Count(h.events(h.c.ID), sub) }

// R1, R2, E1: a machine stopping after admission degrades the cluster after
// the hold time with an event naming it and what was seen, one mail;
// readyAt (billing) is untouched; with no policy nothing is restarted.
func TestHealthDegradesOnMachineLoss(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		readyAt := *h.cluster(h.c.ID).ReadyAt
		// Off, even with attempts and a cooldown filled in (R2: by default nothing else happens).
		if _, err := h.store.As(h.actor).SetRecoveryPolicy(context.Background(), h.c.ID,
			models.RecoveryPolicy{Mode: models.RecoveryOff, MaxAttempts: 3, CooldownMinutes: 5}); err != nil {
			t.Fatal(err)
		}
		h.inject(sim.FaultGoesDown, 1)
		if c := h.pass(30 * time.Second); c.Status != models.StatusReady {
			t.Fatalf("degraded on the first sighting: %s", c.Status)
		}
		c := h.pass(time.Minute)
		if c.Status != models.StatusDegraded || !strings.HasPrefix(c.LastError, "node_down:node-1") {
			t.Fatalf("status %s lastError %q\n%s", c.Status, c.LastError, h.events(c.ID))
		}
		if !strings.Contains(h.events(c.ID), "status|degraded|node-1|health|Machine down after admission — node-1: stopped at the provider") {
			t.Errorf("no event naming the machine and what was seen:\n%s", h.events(c.ID))
		}
		if n := h.node(1); n.Status != models.NodeDown || h.node(0).Status != models.NodeReady {
			t.Errorf("node statuses: node-1 %s, node-0 %s", n.Status, h.node(0).Status)
		}
		if !c.ReadyAt.Equal(readyAt) || c.USDPerHour != h.c.USDPerHour {
			t.Errorf("billing start or rate changed: %v %v", c.ReadyAt, c.USDPerHour)
		}
		for range 5 {
			c = h.pass(5 * time.Minute)
		}
		if got := h.mails("degraded"); len(got) != 1 {
			t.Errorf("degraded mails %v, want exactly one", got)
		}
		// R2: by default nothing else happens.
		if c.Status != models.StatusDegraded || h.count("Recovery attempt") != 0 || h.node(1).Status != models.NodeDown {
			t.Errorf("without a policy something acted: %s\n%s", c.Status, h.events(c.ID))
		}
	})
}

// R1: a silent agent on a running machine is unhealthy once its heartbeat
// is late past the threshold and the condition held; not before.
func TestHealthDegradesOnSilentAgent(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.inject(sim.FaultHeartbeatsStop, 2)
		for range 5 { // 2.5 minutes of silence: under the 3-minute threshold
			if c := h.pass(30 * time.Second); c.Status != models.StatusReady {
				t.Fatalf("degraded before the heartbeat was late: %s\n%s", c.Status, h.events(c.ID))
			}
		}
		var c models.Cluster
		for range 6 {
			c = h.pass(30 * time.Second)
		}
		if c.Status != models.StatusDegraded || !strings.Contains(c.LastError, "node-2: agent silent") {
			t.Fatalf("status %s lastError %q", c.Status, c.LastError)
		}
	})
}

// R1: a machine seen unwell on one pass and well on the next never
// degrades the cluster (no flapping below the threshold).
func TestHealthNoFlappingBelowThreshold(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.inject(sim.FaultGoesDown, 0)
		h.pass(10 * time.Second) // seen stopped once
		if h.node(0).DownSince == nil {
			t.Fatal("the pass did not note the stopped machine")
		}
		if err := h.cloud.RestartNode(context.Background(), h.c.ID, h.node(0).ProviderNodeID); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if c := h.pass(20 * time.Second); c.Status != models.StatusReady {
				t.Fatalf("flapped: %s\n%s", c.Status, h.events(c.ID))
			}
		}
		if n := h.node(0); n.DownSince != nil || n.DownPasses != 0 {
			t.Errorf("node-0 still marked unwell: %v %d", n.DownSince, n.DownPasses)
		}
	})
}

// R3, R4: with a policy, the next pass brings every machine that is down
// back one by one in rank order; the cluster returns to ready with an
// event, the episode closes and its attempts reset; a new loss opens a new
// episode with every attempt available again.
func TestRecoveryRestartsOneByOneAndResets(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorldSet(t, db, models.Settings{MaxUnhealthyPercent: 70}) // two of three down stays repairable here (damping has its own test)
		h.setPolicy(3, 5)
		h.inject(sim.FaultGoesDown, 2)
		h.inject(sim.FaultGoesDown, 0)
		h.pass(30 * time.Second)
		c := h.pass(time.Minute)
		if c.Status != models.StatusDegraded || c.RecoveryAttempts != 0 {
			t.Fatalf("status %s attempts %d", c.Status, c.RecoveryAttempts)
		}
		c = h.pass(10 * time.Second)
		r := c.Recovery()
		if r.AttemptsUsed != 1 || len(r.Outcomes) != 2 || r.Outcomes[0].Node != "node-0" || r.Outcomes[1].Node != "node-2" ||
			r.Outcomes[0].Outcome != models.OutcomeRestarted || r.Outcomes[1].Outcome != models.OutcomeRestarted {
			t.Fatalf("attempt: %+v", r)
		}
		if h.node(1).Status != models.NodeReady {
			t.Errorf("the healthy node-1 was touched: %s", h.node(1).Status)
		}
		for range 4 {
			c = h.pass(30 * time.Second)
		}
		if c.Status != models.StatusReady || c.EpisodeStartedAt != nil || c.RecoveryAttempts != 0 || c.LastError != "" {
			t.Fatalf("after the restarts: %s episode %v attempts %d %q\n%s", c.Status, c.EpisodeStartedAt, c.RecoveryAttempts, c.LastError, h.events(c.ID))
		}
		if !strings.Contains(h.events(c.ID), "status|ready||health|Every machine is healthy again.") {
			t.Errorf("no healthy event:\n%s", h.events(c.ID))
		}
		if got := h.mails("Cluster train is healthy again"); len(got) != 1 {
			t.Errorf("healthy-again mails %v, want one", got)
		}
		for i := range 3 {
			if n := h.node(i); n.Status != models.NodeReady || n.PrivateIP != "10.77.0."+string(rune('1'+i)) {
				t.Errorf("%s: %s %s", n.Name, n.Status, n.PrivateIP)
			}
		}
		// A new episode starts with every attempt again.
		h.inject(sim.FaultGoesDown, 1)
		h.pass(30 * time.Second)
		c = h.pass(time.Minute)
		if c.Status != models.StatusDegraded || c.Episodes != 2 || c.RecoveryAttempts != 0 {
			t.Fatalf("second episode: %s episodes %d attempts %d", c.Status, c.Episodes, c.RecoveryAttempts)
		}
		if got := h.mails("degraded"); len(got) != 2 {
			t.Errorf("one degraded mail per episode, got %v", got)
		}
	})
}

// R4, R5: attempts wait for the cooldown, are bounded per episode, and
// when spent the cluster stays degraded with recovery_exhausted and one
// mail; nothing more is attempted.
func TestRecoveryCooldownBoundAndExhausted(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.setPolicy(2, 5)
		h.inject(sim.FaultGoesDown, 1)
		h.inject(sim.FaultRestartFails, 1)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		c := h.pass(10 * time.Second)
		if c.RecoveryAttempts != 1 || c.Recovery().Outcomes[0].Outcome != models.OutcomeFailed {
			t.Fatalf("first attempt: %+v", c.Recovery())
		}
		for range 4 { // 4 minutes: inside the cooldown
			if c = h.pass(time.Minute); c.RecoveryAttempts != 1 {
				t.Fatalf("attempt %d inside the cooldown", c.RecoveryAttempts)
			}
		}
		c = h.pass(time.Minute)
		if c.RecoveryAttempts != 2 {
			t.Fatalf("attempts %d after the cooldown, want 2", c.RecoveryAttempts)
		}
		for range 8 {
			c = h.pass(time.Minute)
		}
		if c.Status != models.StatusDegraded || c.LastError != "recovery_exhausted" || c.RecoveryAttempts != 2 {
			t.Fatalf("status %s lastError %q attempts %d", c.Status, c.LastError, c.RecoveryAttempts)
		}
		if got := h.mails("Recovery of cluster train gave up"); len(got) != 1 {
			t.Errorf("exhausted mails %v, want one", got)
		}
		if h.count("Recovery attempt 3") != 0 {
			t.Errorf("a third attempt was made:\n%s", h.events(c.ID))
		}
	})
}

// R5: a machine the provider cannot bring back is skipped and the attempt
// resolves on the rest.
func TestRecoverySkipsUnrecoverable(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorldSet(t, db, models.Settings{MaxUnhealthyPercent: 70}) // two of three down stays repairable here (damping has its own test)
		h.setPolicy(3, 5)
		h.inject(sim.FaultUnrecoverable, 0)
		h.inject(sim.FaultGoesDown, 2)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		c := h.pass(10 * time.Second)
		o := c.Recovery().Outcomes
		if len(o) != 2 || o[0].Outcome != models.OutcomeSkipped || o[1].Outcome != models.OutcomeRestarted {
			t.Fatalf("outcomes %+v", o)
		}
		for range 3 {
			c = h.pass(30 * time.Second)
		}
		if h.node(2).Status != models.NodeReady || h.node(0).Status != models.NodeDown || c.Status != models.StatusDegraded {
			t.Errorf("node-2 %s node-0 %s cluster %s", h.node(2).Status, h.node(0).Status, c.Status)
		}
	})
}

// R5: "recover now" makes one attempt at once even without a policy; it
// is audited, and refused when no machine is down.
func TestRecoverNow(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		ctx := context.Background()
		if _, err := h.store.As(h.actor).RecoverNow(ctx, h.c.ID); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("recover now on a ready cluster: %v", err)
		}
		h.inject(sim.FaultGoesDown, 1)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		c := h.pass(time.Minute)
		if c.RecoveryAttempts != 0 {
			t.Fatalf("no policy, yet %d attempts", c.RecoveryAttempts)
		}
		if c, err := h.store.As(h.actor).RecoverNow(ctx, h.c.ID); err != nil || !c.Recovery().Requested {
			t.Fatalf("recover now: %v %+v", err, c.Recovery())
		}
		if err := h.recovery.Run(ctx); err != nil {
			t.Fatal(err)
		}
		c = h.cluster(h.c.ID)
		if c.RecoveryAttempts != 1 || c.RecoverRequestedAt != nil || c.Recovery().Outcomes[0].Outcome != models.OutcomeRestarted {
			t.Fatalf("after recover now: %+v", c.Recovery())
		}
		recs, _, err := h.store.AuditRecords(ctx, h.org.ID, 0, 10)
		if err != nil || len(recs) == 0 || recs[0].Action != "cluster.recover_now" {
			t.Errorf("audit: %v %+v", err, recs)
		}
		for range 3 {
			c = h.pass(30 * time.Second)
		}
		if c.Status != models.StatusReady {
			t.Errorf("status %s after recover now\n%s", c.Status, h.events(c.ID))
		}
	})
}

// X10: a machine still at the provider for a terminated cluster is found,
// released and listed with when; the cluster is then proven; no ledger
// entry is made for it.
func TestReconcileReleasesPlantedLeak(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		ctx := context.Background()
		if _, err := h.store.RequestTerminate(ctx, h.org.ID, h.c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		h.tick()
		if c := h.cluster(h.c.ID); c.Status != models.StatusTerminated {
			t.Fatalf("status %s", c.Status)
		}
		ledger := h.billed()
		// The leak: the provider holds machines under the ended cluster's group.
		if _, err := h.cloud.PlaceGroup(ctx, providers.PlaceRequest{GroupName: h.c.ID, OfferID: "h100.8x.vm", Location: "test-1", Count: 2}); err != nil {
			t.Fatal(err)
		}
		if h.stock("h100.8x.vm") != 8 {
			t.Fatalf("stock %d", h.stock("h100.8x.vm"))
		}
		rec := &jobs.Reconcile{Store: h.store, Providers: providers.Registry{"sim": h.cloud}}
		if err := rec.Run(ctx); err != nil {
			t.Fatal(err)
		}
		leaks, err := h.store.Leaks(ctx)
		if err != nil || len(leaks) != 2 || leaks[0].ReleasedAt == nil || leaks[0].FoundAt.IsZero() || leaks[0].ClusterID != h.c.ID {
			t.Fatalf("leaks %+v %v", leaks, err)
		}
		if h.stock("h100.8x.vm") != 10 {
			t.Errorf("leak not released: stock %d", h.stock("h100.8x.vm"))
		}
		if err := rec.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if c := h.cluster(h.c.ID); c.ReconciledAt == nil {
			t.Error("the cluster was not proven after the release")
		}
		if again, _ := h.store.Leaks(ctx); len(again) != 2 {
			t.Errorf("leaks listed twice: %d", len(again))
		}
		if h.billed() != ledger {
			t.Errorf("a ledger entry was made for a leaked machine")
		}
	})
}

// forgetful is a provider that no longer knows any group: every machine
// reads "not found".
type forgetful struct{ *sim.Cloud }

func (forgetful) DescribeGroups(context.Context, []string) (map[string]providers.Group, error) {
	return map[string]providers.Group{}, nil
}

// R1: a provider's "not found" for a machine we placed is confirmed
// on the next pass before the cluster is degraded for it, however short the
// hold time.
func TestHealthConfirmsNotFoundOnNextPass(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.health.Providers = providers.Registry{"sim": forgetful{h.cloud}}
		h.health.UnhealthyAfter = time.Nanosecond
		if c := h.pass(time.Second); c.Status != models.StatusReady {
			t.Fatalf("degraded on one 'not found' answer: %s", c.Status)
		}
		c := h.pass(time.Second)
		if c.Status != models.StatusDegraded || !strings.Contains(c.LastError, "not found at the provider") {
			t.Fatalf("status %s lastError %q", c.Status, c.LastError)
		}
	})
}

// A describe call held past the pass's deadline decides nothing: no
// machine is marked, the cluster stays as it was.
func TestHealthSlowDescribeDecidesNothing(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.inject(sim.FaultGoesDown, 1)
		if err := h.cloud.Inject(sim.Fault{Kind: sim.FaultDescribeDelay, Delay: sim.Duration(time.Minute), Count: 2}); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(2 * time.Minute)
		for range 2 {
			// Long enough for the pass's own database work (a deadline that
			// ended there left the delays untaken, and the passes below then
			// waited them out: two minutes of wall time), far shorter than
			// the delay.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := h.health.Run(ctx)
			cancel()
			if err == nil || !strings.Contains(err.Error(), "describe timed out") {
				t.Fatalf("a pass whose describe timed out reported %v", err)
			}
		}
		if n := h.node(1); n.DownSince != nil || h.cluster(h.c.ID).Status != models.StatusReady {
			t.Errorf("a pass without an answer decided: down since %v, status %s", n.DownSince, h.cluster(h.c.ID).Status)
		}
		h.pass(time.Second)
		if c := h.pass(time.Minute); c.Status != models.StatusDegraded {
			t.Errorf("once answered: %s", c.Status)
		}
	})
}

// R1: a machine is declared down only once its condition held for the
// hold time, however many passes saw it before.
func TestHealthHoldsBeforeDeclaring(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.inject(sim.FaultGoesDown, 2)
		for range 5 { // 50 seconds of passes: under the minute
			if c := h.pass(10 * time.Second); c.Status != models.StatusReady {
				t.Fatalf("declared down before the hold time: %s", c.Status)
			}
		}
		if c := h.pass(20 * time.Second); c.Status != models.StatusDegraded {
			t.Fatalf("not declared after the hold time: %s", c.Status)
		}
	})
}

// OP4: two instances running the recovery job at once make one attempt:
// an attempt is claimed by a compare-and-swap on the attempts used, so a
// claim from a stale read is refused.
func TestRecoveryAttemptClaimedOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		ctx := context.Background()
		h.setPolicy(3, 5)
		h.inject(sim.FaultGoesDown, 1)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		stale := h.cluster(h.c.ID)
		other := &jobs.Recovery{Store: h.store, Providers: h.recovery.Providers}
		done := make(chan error, 2)
		for _, j := range []*jobs.Recovery{h.recovery, other} {
			go func() { done <- j.Run(ctx) }()
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if n := h.count("Recovery attempt done"); n != 1 || h.cluster(h.c.ID).RecoveryAttempts != 1 {
			t.Errorf("%d attempts made, %d counted; want one\n%s", n, h.cluster(h.c.ID).RecoveryAttempts, h.events(h.c.ID))
		}
		if _, err := h.store.BeginRecoveryAttempt(ctx, stale); !errors.Is(err, models.ErrConflict) {
			t.Errorf("a claim from a stale read: %v, want ErrConflict", err)
		}
	})
}

// groupBound is a provider whose upstream manages a group's members whole
// (RunPod's Instant Clusters): it refuses to restart one of them.
type groupBound struct{ providers.Provider }

func (groupBound) RestartNode(context.Context, string, string) error {
	return &providers.Error{Class: providers.ErrUnsupported, Provider: "sim", Op: "RestartNode",
		Message: "pod p1 is a member of Instant Cluster c1, whose pods RunPod does not restart one by one"}
}

// R5: a machine the provider refuses to restart on its own is
// skipped with a reason that says what the customer can do instead — not
// retried as a failure on every attempt.
func TestRecoverySkipsWhatTheProviderDoesNotRestart(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.recovery.Providers = providers.Registry{"sim": groupBound{h.cloud}}
		h.setPolicy(3, 5)
		h.inject(sim.FaultGoesDown, 1)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		c := h.pass(10 * time.Second)
		o := c.Recovery().Outcomes
		if len(o) != 1 || o[0].Outcome != models.OutcomeSkipped || !strings.Contains(o[0].Message, "terminate") ||
			!strings.Contains(o[0].Message, "Instant Cluster") {
			t.Fatalf("outcomes %+v", o)
		}
	})
}

// X14: with more than the damping share of a cluster's
// machines down at once (two of three, above 40 %), automatic recovery
// makes no attempt and says so once (event, damped_at); a person's
// "recover now" still runs; the pause ends with the episode.
func TestRecoveryDampedWhenTooManyDown(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.setPolicy(3, 5)
		h.inject(sim.FaultGoesDown, 2)
		h.inject(sim.FaultGoesDown, 0)
		h.pass(30 * time.Second)
		c := h.pass(time.Minute)
		if c.Status != models.StatusDegraded {
			t.Fatalf("status %s", c.Status)
		}
		for range 3 {
			c = h.pass(time.Minute)
		}
		if c.RecoveryAttempts != 0 || c.DampedAt == nil {
			t.Fatalf("damped: attempts %d damped_at %v\n%s", c.RecoveryAttempts, c.DampedAt, h.events(c.ID))
		}
		if n := h.count("Automatic repair paused: 2 of 3 machines are unhealthy at once, more than 40 % (1)"); n != 1 {
			t.Errorf("%d pause events, want one:\n%s", n, h.events(c.ID))
		}
		if h.node(0).Status != models.NodeDown || h.node(2).Status != models.NodeDown {
			t.Errorf("machines touched while damped: %s %s", h.node(0).Status, h.node(2).Status)
		}
		if _, err := h.store.As(h.actor).RecoverNow(context.Background(), c.ID); err != nil {
			t.Fatal(err)
		}
		c = h.pass(10 * time.Second)
		if c.RecoveryAttempts != 1 {
			t.Fatalf("recover now while damped: attempts %d\n%s", c.RecoveryAttempts, h.events(c.ID))
		}
		for range 4 {
			c = h.pass(30 * time.Second)
		}
		if c.Status != models.StatusReady || c.DampedAt != nil {
			t.Fatalf("after recover now: %s damped_at %v\n%s", c.Status, c.DampedAt, h.events(c.ID))
		}
	})
}

// X14: the damping rule in whole machines, one always repairable.
func TestDampRepairShare(t *testing.T) {
	for _, tt := range []struct {
		machines, unhealthy, pct int
		allowed                  bool
	}{
		{2, 1, 40, true}, {2, 2, 40, false}, {3, 1, 40, true}, {3, 2, 40, false},
		{5, 2, 40, true}, {5, 3, 40, false}, {10, 4, 0, true}, {10, 5, 0, false}, {4, 2, 50, true}, {4, 3, 50, false},
	} {
		v := models.DampRepair(tt.machines, tt.unhealthy, tt.pct)
		if v.Allowed != tt.allowed || (v.Reason == "") != tt.allowed {
			t.Errorf("%d of %d at %d %%: %+v, want allowed %v", tt.unhealthy, tt.machines, tt.pct, v, tt.allowed)
		}
	}
}
