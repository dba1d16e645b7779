package web

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserSlots bounds the browsers open at once.
var browserSlots = make(chan struct{}, 2)

// newBrowser starts headless Chromium (Debian's package) for one test, which
// has three minutes: a bound for a test that hangs, never a wait (beside the
// jobs package's tests on two cores, TestBrowserAddWorker once ran out of a
// one-minute bound). Under CI=true a missing browser fails the test;
// elsewhere it skips loudly.
//
// Every browser test runs in parallel with the others (t.Parallel), two at a
// time whatever -parallel says (browserSlots: make test allows four parallel
// tests, and four Chromiums beside the other package's tests starved the
// pages' polls on two cores): each has its own Chromium with its own
// profile, its own server on its own port, its own database and simulated
// cloud, and changes no package state and no environment, so one test's
// waits on its browser overlap the other's work. Its time limit starts when
// it has a slot.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	return newBrowserFor(t, 3*time.Minute)
}

// newBrowserFor is newBrowser for a test that needs longer than a minute;
// extra options start the browser differently (e.g. without JavaScript).
func newBrowserFor(t *testing.T, within time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed: under CI=true browser tests must run (.ci/run installs Debian's chromium)")
		}
		t.Skip("SKIPPING browser test: install Chromium (apt-get install chromium) or set CHROMIUM_PATH")
	}
	browserSlots <- struct{}{}
	t.Cleanup(func() { <-browserSlots }) // registered first: runs after the browser is closed
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()))
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, within)
	t.Cleanup(func() {
		if t.Failed() {
			shot(t, ctx)
		}
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// shot saves a full-page screenshot next to the failing test's output.
func shot(t *testing.T, ctx context.Context) {
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil || len(buf) == 0 {
		return
	}
	dir := filepath.Join("testdata", "screenshots")
	_ = os.MkdirAll(dir, 0o755)
	name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png")
	if os.WriteFile(name, buf, 0o644) == nil {
		t.Logf("screenshot: web/%s", name)
	}
}

// A filter change on /offers updates the results in place (no full reload)
// and puts the filter in the URL (O3).
func TestBrowserOfferFilterUpdatesInPlace(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	eth := testOffer("eth", "us-east", 8, 2_000_000, intp(10))
	eth.Interconnect = "ethernet"
	app.seedOffers(testOffer("ib", "us-east", 8, 2_490_000, intp(10)), eth)
	srv := httptest.NewServer(app.e)
	defer srv.Close()

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900), // the grid; narrower screens show cards
		chromedp.Navigate(srv.URL+"/offers?accelerator=H100_80GB&nodes=4"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=offer-row]`)),
	); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=offer-row]').length`))
	if err != nil || rows != 2 {
		t.Fatalf("rows before filtering = %d, %v; want 2", rows, err)
	}
	// A marker on window survives only if the page is not reloaded.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__noReload = true, document.body.dataset.mark = "kept", true)`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const s = document.getElementById('interconnect');
		s.value = 'ethernet';
		s.dispatchEvent(new Event('change', {bubbles: true}));
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const rows = document.querySelectorAll('[data-testid=offer-row]');
		return location.search.includes('interconnect=ethernet') && rows.length === 1 &&
			rows[0].dataset.offerId === 'sim:eth';
	})()`, chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil || !ok {
		t.Fatalf("results did not update to the ethernet offer with the URL changed: %v", err)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === true && document.body.dataset.mark === "kept"`))
	if err != nil || !kept {
		t.Fatalf("the page reloaded instead of updating in place (%v)", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "interconnect=ethernet") || !strings.Contains(loc, "nodes=4") {
		t.Errorf("URL = %q, want the filter kept in it", loc)
	}
	// The back button returns to the unfiltered results.
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	ok, err = chromedp.Run(ctx, chromedp.Poll[bool](`!location.search.includes('interconnect=ethernet') &&
		document.querySelectorAll('[data-testid=offer-row]').length === 2`, chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil || !ok {
		t.Errorf("back button did not restore the unfiltered results: %v", err)
	}
}

// clickLive is chromedp.Click for a page that polls (the cluster pages): a
// poll that swaps the element out between finding it and clicking it (the
// node is gone, no click was sent) is not the page refusing the click, so
// it finds the element again, up to five times.
func clickLive(sel string, opts ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var err error
		for range 5 {
			if _, err = chromedp.Click(sel, opts...)(ctx, tg); err == nil || !swappedOut(err) {
				break
			}
		}
		return chromedp.Void{}, err
	}
}

// scrollLive is chromedp.ScrollIntoView for an element a poll may swap out
// between the query and the scroll, found again as clickLive does.
func scrollLive(sel string, opts ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var err error
		for range 5 {
			if _, err = chromedp.ScrollIntoView(sel, opts...)(ctx, tg); err == nil || !swappedOut(err) {
				break
			}
		}
		return chromedp.Void{}, err
	}
}

// swappedOut says err is Chromium's answer about a node that left the
// document between a query and its use.
func swappedOut(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") || strings.Contains(s, "No node with given id") ||
		strings.Contains(s, "Node is detached from document")
}
