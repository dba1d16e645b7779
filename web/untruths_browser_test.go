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
	}
	_ = time.Second
}
