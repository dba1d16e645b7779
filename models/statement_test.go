package models_test

import (
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// B1, B3: a month shows only the periods that start in it; the open period
// is Accumulating in the current month only; transactions sum a cluster's
// usage into one line; the daily chart puts each period on its day.
func TestUsageAndTransactionsByMonth(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		e.clock.Set(t0.Add(11*time.Hour + 30*time.Minute)) // Nov 30 23:30
		c := e.ready(t, e.cluster(t, 2, rate249))
		e.clock.Set(t0.Add(13*time.Hour + 15*time.Minute)) // Dec 1 01:15
		e.meter(t)

		nov, err := models.ParseMonth("2026-11")
		if err != nil {
			t.Fatal(err)
		}
		dec := models.MonthOf(e.clock.Now())
		lines := func(w models.UsageWindow) []models.ClusterUsage {
			t.Helper()
			l, err := e.s.UsageForMonth(e.ctx, e.org.ID, w)
			if err != nil {
				t.Fatal(err)
			}
			if len(l) != 1 || l[0].Cluster.ID != c.ID || len(l[0].Machines) != 2 {
				t.Fatalf("%s: lines %+v", w.Month(), l)
			}
			return l
		}
		n, d := lines(nov), lines(dec)
		if got, want := n[0].Completed, 2*rate249/2; got != want || n[0].Accumulating != 0 {
			t.Errorf("November: completed %d accumulating %d, want %d and 0", got, n[0].Accumulating, want)
		}
		if got, want := d[0].Completed, 2*rate249; got != want {
			t.Errorf("December completed %d, want %d", got, want)
		}
		if got, want := d[0].Accumulating, 2*(rate249*75/60-rate249*60/60); got != want {
			t.Errorf("December accumulating %d, want %d", got, want)
		}
		if m := d[0].Machines[0]; m.Minutes != 60 || m.AccumulatingMinutes != 15 || m.MachineHour != rate249 {
			t.Errorf("machine row %+v", m)
		}
		if got, want := models.Spend(d), 2*rate249*75/60; got != want {
			t.Errorf("spend this month %d, want %d", got, want)
		}

		tx, err := e.s.Transactions(e.ctx, e.org.ID, dec, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		byStatus := map[string]models.Money{}
		for _, x := range tx {
			if x.Kind == models.LedgerUsage {
				byStatus[x.Status] += x.Amount
			}
		}
		if len(tx) != 2 || byStatus[models.EntryCompleted] != -2*rate249 || byStatus[models.EntryAccumulating] != -d[0].Accumulating {
			t.Errorf("December transactions %+v, want one Completed usage line and one Accumulating", tx)
		}
		tx, err = e.s.Transactions(e.ctx, e.org.ID, nov, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tx) != 2 || tx[0].Amount != -rate249 || tx[1].Kind != models.LedgerDeposit {
			t.Errorf("November transactions %+v, want the usage line and the deposit", tx)
		}

		days, err := e.s.DailySpend(e.ctx, e.org.ID, 30, d[0].Accumulating)
		if err != nil {
			t.Fatal(err)
		}
		if days[28] != rate249 || days[29] != 2*rate249+d[0].Accumulating {
			t.Errorf("last two days %d, %d", days[28], days[29])
		}
		if _, err := models.ParseMonth("2026-13"); err == nil {
			t.Error("month 13 parsed")
		}
	})
}
