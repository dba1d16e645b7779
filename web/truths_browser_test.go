package web

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// truthsWorld is one signed-in customer with a ready cluster in one
// Chromium, for the pages' small truths checked at a phone's and a
// desktop's width.
type truthsWorld struct {
	t   *testing.T
	ctx context.Context
	app *testApp
	srv *httptest.Server
	acc account
	cl  models.Cluster
	// stopped is a cluster the balance stopped (B6).
	stopped models.Cluster
	failed  models.Cluster
}

func newTruthsWorld(t *testing.T) *truthsWorld {
	t.Helper()
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	acc := app.signupAccount("truths@example.com", "Truths Lab")
	cl := makeJoined(t, app, launchFor(t, app, acc, "truths"), true)
	w := &truthsWorld{t: t, ctx: ctx, app: app, srv: srv, acc: acc, cl: cl, stopped: stoppedFor(t, app, acc, "parked")}
	w.failed = launchFor(t, app, acc, "never-up") // never came up: nothing billed (B2)
	if err := app.db.Model(&models.Cluster{}).Where("id = ?", w.failed.ID).Updates(map[string]any{"status": models.StatusFailed,
		"ended_at": app.clock.Now(), "released_at": app.clock.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	w.do(chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`))
	w.wait("signed in", `location.pathname !== '/login'`)
	return w
}

func (w *truthsWorld) do(actions ...chromedp.Action[chromedp.Void]) {
	w.t.Helper()
	if err := chromedp.Do(w.ctx, actions...); err != nil {
		shot(w.t, w.ctx)
		w.t.Fatal(err)
	}
}

// wait polls js (real polls, bounded) until it is true; a poll cut by a
// navigation is tried again.
func (w *truthsWorld) wait(what, js string) {
	w.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		ok, err := chromedp.Run(w.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			shot(w.t, w.ctx)
			w.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

func (w *truthsWorld) eval(js string) string {
	w.t.Helper()
	s, err := chromedp.Run(w.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		w.t.Fatalf("%s: %v", js, err)
	}
	return s
}

// fits says the page does not scroll sideways.
func (w *truthsWorld) fits(what string) {
	w.t.Helper()
	ok, err := chromedp.Run(w.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	if err != nil || !ok {
		shot(w.t, w.ctx)
		w.t.Errorf("%s is wider than the screen (%v)", what, err)
	}
}

// The small truths of the pages, each at 390 and 1440 px.
func TestBrowserPageTruths(t *testing.T) {
	t.Parallel() // see newBrowser
	w := newTruthsWorld(t)
	for _, width := range screenWidths {
		w.do(chromedp.EmulateViewport(width, 900))
		name := strconv.FormatInt(width, 10)

		// X15: a refused GPU watch form is answered on the cluster's own
		// address, not left on its POST URL (a reload shows the page).
		w.do(chromedp.Navigate(w.srv.URL+"/clusters/"+w.cl.ID), chromedp.WaitVisible(`[data-testid=watch-form]`))
		w.eval(`(() => { const f = document.querySelector('[data-testid=watch-form]'); f.noValidate = true;
			f.querySelector('#stall_minutes').value = '1'; return '' })()`)
		w.do(clickLive(`[data-testid=watch-save]`))
		w.wait("the refused form's problems", `!!document.querySelector('[data-testid=watch-form] [aria-invalid=true]')`)
		if got := w.eval(`location.pathname`); got != "/clusters/"+w.cl.ID {
			t.Errorf("%s: a refused GPU watch form leaves the address on %q", name, got)
		}
		w.do(chromedp.Reload())
		w.wait("the cluster page after a reload", `!!document.querySelector('[data-testid=watch-form]') && location.pathname === '/clusters/`+w.cl.ID+`'`)
		journeyShot(t, w.ctx, "truths-cluster-"+name)

		// B6: a stopped cluster's page says once why it stopped (its own
		// note, not also the organisation's banner), and its billing line
		// reads "Billing: stopped since …", not "Billing since: none".
		w.do(chromedp.Navigate(w.srv.URL+"/clusters/"+w.stopped.ID), chromedp.WaitVisible(`[data-testid=stop-state]`))
		if got := w.eval(`String(document.querySelectorAll('[data-testid=stop-banner], [data-testid=stop-state]').length)`); got != "1" {
			t.Errorf("%s: the stop is said %s times on the cluster's page", name, got)
		}
		if got := w.eval(`document.querySelector('[data-testid=ready-at]').previousElementSibling.textContent.trim() + ': ' +
			document.querySelector('[data-testid=ready-at]').textContent.trim()`); !strings.HasPrefix(got, "Billing: stopped since ") {
			t.Errorf("%s: billing line %q", name, got)
		}
		w.fits("the stopped cluster's page")
		journeyShot(t, w.ctx, "truths-stopped-"+name)
		w.do(chromedp.Navigate(w.srv.URL+"/clusters"), chromedp.WaitVisible(`[data-testid=stop-banner]`)) // elsewhere the banner names it

		// B1: the clusters list says what an ended cluster cost ($0.00 for
		// one that never came up), not the price per hour it no longer pays.
		if got := w.eval(`document.querySelector('#cluster-` + w.failed.ID + ` [data-testid=cluster-price]').innerText.trim()`); !strings.Contains(got, "$0.00 in all") {
			t.Errorf("%s: the failed cluster's row says %q", name, got)
		}
		if got := w.eval(`document.querySelector('#cluster-` + w.cl.ID + ` [data-testid=cluster-price]').innerText.trim()`); !strings.HasSuffix(got, "/h") {
			t.Errorf("%s: a running cluster's row says %q, want its price per hour", name, got)
		}
		w.fits("the clusters list")
		journeyShot(t, w.ctx, "truths-clusters-"+name)
	}
}
