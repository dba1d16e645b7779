package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A newcomer signs up, creates an API key (shown once, through htmx) and
// logs out, in a real browser: the CSRF token travels in hx-headers and the
// hidden fields, and a bad form is swapped in place with its messages.
func TestBrowserSignupAPIKeyLogout(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	// poll waits for js to hold, across navigations (which interrupt a poll).
	poll := func(js string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %v", js, err)
			}
		}
	}

	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/signup"),
		chromedp.WaitVisible(`#signup-form`),
		chromedp.SetValue(`#name`, "Ada"),
		chromedp.SetValue(`#email`, "ada@example.com"),
		chromedp.SetValue(`#password`, "short"),
		chromedp.Click(`#signup-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	// 422 swapped in place: the message shows, the name is kept.
	poll(`!!document.querySelector('[data-testid=problem-password]') && document.querySelector('#name').value === 'Ada'`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#signup-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	poll(`location.pathname === '/offers' && document.querySelector('header').innerText.includes('ada@example.com')`)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/settings/api-keys"),
		chromedp.WaitVisible(`#api-key-form`),
		chromedp.SetValue(`#api-key-form #name`, "laptop"),
		chromedp.Click(`#api-key-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	poll(`!!document.querySelector('[data-testid=api-key-token]')`)
	token, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=api-key-token]').innerText.trim()`))
	if err != nil || !strings.HasPrefix(token, "cdk_") {
		t.Fatalf("token = %q, %v", token, err)
	}
	if rec := app.apiGet("/v1/me", token); rec.Code != 200 {
		t.Errorf("the key shown does not work: %d", rec.Code)
	}
	// Shown once: a reload lists the prefix only.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`[data-testid=api-key-row]`)); err != nil {
		t.Fatal(err)
	}
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if strings.Contains(body, token) {
		t.Error("the token is shown again after a reload")
	}

	if err := chromedp.Do(ctx, chromedp.Click(`header form[action="/logout"] button`)); err != nil {
		t.Fatal(err)
	}
	poll(`location.pathname === '/login' && document.body.innerText.includes('You are logged out.')`)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/settings")); err != nil {
		t.Fatal(err)
	}
	poll(`location.pathname === '/login' && location.search.includes('next=%2Fsettings')`)
}
