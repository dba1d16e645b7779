package models_test

import (
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// B8: one balance. Hours into a cluster's run, with a
// volume billing beside it and periods written and open, the balance the
// header, billing page, budgets, run-out, admission and enforcement read
// is one figure — the written ledger less what is accruing (clusters and
// volumes) — and the month's transactions, shown in cents by the one
// rounding rule, add up exactly to it even where rounding each row on its
// own would be a cent off.
func TestOneBalance(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)             // $1,000 deposited at t0 (Nov 30 12:00)
		e.clock.Set(t0.Add(13 * time.Hour)) // Dec 1 01:00
		// Two half-cent deposits: each rounds up on its own, together they do not.
		for _, key := range []string{"half-a", "half-b"} {
			if _, err := e.s.Deposit(e.ctx, e.org.ID, 10_005_000, key, "test"); err != nil {
				t.Fatal(err)
			}
		}
		const rate = 20_317_777 // $20.317777 a machine-hour: nothing about it is whole cents
		e.ready(t, e.cluster(t, 2, rate))
		vol := models.Volume{ID: models.NewID("vol"), OrgID: e.org.ID, EnvID: e.env.ID, Name: "data", Provider: "sim", Location: "us-east",
			SizeGB: 700, GBHour: models.VolumeGBHour, SizeSince: e.clock.Now(), CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
		if err := db.Create(&vol).Error; err != nil {
			t.Fatal(err)
		}

		check := func(when string) {
			t.Helper()
			f, err := e.s.CurrentBalance(e.ctx, e.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			written, err := e.s.Balance(e.ctx, e.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			w := models.MonthOf(e.clock.Now())
			lines, err := e.s.UsageForMonth(e.ctx, e.org.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			vols, err := e.s.VolumeUsageForMonth(e.ctx, e.org.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			var accruing models.Money
			for _, l := range lines {
				accruing += l.Accumulating
			}
			for _, v := range vols {
				accruing += v.Accumulating
			}
			if f.Written != written || f.Accruing != accruing || f.Balance() != written-accruing {
				t.Fatalf("%s: figure %+v (balance %d), want written %d less accruing %d", when, f, f.Balance(), written, accruing)
			}
			if accruing <= 0 {
				t.Fatalf("%s: nothing accruing; the test needs an open period", when)
			}
			standing, burn, err := e.s.BalanceStanding(e.ctx, e.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			if standing != f.Balance() {
				t.Errorf("%s: enforcement reads %d, the figure is %d", when, standing, f.Balance())
			}
			o, err := e.s.BudgetOverviewFor(e.ctx, e.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			if o.Balance != f || o.Burn != burn {
				t.Errorf("%s: budgets read %+v burning %d, want %+v burning %d", when, o.Balance, o.Burn, f, burn)
			}
			if at, ok := models.Forecast(e.clock.Now(), f.Balance(), 0, burn); !ok || o.BalanceRunOut == nil || !o.BalanceRunOut.Equal(at) {
				t.Errorf("%s: run-out %v, want %v (the figure at the burn)", when, o.BalanceRunOut, at)
			}
			a, err := e.s.AdmissionFor(e.ctx, e.org.ID, rate)
			if err != nil {
				t.Fatal(err)
			}
			if a.Balance != f.Balance() {
				t.Errorf("%s: admission reads %d, the figure is %d", when, a.Balance, f.Balance())
			}

			tx, err := e.s.Transactions(e.ctx, e.org.ID, w, lines, vols)
			if err != nil {
				t.Fatal(err)
			}
			before, err := e.s.BalanceBefore(e.ctx, e.org.ID, w.From)
			if err != nil {
				t.Fatal(err)
			}
			carried, closing := models.ShowInCents(before, tx)
			shown, naive, exact := carried, models.Cents(before), before
			for _, x := range tx {
				if !x.InBalance() {
					continue
				}
				if x.Shown%(models.Micro/100) != 0 {
					t.Errorf("%s: row %q shows %d, not whole cents", when, x.Description, x.Shown)
				}
				shown += x.Shown
				naive += models.Cents(x.Amount)
				exact += x.Amount
			}
			if exact != f.Balance() {
				t.Errorf("%s: the month's rows and the carried balance sum to %d, the figure is %d", when, exact, f.Balance())
			}
			if shown != closing || closing != models.Cents(f.Balance()) || models.USD(shown) != models.USD(f.Balance()) {
				t.Errorf("%s: rows shown add up to %s (closing %s); the balance shows %s", when, models.USD(shown), models.USD(closing), models.USD(f.Balance()))
			}
			t.Logf("%s: balance %s · %s accruing; rows rounded one by one would add up to %s", when, models.USD(f.Balance()), models.USD(f.Accruing), models.USD(naive))
		}

		e.clock.Set(t0.Add(13*time.Hour + 37*time.Minute)) // the first hour, nothing written yet
		check("after 37 minutes")
		e.clock.Set(t0.Add(16*time.Hour + 23*time.Minute)) // three hours on, metered
		e.meter(t)                                         // clusters and volumes
		check("after 3 h 23 min")
		if f, _ := e.s.CurrentBalance(e.ctx, e.org.ID); f.Balance() >= 1000*models.Micro {
			t.Errorf("the balance %s did not move in three hours of a cluster", models.USD(f.Balance()))
		}
	})
}

// Cents and ShowInCents on their own (B8): halves away from zero; a row
// that is not in the balance (a pending top-up) shows its own amount and
// moves nothing.
func TestShowInCents(t *testing.T) {
	for m, want := range map[models.Money]models.Money{4_999: 0, 5_000: 10_000, -5_000: -10_000, 1_234_567: 1_230_000, -1_235_000: -1_240_000} {
		if got := models.Cents(m); got != want {
			t.Errorf("Cents(%d) = %d, want %d", m, got, want)
		}
	}
	rows := []models.Transaction{ // newest first
		{Status: models.EntryAccumulating, Amount: -3_333},
		{Status: models.EntryPending, Amount: 25 * models.Micro},
		{Status: models.EntryCompleted, Amount: 5_000},
		{Status: models.EntryCompleted, Amount: 5_000},
	}
	carried, closing := models.ShowInCents(1_000_000, rows)
	if carried != 1_000_000 || closing != models.Cents(1_000_000+10_000-3_333) {
		t.Fatalf("carried %d closing %d", carried, closing)
	}
	if rows[3].Shown != 10_000 || rows[2].Shown != 0 || rows[1].Shown != 25*models.Micro || rows[0].Shown != 0 {
		t.Errorf("shown %d %d %d %d", rows[3].Shown, rows[2].Shown, rows[1].Shown, rows[0].Shown)
	}
}
