package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// L7, B6, X13 in a real browser at 390 and 1440 px: every question of the
// cluster page is styled by what the action does — terminate a red danger
// ("Cannot be undone"), add a worker, resume and keep-as-it-is the primary
// button with "Starts billing" and the price, run verification again an
// amber warning ("Puts every GPU under full load"). Cancel sends nothing;
// the confirmed keep hands the cluster over.
func TestBrowserConfirmsByConsequence(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = chromedp.Cancel(ctx) }) // the cluster page's polls would hold the server open
	owner := app.signupAccount("asks@example.com", "Askers")
	tok := apiKeyFor(t, app, owner)
	stopped := stoppedFor(t, app, owner, "stopped")
	ready := makeJoined(t, app, launchFor(t, app, owner, "ready"), true)
	failed := makeJoined(t, app, launchFor(t, app, owner, "unverified"), true)
	for _, id := range []string{ready.ID, failed.ID} {
		if code, out := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+id+"/verify", tok, `{"confirmDisruption": true}`); code != http.StatusAccepted {
			t.Fatalf("verify again: %d %v", code, out)
		}
		app.db.Model(&models.VerifyRun{}).Where("cluster_id = ?", id).Update("status", models.VerifyFailed)
	}
	app.db.Model(&models.Cluster{}).Where("id = ?", failed.ID).Updates(map[string]any{"status": models.StatusDegraded, "last_error": "verification_failed:fabric"})
	price := func(c models.Cluster) string { return models.PriceUSD(c.USDPerHour) + "/h" }

	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)
	const dialogOpen = `document.getElementById('confirm-dialog').open`
	ask := func(w int64, cl models.Cluster, button, kind, okClass, line, price string, shot bool) {
		t.Helper()
		b.do(chromedp.Navigate(srv.URL+"/clusters/"+cl.ID), chromedp.WaitVisible(`[data-testid=`+button+`]`), scrollLive(`[data-testid=`+button+`]`), clickLive(`[data-testid=`+button+`]`))
		b.wait(button+"'s question", dialogOpen)
		if got := b.str(`document.getElementById('confirm-dialog').dataset.consequence`); got != kind {
			t.Errorf("at %d px %s asks as %q, want %q", w, button, got, kind)
		}
		if got := b.str(`document.querySelector('[data-testid=confirm-ok]').className`); got != okClass {
			t.Errorf("at %d px %s's button is %q, want %q", w, button, got, okClass)
		}
		shown := b.str(`[...document.querySelectorAll('[data-testid=confirm-kind]')].filter(k => !k.hidden).map(k => k.textContent).join('|')`)
		if shown != line {
			t.Errorf("at %d px %s's line reads %q, want %q", w, button, shown, line)
		}
		if price != "" {
			if text := b.str(`document.getElementById('confirm-dialog').innerText`); !strings.Contains(text, price) {
				t.Errorf("at %d px %s starts billing without naming %s:\n%s", w, button, price, text)
			}
		}
		if over := b.str(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows with %s's question", w, button)
		}
		if shot {
			saveScreenshot(t, ctx, "confirm-"+kind, w)
		}
	}
	cancel := func() {
		t.Helper()
		b.do(chromedp.Click(`[data-testid=confirm-cancel]`))
		b.wait("the question closed", `!`+dialogOpen)
	}
	for _, w := range screenWidths {
		b.do(chromedp.EmulateViewport(w, 900))
		ask(w, ready, "terminate", "destroy", "btn-danger", "Cannot be undone", "", w == 390)
		cancel()
		ask(w, ready, "add-worker", "bill", "btn-primary", "Starts billing", models.PriceUSD(ready.MachineHour), false)
		cancel()
		ask(w, ready, "verify-again", "stress", "btn-warning", "Puts every GPU under full load", "", w == 1440)
		cancel()
		ask(w, stopped, "resume", "bill", "btn-primary", "Starts billing", price(stopped), w == 1440)
		cancel()
		ask(w, failed, "keep-unverified", "bill", "btn-primary", "Starts billing", price(failed), w == 390)
		cancel()
	}
	bg := context.Background()
	for _, id := range []string{ready.ID, stopped.ID, failed.ID} {
		c, err := app.store.ClusterForOrg(bg, owner.org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.TerminateRequestedAt != nil || c.ResumeRequestedAt != nil || c.Status == models.StatusReady && id == failed.ID {
			t.Fatalf("a cancelled question acted on %s: %s", c.Name, c.Status)
		}
	}
	b.do(chromedp.Click(`[data-testid=keep-unverified]`))
	b.wait("keep's question", dialogOpen)
	b.do(chromedp.Click(`[data-testid=confirm-ok]`))
	b.wait("kept", `!document.querySelector('[data-testid=keep-unverified]')`)
	if c, err := app.store.ClusterForOrg(bg, owner.org.ID, failed.ID); err != nil || c.Status != models.StatusReady {
		t.Fatalf("confirmed keep: %s (%v)", c.Status, err)
	}
}
