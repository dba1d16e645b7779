package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// stoppedMails are the queued "clusters stopped" budget mails.
func (w *budgetWorld) stoppedMails() []models.OutboxMail {
	w.t.Helper()
	ms, err := views.RenderedMails(w.store.OutboxMails(context.Background(), 1000))
	if err != nil {
		w.t.Fatal(err)
	}
	var out []models.OutboxMail
	for _, m := range ms {
		if strings.HasPrefix(m.Key, "budget-stopped:") {
			out = append(out, m)
		}
	}
	return out
}

// B5, X6, B6: a reached budget is announced when it is
// enforced, not only when it is reached: while the warning window runs the
// cluster's "runs until" is the enforcement time the 100 % mail names, and
// nothing says "stopped"; when the window has passed and the cluster is
// actually stopped, the owners and admins get a mail naming it and the
// moment, once.
func TestBudgetStopAnnouncedWhenItHappens(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newBudgetWorld(t, db)
		c := w.ready(w.launch("H100_80GB", 2, 8))
		now := c.ReadyAt.Add(90 * time.Minute)
		w.setBudget(w.org.ID, w.env.ID, 50*models.Micro)
		w.at(now)
		enforce := now.Add(models.BudgetWarningWindow)
		if m := w.mailTo("owner@acme.test", "reached"); !strings.Contains(m.Text, "are stopped at "+enforce.Format("2006-01-02 15:04 UTC")) {
			t.Fatalf("100 %% mail does not say when:\n%s", m.Text)
		}
		o, err := w.store.BudgetOverviewFor(ctx, w.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Clusters) != 1 || o.Clusters[0].At == nil || !o.Clusters[0].At.Equal(enforce) || o.Clusters[0].By != models.RunOutBudget {
			t.Fatalf("runs until %+v, want %s (the mail's time) by budget", o.Clusters, enforce)
		}
		if got := w.stoppedMails(); len(got) != 0 {
			t.Fatalf("a stop announced before it happened: %v", got)
		}
		w.at(enforce)
		w.at(enforce.Add(time.Minute)) // a rerun announces nothing more
		got := w.stoppedMails()
		if len(got) != 2 {
			t.Fatalf("stopped mails %d, want one each to the owner and the admin", len(got))
		}
		for _, m := range got {
			if m.To == "member@acme.test" || !strings.Contains(m.Subject, "Clusters stopped in environment default") ||
				!strings.Contains(m.Text, "stopped at "+enforce.Format("2006-01-02 15:04 UTC")+": "+c.Name) ||
				!strings.Contains(m.Text, "/billing#budgets") {
				t.Errorf("stopped mail to %s: %s\n%s", m.To, m.Subject, m.Text)
			}
		}
	})
}

// B6, X6: the balance's "runs until" on the billing page
// (and the API) is when the clusters are stopped — the run-out plus the
// grace — and the low-balance mail names that same moment; once exhausted
// it stays at the exhaustion plus the grace, and the cluster is stopped
// then.
func TestBalanceRunsUntilMatchesTheMail(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newEnforceWorld(t, db)
		e.setStanding(30*models.Micro, "adj-low") // the cluster burns $59.91/h: about half an hour
		e.step(0)
		var low models.OutboxMail
		if err := db.Where("idempotency_key LIKE ?", "balance-low:%").Take(&low).Error; err != nil {
			t.Fatal(err)
		}
		low, err := views.RenderOutbox(low)
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.store.BudgetOverviewFor(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Clusters) != 1 || o.Clusters[0].At == nil || o.Clusters[0].By != models.RunOutBalance || o.BalanceRunOut == nil {
			t.Fatalf("run-outs %+v", o.Clusters)
		}
		until := *o.Clusters[0].At
		if !until.Equal(o.BalanceRunOut.Add(models.DefaultBalanceGrace)) {
			t.Errorf("runs until %s, want the run-out %s plus the grace", until, o.BalanceRunOut)
		}
		if !strings.Contains(low.Text, "they are stopped at "+until.UTC().Format("2006-01-02 15:04 UTC")) {
			t.Fatalf("the low-balance mail does not name the page's time %s:\n%s", until.UTC().Format("15:04"), low.Text)
		}
		exhausted := e.runUntilExhausted()
		o, err = e.store.BudgetOverviewFor(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Clusters) != 1 || !o.Clusters[0].At.Equal(exhausted.Add(models.DefaultBalanceGrace)) {
			t.Errorf("exhausted at %s: runs until %+v, want the exhaustion plus the grace", exhausted, o.Clusters[0].At)
		}
		e.clock.Set(exhausted.Add(models.DefaultBalanceGrace))
		e.step(0)
		if c := e.cluster(e.c.ID); c.Status != models.StatusStopped {
			t.Errorf("not stopped at the time the page said: %s", c.Status)
		}
	})
}
