package web

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// trackShot saves a full-page screenshot as NAME.png in TRACK_SHOT_DIR,
// else web/testdata/screenshots.
func trackShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("TRACK_SHOT_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 24 items 6 and 7 in a real browser, at a desktop's and a phone's
// width: each offer row (grid) and card (phone) shows its track record on
// one line inside its row without pushing Launch off, and sorting by track
// record puts the most reliable offer first; an operator sees a lemon with
// its history and the time to repair, and releases it.
func TestBrowserTrackRecordAndLemons(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestApp(t, openSQLite(t))
	app.seedOffers(comparisonCatalog()...)
	for _, m := range []int{7, 8, 8, 9, 11, 0} {
		app.launchRecord("ash.8x.ib", 4, m)
	}
	app.launchRecord("fra.8x.ib", 4, 6)
	app.launchRecord("fra.8x.ib", 4, 7)
	app.seedLemon("us-east-1-ash.8x.ib-h03")
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	const path = "/offers?accelerator=H100_80GB&nodes=4&include_community=true&sort=track_record"

	for _, w := range []struct {
		name          string
		width, height int64
		sel           string
	}{{"offers-track-1440", 1440, 900, `[data-testid=offer-grid] [data-testid=offer-row]`}, {"offers-track-390", 390, 844, `[data-testid=offer-card]`}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(srv.URL+path),
			chromedp.WaitVisible(w.sel)); err != nil {
			t.Fatal(err)
		}
		problems := evalJS[[]string](t, ctx, "the track lines", `(() => {
			const out = [];
			const items = [...document.querySelectorAll('`+w.sel+`')].filter(e => e.offsetParent !== null && !e.closest('details:not([open])'));
			if (items.length < 4) out.push('only ' + items.length + ' visible');
			for (const r of items) {
				const tr = r.querySelector('.track'), box = r.getBoundingClientRect();
				if (!tr || !tr.innerText.trim()) { out.push((r.dataset.offerId || r.dataset.cardOfferId) + ' has no track line'); continue; }
				const b = tr.getBoundingClientRect();
				if (b.right > box.right + 1 || b.width === 0) out.push((r.dataset.offerId || r.dataset.cardOfferId) + ' track line overflows');
				const act = r.querySelector('[data-testid$=launch-link], [data-testid$=quote-link]');
				if (act && act.getBoundingClientRect().right > window.innerWidth + 1) out.push('the action is pushed off');
			}
			const first = items[0];
			if (!first || !(first.dataset.offerId || first.dataset.cardOfferId).endsWith('fra.8x.ib')) out.push('first is ' + (first && (first.dataset.offerId || first.dataset.cardOfferId)));
			const txt = first ? first.querySelector('.track').innerText.trim() : '';
			if (txt !== '2 of 2 recent launches started · ready in 6–7 min') out.push('first reads ' + txt);
			return out;
		})()`)
		for _, p := range problems {
			t.Errorf("%s: %s", w.name, p)
		}
		trackShot(t, ctx, w.name)
	}

	acc := app.signupAccount("op@deck.example", "Deck Ops")
	if _, err := app.store.SetOperator(context.Background(), acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`location.pathname !== '/login'`, chromedp.WithPollingTimeout(5*time.Second)))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("signing in: %v", err)
		}
	}
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"lemons-1440", 1440, 900}, {"lemons-390", 390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(srv.URL+"/admin/lemons"),
			chromedp.WaitVisible(`[data-testid=lemon-row]`)); err != nil {
			t.Fatal(err)
		}
		wide := evalJS[bool](t, ctx, "the page width", `document.documentElement.scrollWidth > window.innerWidth + 1`)
		if wide {
			t.Errorf("%s: the page scrolls sideways", w.name)
		}
		trackShot(t, ctx, w.name)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=lemon-release]`), chromedp.WaitVisible(`[data-testid=lemon-released]`)); err != nil {
		t.Fatalf("release: %v", err)
	}
	trackShot(t, ctx, "lemons-released-390")
}
