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

// newUntruthsWorld is newTruthsWorld on a server whose pages poll as the
// browser tests' do, so a live page's refresh is seen without waiting.
func newUntruthsWorld(t *testing.T) *truthsWorld {
	t.Helper()
	ctx := newBrowser(t)
	app := newTestAppWith(t, openSQLite(t), func(d *Deps) { d.Config.PagePoll = browserPagePoll })
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	acc := app.signupAccount("untruths@example.com", "Untruths Lab")
	cl := makeJoined(t, app, launchFor(t, app, acc, "untruths"), true)
	w := &truthsWorld{t: t, ctx: ctx, app: app, srv: srv, acc: acc, cl: cl}
	w.do(chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`))
	w.wait("signed in", `location.pathname !== '/login'`)
	return w
}

// The rough edges of the pages, each at 390 and 1440 px (U*, B1, O3, N6).
func TestBrowserUntruths(t *testing.T) {
	t.Parallel() // see newBrowser
	w := newUntruthsWorld(t)
	bg := context.Background()
	long := "https://clusterdeck.example/verify-email?token=" + strings.Repeat("a1b2c3d4", 12)
	if err := w.app.store.EnqueueMail(bg, models.Mail{Key: "untruths-long", To: "someone.with.a.rather.long.address@example-organisation.com",
		Subject: "Verify your email address for Clusterdeck, please, before you launch", Text: "Open this link:\n" + long + "\n",
		HTML: `<p style="margin:0 0 16px;font-size:14px;color:#475569"><a href="` + long + `">` + long + `</a></p>`}); err != nil {
		t.Fatal(err)
	}
	mails, err := w.app.store.OutboxMails(bg, 10)
	if err != nil || len(mails) == 0 {
		t.Fatalf("outbox: %v", err)
	}
	for _, width := range screenWidths {
		w.do(chromedp.EmulateViewport(width, 900))
		name := strconv.FormatInt(width, 10)

		// U*: the development mailbox and a mail never scroll sideways.
		w.do(chromedp.Navigate(w.srv.URL+"/dev/mailbox"), chromedp.WaitVisible(`[data-testid=mail-row]`))
		w.fits("the mailbox")
		journeyShot(t, w.ctx, "untruths-mailbox-"+name)
		w.do(chromedp.Navigate(w.srv.URL+"/dev/mailbox/"+mails[0].ID), chromedp.WaitVisible(`[data-testid=mail-text]`))
		w.eval(`(() => { document.querySelectorAll('[data-testid=mail] details').forEach(d => d.open = true); return '' })()`)
		w.fits("a mail")
		journeyShot(t, w.ctx, "untruths-mail-"+name)

		w.app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20))) // fresh at the clock the last pass moved
		// O3: a $5 ceiling's empty answer says what the cheapest match
		// costs, and its link lifts the ceiling to it.
		w.do(chromedp.Navigate(w.srv.URL+"/offers?accelerator=H100_80GB&nodes=2&max_price=5"), chromedp.WaitVisible(`[data-testid=cheapest-match]`))
		if got := w.eval(`document.querySelector('[data-testid=cheapest-match]').innerText`); !strings.Contains(got, "Your ceiling is $5.00 per hour; the cheapest offer matching the other filters costs $39.94 per hour") {
			t.Errorf("%s: the empty state says %q", name, got)
		}
		w.fits("the empty offers")
		journeyShot(t, w.ctx, "untruths-ceiling-"+name)
		w.do(clickLive(`[data-testid=lift-ceiling]`))
		w.wait("the lifted ceiling's offers", `!!document.querySelector('#offer-sim\\:h100x8') && document.querySelector('#max_price').value === '39.94'`)

		// U*: an error page keeps the request's id behind a closed toggle.
		w.do(chromedp.Navigate(w.srv.URL+"/clusters/nope"), chromedp.WaitVisible(`[data-testid=error-page]`))
		if got := w.eval(`(() => { const c = document.querySelector('[data-testid=request-id]'); return c.checkVisibility() ? 'shown' : 'hidden' })()`); got != "hidden" {
			t.Errorf("%s: the request id is %s before the toggle", name, got)
		}
		w.do(chromedp.Click(`[data-testid=request-ref] summary`))
		w.wait("the id shown", `document.querySelector('[data-testid=request-id]').checkVisibility() && document.querySelector('[data-testid=request-id]').textContent.length >= 16`)
		w.fits("the error page")
		journeyShot(t, w.ctx, "untruths-error-"+name)

		// N6: the Logs tab offers the node's log as a file.
		w.do(chromedp.Navigate(w.srv.URL+"/clusters/"+w.cl.ID+"?tab=logs"), chromedp.WaitVisible(`[data-testid=log-download]`))
		if got := w.eval(`document.querySelector('#log-node option').textContent.trim() + ' | ' + document.querySelector('[data-testid=log-download]').getAttribute('href')`); got != "node-0 · ready | /clusters/"+w.cl.ID+"/logs/download?node=0" {
			t.Errorf("%s: logs tab reads %q", name, got)
		}
		w.fits("the logs tab")
		journeyShot(t, w.ctx, "untruths-logs-"+name)

		// B1: on a running cluster's page the header balance follows the
		// accrual without a reload.
		w.do(chromedp.Navigate(w.srv.URL+"/clusters/"+w.cl.ID), chromedp.WaitVisible(`[data-testid=header-balance]`))
		before := w.eval(`document.querySelector('[data-testid=header-balance]').textContent.replace('Balance', '').trim()`)
		w.app.clock.Advance(time.Hour)
		f, err := w.app.store.CurrentBalance(bg, w.acc.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := models.USD(f.Balance())
		if want == before {
			t.Fatalf("%s: an hour accrued nothing (%s)", name, want)
		}
		w.wait("the header balance at "+want, `document.querySelector('[data-testid=header-balance]').textContent.replace('Balance', '').trim() === '`+want+`' && location.pathname === '/clusters/`+w.cl.ID+`'`)
		if n := w.eval(`String(document.querySelectorAll('#header-balance').length)`); n != "1" {
			t.Errorf("%s: %s header balances", name, n)
		}
	}

	// U*: an operator's saved quote status moves the inbox's counts at
	// once (the counts come back with the row), at each width.
	if _, err := w.app.store.SetOperator(bg, w.acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	code, qr := apiJSON(t, w.app, "POST", "/v1/quote-requests", apiKeyFor(t, w.app, w.acc),
		`{"accelerator":"H100_80GB","nodes":4,"gpusPerNode":8,"fabric":"infiniband","startDate":"2026-12-10","durationDays":28}`)
	if code != 201 {
		t.Fatalf("quote request: %d %v", code, qr)
	}
	id := qr["id"].(string)
	count := func(label string) string {
		return `[...document.querySelectorAll('#status-filters [data-testid=status-filter]')].find(a => a.firstChild.textContent.trim() === '` + label + `').querySelector('[data-testid=status-count]').textContent`
	}
	for i, step := range []struct {
		width    int64
		from, to string
	}{{390, "New", "contacted"}, {1440, "Contacted", "quoted"}} {
		w.do(chromedp.EmulateViewport(step.width, 900), chromedp.Navigate(w.srv.URL+"/admin/quote-requests"), chromedp.WaitVisible(`#status-`+id))
		if got := w.eval(count(step.from)); got != "1" {
			t.Fatalf("step %d: %s counts %s before the save", i, step.from, got)
		}
		w.do(chromedp.SetValue(`#status-`+id, step.to), clickLive(`#qr-`+id+` button[type=submit]`))
		w.wait("the counts after the save", count(step.from)+` === '0' && `+count(strings.ToUpper(step.to[:1])+step.to[1:])+` === '1' && document.querySelectorAll('#status-filters').length === 1`)
		w.fits("the quote inbox")
		journeyShot(t, w.ctx, "untruths-quote-inbox-"+strconv.FormatInt(step.width, 10))
	}
}
