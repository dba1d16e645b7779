package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
)

// B6, X15 in a browser at 1440 and 390 px, one Chromium: a ready cluster
// offers Stop; its confirm names the cluster, says what keeps billing and
// is not styled as a danger; confirming stops it and the page says so.
// Once stopped, no GPU figure and no start command reads as now or
// running. Where the provider cannot stop machines, Stop is off with the
// reason in plain words. A cluster whose GPUs idled through a slow start
// shows its idle clock from the hand-over, not from before it.
func TestBrowserStopStaleAndIdleClock(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestAppSet(t, openSQLite(t), func(s *models.Settings) {
		s.StopRefusals = map[string]string{"lambda": "Lambda cannot stop a machine and start it again: terminate the cluster to end its billing."}
	}, nil)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = chromedp.Cancel(ctx) }) // the page's polling would hold the server open
	bg := context.Background()
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	if _, err := app.store.Deposit(bg, acc.org.ID, 2000*models.Micro, "stop-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	clusters := map[int64]models.Cluster{1440: staleCluster(t, app, acc, "wide-run"), 390: staleCluster(t, app, acc, "phone-run")}
	cannot := staleCluster(t, app, acc, "lambda-run")
	app.db.Model(&models.Cluster{}).Where("id = ?", cannot.ID).Update("provider", "lambda")
	// idle-run: its GPUs idle for 30 minutes, of which the first 20 before
	// the hand-over (installing, verifying).
	idle := reportingCluster(t, app, acc, "idle-run", 0, 30)
	handOver := app.clock.Now().Add(-10 * time.Minute)
	app.db.Model(&models.Cluster{}).Where("id = ?", idle.ID).Updates(map[string]any{"ready_at": handOver, "handed_over_at": handOver})
	p := models.DefaultWatchPolicy()
	p.IdleOn, p.IdleHours, p.IdleAction = true, 1, models.IdleStop
	actor := models.Actor{OrgID: acc.org.ID, UserID: acc.user.ID, Role: models.RoleOwner, Name: acc.user.Email}
	if _, err := app.store.As(actor).SetGPUWatch(bg, idle.ID, p); err != nil {
		t.Fatal(err)
	}
	if err := (&jobs.GPUWatch{Store: app.store}).Run(bg); err != nil {
		t.Fatal(err)
	}

	eval := func(js string) string {
		t.Helper()
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return out
	}
	text := func(sel string) string {
		return eval(`(document.querySelector('` + sel + `') || {innerText: ''}).innerText`)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`), chromedp.WaitNotPresent(`#login-form`)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int64{1440, 390} {
		cl := clusters[w]
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/clusters/"+cl.ID),
			chromedp.WaitVisible(`button[data-testid=stop]`), clickLive(`button[data-testid=stop]`), chromedp.WaitVisible(`[data-testid=confirm-dialog]`)); err != nil {
			t.Fatal(err)
		}
		if title, detail, ok := text(`[data-testid=confirm-title]`), text(`[data-testid=confirm-detail]`),
			eval(`document.querySelector('[data-testid=confirm-ok]').className`); title != "Stop "+cl.Name+"?" ||
			!strings.Contains(detail, "Compute billing ($39.94/h) ends once all are stopped") || !strings.Contains(detail, "Nothing else bills") || ok != "btn-primary" {
			t.Errorf("at %d px the confirm says %q / %q, ok %q", w, title, detail, ok)
		}
		saveScreenshot(t, ctx, "/stop-confirm", w)
		if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=confirm-ok]`)); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(15 * time.Second); ; {
			said, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('[data-testid=stop-state]') || {innerText: ''}).innerText.startsWith('Stopping as asked')`))
			if err == nil && said {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("at %d px the stop was not said: %v", w, err)
			}
			time.Sleep(50 * time.Millisecond) // the browser navigates on its own time
		}
		if got, _ := app.store.ClusterByID(bg, cl.ID); got.StopReason != string(models.StopByCustomer) {
			t.Fatalf("at %d px the button did not stop the cluster", w)
		}
		if _, err := app.store.MarkStopped(bg, cl.ID); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+cl.ID), chromedp.WaitVisible(`[data-testid=gpu-panel]`)); err != nil {
			t.Fatal(err)
		}
		panel, starts := text(`[data-testid=gpu-panel]`), eval(`Array.from(document.querySelectorAll('[data-testid=node-start]')).map(e => e.innerText).join('\n')`)
		if strings.Contains(panel, " now") || strings.Contains(panel, "72 °C") || !strings.Contains(panel, "last seen") ||
			strings.Contains(starts, "running since") || !strings.Contains(starts, "unknown, the machine is stopped") {
			t.Errorf("at %d px the stopped cluster reads as live:\n%s\n%s", w, panel, starts)
		}
		if over := eval(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the stopped page scrolls sideways", w)
		}
		saveScreenshot(t, ctx, "/stopped-cluster", w)

		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+cannot.ID), chromedp.WaitVisible(`button[data-testid=stop]`)); err != nil {
			t.Fatal(err)
		}
		if off, why := eval(`String(document.querySelector('button[data-testid=stop]').disabled)`), text(`[data-testid=stop-refused]`); off != "true" ||
			!strings.Contains(why, "Lambda cannot stop a machine") {
			t.Errorf("at %d px Stop where machines cannot stop: disabled %s, %q", w, off, why)
		}
		saveScreenshot(t, ctx, "/stop-refused", w)

		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+idle.ID), chromedp.WaitVisible(`[data-testid=idle-on]`)); err != nil {
			t.Fatal(err)
		}
		if got := text(`[data-testid=idle-on]`); !strings.Contains(got, "Every GPU idle since "+handOver.Format("15:04 MST, 2 Jan")) {
			t.Errorf("at %d px the idle clock does not start at the hand-over (%s): %q", w, handOver.Format("15:04"), got)
		}
		saveScreenshot(t, ctx, "/idle-since-hand-over", w)
	}
}
