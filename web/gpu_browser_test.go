package web

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// X15 in a real browser: the Overview's GPU charts (a
// machine busy, one idle, the cluster's hour and day) draw as SVG with
// their lines, fit the screen at phone width and on a desktop (no sideways
// scroll), and keep each chart at least 60 px wide. Screenshots of both
// widths are saved under SCREENSHOTS_DIR when it is set.
func TestBrowserGPUCharts(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	acc := app.signupAccount("gpu@example.com", "GPU Labs")
	cl := launchFor(t, app, acc, "llama-pretrain")
	app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now().Add(-2 * time.Hour)})
	minute := 0
	reportGPUs(t, app, cl, 55, func(rank int) int {
		minute++
		if rank == 1 {
			return 0
		}
		return 70 + (minute*7)%30
	})
	p := models.DefaultWatchPolicy()
	p.IdleOn, p.IdleAction = true, models.IdleStop
	if _, err := app.store.As(models.Actor{OrgID: acc.org.ID, EnvID: acc.env.ID, UserID: acc.user.ID, Role: models.RoleOwner, Name: acc.user.Email}).
		SetGPUWatch(context.Background(), cl.ID, p); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`location.pathname === '/offers'`, chromedp.WithPollingTimeout(5*time.Second)))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sign in: %v", err)
		}
	}
	for _, width := range screenWidths {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.URL+"/clusters/"+cl.ID),
			chromedp.WaitVisible(`[data-testid=gpu-panel]`),
		); err != nil {
			shot(t, ctx)
			t.Fatal(err)
		}
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
			const rows = document.querySelectorAll('[data-testid=gpu-row]');
			const lines = document.querySelectorAll('[data-testid=gpu-panel] [data-testid=spark-line]');
			const narrow = [...document.querySelectorAll('[data-testid=gpu-panel] svg')].some(s => s.getBoundingClientRect().width < 60);
			return rows.length === 2 && lines.length === 6 && !narrow && document.documentElement.scrollWidth <= window.innerWidth;
		})()`))
		if err != nil || !ok {
			dbg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([document.querySelectorAll('[data-testid=gpu-row]').length, document.querySelectorAll('[data-testid=gpu-panel] [data-testid=spark-line]').length, [...document.querySelectorAll('[data-testid=gpu-panel] svg')].map(s => Math.round(s.getBoundingClientRect().width)), document.documentElement.scrollWidth, window.innerWidth])`))
			t.Log(dbg)
			shot(t, ctx)
			t.Fatalf("width %d: charts missing, too narrow, or the page scrolls sideways (%v)", width, err)
		}
		if dir := os.Getenv("SCREENSHOTS_DIR"); dir != "" {
			if err := chromedp.Do(ctx, scrollLive(`[data-testid=gpu-panel]`)); err != nil {
				t.Fatal(err)
			}
			buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err == nil {
				_ = os.WriteFile(filepath.Join(dir, "gpu-charts-"+strconv.FormatInt(width, 10)+".png"), buf, 0o644)
			}
		}
	}
}
