package web

import (
	"context"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// X8 for a hosted customer, in a real browser at 390 and 1440 px: the page
// shows how to verify a signature (its JavaScript example, run in the
// browser, accepts what the server signs and refuses a changed body or an
// old timestamp); "Every event type" ticks all of them; the same URL
// twice is refused beside the field; a failed test event does not make the
// endpoint "Failing since", and its connection error is on the phone's log.
func TestBrowserWebhooksForAHostedCustomer(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestAppSet(t, openSQLite(t), loopbackWebhooks, nil)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	owner := app.signupAccount("hosted@example.com", "Hosted")
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)
	job := webhookJob(app.store, "hosted")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close() // nothing listens there: connections are refused

	// The JavaScript example, as the page shows it, against real signatures.
	b.do(chromedp.Navigate(srv.URL+"/settings/webhooks"), chromedp.WaitReady(`[data-testid=webhook-verify]`))
	if langs := b.str(`[...document.querySelectorAll('[data-testid=webhook-verify-example]')].map(e => e.dataset.lang).join(',')`); langs != "js,python,go" {
		t.Fatalf("examples %q", langs)
	}
	if strings.Contains(b.str(`document.querySelector('main').innerText`), "README") {
		t.Error("the page sends a hosted customer to a README")
	}
	body := `{"id":"evt_1","type":"cluster.ready","data":{}}`
	now := time.Now()
	for _, c := range []struct {
		body, secret string
		at           time.Time
		want         string
	}{
		{body, "whsec_abc", now, "true"},
		{body + " ", "whsec_abc", now, "false"},
		{body, "whsec_other", now, "false"},
		{body, "whsec_abc", now.Add(-10 * time.Minute), "false"},
	} {
		header := models.WebhookSignature([]string{"whsec_rotated", "whsec_abc"}, c.at, []byte(body)) // signed as sent
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
			const code = document.querySelector('[data-lang=js] [data-testid=webhook-verify-code]').textContent;
			const verify = new Function(code + '\n; return verify;')();
			return String(await verify(`+jsString(c.body)+`, `+jsString(header)+`, `+jsString(c.secret)+`));
		})()`, chromedp.EvalAwaitPromise))
		if err != nil || got != c.want {
			t.Errorf("the page's JavaScript verify(%q, secret %s, t %s ago) = %q (%v), want %s", c.body, c.secret, now.Sub(c.at).Round(time.Minute), got, err, c.want)
		}
	}

	for _, w := range screenWidths {
		url := closed + "/hook-" + strconv.FormatInt(w, 10)
		b.do(chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/settings/webhooks"), chromedp.WaitVisible(`[data-testid=webhook-form]`),
			chromedp.SetValue(`#url`, url), chromedp.Click(`[data-testid=types-all]`))
		if n := b.str(`[...document.querySelectorAll('[data-testid=webhook-form] input[name=types]')].filter(b => b.checked).length + '/' + document.querySelectorAll('[data-testid=webhook-form] input[name=types]').length`); n != "19/19" {
			t.Errorf("at %d px Every event type ticked %s", w, n)
		}
		b.do(chromedp.Click(`[data-testid="type-cluster.ready"]`))
		if st := b.str(`(e => e.checked + ',' + e.indeterminate)(document.querySelector('[data-testid=types-all]'))`); st != "false,true" {
			t.Errorf("at %d px with one type cleared the select-all is %s", w, st)
		}
		b.do(chromedp.Click(`[data-testid="type-cluster.ready"]`), chromedp.Click(`[data-testid=add-webhook]`), chromedp.WaitVisible(`[data-testid=webhook-secret-value]`))
		// The same URL again: refused beside the field.
		b.do(chromedp.SetValue(`#url`, url), chromedp.Click(`[data-testid="type-cluster.failed"]`), chromedp.Click(`[data-testid=add-webhook]`))
		b.wait("the refusal", `!!document.querySelector('[data-testid=problem-url]')`)
		if got := b.str(`document.querySelector('[data-testid=problem-url]').innerText`); !strings.Contains(got, "already has an endpoint for this URL") {
			t.Errorf("at %d px the same URL again says %q", w, got)
		}
		ws, err := app.store.WebhooksFor(context.Background(), owner.org.ID, owner.env.ID)
		if err != nil || len(ws) != int(1+(w/1440)) {
			t.Fatalf("at %d px %d endpoints (%v)", w, len(ws), err)
		}
		var id string
		for _, e := range ws {
			if e.URL == url {
				id = e.ID
				if len(e.TypeList()) != len(models.PublicEventTypes) {
					t.Errorf("at %d px the endpoint has %d types", w, len(e.TypeList()))
				}
			}
		}
		// A test event that cannot connect.
		b.do(chromedp.Navigate(srv.URL+"/settings/webhooks"), chromedp.WaitVisible(`#webhook-`+id+` [data-testid=send-test]`), chromedp.Click(`#webhook-`+id+` [data-testid=send-test]`))
		b.wait("the log", `location.pathname === '/settings/webhooks/`+id+`'`)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.do(chromedp.Reload())
		b.wait("the failed attempt", `!!document.querySelector('[data-testid=webhook-attempt][data-status="0"]')`)
		text := b.str(`document.querySelector('main').innerText`)
		if strings.Contains(text, "Failing since") {
			t.Errorf("at %d px a failed test event marks the endpoint failing:\n%s", w, text)
		}
		visible := b.str(`[...document.querySelectorAll('[data-testid=webhook-attempt] td')].filter(td => td.offsetParent !== null).map(td => td.innerText).join(' ')`)
		if !strings.Contains(visible, "connection refused") || !strings.Contains(visible, "no answer") {
			t.Errorf("at %d px the log row shows %q, want the connection error", w, visible)
		}
		if over := b.str(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows", w)
		}
		b.do(scrollLive(`[data-testid=webhook-log]`))
		saveScreenshot(t, ctx, "/settings/webhooks-failed-test", w)
	}
	b.do(chromedp.Navigate(srv.URL+"/settings/webhooks"), chromedp.WaitReady(`[data-testid=webhook-verify]`), chromedp.Click(`[data-lang=go] summary`))
	saveScreenshot(t, ctx, "/settings/webhooks-verify", 1440)
}
