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
	"gorm.io/gorm/logger"
)

// countStmts is a GORM logger that counts statements.
type countStmts struct{ n atomic.Int64 }

func (c *countStmts) LogMode(logger.LogLevel) logger.Interface      { return c }
func (c *countStmts) Info(context.Context, string, ...interface{})  {}
func (c *countStmts) Warn(context.Context, string, ...interface{})  {}
func (c *countStmts) Error(context.Context, string, ...interface{}) {}
func (c *countStmts) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

// seedGPUFleet writes clusters ready clusters of 8 machines, in two
// set-based statements.
func seedGPUFleet(tb testing.TB, db *gorm.DB, now time.Time, clusters int) {
	tb.Helper()
	series := func(n int) string {
		return fmt.Sprintf("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %d) SELECT g FROM s", n)
	}
	if err := db.Exec(`INSERT INTO clusters (id, org_id, env_id, name, status, provider, nodes, gpus_per_node, ready_at, placed_at, created_at, updated_at)
		SELECT 'cl_' || (100000000 + g), 'org_fleet', 'env_fleet', 'c' || g, 'ready', 'fleet', 8, 8, ?, ?, ?, ?
		FROM (`+series(clusters)+`) q`, now, now, now, now).Error; err != nil {
		tb.Fatal(err)
	}
	if err := db.Exec(`INSERT INTO cluster_nodes (id, cluster_id, org_id, rank, name, status, step, private_ip, running_at, agent_at, mesh_at, heartbeat_at)
		SELECT 'nd_' || c.g || '_' || r.g, 'cl_' || (100000000 + c.g), 'org_fleet', r.g - 1, 'node-' || (r.g - 1), 'ready', 'done',
		'10.77.0.' || r.g, ?, ?, ?, ?
		FROM (`+series(clusters)+`) c CROSS JOIN (`+series(8)+`) r`, now, now, now, now).Error; err != nil {
		tb.Fatal(err)
	}
}

// eightGPUs is one sample of a machine's 8 GPUs at at.
func eightGPUs(at time.Time, k int) []models.GPUSample {
	out := make([]models.GPUSample, 8)
	for i := range out {
		out[i] = gpuSample(at, i, (k*7+i*13)%101, 0)
		out[i].UUID = fmt.Sprintf("GPU-%08d-0000-0000-0000-%012d", k, i)
	}
	return out
}

// BenchmarkGPUHeartbeat is the server's cost of one agent heartbeat
// carrying a sample of 8 GPUs (Store.Heartbeat: liveness, the samples'
// one multi-row insert, the machine's GPU state, the orders) with 1,000
// machines reporting, on PostgreSQL (TEST_DATABASE_URL). At 1,000 machines
// the agents send 100 heartbeats a second (every 10 s), a third of them
// with samples (every 30 s): cores@1000 is the share of one core-second
// (server and database together, as measured here) those 33 heartbeats
// with samples take each second.
func BenchmarkGPUHeartbeat(b *testing.B) {
	db := modelstest.Open(b, "postgres")
	clock := models.NewFakeClock(t0)
	seedGPUFleet(b, db, t0, 125)
	count := &countStmts{}
	s := models.NewStore(db.Session(&gorm.Session{Logger: count}), clock)
	ctx := context.Background()
	var ids []string
	if err := db.Model(&models.Cluster{}).Order("id").Pluck("id", &ids).Error; err != nil {
		b.Fatal(err)
	}
	type machine struct {
		c models.Cluster
		n models.ClusterNode
	}
	var fleet []machine
	for _, id := range ids {
		c, err := s.ClusterByID(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		nodes, err := s.NodesFor(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range nodes {
			fleet = append(fleet, machine{c, n})
		}
	}
	if err := db.Exec("ANALYZE").Error; err != nil {
		b.Fatal(err)
	}
	start := &models.StartReport{State: models.StartNone}
	b.ResetTimer()
	count.n.Store(0)
	i := 0
	for b.Loop() {
		m := fleet[i%len(fleet)]
		if i%len(fleet) == 0 {
			clock.Advance(30 * time.Second) // every machine once per 30 s round
		}
		r := models.GPUReport{Samples: eightGPUs(clock.Now(), i)}
		if _, err := s.Heartbeat(ctx, m.c, m.n, models.HeartbeatReport{Start: start, GPU: &r}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(count.n.Load())/float64(b.N), "stmts/op")
	b.ReportMetric(perOp*1000/30/1e9, "cores@1000")
}

// BenchmarkGPUStoragePerMachineDay writes one day of minute points for 100
// machines of 8 GPUs (what 48 h keeps is two such days) and one day of
// hourly points (30 days keeps thirty), and reports the PostgreSQL bytes
// per machine-day of each, table and indexes together.
func BenchmarkGPUStoragePerMachineDay(b *testing.B) {
	db := modelstest.Open(b, "postgres")
	const machines = 100
	day := t0.Truncate(24 * time.Hour)
	for b.Loop() {
		for _, table := range []string{"gpu_points", "gpu_hours"} {
			if err := db.Exec("TRUNCATE " + table).Error; err != nil {
				b.Fatal(err)
			}
		}
		// One statement per table: every machine, GPU and minute (hour) of the day,
		// values varying like a workload's.
		for _, q := range []struct {
			table string
			step  int
		}{{"gpu_points", 60}, {"gpu_hours", 3600}} {
			steps := 86400 / q.step
			err := db.Exec(fmt.Sprintf(`INSERT INTO %s (cluster_id, rank, gpu, at, n, util, mem_used, mem_total, temp, power, sm_clock, ecc, throttle)
				SELECT 'cl_' || (100000000 + m / 8), m %% 8, g, %d + t * %d, 2, (m + g + t) %% 101, 40000 + t, 81559, 60 + t %% 15,
					500 + t %% 200, 1980, 0, 0
				FROM generate_series(0, %d) m, generate_series(0, 7) g, generate_series(0, %d) t`,
				q.table, day.Unix(), q.step, machines-1, steps-1)).Error
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if err := db.Exec("VACUUM ANALYZE gpu_points").Error; err != nil {
		b.Fatal(err)
	}
	for _, table := range []string{"gpu_points", "gpu_hours"} {
		var size int64
		if err := db.Raw("SELECT pg_total_relation_size(?)", table).Scan(&size).Error; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(size)/machines, table+"-bytes/machine-day")
	}
}
