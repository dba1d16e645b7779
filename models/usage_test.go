package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// rate249 is $2.49 per machine-hour.
const rate249 models.Money = 2_490_000

type meterEnv struct {
	*launchEnv
	ctx context.Context
}

func newMeterEnv(t *testing.T, db *gorm.DB) *meterEnv {
	return &meterEnv{launchEnv: newLaunchEnv(t, db, 1000*models.Micro), ctx: context.Background()}
}

// cluster creates a provisioning cluster of n machines at rate per machine-hour.
func (e *meterEnv) cluster(t *testing.T, n int, rate models.Money) models.Cluster {
	t.Helper()
	now := e.clock.Now()
	c := models.Cluster{ID: models.NewID("cl"), OrgID: e.org.ID, EnvID: e.env.ID, Name: "train", Status: models.StatusProvisioning,
		Nodes: n, GPUsPerNode: 8, MachineHour: rate, USDPerHour: rate * models.Money(n), Software: "none", CreatedAt: now, UpdatedAt: now}
	if err := e.db.Create(&c).Error; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		nd := models.ClusterNode{ID: models.NewID("nd"), ClusterID: c.ID, OrgID: c.OrgID, Rank: i, Name: fmt.Sprintf("node-%d", i), Status: "provisioning"}
		if err := e.db.Create(&nd).Error; err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// ready runs c through L5's join at now and returns it with readyAt.
func (e *meterEnv) ready(t *testing.T, c models.Cluster) models.Cluster {
	t.Helper()
	c, err := e.s.MarkJoined(e.ctx, c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *meterEnv) terminate(t *testing.T, id string) models.Cluster {
	t.Helper()
	c, err := e.s.MarkTerminated(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// meter runs one pass and checks B1's balance = sum of the ledger after it.
func (e *meterEnv) meter(t *testing.T) models.MeterResult {
	t.Helper()
	r, err := e.s.MeterUsage(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.checkBalance(t)
	return r
}

func (e *meterEnv) checkBalance(t *testing.T) {
	t.Helper()
	bal, err := e.s.Balance(e.ctx, e.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.s.LedgerEntries(e.ctx, e.org.ID, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	var sum models.Money
	for _, le := range entries {
		sum += le.Amount
	}
	if bal != sum {
		t.Fatalf("balance %d != sum of the ledger %d (B1)", bal, sum)
	}
}

func (e *meterEnv) usage(t *testing.T, id string) []models.UsageEntry {
	t.Helper()
	u, err := e.s.UsageEntries(e.ctx, e.org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// charged is the total a cluster's machines were charged, per machine.
func charged(entries []models.UsageEntry) map[string]models.Money {
	out := map[string]models.Money{}
	for _, u := range entries {
		out[u.NodeID] -= u.Amount
	}
	return out
}

// B2: billing starts at readyAt, the same instant for every machine; the
// closed hour is written per machine, the open one is Accumulating.
func TestMeterStartsAtReadyAtForEveryMachine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		c := e.cluster(t, 3, rate249)
		e.clock.Advance(37*time.Minute + 20*time.Second) // provisioning is free
		if r := e.meter(t); r.Entries != 0 {
			t.Fatalf("a cluster without readyAt was billed: %+v", r)
		}
		c = e.ready(t, c) // 12:37:20
		e.clock.Set(t0.Add(time.Hour + 5*time.Minute))
		if r := e.meter(t); r.Entries != 3 {
			t.Fatalf("entries %d, want one per machine", r.Entries)
		}
		u := e.usage(t, c.ID)
		want := rate249 * 22 / 60 // 12:37:20 → 13:00 is 22 whole minutes
		for _, x := range u {
			if x.Minutes != 22 || x.Amount != -want || !x.PeriodStart.Equal(t0) || !x.PeriodEnd.Equal(t0.Add(time.Hour)) ||
				x.IdemKey != models.UsageKey(x.NodeID, t0) {
				t.Errorf("usage %+v, want 22 minutes, %d, 12:00–13:00", x, -want)
			}
		}
		if len(charged(u)) != 3 {
			t.Errorf("charged machines %v, want 3", charged(u))
		}
		cu, err := e.s.UsageForCluster(e.ctx, e.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cu.Machines {
			if m.Completed != want || m.Minutes != 22 || m.AccumulatingMinutes != 5 || m.Accumulating != rate249*27/60-want {
				t.Errorf("%s: %+v", m.Name, m)
			}
		}
		if r := e.meter(t); r.Entries != 0 {
			t.Errorf("a rerun in the same hour wrote %d entries", r.Entries)
		}
		all, err := e.s.UsageForOrg(e.ctx, e.org.ID, t0.Add(-24*time.Hour))
		if err != nil || len(all) != 1 || fmt.Sprint(all[0].Machines) != fmt.Sprint(cu.Machines) || all[0].Completed != 3*want {
			t.Errorf("org usage %+v %v, want the cluster's line %+v", all, err, cu)
		}
		if other, _ := e.s.UsageForOrg(e.ctx, "org_other", t0.Add(-24*time.Hour)); len(other) != 0 {
			t.Error("usage leaks to another organisation")
		}
	})
}

// B2: proration by the minute is exact in micro-dollars, and the periods of
// a machine always sum to the cumulative charge of its whole minutes.
func TestMeterExactMinuteProration(t *testing.T) {
	tests := []struct {
		name        string
		rate        models.Money
		readyAfter  time.Duration // after 12:00
		ran         time.Duration
		wantMinutes int64
		want        models.Money // per machine
	}{
		{"$2.49/h for 7 minutes", rate249, 10 * time.Minute, 7*time.Minute + 40*time.Second, 7, 290_500},
		{"under a minute", rate249, 10 * time.Minute, 59 * time.Second, 0, 0},
		{"across three hours", rate249, 55*time.Minute + 30*time.Second, 2*time.Hour + 13*time.Minute + 10*time.Second, 133, rate249 * 133 / 60},
		{"a whole hour on the boundary", rate249, 0, time.Hour, 60, rate249},
		// 1,999,999 µ$/h does not divide by 60: rounding each period on its
		// own would lose micro-dollars; cumulative rounding sums exactly.
		{"an odd rate across hours", 1_999_999, 30 * time.Minute, 2*time.Hour + 1*time.Minute, 121, 1_999_999 * 121 / 60},
	}
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		for i, tc := range tests {
			base := t0.Add(time.Duration(i) * 24 * time.Hour)
			e.clock.Set(base.Add(tc.readyAfter))
			c := e.ready(t, e.cluster(t, 2, tc.rate))
			// A pass every 7 minutes while it runs; the terminate closes the last period.
			for end := base.Add(tc.readyAfter + tc.ran); e.clock.Now().Add(7 * time.Minute).Before(end); {
				e.clock.Advance(7 * time.Minute)
				e.meter(t)
			}
			e.clock.Set(base.Add(tc.readyAfter + tc.ran))
			e.terminate(t, c.ID)
			e.meter(t)
			u := e.usage(t, c.ID)
			var minutes int64
			for _, x := range u {
				minutes += x.Minutes
			}
			got := charged(u)
			if tc.want == 0 && len(u) != 0 {
				t.Errorf("%s: wrote %+v for no whole minute", tc.name, u)
			}
			if tc.want > 0 && (len(got) != 2 || minutes != 2*tc.wantMinutes) {
				t.Errorf("%s: charged %v over %d minutes, want 2 machines × %d", tc.name, got, minutes, tc.wantMinutes)
			}
			for node, amount := range got {
				if amount != tc.want {
					t.Errorf("%s: %s charged %d µ$, want %d", tc.name, node, amount, tc.want)
				}
			}
			e.clock.Advance(3 * time.Hour)
			if r := e.meter(t); r.Entries != 0 {
				t.Errorf("%s: a terminated cluster was billed again: %+v", tc.name, r)
			}
		}
	})
}

// B2: nothing is billed for a cluster that never had every machine up.
func TestMeterNothingForFailedClusters(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		failed := e.cluster(t, 4, rate249)
		cancelled := e.cluster(t, 2, rate249)
		e.clock.Advance(20 * time.Minute)
		if _, err := e.s.FailCluster(e.ctx, failed.ID, models.ParseLastError("timeout:agent"), "node-1", "agent", "node-1 never checked in", nil); err != nil {
			t.Fatal(err)
		}
		if err := e.s.MarkReleased(e.ctx, failed.ID); err != nil {
			t.Fatal(err)
		}
		e.terminate(t, cancelled.ID)
		e.clock.Advance(5 * time.Hour)
		e.meter(t)
		for _, id := range []string{failed.ID, cancelled.ID} {
			if u := e.usage(t, id); len(u) != 0 {
				t.Errorf("cluster %s never came up and was billed: %+v", id, u)
			}
		}
		if bal, _ := e.s.Balance(e.ctx, e.org.ID); bal != 1000*models.Micro {
			t.Errorf("balance %d moved", bal)
		}
	})
}

// B1: a rerun, a crash between the entries and the mark, and two passes at
// once (real goroutines) each charge every machine-period once.
func TestMeterRerunsAndConcurrentPassesChargeOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		var ids []string
		for range 6 {
			ids = append(ids, e.ready(t, e.cluster(t, 3, rate249)).ID)
		}
		e.clock.Set(t0.Add(3*time.Hour + 30*time.Second))
		total := func() (n int, sum models.Money) {
			for _, id := range ids {
				u := e.usage(t, id)
				n += len(u)
				for _, x := range u {
					sum -= x.Amount
				}
			}
			return n, sum
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.s.MeterUsage(e.ctx)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent pass: %v", err)
			}
		}
		e.checkBalance(t)
		wantN, wantSum := 6*3*3, models.Money(6*3*3)*rate249
		if n, sum := total(); n != wantN || sum != wantSum {
			t.Fatalf("after 4 concurrent passes: %d entries %d µ$, want %d entries %d µ$", n, sum, wantN, wantSum)
		}
		if r := e.meter(t); r.Entries != 0 {
			t.Errorf("rerun wrote %d", r.Entries)
		}
		// A crash after the entries but before the marks: the next pass
		// finds every period written and charges nothing.
		if err := db.Exec("DELETE FROM usage_marks").Error; err != nil {
			t.Fatal(err)
		}
		if r := e.meter(t); r.Entries != 0 || r.Clusters != 6 {
			t.Errorf("after losing the marks: %+v, want 6 clusters re-read and nothing written", r)
		}
		if n, sum := total(); n != wantN || sum != wantSum {
			t.Errorf("after the crash rerun: %d entries %d µ$", n, sum)
		}
		if bal, _ := e.s.Balance(e.ctx, e.org.ID); bal != 1000*models.Micro-wantSum {
			t.Errorf("balance %d, want %d", bal, 1000*models.Micro-wantSum)
		}
	})
}

// B2: terminate closes the last partial period to the minute the machines
// were released; nothing accumulates after it.
func TestMeterTerminateClosesThePartialPeriod(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		e.clock.Set(t0.Add(12*time.Minute + 15*time.Second))
		c := e.ready(t, e.cluster(t, 2, rate249))
		e.clock.Set(t0.Add(2*time.Hour + 1*time.Minute))
		e.meter(t) // 12:00 and 13:00 closed
		e.clock.Set(t0.Add(2*time.Hour + 37*time.Minute + 40*time.Second))
		cu, _ := e.s.UsageForCluster(e.ctx, e.org.ID, c.ID)
		if cu.Accumulating != 2*(rate249*145/60-rate249*107/60) {
			t.Errorf("accumulating before terminate %d", cu.Accumulating)
		}
		c = e.terminate(t, c.ID)
		e.clock.Advance(10 * time.Minute) // the pass runs later: billing ended at the release
		e.meter(t)
		u := e.usage(t, c.ID)
		if len(u) != 6 {
			t.Fatalf("entries %d, want 3 periods × 2 machines", len(u))
		}
		last := u[2]
		if !last.PeriodEnd.Equal(*c.ReleasedAt) || last.Minutes != 145-107 {
			t.Errorf("last period %+v, want it closed at the release %v after 38 minutes", last, c.ReleasedAt)
		}
		for node, amount := range charged(u) {
			if amount != rate249*145/60 {
				t.Errorf("%s charged %d, want %d for 145 minutes", node, amount, rate249*145/60)
			}
		}
		cu, _ = e.s.UsageForCluster(e.ctx, e.org.ID, c.ID)
		if cu.Accumulating != 0 || cu.Completed != 2*(rate249*145/60) {
			t.Errorf("after terminate: completed %d accumulating %d", cu.Completed, cu.Accumulating)
		}
	})
}

// X7: each machine's state intervals follow the cluster's status changes.
func TestMachineIntervals(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		c := e.ready(t, e.cluster(t, 2, rate249))
		steps := []models.ClusterStatus{models.StatusReady, models.StatusReady, models.StatusDegraded, models.StatusReady, models.StatusStopped, models.StatusTerminated}
		for _, st := range steps {
			if err := e.s.RecordMachineStates(e.ctx, c.ID, st); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(10 * time.Minute)
		}
		got, err := e.s.MachineIntervals(e.ctx, e.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("intervals for %d machines, want 2", len(got))
		}
		for node, ivs := range got {
			var states []string
			for _, iv := range ivs {
				states = append(states, iv.State)
				if iv.EndedAt == nil {
					t.Errorf("%s: interval %s still open after terminate", node, iv.State)
				}
			}
			if fmt.Sprint(states) != "[running degraded running stopped]" {
				t.Errorf("%s: states %v", node, states)
			}
			if d := ivs[0].EndedAt.Sub(ivs[0].StartedAt); d != 20*time.Minute {
				t.Errorf("%s: first running interval lasted %v, want 20m (a repeated status is not a new interval)", node, d)
			}
		}
		if other, _ := e.s.MachineIntervals(e.ctx, "org_other", c.ID); len(other) != 0 {
			t.Error("intervals leak to another organisation")
		}
	})
}

// X7: the state machine itself records intervals. A cluster that joins
// opens one running interval per machine; terminating it through the use
// case and releasing its machines closes them at the release, in the same
// transaction as the status change.
func TestTransitionRecordsIntervals(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		c := e.ready(t, e.cluster(t, 2, rate249))
		got, err := e.s.MachineIntervals(e.ctx, e.org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("after joining: intervals for %d machines, want 2", len(got))
		}
		e.clock.Advance(45 * time.Minute)
		if _, err := e.actions().Terminate(e.ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		ended := e.terminate(t, c.ID)
		if got, err = e.s.MachineIntervals(e.ctx, e.org.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		for node, ivs := range got {
			if len(ivs) != 1 || ivs[0].State != models.MachineRunning {
				t.Fatalf("%s: intervals %+v, want one running", node, ivs)
			}
			iv := ivs[0]
			if !iv.StartedAt.Equal(*c.ReadyAt) || iv.EndedAt == nil || !iv.EndedAt.Equal(*ended.ReleasedAt) {
				t.Errorf("%s: running %v–%v, want %v–%v", node, iv.StartedAt, iv.EndedAt, *c.ReadyAt, *ended.ReleasedAt)
			}
		}
	})
}
