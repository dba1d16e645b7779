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

// countStatements counts every statement GORM runs on db from now on.
func countStatements(t testing.TB, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	n := new(atomic.Int64)
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	for name, err := range map[string]error{
		"create": cb.Create().After("gorm:create").Register("test:count_create", inc),
		"query":  cb.Query().After("gorm:query").Register("test:count_query", inc),
		"update": cb.Update().After("gorm:update").Register("test:count_update", inc),
		"delete": cb.Delete().After("gorm:delete").Register("test:count_delete", inc),
		"row":    cb.Row().After("gorm:row").Register("test:count_row", inc),
		"raw":    cb.Raw().After("gorm:raw").Register("test:count_raw", inc),
	} {
		if err != nil {
			t.Fatalf("count %s: %v", name, err)
		}
	}
	return n
}

// seedRunning inserts clusters × machines running since readyAt, in batches.
func seedRunning(t testing.TB, db *gorm.DB, orgID string, clusters, machines int, readyAt time.Time) {
	t.Helper()
	cs := make([]models.Cluster, clusters)
	var ns []models.ClusterNode
	for i := range cs {
		cs[i] = models.Cluster{ID: fmt.Sprintf("cl_%06d", i), OrgID: orgID, Name: fmt.Sprintf("c%d", i), Status: models.StatusReady,
			Nodes: machines, MachineHour: rate249, USDPerHour: rate249 * int64(machines), ReadyAt: &readyAt, CreatedAt: readyAt, UpdatedAt: readyAt}
		for r := range machines {
			ns = append(ns, models.ClusterNode{ID: fmt.Sprintf("nd_%06d_%d", i, r), ClusterID: cs[i].ID, OrgID: orgID, Rank: r,
				Name: fmt.Sprintf("node-%d", r), Status: "ready"})
		}
	}
	if err := db.CreateInBatches(cs, 500).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.CreateInBatches(ns, 1000).Error; err != nil {
		t.Fatal(err)
	}
}

// The pass's statements grow with its batches (pages of clusters, chunks
// of rows), never with the machines it bills.
func TestMeterStatementsGrowWithBatches(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(t0)
		s := models.NewStore(db, clock)
		seedRunning(t, db, "org_bench", 1200, 8, t0.Add(-90*time.Minute))
		n := countStatements(t, db)
		r, err := s.MeterUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Entries != 1200*8*2 {
			t.Fatalf("wrote %d entries, want %d", r.Entries, 1200*8*2)
		}
		// 2 pages × (clusters, nodes, marks) + ⌈19,200 / 1,000⌉ inserts + 1 empty page.
		if got := n.Load(); got > 2*3+20+1 {
			t.Errorf("%d statements for 9,600 machines: they grow with machines, not batches", got)
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
	seedRunning(b, db, "org_bench", 10_000, 8, t0.Add(-time.Hour)) // each pass closes one hour
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
