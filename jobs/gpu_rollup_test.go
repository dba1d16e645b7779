package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// X15: the gpu-rollup job is scheduled hourly and turns the
// agents' minute points into hourly points; the existing prune job forgets
// minute points after 48 hours.
func TestGPURollupJobAndPrune(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		s := jobs.NewScheduler(w.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := jobs.Register(s, jobs.Deps{Store: w.store}); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(s.Names(), "gpu-rollup") || s.Schedule("gpu-rollup") != "5 * * * *" {
			t.Fatalf("jobs %v lack gpu-rollup at minute 5", s.Names())
		}
		h := w.clock.Now().Truncate(time.Hour).Add(-time.Hour)
		util := 40
		if err := db.Create(&models.GPUPoint{ClusterID: "cl_x", Rank: 0, GPU: 0, At: h.Unix(), N: 2, Util: &util}).Error; err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.RunNow(ctx, "gpu-rollup"); err != nil {
			t.Fatal(err)
		}
		var hours []models.GPUHour
		if err := db.Find(&hours).Error; err != nil || len(hours) != 1 || *hours[0].Util != 40 || hours[0].At != h.Unix() {
			t.Fatalf("hourly points %+v, %v", hours, err)
		}
		w.clock.Advance(49 * time.Hour)
		if err := s.RunNow(ctx, "login-throttle-prune"); err != nil {
			t.Fatal(err)
		}
		var minutes int64
		db.Model(&models.GPUPoint{}).Count(&minutes)
		if minutes != 0 {
			t.Fatalf("%d minute points after 49 h", minutes)
		}
	})
}
