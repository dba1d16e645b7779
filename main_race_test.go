package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
)

// TestSchedulerAndWebStartTogether wires the store, the jobs and the web as
// serve does, with job ticks running while the web server is built. Run
// under -race it proves that building the web writes nothing the running
// jobs read: the settings are fixed before anything starts (OP4).
func TestSchedulerAndWebStartTogether(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	store := models.NewStoreWith(modelstest.Open(t, "sqlite"), nil, cfg.settings(nil))
	sched := jobs.NewScheduler(store, log)
	if err := jobs.Register(sched, jobs.Deps{Store: store, Providers: providers.Registry{"down": downCloud{}}}); err != nil {
		t.Fatal(err)
	}
	if err := sched.Add("@every 1h", txTick{store}, time.Minute); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	ticked := make(chan error)
	stop := make(chan struct{})
	go func() { // ticks run while the web is built, as the scheduled ones do in serve
		for {
			select {
			case <-stop:
				close(ticked)
				return
			case ticked <- sched.RunNow(ctx, "tx-tick"):
			}
		}
	}()
	<-ticked
	h := web.New(web.Deps{Store: store, Log: log, Static: static.FS})
	for i := 0; i < 3; i++ { // ticks after the web was built
		if err := <-ticked; err != nil {
			t.Fatalf("tick: %v", err)
		}
	}
	close(stop)
	for range ticked {
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/healthz: %d", rec.Code)
	}
	if err := sched.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// txTick is a job whose every tick opens a transaction, as every job that
// records an outcome does.
type txTick struct{ store *models.Store }

func (txTick) Name() string { return "tx-tick" }
func (j txTick) Run(ctx context.Context) error {
	return j.store.Tx(ctx, func(tx *models.Store) error { return tx.DB().Exec("SELECT 1").Error })
}
