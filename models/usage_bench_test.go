package models_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// countStatements counts every statement GORM runs on a new session of db.
func countStatements(t testing.TB, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	n := new(atomic.Int64)
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	suffix := fmt.Sprintf("_%p", n)
	for name, err := range map[string]error{
		"create": cb.Create().After("gorm:create").Register("test:count_create"+suffix, inc),
		"query":  cb.Query().After("gorm:query").Register("test:count_query"+suffix, inc),
		"update": cb.Update().After("gorm:update").Register("test:count_update"+suffix, inc),
		"delete": cb.Delete().After("gorm:delete").Register("test:count_delete"+suffix, inc),
		"row":    cb.Row().After("gorm:row").Register("test:count_row"+suffix, inc),
		"raw":    cb.Raw().After("gorm:raw").Register("test:count_raw"+suffix, inc),
	} {
		if err != nil {
			t.Fatalf("count %s: %v", name, err)
		}
	}
	return n
}

// seedRunning inserts clusters × machines running since readyAt, in batches.
func seedRunning(t testing.TB, db *gorm.DB, orgID, prefix string, clusters, machines int, readyAt time.Time) {
	t.Helper()
	cs := make([]models.Cluster, clusters)
	var ns []models.ClusterNode
	for i := range cs {
		cs[i] = models.Cluster{ID: fmt.Sprintf("%s_%06d", prefix, i), OrgID: orgID, Name: fmt.Sprintf("c%d", i), Status: models.StatusReady,
			Nodes: machines, MachineHour: rate249, USDPerHour: rate249 * models.Money(machines), ReadyAt: &readyAt, CreatedAt: readyAt, UpdatedAt: readyAt}
		for r := range machines {
			ns = append(ns, models.ClusterNode{ID: fmt.Sprintf("%s_nd_%06d_%d", prefix, i, r), ClusterID: cs[i].ID, OrgID: orgID, Rank: r,
				Name: fmt.Sprintf("node-%d", r), Status: "ready"})
		}
	}
	if err := db.CreateInBatches(cs, 50).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.CreateInBatches(ns, 100).Error; err != nil {
		t.Fatal(err)
	}
}

// The pass's statements grow with its batches (pages of clusters, chunks
// of rows), never with the machines it bills: 30 clusters in pages of 10
// take as many statements with 8 machines each as with 2.
func TestMeterStatementsGrowWithBatches(t *testing.T) {
	t.Cleanup(models.SetMeterBatches(10, 1000)) // after the parallel runs of Each, not when this function returns
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		counts := map[int]int64{}
		for _, machines := range []int{2, 8} {
			clock := models.NewFakeClock(t0)
			s := models.NewStore(db, clock)
			org := fmt.Sprintf("org_%d", machines)
			seedRunning(t, db, org, fmt.Sprintf("cl%d", machines), 30, machines, t0.Add(-90*time.Minute))
			n := countStatements(t, db)
			r, err := s.MeterUsage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Entries != int64(30*machines*2) {
				t.Fatalf("wrote %d entries, want %d", r.Entries, 30*machines*2)
			}
			counts[machines] = n.Load()
			if err := db.Exec("UPDATE clusters SET released_at = ready_at").Error; err != nil {
				t.Fatal(err)
			}
			if _, err := s.MeterUsage(context.Background()); err != nil { // closes them for the next round
				t.Fatal(err)
			}
		}
		if counts[2] != counts[8] || counts[8] > 3*3+3+1+1 { // +1: the volumes' page (none here, V3)
			t.Errorf("statements %v by machines per cluster: they must grow with batches (4 pages), not machines", counts)
		}
	})
}

// BenchmarkMeterUsage is one billing pass over 10,000 running clusters × 8
// machines on PostgreSQL, each pass closing one hour: 80,000 entries. It
// reports the SQL statements per pass (sql/op); the target is under 3 s.
func BenchmarkMeterUsage(b *testing.B) {
	db := modelstest.Open(b, "postgres")
	ctx := context.Background()
	clock := models.NewFakeClock(t0)
	s := models.NewStore(db, clock)
	seedRunning(b, db, "org_bench", "cl", 10_000, 8, t0.Add(-time.Hour)) // each pass closes one hour
	if err := db.Exec("ANALYZE").Error; err != nil {
		b.Fatal(err)
	}
	n := countStatements(b, db)
	b.ResetTimer()
	var entries int64
	for i := 0; i < b.N; i++ {
		r, err := s.MeterUsage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		entries += r.Entries
		clock.Advance(time.Hour)
	}
	b.ReportMetric(float64(n.Load())/float64(b.N), "sql/op")
	b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
}

// A month with more clusters than a page of rows still has every one as a
// usage line, so the month's spend (their sum) is whole (B3: the lines used to stop at 500 without saying so).
func TestUsageForMonthHasEveryCluster(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		s := models.NewStore(db, models.NewFakeClock(t0))
		seedRunning(t, db, "org_many", "clm", 501, 1, t0.Add(-2*time.Hour))
		if _, err := s.MeterUsage(context.Background()); err != nil {
			t.Fatal(err)
		}
		lines, err := s.UsageForMonth(context.Background(), "org_many", models.MonthOf(t0))
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 501 {
			t.Fatalf("%d usage lines for 501 clusters", len(lines))
		}
		if got, want := models.Spend(lines), models.Money(501*2*rate249); got < want {
			t.Errorf("spend %d, want at least %d (two billed hours of each)", got, want)
		}
	})
}
