package web

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// X16: a stock client of the event stream, Chromium's EventSource with
// nothing but onmessage, gets every event of the feed in order, with its
// public type in the data; and the stream names each event by its type
// for addEventListener clients when asked with named=true.
func TestBrowserEventSourceOnMessage(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(func() { // end the page's streams, then the server
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.es && (es.close(), ns.close()), true`))
		srv.CloseClientConnections()
		srv.Close()
	})
	bg := context.Background()
	acc := app.signupAccount("onmessage@example.com", "Listeners")
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(acc)

	cl := launchFor(t, app, acc, "heard")
	js := `window.plain = []; window.named = [];
		window.es = new EventSource('/v1/events');
		es.onmessage = e => window.plain.push(JSON.parse(e.data).type);
		window.ns = new EventSource('/v1/events?named=true');
		ns.onmessage = e => window.named.push('message');`
	for _, typ := range models.FeedEventTypes {
		js += `ns.addEventListener(` + jsString(typ) + `, e => window.named.push(e.type));`
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js+`true`)); err != nil {
		t.Fatal(err)
	}
	makeJoined(t, app, cl, false)
	if _, err := app.store.RequestTerminate(bg, acc.org.ID, cl.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.MarkTerminated(bg, cl.ID); err != nil {
		t.Fatal(err)
	}
	stored, err := app.store.EventsFor(bg, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want, wantNamed []string
	for _, e := range stored {
		want = append(want, models.PublicEventType(e))
		if typ := models.PublicEventType(e); typ != "" {
			wantNamed = append(wantNamed, typ)
		}
	}
	b.wait("every event through onmessage", `window.plain.length === `+strconv.Itoa(len(want)))
	plain, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.plain`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plain, want) {
		t.Errorf("onmessage got %q, want %q", plain, want)
	}
	b.wait("every typed event through addEventListener", `window.named.filter(n => n !== 'message').length === `+strconv.Itoa(len(wantNamed)))
	named, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.named.filter(n => n !== 'message')`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(named, wantNamed) || !slices.Contains(wantNamed, models.TypeClusterReady) {
		t.Errorf("named listeners got %q, want %q", named, wantNamed)
	}
}
