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

// Issue 21 item 4 in a real browser, at 1440 and 390 px: Resume without
// the balance comes back to the cluster page (not …/resume) with the
// refusal on top and "Add $34.94" linking Add funds with the amount typed
// in; while the budget is reached, Resume is disabled with its reason and
// the link to raise the budget.
func TestBrowserResumeRefusalsInPlace(t *testing.T) {
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	bg := context.Background()
	owner := app.signupAccount("owner@example.com", "Acme")
	broke := stoppedFor(t, app, owner, "broke")
	bal, _ := app.store.Balance(bg, owner.org.ID)
	if _, err := app.store.AddLedgerEntry(bg, models.LedgerEntry{OrgID: owner.org.ID, Kind: models.LedgerAdjustment,
		Amount: 5*models.Micro - bal, IdemKey: "spend-down", Description: "test"}); err != nil {
		t.Fatal(err)
	}
	js := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return s
	}
	wait := func(what, cond string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for { // a navigation under way cancels one poll: poll again
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(15*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, js(`document.body ? document.body.innerText.slice(0, 3000) : ''`))
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, owner.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `location.pathname === '/offers'`)

	for _, w := range []struct{ width, height int64 }{{1440, 1000}, {390, 844}} {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(w.width, w.height),
			chromedp.Navigate(srv.URL+"/clusters/"+broke.ID),
			chromedp.WaitVisible(`form[action$="/resume"] [data-testid=resume]`),
			chromedp.Click(`[data-testid=resume]`),
		); err != nil {
			t.Fatal(err)
		}
		wait("the refusal on the cluster page", `!!document.querySelector('[data-testid=flash-action]')`)
		if path := js(`location.pathname`); path != "/clusters/"+broke.ID {
			t.Errorf("at %d px the refusal left the page on %s", w.width, path)
		}
		if a := js(`document.querySelector('[data-testid=flash-action]').innerText`); a != "Add $34.94" {
			t.Errorf("at %d px the way forward reads %q", w.width, a)
		}
		if body := js(`document.body.innerText`); strings.Contains(body, "402") || strings.Contains(body, "Payment Required") {
			t.Errorf("at %d px status words on the page", w.width)
		}
		if over := js(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows sideways", w.width)
		}
		saveScreenshot(t, ctx, "/resume-refused", w.width)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=flash-action]`)); err != nil {
		t.Fatal(err)
	}
	wait("Add funds with the shortfall", `location.pathname === '/billing' && document.querySelector('#amount') && document.querySelector('#amount').value === '34.94'`)

	// The budget reached: Resume is disabled with its reason.
	over := stoppedOverBudget(t, app, owner)
	for _, w := range []struct{ width, height int64 }{{1440, 1000}, {390, 844}} {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(w.width, w.height),
			chromedp.Navigate(srv.URL+"/clusters/"+over.ID),
			chromedp.WaitVisible(`[data-testid=resume-blocked]`),
		); err != nil {
			t.Fatal(err)
		}
		if d := js(`String(document.querySelector('[data-testid=resume]').disabled)`); d != "true" {
			t.Errorf("at %d px Resume is enabled while the budget is reached", w.width)
		}
		if a := js(`document.querySelector('[data-testid=resume-way]').innerText`); !strings.HasPrefix(a, "Raise the budget of default to $") {
			t.Errorf("at %d px the way forward reads %q", w.width, a)
		}
		if over := js(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows sideways", w.width)
		}
		saveScreenshot(t, ctx, "/resume-blocked", w.width)
	}
}
