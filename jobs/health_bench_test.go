package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// stmtCounter is a GORM logger that counts every statement run.
type stmtCounter struct{ n atomic.Int64 }

func (c *stmtCounter) LogMode(logger.LogLevel) logger.Interface      { return c }
func (c *stmtCounter) Info(context.Context, string, ...interface{})  {}
func (c *stmtCounter) Warn(context.Context, string, ...interface{})  {}
func (c *stmtCounter) Error(context.Context, string, ...interface{}) {}
func (c *stmtCounter) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

// fleetCloud answers every describe with every machine running: the
// provider side of a healthy fleet, so a pass measures our side only.
type fleetCloud struct {
	providers.Provider // nil: only DescribeGroups is called
	machines           int
	calls              atomic.Int64
}

func (f *fleetCloud) DescribeGroups(_ context.Context, names []string) (map[string]providers.Group, error) {
	f.calls.Add(1)
	out := make(map[string]providers.Group, len(names))
	for _, name := range names {
		g := providers.Group{Provider: "fleet", Name: name, Nodes: make([]providers.Node, f.machines)}
		for i := range g.Nodes {
			g.Nodes[i] = providers.Node{ID: fmt.Sprintf("%s-%d", name, i), Index: i, State: providers.NodeRunning}
		}
		out[name] = g
	}
	return out, nil
}

// seedFleet writes clusters ready clusters of machines machines each, every
// agent beating now, in a few set-based statements.
func seedFleet(tb testing.TB, db *gorm.DB, now time.Time, clusters, machines int) {
	tb.Helper()
	series := func(n int) string { // rows 1..n without dialect-specific functions
		return fmt.Sprintf("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %d) SELECT g FROM s", n)
	}
	if err := db.Exec(`INSERT INTO clusters (id, org_id, env_id, name, status, provider, nodes, gpus_per_node, ready_at, placed_at, created_at, updated_at)
		SELECT 'cl_' || (100000000 + g), 'org_fleet', 'env_fleet', 'c' || g, 'ready', 'fleet', ?, 8, ?, ?, ?, ?
		FROM (`+series(clusters)+`) q`, machines, now, now, now, now).Error; err != nil {
		tb.Fatal(err)
	}
	if err := db.Exec(`INSERT INTO cluster_nodes (id, cluster_id, org_id, rank, name, status, step, private_ip, running_at, agent_at, mesh_at, heartbeat_at)
		SELECT 'nd_' || c.g || '_' || r.g, 'cl_' || (100000000 + c.g), 'org_fleet', r.g - 1, 'node-' || (r.g - 1), 'ready', 'done',
		'10.77.0.' || r.g, ?, ?, ?, ?
		FROM (`+series(clusters)+`) c CROSS JOIN (`+series(machines)+`) r`, now, now, now, now).Error; err != nil {
		tb.Fatal(err)
	}
}

// healthPass runs one pass and returns how many statements it ran.
func healthPass(tb testing.TB, db *gorm.DB, clock models.Clock, machines, batch int) (int64, *fleetCloud) {
	tb.Helper()
	count := &stmtCounter{}
	store := models.NewStore(db.Session(&gorm.Session{Logger: count}), clock)
	cloud := &fleetCloud{machines: machines}
	job := &jobs.Health{Store: store, Providers: providers.Registry{"fleet": cloud}, Batch: batch}
	if err := job.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return count.n.Load(), cloud
}

// R1: a healthy pass costs two reads per batch (plus the one that finds the
// end) and one describe per provider per batch, however many machines each
// cluster has: statements grow with batches, not machines.
func TestHealthPassStatementsGrowWithBatches(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clock := models.NewFakeClock(start)
		seedFleet(t, db, start, 25, 8)
		stmts, cloud := healthPass(t, db, clock, 8, 10)
		if stmts != 6 || cloud.calls.Load() != 3 {
			t.Errorf("25 clusters × 8 machines in batches of 10: %d statements, %d describes; want 6 and 3", stmts, cloud.calls.Load())
		}
		if err := db.Exec("DELETE FROM cluster_nodes WHERE rank >= 2").Error; err != nil {
			t.Fatal(err)
		}
		if fewer, _ := healthPass(t, db, clock, 2, 10); fewer != stmts {
			t.Errorf("2 machines a cluster: %d statements, 8 machines: %d; want the same", fewer, stmts)
		}
	})
}

// BenchmarkHealthPass is one health pass over 10,000 live clusters × 8
// machines on PostgreSQL (TEST_DATABASE_URL): time per pass and SQL
// statements per pass. Target: under 2 s.
func BenchmarkHealthPass(b *testing.B) {
	db := modelstest.Open(b, "postgres")
	clock := models.NewFakeClock(start)
	seedFleet(b, db, start, 10_000, 8)
	if err := db.Exec("ANALYZE").Error; err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var stmts int64
	for b.Loop() {
		stmts, _ = healthPass(b, db, clock, 8, 0)
	}
	b.ReportMetric(float64(stmts), "stmts/pass")
}
