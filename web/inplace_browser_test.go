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

// A4 in a real browser, at 1440 and 390 px: Resume without
// the balance comes back to the cluster page (not …/resume) with the
// refusal on top and "Add $34.94" linking Add funds with the amount typed
// in; while the budget is reached, Resume is disabled with its reason and
// the link to raise the budget.
func TestBrowserResumeRefusalsInPlace(t *testing.T) {
	t.Parallel() // see newBrowser
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
		wait("the resume question", `document.getElementById('confirm-dialog').open`)
		if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=confirm-ok]`)); err != nil {
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

// B9 in a real browser, at 1440 and 390 px: Reverse on the
// operator's balance page asks first, saying the balance it leaves and
// what a negative balance does; confirmed, the top-up reads as reversed.
func TestBrowserReverseTopUpConfirms(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	bg := context.Background()
	cust := app.signupAccount("ada@example.com", "Ada Labs")
	op := app.signupAccount("op@deck.example", "Deck Ops")
	if _, err := app.store.SetOperator(bg, op.user.Email, true); err != nil {
		t.Fatal(err)
	}
	tu, err := app.store.CreateTopUp(bg, cust.org.ID, 500*models.Micro, true, cust.user.Email)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.CompleteTestTopUp(bg, cust.org.ID, tu.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.AddLedgerEntry(bg, models.LedgerEntry{OrgID: cust.org.ID, Kind: models.LedgerUsage,
		Amount: -400 * models.Micro, IdemKey: "used", Description: "usage"}); err != nil {
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
		for {
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
		chromedp.SetValue(`#email`, op.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `location.pathname === '/offers'`)
	page := srv.URL + "/admin/orgs/" + cust.org.ID + "/balance"
	row := `[data-top-up="` + tu.ID + `"]`
	for _, w := range []struct{ width, height int64 }{{1440, 1000}, {390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(page),
			chromedp.WaitVisible(row+` [data-testid=reverse-top-up]`)); err != nil {
			t.Fatal(err)
		}
		if over := js(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows sideways", w.width)
		}
		saveScreenshot(t, ctx, "/admin-top-ups", w.width)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(row+` input[name=reason]`, "Card charge-back"),
		chromedp.Click(row+` [data-testid=reverse-top-up]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	if d := js(`document.getElementById('confirm-detail').textContent`); !strings.Contains(d, "The balance becomes -$400.00") {
		t.Errorf("the confirmation says %q", d)
	}
	saveScreenshot(t, ctx, "/admin-top-up-confirm", 390)
	if b, _ := app.store.Balance(bg, cust.org.ID); b != 100*models.Micro {
		t.Fatalf("money moved before the confirmation: %s", models.USD(b))
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait("the reversed top-up", `!!document.querySelector('`+row+` [data-testid=top-up-reversed]')`)
	if b, _ := app.store.Balance(bg, cust.org.ID); b != -400*models.Micro {
		t.Errorf("balance %s after the reversal, want -$400.00", models.USD(b))
	}
	saveScreenshot(t, ctx, "/admin-top-up-reversed", 390)
}
