package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// enforceWorld is a world with an owner and a plain member (who gets no
// billing mail), a running cluster and the balance enforcement job at its
// defaults.
type enforceWorld struct {
	*world
	db      *gorm.DB
	enforce *jobs.BalanceEnforcement
	c       models.Cluster
}

func newEnforceWorld(t *testing.T, db *gorm.DB) *enforceWorld {
	t.Helper()
	w := newWorld(t, db)
	for _, m := range []struct {
		email string
		role  models.Role
	}{{"owner@acme.example", models.RoleOwner}, {"member@acme.example", models.RoleMember}} {
		u := models.User{ID: models.NewID("usr"), Email: m.email, CreatedAt: start}
		if err := db.Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: w.org.ID, UserID: u.ID, Role: m.role, CreatedAt: start}).Error; err != nil {
			t.Fatal(err)
		}
	}
	e := &enforceWorld{world: w, db: db, enforce: &jobs.BalanceEnforcement{Store: w.store, BaseURL: "https://deck.example"}}
	e.c = w.readyCluster()
	return e
}

// setStanding adjusts the ledger so the balance, less what accumulates,
// reads want now.
func (e *enforceWorld) setStanding(want models.Money, key string) {
	e.t.Helper()
	ctx := context.Background()
	bal, _, err := e.store.BalanceStanding(ctx, e.org.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: e.org.ID, Kind: models.LedgerAdjustment,
		Amount: want - bal, IdemKey: key, Description: "test adjustment"}); err != nil {
		e.t.Fatal(err)
	}
}

// step advances the clock, runs every job and the enforcement pass.
func (e *enforceWorld) step(d time.Duration) {
	e.t.Helper()
	e.clock.Advance(d)
	if err := e.enforce.Run(context.Background()); err != nil {
		e.t.Fatalf("balance: %v", err)
	}
	e.tick()
}

// mails counts the queued mails whose key starts with prefix, and those to the member.
func (e *enforceWorld) mails(prefix string) (all, member int64) {
	e.t.Helper()
	var rows []models.OutboxMail
	if err := e.db.Where("idempotency_key LIKE ?", prefix+"%").Find(&rows).Error; err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.To == "member@acme.example" {
			member++
		}
	}
	return int64(len(rows)), member
}

func (e *enforceWorld) episode() *models.BalanceEpisode {
	e.t.Helper()
	var ep []models.BalanceEpisode
	if err := e.db.Where("org_id = ?", e.org.ID).Find(&ep).Error; err != nil {
		e.t.Fatal(err)
	}
	if len(ep) == 0 {
		return nil
	}
	return &ep[0]
}

// runUntilExhausted steps a minute at a time until the pass sees the
// balance exhausted, and returns when it did.
func (e *enforceWorld) runUntilExhausted() time.Time {
	e.t.Helper()
	for range 120 {
		e.step(time.Minute)
		if ep := e.episode(); ep != nil && ep.ExhaustedAt != nil {
			return *ep.ExhaustedAt
		}
	}
	e.t.Fatalf("balance never exhausted\n%s", e.events(e.c.ID))
	return time.Time{}
}

// B6, E1, X6: a balance that will not cover the next hour mails the owner
// once (never the member); once exhausted, nothing happens during the
// grace (1 h by default); at its end every running cluster is stopped with
// one mail; unpaid for the second grace (72 h) after the stop, they are
// terminated with one mail.
func TestBalanceGraceStopTerminate(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newEnforceWorld(t, db)
		e.step(0)
		if n, _ := e.mails("balance-"); n != 0 || e.episode() != nil {
			t.Fatalf("a funded organisation got %d balance mails, episode %+v", n, e.episode())
		}
		e.setStanding(30*models.Micro, "adj-low") // the cluster burns $59.91/h
		for range 5 {
			e.step(time.Minute)
		}
		if n, member := e.mails("balance-low:"); n != 1 || member != 0 {
			t.Fatalf("low-balance mails %d (member %d), want one to the owner", n, member)
		}
		exhausted := e.runUntilExhausted()
		if got := e.cluster(e.c.ID); got.Status != models.StatusReady || got.StopRequestedAt != nil {
			t.Fatalf("stopped at once: %s", got.Status)
		}
		for e.clock.Now().Before(exhausted.Add(models.DefaultBalanceGrace - time.Minute)) {
			e.step(5 * time.Minute)
			if got := e.cluster(e.c.ID); got.StopRequestedAt != nil {
				t.Fatalf("stop requested at %v, within the grace from %v", got.StopRequestedAt, exhausted)
			}
		}
		e.clock.Set(exhausted.Add(models.DefaultBalanceGrace))
		e.step(0)
		c := e.cluster(e.c.ID)
		if c.Status != models.StatusStopped || c.StopReason != string(models.StopByBalance) {
			t.Fatalf("after the grace: %s %q\n%s", c.Status, c.StopReason, e.events(c.ID))
		}
		stoppedAt := *c.StoppedAt
		if n, member := e.mails("balance-stopped:"); n != 1 || member != 0 {
			t.Fatalf("stopped mails %d (member %d)", n, member)
		}
		var stoppedMail models.OutboxMail
		if err := db.Where("idempotency_key LIKE ?", "balance-stopped:%").Take(&stoppedMail).Error; err != nil {
			t.Fatal(err)
		}
		stoppedMail, err := views.RenderOutbox(stoppedMail)
		if err != nil {
			t.Fatal(err)
		}
		if stoppedMail.To != "owner@acme.example" || !strings.Contains(stoppedMail.Text, "being stopped: "+c.Name+".") ||
			!strings.Contains(stoppedMail.Text, "within 1 hour") || !strings.Contains(stoppedMail.Text, "Unpaid 72 hours from now") ||
			!strings.Contains(stoppedMail.Text, "https://deck.example/billing") {
			t.Errorf("stopped mail to %s:\n%s", stoppedMail.To, stoppedMail.Text)
		}
		e.step(71*time.Hour + 50*time.Minute)
		if c := e.cluster(e.c.ID); c.Status != models.StatusStopped || c.TerminateRequestedAt != nil {
			t.Fatalf("terminated within the second grace: %s", c.Status)
		}
		e.step(10 * time.Minute)
		e.step(time.Minute)
		c = e.cluster(e.c.ID)
		if c.Status != models.StatusTerminated {
			t.Fatalf("after the second grace: %s\n%s", c.Status, e.events(c.ID))
		}
		for range 3 {
			e.step(time.Hour)
		}
		for _, topic := range []string{"balance-low:", "balance-stopped:", "balance-terminated:"} {
			if n, _ := e.mails(topic); n != 1 {
				t.Errorf("%s mails %d, want 1", topic, n)
			}
		}
		// Billing ended at the stop: nothing accrued in the 72 h after it.
		_, minutes := e.machineUsage(c.ID)
		want := int64(stoppedAt.Sub(*c.ReadyAt) / time.Minute)
		for id, m := range minutes {
			if m != want {
				t.Errorf("machine %s billed %d minutes, want %d (ready to stop)", id, m, want)
			}
		}
		e.checkBalance()
	})
}

// B6: a top-up during the grace ends the episode: no stop, no terminate,
// ever; a later shortfall starts a new episode with its own warning.
func TestBalanceTopUpDuringGraceCancels(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newEnforceWorld(t, db)
		e.setStanding(20*models.Micro, "adj-low")
		exhausted := e.runUntilExhausted()
		e.clock.Set(exhausted.Add(40 * time.Minute))
		e.step(0)
		if _, err := e.store.Deposit(ctx, e.org.ID, 500*models.Micro, "top-up-1", "top-up"); err != nil {
			t.Fatal(err)
		}
		e.step(time.Minute)
		if ep := e.episode(); ep != nil {
			t.Fatalf("episode still open after the top-up: %+v", ep)
		}
		e.step(30 * time.Minute)
		e.step(73 * time.Hour)
		if c := e.cluster(e.c.ID); c.Status != models.StatusReady || c.StopRequestedAt != nil || c.TerminateRequestedAt != nil {
			t.Fatalf("after a top-up: %s stop %v terminate %v", c.Status, c.StopRequestedAt, c.TerminateRequestedAt)
		}
		for _, topic := range []string{"balance-stopped:", "balance-terminated:"} {
			if n, _ := e.mails(topic); n != 0 {
				t.Errorf("%s mails %d after the top-up", topic, n)
			}
		}
		if n, _ := e.mails("balance-low:"); n != 2 {
			t.Errorf("low-balance mails %d: want the first episode's and the new one's (73 h at $59.91/h spent the top-up)", n)
		}
	})
}

// B6: a top-up that lifts the balance above zero without covering the next
// hour restarts the grace: the stop comes a full grace after the balance
// ran out again, not after it first did; the episode (and its one warning)
// goes on.
func TestBalancePartialTopUpRestartsGrace(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newEnforceWorld(t, db)
		e.setStanding(10*models.Micro, "adj-low")
		first := e.runUntilExhausted()
		e.clock.Set(first.Add(50 * time.Minute))
		e.step(0)
		e.setStanding(20*models.Micro, "top-up-small") // above zero, under the $59.91 of the next hour
		e.step(0)
		if ep := e.episode(); ep == nil || ep.ExhaustedAt != nil {
			t.Fatalf("after a partial top-up: %+v", ep)
		}
		again := e.runUntilExhausted()
		if !again.After(first.Add(time.Hour)) {
			t.Fatalf("exhausted again at %v, before the first grace ended (%v)", again, first.Add(time.Hour))
		}
		for e.clock.Now().Before(again.Add(models.DefaultBalanceGrace - time.Minute)) {
			e.step(5 * time.Minute)
		}
		if c := e.cluster(e.c.ID); c.StopRequestedAt != nil {
			t.Fatalf("stopped %v: within the grace that restarted at %v", c.StopRequestedAt, again)
		}
		e.clock.Set(again.Add(models.DefaultBalanceGrace))
		e.step(0)
		if c := e.cluster(e.c.ID); c.Status != models.StatusStopped {
			t.Fatalf("after the restarted grace: %s", c.Status)
		}
		if n, _ := e.mails("balance-low:"); n != 1 {
			t.Errorf("low-balance mails %d in one episode, want 1", n)
		}
	})
}
