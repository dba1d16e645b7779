package web

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// X8 in a browser, on a phone (390 px) and a desktop (1440 px): an owner
// adds an endpoint under Settings → Webhooks and copies its secret, sends a
// test event that a real receiver verifies, sees it in the delivery log and
// redelivers it; the page never scrolls sideways.
func TestBrowserWebhookJourney(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestAppSet(t, openSQLite(t), loopbackWebhooks, nil)
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	acc := app.signupAccount("wanda@hooks.example.com", "Hook Research")
	rcv := newReceiver(t)
	job := webhookJob(app.store, "browser")
	wait := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, err)
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
	for _, width := range []int64{390, 1440} {
		path := "/hook-" + strconv.FormatInt(width, 10)
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.URL+"/settings/webhooks"),
			chromedp.WaitVisible(`[data-testid=webhook-form]`),
			chromedp.SetValue(`#url`, rcv.url(path)),
			chromedp.Click(`[data-testid="type-cluster.ready"]`),
			chromedp.Click(`[data-testid=add-webhook]`),
			chromedp.WaitVisible(`[data-testid=webhook-secret-value]`),
		); err != nil {
			t.Fatal(err)
		}
		secret, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=webhook-secret-value]').innerText.trim()`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("secret shown: %q", secret)
		}
		rcv.mu.Lock()
		rcv.secrets[path] = []string{secret}
		rcv.mu.Unlock()

		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('[data-testid=webhook-row]')]
			.find(r => r.textContent.includes('`+path+`')).querySelector('[data-testid=send-test]').click() || true`)); err != nil {
			t.Fatal(err)
		}
		wait("the log of the endpoint", `location.pathname.startsWith('/settings/webhooks/we_') && !!document.querySelector('[data-testid=webhook-log]')`)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		wait("the delivered test event", `document.querySelectorAll('[data-testid=webhook-attempt][data-status="204"]').length === 1`)
		if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=redeliver]`)); err != nil {
			t.Fatal(err)
		}
		wait("the redelivery queued", `!!document.querySelector('[data-testid=webhook-log]') && document.body.textContent.includes('queued again')`)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		wait("two delivered attempts", `document.querySelectorAll('[data-testid=webhook-attempt][data-status="204"]').length === 2`)
		wait("no sideways scrolling", `document.documentElement.scrollWidth <= window.innerWidth`)

		saveScreenshot(t, ctx, "/settings/webhooks-log", width)
		if p := rcv.problems(); len(p) > 0 {
			t.Fatalf("receiver problems: %v", p)
		}
	}
	var got []string
	for _, e := range rcv.events() {
		got = append(got, e.Path+" "+e.Type)
	}
	want := "/hook-390 webhook.test,/hook-390 webhook.test,/hook-1440 webhook.test,/hook-1440 webhook.test"
	if strings.Join(got, ",") != want {
		t.Fatalf("received %v, want %s", got, want)
	}
}
