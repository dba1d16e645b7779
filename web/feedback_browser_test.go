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
// the object (issue 13): Cancel keeps everything, the dialog's button
// does the work, for a plain form (delete an SSH key, remove a member) and
// an htmx one (terminate, in the journey test).
func TestBrowserConfirmDialogs(t *testing.T) {
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
