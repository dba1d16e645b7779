package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// budgetWorld is the world with people to mail: an owner, an admin and a
// member of the organisation, a second environment, and a second
// organisation with a budget of its own.
type budgetWorld struct {
	*world
	budgets *jobs.Budgets
	staging models.Environment
	other   models.Org
	otherEv models.Environment
}

func newBudgetWorld(t *testing.T, db *gorm.DB) *budgetWorld {
	t.Helper()
	w := &budgetWorld{world: newWorld(t, db)}
	w.budgets = &jobs.Budgets{Store: w.store, BaseURL: "https://deck.example"}
	w.staging = models.Environment{ID: models.NewID("env"), OrgID: w.org.ID, Name: "staging", CreatedAt: start}
	w.other = models.Org{ID: models.NewID("org"), Name: "Other", MaxMachines: 64, MaxGPUs: 512, CreatedAt: start}
	w.otherEv = models.Environment{ID: models.NewID("env"), OrgID: w.other.ID, Name: "default", IsDefault: true, CreatedAt: start}
	for _, v := range []any{&w.staging, &w.other, &w.otherEv} {
		if err := db.Create(v).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		email string
		org   string
		role  models.Role
	}{{"owner@acme.test", w.org.ID, models.RoleOwner}, {"admin@acme.test", w.org.ID, models.RoleAdmin},
		{"member@acme.test", w.org.ID, models.RoleMember}, {"owner@other.test", w.other.ID, models.RoleOwner}} {
		u := models.User{ID: models.NewID("usr"), Email: p.email, Name: p.email, CreatedAt: start}
		if err := db.Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: p.org, UserID: u.ID, Role: p.role, CreatedAt: start}).Error; err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *budgetWorld) setBudget(orgID, envID string, amount models.Money) {
	w.t.Helper()
	_, err := w.store.As(models.Actor{OrgID: orgID, Role: models.RoleOwner, Name: "owner@acme.test"}).SetBudget(context.Background(), envID, amount)
	if err != nil {
		w.t.Fatal(err)
	}
}

// at sets the clock and runs the billing and budgets jobs.
func (w *budgetWorld) at(t time.Time) {
	w.t.Helper()
	w.clock.Set(t)
	if err := w.billing.Run(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	if err := w.budgets.Run(context.Background()); err != nil {
		w.t.Fatal(err)
	}
}

// atTwice sets the clock and runs two budgets passes at once (real
// goroutines, as two instances would without the scheduler's lease).
func (w *budgetWorld) atTwice(t time.Time) {
	w.t.Helper()
	w.clock.Set(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.budgets.Run(context.Background()); err != nil {
				w.t.Errorf("budgets: %v", err)
			}
		}()
	}
	wg.Wait()
}

// budgetMails are the queued budget mails as "recipient|subject", sorted.
func (w *budgetWorld) budgetMails() []string {
	w.t.Helper()
	ms, err := views.RenderedMails(w.store.OutboxMails(context.Background(), 1000))
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.Key, "budget:") {
			out = append(out, m.To+"|"+m.Subject)
		}
	}
	sort.Strings(out)
	return out
}

func (w *budgetWorld) mailTo(to, subjectPart string) models.OutboxMail {
	w.t.Helper()
	ms, _ := views.RenderedMails(w.store.OutboxMails(context.Background(), 1000))
	for _, m := range ms {
		if m.To == to && strings.Contains(m.Subject, subjectPart) {
			return m
		}
	}
	w.t.Fatalf("no mail to %s about %q in %v", to, subjectPart, w.budgetMails())
	return models.OutboxMail{}
}

func (w *budgetWorld) alerts(envID string) []models.BudgetAlert {
	w.t.Helper()
	var out []models.BudgetAlert
	if err := w.store.DB().Where("env_id = ?", envID).Order("month, budget, percent").Find(&out).Error; err != nil {
		w.t.Fatal(err)
	}
	return out
}

// spendAt is what a cluster has cost after m whole minutes from readyAt:
// each machine's cumulative charge, rounded down (B2).
func spendAt(c models.Cluster, machines int, m int64) models.Money {
	return models.Money(machines) * (c.MachineHour * models.Money(m) / 60)
}

// firstMinute is the first whole minute at which the cluster's spend
// reaches pct of budget.
func firstMinute(c models.Cluster, machines int, budget models.Money, pct int64) int64 {
	for m := int64(1); ; m++ {
		if spendAt(c, machines, m)*100 >= budget*models.Money(pct) {
			return m
		}
	}
}

func (w *budgetWorld) ready(c models.Cluster) models.Cluster {
	w.t.Helper()
	w.run(6*time.Minute, time.Minute)
	c = w.cluster(c.ID)
	if c.ReadyAt == nil {
		w.t.Fatalf("not ready: %s\n%s", c.Status, w.events(c.ID))
	}
	return c
}

// B5, X6, E1: an environment's spend this month (the ledger's usage and the
// open hour) mails the owners and admins, never a member, once at 50 %,
// 80 % and 100 %, each with the forecast at the current burn; a rerun
// mails nothing; another environment's and another organisation's
// budgets are untouched; the next month warns again.
func TestBudgetAlertsOncePerMonth(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newBudgetWorld(t, db)
		ctx := context.Background()
		budget := 100 * models.Micro
		w.setBudget(w.org.ID, w.env.ID, budget)
		w.setBudget(w.org.ID, w.staging.ID, 10*models.Micro) // nothing runs in staging
		w.setBudget(w.other.ID, w.otherEv.ID, 1*models.Micro)
		c := w.ready(w.launch("H100_80GB", 2, 8))
		ready := *c.ReadyAt
		m50, m80, m100 := firstMinute(c, 2, budget, 50), firstMinute(c, 2, budget, 80), firstMinute(c, 2, budget, 100)
		if m100 < m50+60 {
			t.Fatalf("the test wants 100 %% at least the warning window after 50 %%: %d, %d", m50, m100)
		}
		managers := func(part string) []string {
			return []string{"admin@acme.test|" + part, "owner@acme.test|" + part}
		}

		w.at(ready.Add(time.Duration(m50-1) * time.Minute))
		if got := w.budgetMails(); len(got) != 0 {
			t.Fatalf("mails before 50 %%: %v", got)
		}
		now := ready.Add(time.Duration(m50) * time.Minute)
		w.atTwice(now) // two instances at once mail once
		w.at(now)      // and a rerun mails nothing more
		want := managers("Budget of environment default: 50% used (" + models.USD(spendAt(c, 2, m50)) + " of $100.00)")
		if got := w.budgetMails(); !slices.Equal(got, want) {
			t.Fatalf("mails at 50 %%:\n%v\nwant\n%v", got, want)
		}
		// X6: the forecast is exact: the first whole minute at which the
		// burn covers what is left.
		left := budget - spendAt(c, 2, m50)
		forecast := now.Add(time.Duration((left*60+c.USDPerHour-1)/c.USDPerHour) * time.Minute)
		as := w.alerts(w.env.ID)
		if len(as) != 1 || as[0].Percent != 50 || as[0].Spend != spendAt(c, 2, m50) || as[0].Burn != c.USDPerHour ||
			as[0].ForecastAt == nil || !as[0].ForecastAt.Equal(forecast) || as[0].Month != "2026-11" {
			t.Fatalf("alerts %+v, want 50 %% with forecast %s", as, forecast)
		}
		w.checkOverview(c, now, budget, spendAt(c, 2, m50), forecast)
		m := w.mailTo("owner@acme.test", "50%")
		if !strings.Contains(m.Text, "reaches the budget at "+forecast.Format("2006-01-02 15:04 UTC")) ||
			!strings.Contains(m.Text, "https://deck.example/billing#budgets") {
			t.Errorf("50 %% mail lacks the forecast or the link:\n%s", m.Text)
		}

		w.at(ready.Add(time.Duration(m80) * time.Minute))
		w.at(ready.Add(time.Duration(m80+1) * time.Minute))
		if got := w.budgetMails(); len(got) != 4 || !slices.Contains(got, managers("Budget of environment default: 80% used (" +
			models.USD(spendAt(c, 2, m80)) + " of $100.00)")[0]) {
			t.Fatalf("mails at 80 %%: %v", got)
		}

		now = ready.Add(time.Duration(m100) * time.Minute)
		w.at(now)
		w.at(now.Add(time.Minute))
		got := w.budgetMails()
		want100 := managers("Budget of environment default reached: " + models.USD(spendAt(c, 2, m100)) + " of $100.00")
		if len(got) != 6 || !slices.Contains(got, want100[0]) || !slices.Contains(got, want100[1]) {
			t.Fatalf("mails at 100 %%: %v", got)
		}
		if m := w.mailTo("admin@acme.test", "reached"); !strings.Contains(m.Text, "("+c.Name+") are stopped now") {
			t.Errorf("100 %% mail does not say the cluster is stopped now:\n%s", m.Text)
		}
		as = w.alerts(w.env.ID)
		if len(as) != 3 || as[2].Percent != 100 || as[2].EnforceAt == nil || !as[2].EnforceAt.Equal(now) || as[2].EnforcedAt == nil {
			t.Fatalf("100 %% alert %+v: want enforced at once, the 50 %% warning being over an hour old", as)
		}
		stopped := w.checkBudgetStopped(c.ID, "$100.00")
		if as := w.alerts(w.staging.ID); len(as) != 0 {
			t.Errorf("staging, where nothing runs, has alerts %+v", as)
		}
		if as := w.alerts(w.otherEv.ID); len(as) != 0 {
			t.Errorf("another organisation's budget has alerts %+v", as)
		}

		// B6: compute billing ended at the stop: an hour on, the spend is
		// what it was then.
		spent := spendAt(c, 2, int64(stopped.StoppedAt.Sub(ready)/time.Minute))
		w.at(stopped.StoppedAt.Add(time.Hour))
		if o, _ := w.store.BudgetOverviewFor(ctx, w.org.ID); o.Lines[0].Spend != spent || o.Burn != 0 {
			t.Errorf("an hour after the stop: spend %d burn %d, want %d and 0", o.Lines[0].Spend, o.Burn, spent)
		}
		// Resume is refused while the budget is reached; a raise lifts it.
		var br *models.BudgetReachedError
		if _, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "owner@acme.test"); !errors.As(err, &br) ||
			br.Env != "default" || br.Budget != budget || br.Spend != spent {
			t.Fatalf("resume while the budget is reached: %v, want a BudgetReachedError", err)
		}
		w.setBudget(w.org.ID, w.env.ID, 1000*models.Micro)
		if r, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "owner@acme.test"); err != nil || !r.Resuming() {
			t.Fatalf("resume after the raise: %v %+v", err, r)
		}

		// The next month: spend starts again from zero and warns again.
		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		w.tick()
		w.clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		w.tick()
		if got := w.cluster(c.ID); got.Status != models.StatusTerminated {
			t.Fatalf("first cluster %s", got.Status)
		}
		w.setBudget(w.org.ID, w.env.ID, budget)
		w.at(w.clock.Now())
		if got := w.budgetMails(); len(got) != 6 {
			t.Fatalf("December started with mails: %v", got)
		}
		d := w.ready(w.launch("H100_80GB", 2, 8))
		dm50 := firstMinute(d, 2, budget, 50)
		w.at(d.ReadyAt.Add(time.Duration(dm50) * time.Minute))
		w.at(d.ReadyAt.Add(time.Duration(dm50) * time.Minute))
		got = w.budgetMails()
		if want := managers("Budget of environment default: 50% used (" + models.USD(spendAt(d, 2, dm50)) + " of $100.00)"); len(got) != 8 ||
			!slices.Contains(got, want[0]) || !slices.Contains(got, want[1]) {
			t.Fatalf("December's 50 %% mails: %v", got)
		}
		var dec []models.BudgetAlert
		for _, a := range w.alerts(w.env.ID) {
			if a.Month == "2026-12" {
				dec = append(dec, a)
			}
		}
		if len(dec) != 1 || dec[0].Percent != 50 {
			t.Errorf("December's alerts %+v", dec)
		}
	})
}

// checkOverview asserts X6's forecasts as the billing page and the API
// read them: the environment's, the balance's (the deposit less all the
// usage, written or still open) and the cluster's, the earlier of the two.
func (w *budgetWorld) checkOverview(c models.Cluster, now time.Time, budget, spend models.Money, forecast time.Time) {
	w.t.Helper()
	o, err := w.store.BudgetOverviewFor(context.Background(), w.org.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	ledger, _ := w.store.Balance(context.Background(), w.org.ID)
	if o.Balance.Written != ledger || o.Burn != c.USDPerHour {
		w.t.Errorf("balance %+v burn %d, want %d written and %d", o.Balance, o.Burn, ledger, c.USDPerHour)
	}
	balance := 1000*models.Micro - spend // the ledger less the open hour
	if o.Balance.Balance() != balance {
		w.t.Errorf("the balance (B8) %d, want %d: the ledger less the open hour", o.Balance.Balance(), balance)
	}
	runOut := now.Add(time.Duration((balance*60+c.USDPerHour-1)/c.USDPerHour) * time.Minute)
	if o.BalanceRunOut == nil || !o.BalanceRunOut.Equal(runOut) {
		w.t.Errorf("balance runs out at %v, want %s", o.BalanceRunOut, runOut)
	}
	var got []string
	for _, l := range o.Lines {
		line := l.Env.Name + " " + models.USD(l.Spend)
		if l.ForecastAt != nil {
			line += " " + l.ForecastAt.Format(time.RFC3339)
		}
		got = append(got, line)
	}
	want := []string{"default " + models.USD(spend) + " " + forecast.Format(time.RFC3339), "staging $0.00"}
	if !slices.Equal(got, want) {
		w.t.Errorf("lines %q, want %q", got, want)
	}
	if len(o.Clusters) != 1 || o.Clusters[0].Cluster.ID != c.ID || o.Clusters[0].By != models.RunOutBudget || !o.Clusters[0].At.Equal(forecast) {
		w.t.Errorf("cluster run-outs %+v, want %s by the budget at %s", o.Clusters, c.ID, forecast)
	}
}

// checkBudgetStopped asserts the 100 % action on a cluster (B5, B6): a
// stop requested by the budget, named in its event, which the stop job
// carries out: the cluster stopped, every machine stopped at the provider.
func (w *budgetWorld) checkBudgetStopped(id, budget string) models.Cluster {
	w.t.Helper()
	c := w.cluster(id)
	if c.StopReason != string(models.StopByBudget) || (c.StopRequestedAt == nil && c.Status != models.StatusStopped) {
		w.t.Fatalf("after the budget: %s, stop reason %q\n%s", c.Status, c.StopReason, w.events(id))
	}
	if ev := w.events(id); !strings.Contains(ev, "Stop requested (budget): the environment's budget of "+budget) {
		w.t.Errorf("no budget stop event on %s:\n%s", id, ev)
	}
	for i := 0; i < 20 && c.Status != models.StatusStopped; i++ {
		w.clock.Advance(15 * time.Second)
		w.tick()
		c = w.cluster(id)
	}
	if c.Status != models.StatusStopped || c.StoppedAt == nil || !allIn(w.providerStates(id), providers.NodeStopped) {
		w.t.Fatalf("not stopped: %s, machines %v\n%s", c.Status, w.providerStates(id), w.events(id))
	}
	return c
}

// X6: enforcement only after a warning window. A budget lowered below the
// spend jumps to 100 %: one mail (the 50 and 80 % thresholds are recorded
// with it, not mailed), which is the warning; the clusters are stopped a
// window later, not before, and no new cluster is admitted there. A raise
// above the spend lifts it.
func TestBudgetEnforcedAfterWarningWindow(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newBudgetWorld(t, db)
		c := w.ready(w.launch("H100_80GB", 2, 8))
		now := c.ReadyAt.Add(90 * time.Minute)
		w.at(now) // no budget yet: nothing
		spend := spendAt(c, 2, 90)
		w.setBudget(w.org.ID, w.env.ID, 50*models.Micro)
		w.at(now)
		got := w.budgetMails()
		if len(got) != 2 || !strings.Contains(got[0], "reached: "+models.USD(spend)+" of $50.00") {
			t.Fatalf("mails %v, want the 100 %% mail only", got)
		}
		as := w.alerts(w.env.ID)
		if len(as) != 3 || as[0].Mailed || as[1].Mailed || !as[2].Mailed || !as[2].EnforceAt.Equal(now.Add(models.BudgetWarningWindow)) {
			t.Fatalf("alerts %+v", as)
		}
		if m := w.mailTo("owner@acme.test", "reached"); !strings.Contains(m.Text, "are stopped at "+now.Add(time.Hour).Format("2006-01-02 15:04 UTC")) {
			t.Errorf("mail does not say when:\n%s", m.Text)
		}
		w.at(now.Add(models.BudgetWarningWindow - time.Minute))
		if got := w.cluster(c.ID); got.StopRequestedAt != nil || got.Status != models.StatusReady || w.alerts(w.env.ID)[2].EnforcedAt != nil {
			t.Fatalf("enforced inside the warning window: %s\n%s", got.Status, w.events(c.ID))
		}
		w.at(now.Add(models.BudgetWarningWindow))
		if w.alerts(w.env.ID)[2].EnforcedAt == nil {
			t.Fatal("not enforced after the warning window")
		}
		w.checkBudgetStopped(c.ID, "$50.00")
		// While it stays reached, the environment takes no new cluster.
		q, err := w.store.CreateQuote(context.Background(), w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		var reached *models.BudgetReachedError
		if _, _, err := w.store.LaunchCluster(context.Background(), models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID,
			Actor: "test@example.com", Workload: models.Workload{Name: "late", Software: "none"}}); !errors.As(err, &reached) {
			t.Fatalf("a launch while the budget is reached: %v", err)
		}
		// A raise above the spend lifts it: nothing more is mailed or
		// enforced, and the page says it is not reached.
		mails := len(w.budgetMails())
		w.setBudget(w.org.ID, w.env.ID, 1000*models.Micro)
		w.at(now.Add(2 * models.BudgetWarningWindow))
		o, err := w.store.BudgetOverviewFor(context.Background(), w.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l := o.Lines[0]; l.Reached || l.EnforceAt != nil || len(l.Alerts) != 0 || len(w.budgetMails()) != mails {
			t.Errorf("after the raise: %+v, %d mails (was %d)", l, len(w.budgetMails()), mails)
		}
	})
}

// X6: the forecast is the first whole minute at which the burn covers
// what is left, in integer micro-dollars.
func TestForecastArithmetic(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 17, 30, 0, time.UTC)
	for _, tc := range []struct {
		limit, spend, burn models.Money
		want               time.Duration
		ok                 bool
	}{
		{100 * models.Micro, 50_464_000, 39_840_000, 75 * time.Minute, true},        // 74.6 minutes: the 75th covers it
		{100 * models.Micro, 60_160_000, 39_840_000, 60 * time.Minute, true},        // exactly an hour left
		{100 * models.Micro, 100 * models.Micro, 39_840_000, 0, true},               // reached: now
		{100 * models.Micro, 120 * models.Micro, 1, 0, true},                        // past: now
		{100 * models.Micro, 0, 0, 0, false},                                        // nothing burns: never
		{1, 0, 60 * models.Micro, time.Minute, true},                                // a micro-dollar left: the next minute
		{10_000_000 * models.Micro, 0, 1, 0, false},                                 // centuries away: not at this burn
		{1_000 * models.Micro, 0, 1_000 * models.Micro / (24 * 366 * 10), 0, false}, // just past ten years
	} {
		at, ok := models.Forecast(now, tc.limit, tc.spend, tc.burn)
		if ok != tc.ok || (ok && !at.Equal(now.Add(tc.want))) {
			t.Errorf("Forecast(%d, %d, %d) = %s %v, want +%s %v", tc.limit, tc.spend, tc.burn, at, ok, tc.want, tc.ok)
		}
	}
}

// The budgets job is scheduled beside billing, under the scheduler's lease.
func TestBudgetsJobIsRegistered(t *testing.T) {
	w := newWorld(t, modelstest.Open(t, "sqlite"))
	s := jobs.NewScheduler(w.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := jobs.Register(s, jobs.Deps{Store: w.store}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Names(), "budgets") || s.Schedule("budgets") != "@every 1m" {
		t.Fatalf("jobs %v lack budgets every minute", s.Names())
	}
	if err := s.RunNow(context.Background(), "budgets"); err != nil {
		t.Fatal(err)
	}
}
