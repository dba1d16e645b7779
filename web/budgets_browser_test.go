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

// B5, X6 in a real browser: an owner sets the default environment's
// budget in the billing page's Budgets section (htmx swaps the section in
// place), sees the share used and the minute it is reached, and a bad
// amount in another environment's row shows its problem beside that field.
func TestBrowserBudgets(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	bg := context.Background()
	acc := app.signupAccount("bea@example.com", "Bea Labs")
	staging, err := app.store.CreateEnvironment(bg, acc.org.ID, "staging")
	if err != nil {
		t.Fatal(err)
	}
	makeJoined(t, app, launchFor(t, app, acc, "burner"), true) // 2 machines, $39.94/h
	app.clock.Advance(90 * time.Minute)
	if _, err := app.store.MeterUsage(bg); err != nil {
		t.Fatal(err)
	}
	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
				t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, body)
			}
		}
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
	wait("signed in", `location.pathname === '/offers'`)
	def, stg := "#budget-"+acc.env.ID, "#budget-"+staging.ID
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/billing"),
		chromedp.WaitVisible(def+` [data-testid=budget-amount]`),
		chromedp.SetValue(def+` [data-testid=budget-amount]`, "100"),
		chromedp.Click(def+` [data-testid=budget-save]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the saved budget", `(document.querySelector('`+def+` [data-testid=budget-percent]') || {innerText: ''}).innerText.trim() === '59 %'`)
	forecast := app.clock.Now().Add(61 * time.Minute).UTC().Format("2006-01-02 15:04 UTC")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+def+` [data-testid=budget-forecast]').innerText.trim()`))
	if err != nil || got != forecast {
		t.Errorf("forecast %q %v, want %s", got, err, forecast)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(stg+` [data-testid=budget-amount]`, "ten dollars"),
		chromedp.Click(stg+` [data-testid=budget-save]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the problem beside staging's field", `!!document.querySelector('`+stg+` [data-testid=budget-problem]')`)
	if b, ok, _ := app.store.BudgetFor(bg, acc.org.ID, acc.env.ID); !ok || b.Amount != 100*models.Micro {
		t.Errorf("default's budget %+v %v", b, ok)
	}
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"budgets-1440", 1440, 1000}, {"budgets-390", 390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.width, w.height), chromedp.ScrollIntoView(`#budgets`)); err != nil {
			t.Fatal(err)
		}
		journeyShot(t, ctx, w.name)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#budgets').innerText`))
	if !strings.Contains(text, "budget of default") {
		t.Errorf("the run-out table does not name the budget:\n%s", text)
	}
}
