package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// BenchmarkWebhookDrain (X8, "Proven"): 10,000 pending deliveries
// of one endpoint, spread over 100 clusters, drained by one instance's job
// to a loopback receiver that verifies every signature; it reports
// deliveries per second. Every 50th request the receiver checks that no
// database transaction is open meanwhile (PostgreSQL: no session idle in a
// transaction; SQLite: a write transaction goes through at once), so no
// lock is held across an HTTP call.
func BenchmarkWebhookDrain(b *testing.B) {
	for _, dialect := range modelstest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := modelstest.Open(b, dialect)
			app := newTestAppSet(b, db, loopbackWebhooks, nil)
			owner := app.signupAccount("owner@example.com", "Bench Inc")
			ctx := context.Background()
			rcv := newReceiver(b)
			w, err := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, Role: models.RoleOwner, Name: "o"}).
				CreateWebhook(ctx, models.WebhookInput{URL: rcv.url("/a"), Types: []string{models.TypeClusterReady}, Enabled: true})
			if err != nil {
				b.Fatal(err)
			}
			rcv.secrets["/a"] = []string{w.Secret}
			probes := 0
			rcv.probe = func() string {
				if rcv.hits.Load()%50 != 0 {
					return ""
				}
				probes++
				return noOpenTransaction(app.store)
			}
			const n = 10_000
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rows := make([]models.WebhookDelivery, n)
				now := app.clock.Now()
				for k := range rows {
					id := fmt.Sprintf("evt_b%d_%d", i, k)
					rows[k] = models.WebhookDelivery{EndpointID: w.ID, OrgID: w.OrgID, EnvID: w.EnvID, EventID: id, Type: models.TypeClusterReady,
						ClusterID: fmt.Sprintf("cl_%03d", k%100), CreatedAt: now, NextAttemptAt: now,
						Body: `{"id":"` + id + `","type":"cluster.ready","createdAt":"2026-11-30T12:00:00Z","data":{"cluster":{"id":"cl_x","status":"ready"}}}`}
				}
				if err := db.CreateInBatches(rows, 500).Error; err != nil {
					b.Fatal(err)
				}
				job := webhookJob(app.store, "bench")
				job.Batch = 1000
				b.StartTimer()
				t0 := time.Now()
				drain(b, app.store, app.clock, 50, job)
				total += time.Since(t0)
			}
			b.StopTimer()
			if p := rcv.problems(); len(p) > 0 {
				b.Fatalf("receiver problems (%d): %v", len(p), p[:min(len(p), 3)])
			}
			if got := len(rcv.events()); got != n*b.N {
				b.Fatalf("delivered %d, want %d", got, n*b.N)
			}
			if probes == 0 {
				b.Fatal("the open-transaction probe never ran")
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "deliveries/s")
		})
	}
}

// noOpenTransaction is "" when no transaction of the store's database is
// open now, else what is.
func noOpenTransaction(st *models.Store) string {
	if st.IsPostgres() {
		var open int64
		err := st.DB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`).Scan(&open).Error
		if err != nil {
			return err.Error()
		}
		if open > 0 {
			return fmt.Sprintf("%d transactions open during an HTTP call", open)
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := st.Tx(ctx, func(tx *models.Store) error {
		return tx.DB().Exec("UPDATE webhook_endpoints SET updated_at = updated_at WHERE id = ''").Error
	})
	if err != nil {
		return "a write transaction could not start during an HTTP call: " + err.Error()
	}
	return ""
}
