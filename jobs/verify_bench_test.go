package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// benchCloud has enough machines of the H100 offer for 64-machine clusters.
var benchCloud = strings.Replace(testCloud, `"nodes_available": 10, "boot_time": "4m"`, `"nodes_available": 80, "boot_time": "4m"`, 1)

// BenchmarkVerify is the measurement of X13: verification before hand-over
// on the simulated cloud at 2, 8 and 64 machines (real agents over HTTP,
// real database). It reports the time verification adds before hand-over
// in simulated minutes — from the documented duration of each check
// (models.MachineCheckDuration, RingCheckDuration, PairWaveDuration): the
// machine checks run at once on every machine, then the ring, then the
// pairs wave by wave — and the server work per check: the verify job's SQL
// statements and wall time divided by the checks it judged.
//
//	go test ./jobs/ -run '^$' -bench BenchmarkVerify -benchtime 1x
func BenchmarkVerify(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			for range b.N {
				benchVerify(b, n)
			}
		})
	}
}

func benchVerify(b *testing.B, n int) {
	db := modelstest.Open(b, "sqlite")
	w := newWorldOn(b, db, benchCloud)
	ctx := context.Background()
	if _, err := w.store.Deposit(ctx, w.org.ID, 100_000*models.Micro, "bench-deposit", "bench"); err != nil {
		b.Fatal(err)
	}
	counter := &stmtCounter{}
	w.verify = &jobs.Verify{Store: models.NewStore(db.Session(&gorm.Session{Logger: counter}), w.clock)}
	c := w.launchVerified("H100_80GB", n, 8, "none")
	c = w.untilSettled(c.ID, 25*time.Minute)
	if c.Status != models.StatusReady {
		b.Fatalf("%d machines: status %s (%s)", n, c.Status, c.LastError)
	}
	tasks, err := w.store.VerifyTasks(ctx, c.ID, 1)
	if err != nil {
		b.Fatal(err)
	}
	waves := map[int]bool{}
	for _, t := range tasks {
		if t.Check == models.CheckPair {
			waves[pairWave(n, t.Rank)] = true
		}
	}
	added := models.MachineCheckDuration + models.RingCheckDuration + time.Duration(len(waves))*models.PairWaveDuration
	b.ReportMetric(added.Minutes(), "sim-min-added")
	b.ReportMetric(float64(len(tasks)), "checks")
	b.ReportMetric(float64(counter.n.Load())/float64(len(tasks)), "stmts/check")
	b.ReportMetric(float64(w.verifyTime.Microseconds())/float64(len(tasks)), "µs/check")
}

// pairWave is the wave of pair (rank, rank+1 mod n), as the verify job plans them.
func pairWave(n, rank int) int {
	if n%2 == 1 && rank == n-1 {
		return 2
	}
	return rank % 2
}
