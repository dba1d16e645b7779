package web

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// OP2: the operator sees each provider's catalog (offers, last refresh,
// stale past the freshness window) and each job's last run and failures.
func TestAdminShowsCatalogAndJobHealth(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		op := app.signupAccount("ops@example.com", "Operators")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		app.seedOffers(testOffer("a", "us-east", 8, 2_000_000, intp(4)), testOffer("b", "eu-west", 8, 2_000_000, nil))
		started := app.clock.Now()
		app.store.RecordJobRun(ctx, "catalog", started, started.Add(1500*time.Millisecond), nil)
		app.store.RecordJobRun(ctx, "provision", started, started.Add(time.Second), errors.New("cluster cl_x: describe: timeout"))

		d := doc(t, app.login(op).get("/admin"))
		row := d.Find(`[data-testid=admin-provider-row][data-provider=sim]`)
		if !strings.Contains(row.Text(), "2") || !strings.Contains(row.Text(), started.Format("2006-01-02 15:04")) || row.AttrOr("data-stale", "") != "false" {
			t.Errorf("provider row: %q stale=%s", row.Text(), row.AttrOr("data-stale", ""))
		}
		jobs := map[string]string{}
		d.Find(`[data-testid=admin-job-row]`).Each(func(_ int, s *goquery.Selection) { jobs[s.AttrOr("data-job", "")] = s.Text() })
		if !strings.Contains(jobs["catalog"], "1.5s") || !strings.Contains(jobs["provision"], "describe: timeout") {
			t.Errorf("job rows: %v", jobs)
		}

		app.clock.Advance(models.OfferFreshness + time.Minute)
		d = doc(t, app.login(op).get("/admin"))
		if d.Find(`[data-testid=admin-provider-row][data-provider=sim]`).AttrOr("data-stale", "") != "true" {
			t.Error("a catalog past the freshness window is not flagged stale")
		}
	})
}

// OP3: the operator page shows the fleet's mean GPU utilization
// over the GPUs that reported in the last minutes, weighted by GPU.
func TestAdminShowsFleetGPUUtilization(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		op := app.signupAccount("fleet@example.com", "Operators")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		d := doc(t, app.login(op).get("/admin"))
		if got := strings.Join(strings.Fields(d.Find(`[data-testid=admin-fleet-gpu]`).Text()), " "); got != "Fleet GPU utilization: no GPU reported in the last few minutes." {
			t.Errorf("without reports: %q", got)
		}
		at := app.clock.Now().Unix() / 60 * 60
		for i, p := range []struct {
			cluster string
			gpu     int
			util    int
		}{{"cl_a", 0, 90}, {"cl_a", 1, 90}, {"cl_a", 2, 90}, {"cl_b", 0, 10}} {
			u := p.util
			if err := app.db.Create(&models.GPUPoint{ClusterID: p.cluster, GPU: p.gpu, At: at - int64(i%2)*60, N: 2, Util: &u}).Error; err != nil {
				t.Fatal(err)
			}
		}
		d = doc(t, app.login(op).get("/admin"))
		got := strings.Join(strings.Fields(d.Find(`[data-testid=admin-fleet-gpu]`).Text()), " ")
		if got != "Fleet GPU utilization: 70 % across 4 GPUs of 2 running clusters, as they reported in the last few minutes." {
			t.Errorf("fleet line: %q", got)
		}
	})
}
