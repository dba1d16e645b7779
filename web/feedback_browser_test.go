package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// browserSession drives one headless page against srv: wait polls a
// condition across navigations, eval reads a value, login signs acc in
// through the form.
type browserSession struct {
	t   *testing.T
	ctx context.Context
	srv *httptest.Server
}

func (b browserSession) wait(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for { // a navigation interrupts one Poll: poll again
		ok, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 1500) : ''`))
			b.t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, body)
		}
	}
}

func (b browserSession) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

func (b browserSession) str(js string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return s
}

func (b browserSession) login(acc account) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`))
	b.wait("signed in", `location.pathname === '/offers' && document.querySelector('header').innerText.includes(`+jsString(acc.user.Email)+`)`)
}

// Destructive actions confirm in the layout's styled dialog, which names
// the object (O3): Cancel keeps everything, the dialog's button
// does the work, for a plain form (delete an SSH key, remove a member) and
// an htmx one (terminate, in the journey test).
func TestBrowserConfirmDialogs(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	bg := context.Background()
	owner := app.signupAccount("ada@example.com", "Analytical Engines")
	mate := app.joinAccount(owner, "grace@example.com", models.RoleMember)
	key, err := app.store.AddSSHKey(bg, owner.org.ID, owner.user.ID, "work-laptop", testSSHKey(t, "ada@laptop"))
	if err != nil {
		t.Fatal(err)
	}
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)
	keys := func() int {
		ks, err := app.store.SSHKeys(bg, owner.org.ID, owner.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	const dialogOpen = `document.getElementById('confirm-dialog').open`

	b.do(chromedp.Navigate(srv.URL+"/settings/ssh-keys"), chromedp.WaitVisible(`[data-testid=delete-ssh-key]`))
	if b.str(`document.body.dataset.mark = 'kept'`) != "kept" {
		t.Fatal("could not mark the page")
	}
	b.do(chromedp.Click(`[data-testid=delete-ssh-key]`))
	b.wait("the dialog", dialogOpen)
	if title := b.str(`document.getElementById('confirm-title').innerText`); !strings.Contains(title, "work-laptop") {
		t.Errorf("the dialog asks %q, want the key named", title)
	}
	if ok := b.str(`document.querySelector('[data-testid=confirm-ok]').innerText`); ok != "Delete key" {
		t.Errorf("the dialog's button reads %q", ok)
	}
	// Styled: a real modal with the layout's classes, not window.confirm.
	if cls := b.str(`document.getElementById('confirm-dialog').className`); !strings.Contains(cls, "rounded-lg") {
		t.Errorf("dialog classes %q", cls)
	}
	b.do(chromedp.Click(`[data-testid=confirm-cancel]`))
	b.wait("the dialog closed", `!`+dialogOpen)
	if keys() != 1 || b.str(`document.body.dataset.mark || ''`) != "kept" {
		t.Fatal("Cancel deleted the key or left the page")
	}
	// Escape cancels too.
	b.do(chromedp.Click(`[data-testid=delete-ssh-key]`))
	b.wait("the dialog again", dialogOpen)
	b.do(chromedp.KeyEvent("\x1b"))
	b.wait("the dialog closed by Escape", `!`+dialogOpen)
	if keys() != 1 {
		t.Fatal("Escape deleted the key")
	}
	b.do(chromedp.Click(`[data-testid=delete-ssh-key]`))
	b.wait("the dialog a third time", dialogOpen)
	b.do(chromedp.Click(`[data-testid=confirm-ok]`))
	b.wait("the key gone from the page", `!document.querySelector('#ssh-key-`+key.ID+`') && !!document.querySelector('[data-testid=flash]')`)
	if keys() != 0 {
		t.Error("confirming did not delete the key")
	}

	// Team: the only owner's row has no Remove; a member's asks by address.
	b.do(chromedp.Navigate(srv.URL+"/settings/team"), chromedp.WaitVisible(`[data-testid=remove-member]`))
	if n := b.str(`String(document.querySelectorAll('#member-` + owner.user.ID + ` button').length)`); n != "0" {
		t.Errorf("the only owner's row has %s buttons", n)
	}
	b.do(chromedp.Click(`#member-` + mate.user.ID + ` [data-testid=remove-member]`))
	b.wait("the remove dialog", dialogOpen)
	if title := b.str(`document.getElementById('confirm-title').innerText`); !strings.Contains(title, "grace@example.com") || !strings.Contains(title, "Analytical Engines") {
		t.Errorf("the remove dialog asks %q", title)
	}
	journeyShot(t, ctx, "confirm-dialog")
	b.do(chromedp.Click(`[data-testid=confirm-ok]`))
	b.wait("the member gone", `!document.querySelector('#member-`+mate.user.ID+`')`)
	if _, err := app.store.Member(bg, owner.org.ID, mate.user.ID); err == nil {
		t.Error("confirming did not remove the member")
	}
}

// gate holds the requests it matches until released, so a test can look at
// the page while one is in flight. release runs in t.Cleanup too (before the
// server closes, which waits for held requests): a failing test never hangs.
type gate struct {
	mu      sync.Mutex
	match   func(*http.Request) bool
	arrived chan string
	open    chan struct{}
	once    *sync.Once
}

func (g *gate) ServeHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		match, arrived, open := g.match, g.arrived, g.open
		g.mu.Unlock()
		if match != nil && match(r) {
			select {
			case arrived <- r.Method + " " + r.URL.Path:
			default:
			}
			select {
			case <-open:
			case <-r.Context().Done():
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hold starts holding requests matching match.
func (g *gate) hold(match func(*http.Request) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.match, g.arrived, g.open, g.once = match, make(chan string, 1), make(chan struct{}), &sync.Once{}
}

// await waits (up to 15 s) for a held request to arrive.
func (g *gate) await(t *testing.T) string {
	t.Helper()
	g.mu.Lock()
	arrived := g.arrived
	g.mu.Unlock()
	select {
	case what := <-arrived:
		return what
	case <-time.After(15 * time.Second):
		t.Fatal("the held request never came")
		return ""
	}
}

// release lets every held request through and stops holding.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.once != nil {
		g.once.Do(func() { close(g.open) })
	}
	g.match = nil
}

func newGatedServer(t *testing.T, app *testApp) (*httptest.Server, *gate) {
	g := &gate{}
	srv := httptest.NewServer(g.ServeHTTP(app.e))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release) // runs first: the server's Close waits for held requests
	return srv, g
}

// Feedback while a request runs (O3): a filter change dims the offers
// (aria-busy) and shows "Updating…"; a submitting button — on an htmx form
// or a plain one — is disabled and aria-busy until the answer lands.
func TestBrowserBusyFeedback(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	eth := testOffer("eth", "us-east", 8, 2_000_000, intp(10))
	eth.Interconnect = "ethernet"
	app.seedOffers(testOffer("ib", "us-east", 8, 2_490_000, intp(10)), eth)
	owner := app.signupAccount("ada@example.com", "Analytical Engines")
	mate := app.joinAccount(owner, "grace@example.com", models.RoleMember)
	srv, g := newGatedServer(t, app)
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)

	// A filter swap.
	b.do(chromedp.Navigate(srv.URL+"/offers?accelerator=H100_80GB&nodes=4"), chromedp.WaitVisible(`[data-testid=offer-row]`))
	b.wait("the indicator hidden at rest", `getComputedStyle(document.getElementById('offer-loading')).visibility === 'hidden'`)
	// Selects are drawn like the inputs beside them (no native grey bevel).
	if got := b.str(`(() => { const s = getComputedStyle(document.getElementById('interconnect')), i = getComputedStyle(document.getElementById('nodes'));
		const diff = ['backgroundColor', 'borderRadius', 'boxShadow', 'fontSize', 'height'].filter(k => s[k] !== i[k]);
		if (s.appearance !== 'none') diff.push('appearance ' + s.appearance);
		return diff.join(', '); })()`); got != "" {
		t.Errorf("the select differs from the input in: %s", got)
	}
	g.hold(func(r *http.Request) bool { return r.URL.Path == "/offers" && r.Header.Get("HX-Request") == "true" })
	b.str(`(() => { const s = document.getElementById('interconnect'); s.value = 'ethernet';
		s.dispatchEvent(new Event('change', {bubbles: true})); return ''; })()`)
	g.await(t)
	busy := `document.getElementById('offer-results').getAttribute('aria-busy') === 'true' &&
		getComputedStyle(document.getElementById('offer-loading')).visibility === 'visible' &&
		document.querySelector('#offer-filters button[type=submit]').disabled &&
		document.querySelector('#offer-filters button[type=submit]').getAttribute('aria-busy') === 'true'`
	b.wait("the offers busy while the filter request runs", busy)
	journeyShot(t, ctx, "busy-offers")
	g.release()
	b.wait("the new offers, nothing busy", `document.querySelectorAll('[data-testid=offer-row]').length === 1 &&
		!document.querySelector('[aria-busy]') && !document.querySelector('#offer-filters button[type=submit]').disabled &&
		getComputedStyle(document.getElementById('offer-loading')).visibility === 'hidden'`)

	// An htmx form's button.
	b.do(chromedp.Navigate(srv.URL+"/settings/ssh-keys"), chromedp.WaitVisible(`#ssh-key-form`))
	b.do(chromedp.SetValue(`#public_key`, testSSHKey(t, "ada@desk")))
	g.hold(func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/settings/ssh-keys" })
	b.do(chromedp.Click(`#ssh-key-form button[type=submit]`))
	g.await(t)
	b.wait("the Add key button busy", `(b => b.disabled && b.getAttribute('aria-busy') === 'true')(document.querySelector('#ssh-key-form button[type=submit]'))`)
	g.release()
	b.wait("the key added, the button back", `!!document.querySelector('[data-testid=ssh-key-row]') &&
		(b => !b.disabled && !b.hasAttribute('aria-busy'))(document.querySelector('#ssh-key-form button[type=submit]'))`)

	// A plain form's button (the role change navigates, so the page cannot
	// be asked while the post is held: an observer notes the button's state
	// in sessionStorage, read back on the next page). Busy, yet its form
	// still carries its values.
	b.do(chromedp.Navigate(srv.URL+"/settings/team"), chromedp.WaitVisible(`#role-`+mate.user.ID))
	b.do(chromedp.SetValue(`#role-`+mate.user.ID, "admin"))
	b.str(`(() => { sessionStorage.removeItem('busy');
		const btn = document.querySelector('#member-` + mate.user.ID + ` form[action$="/role"] button');
		new MutationObserver(() => { if (btn.getAttribute('aria-busy') === 'true')
			sessionStorage.setItem('busy', JSON.stringify({disabled: btn.disabled})); }).observe(btn, {attributes: true});
		return ''; })()`)
	g.hold(func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/role")
	})
	b.do(chromedp.Click(`#member-` + mate.user.ID + ` form[action$="/role"] button`))
	g.await(t)
	g.release()
	b.wait("the role changed", `!!document.querySelector('#member-`+mate.user.ID+`[data-role=admin]')`)
	if got := b.str(`sessionStorage.getItem('busy') || ''`); got != `{"disabled":true}` {
		t.Errorf("the plain form's button while its post was held: %q, want busy and disabled", got)
	}
	if m, err := app.store.Member(context.Background(), owner.org.ID, mate.user.ID); err != nil || m.Role != models.RoleAdmin {
		t.Errorf("role after the held post: %v %v", m.Role, err)
	}
}

// The launch page's price lock counts down from the server's clock and,
// when it lapses, locks a fresh price in place: the quote panel and the
// form's quote id change, what was typed stays, and the launch goes through
// on the new quote (L2).
func TestBrowserQuoteCountdownRequotes(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	owner := app.signupAccount("ada@example.com", "Analytical Engines")
	launchFor(t, app, owner, "first") // seeds the offer and money
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)

	b.do(chromedp.Navigate(srv.URL+"/clusters/new?offer=sim:h100x8&nodes=2"), chromedp.WaitVisible(`#launch-form`))
	b.wait("the countdown", `/^1[45]:\d\d left$/.test(document.querySelector('[data-testid=quote-countdown]').innerText)`)
	first := b.str(`document.getElementById('quote-id').value`)
	if first == "" || b.str(`document.querySelector('[data-testid=quote]').dataset.quoteId`) != first {
		t.Fatalf("quote id %q", first)
	}
	if b.str(`String(document.querySelector('[data-testid=requote]').offsetParent === null)`) != "true" {
		t.Error("Lock a fresh price shows while the lock holds")
	}
	b.do(chromedp.SetValue(`#name`, "kept-name"))
	// Both clocks move past the lock: the server's fake clock and the
	// browser's (Date.now), without waiting on either.
	app.clock.Advance(models.QuoteTTL + time.Minute)
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20))) // the catalog job's refresh
	b.str(`(() => { const real = Date.now.bind(Date); const skip = ` + strconv.FormatInt((models.QuoteTTL+time.Minute).Milliseconds(), 10) + `;
		Date.now = () => real() + skip; return ''; })()`)
	b.wait("a fresh quote in place", `document.getElementById('quote-id').value !== `+jsString(first)+` &&
		document.querySelector('[data-testid=quote]').dataset.quoteId === document.getElementById('quote-id').value &&
		/^1[45]:\d\d left$/.test(document.querySelector('[data-testid=quote-countdown]').innerText)`)
	if got := b.str(`document.getElementById('name').value`); got != "kept-name" {
		t.Errorf("the form lost what was typed: name %q", got)
	}
	second := b.str(`document.getElementById('quote-id').value`)
	q, err := app.store.QuoteForOrg(context.Background(), owner.org.ID, second)
	if err != nil || !q.ExpiresAt.After(app.clock.Now()) {
		t.Fatalf("the fresh quote %s: %v, expires %v", second, err, q.ExpiresAt)
	}
	b.do(chromedp.Click(`[data-testid=launch-submit]`))
	b.wait("the cluster page", `!!document.querySelector('[data-testid=cluster-name]')`)
	if q, _ = app.store.QuoteForOrg(context.Background(), owner.org.ID, second); q.UsedByCluster == "" {
		t.Error("the launch did not use the fresh quote")
	}
}

// Password reset in a real browser through the dev mailbox (A1):
// "Forgot your password?" under the log-in form, the mail in /dev/mailbox,
// its link, a new password, then log-in with it.
func TestBrowserPasswordResetThroughTheMailbox(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	owner := app.signupAccount("ada@example.com", "Analytical Engines")
	b := browserSession{t: t, ctx: ctx, srv: srv}

	b.do(chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, "ada@example.com"),
		chromedp.Click(`[data-testid=forgot-password]`))
	b.wait("the reset form, the address carried over", `!!document.querySelector('#forgot-form') && document.getElementById('email').value === 'ada@example.com'`)
	b.do(chromedp.Click(`#forgot-form button[type=submit]`))
	b.wait("told to check the mail", `!!document.querySelector('[data-testid=reset-sent]')`)

	// The mailbox (loopback only, which the test server is).
	b.do(chromedp.Navigate(srv.URL + "/dev/mailbox"))
	b.wait("the reset mail listed", `[...document.querySelectorAll('[data-testid=mail-row]')].some(r => r.innerText.includes('Reset your Clusterdeck password'))`)
	b.do(chromedp.Click(`[data-testid=mail-link]`))
	b.wait("the mail", `document.body.innerText.includes('/reset-password/')`)
	link := b.str(`document.body.innerText.match(/http:\/\/127\.0\.0\.1(\/reset-password\/[A-Za-z0-9]+)/)[1]`)
	b.do(chromedp.Navigate(srv.URL + link))
	b.wait("the new-password form", `document.querySelector('[data-testid=reset-email]').innerText === 'ada@example.com'`)
	b.do(chromedp.SetValue(`#new_password`, "a brand new password"),
		chromedp.SetValue(`#confirm_password`, "a brand new password"),
		chromedp.Click(`#reset-form button[type=submit]`))
	b.wait("back at log-in, told so", `location.pathname === '/login' && document.body.innerText.includes('Your password was changed')`)
	b.do(chromedp.SetValue(`#email`, owner.user.Email), chromedp.SetValue(`#password`, "a brand new password"),
		chromedp.Click(`#login-form button[type=submit]`))
	b.wait("signed in with the new password", `location.pathname === '/offers' && document.querySelector('header').innerText.includes('ada@example.com')`)
	// The link is spent.
	b.do(chromedp.Navigate(srv.URL + link))
	b.wait("the spent link explained", `!!document.querySelector('[data-testid=reset-gone]')`)
}
