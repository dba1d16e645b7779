package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/models"
)

// OP3 in a browser: the operator page's fleet GPU line reads
// whole at 390 and 1440 px (screenshots).
func TestBrowserAdminFleetGPU(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, time.Minute)
	app := newTestAppWith(t, openSQLite(t), nil)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	acc := app.signupAccount("op@deck.example", "Deck Ops")
	if _, err := app.store.SetOperator(context.Background(), acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	at := app.clock.Now().Unix() / 60 * 60
	for gpu := range 8 {
		u := 60 + gpu
		app.db.Create(&models.GPUPoint{ClusterID: "cl_a", GPU: gpu, At: at, N: 2, Util: &u})
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`), chromedp.WaitNotPresent(`#login-form`)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int64{1440, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/admin"),
			chromedp.WaitVisible(`[data-testid=admin-fleet-gpu]`)); err != nil {
			t.Fatal(err)
		}
		line, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=admin-fleet-gpu]').innerText`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, "64 %") || !strings.Contains(line, "8 GPUs of 1 running cluster") {
			t.Errorf("at %d px: %q", w, line)
		}
		if over, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || over {
			t.Errorf("at %d px the page scrolls sideways (%v)", w, err)
		}
		saveScreenshot(t, ctx, "/admin-fleet-gpu", w)
	}
}
