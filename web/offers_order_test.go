package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// orderCatalog is a catalog a naive grouping shows out of order (O3): by
// $/GPU-h us-east lists $2.19, $2.19, $2.49, then us-west's $2.29; among
// the offers that cannot start 2 machines, zz-south's $2.10 is the best and
// us-east's $4.00 the worst, while location names and the startable
// groups' order say the opposite.
func orderCatalog(app *testApp) {
	app.seedOffers(
		testOffer("a1", "us-east", 8, 2_190_000, intp(10)), testOffer("a2", "us-east", 8, 2_190_000, intp(10)),
		testOffer("a3", "us-east", 8, 2_490_000, intp(10)), testOffer("a4", "us-east", 8, 4_000_000, intp(0)),
		testOffer("b1", "us-west", 8, 2_290_000, intp(10)),
		testOffer("c1", "aa-north", 8, 3_500_000, intp(0)),
		testOffer("d1", "zz-south", 8, 2_100_000, intp(1)),
	)
}

const (
	orderPath      = "/offers?accelerator=H100_80GB&nodes=2&gpus_per_node=8&sort=gpu_price"
	orderStartable = "a1,a2,a3,b1"
	orderQuotes    = "d1,c1,a4"
	orderSentence  = "locations ordered by the lowest price per GPU-hour each has, and inside each location lowest price per GPU-hour first"
)

// O3: the order named is the order shown — with several locations the
// sentence says locations go by their best row and rows by price inside
// each; "Needs a quote" is sorted the same way, by each location's best
// row there, in the grid and the cards.
func TestOffersOrderNamedIsShown(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		orderCatalog(app)
		d := doc(t, app.get(orderPath))
		if got := strings.TrimSpace(d.Find(`[data-testid=sort-line]`).Text()); got != orderSentence {
			t.Errorf("the order is named %q, want %q", got, orderSentence)
		}
		for _, where := range []string{`[data-testid=offer-grid] [data-testid=offer-group] [data-testid=offer-row]`, `[data-testid=card-group] [data-testid=offer-card]`} {
			if got := rowIDs(d, where); got != orderStartable {
				t.Errorf("%s: %s, want %s", where, got, orderStartable)
			}
		}
		for _, where := range []string{`[data-testid=offer-grid] [data-testid=quote-group] [data-testid=offer-row]`, `[data-testid=needs-quote-cards] [data-testid=offer-card]`} {
			if got := rowIDs(d, where); got != orderQuotes {
				t.Errorf("%s: %s, want %s", where, got, orderQuotes)
			}
		}
		// One location is one list: the plain sentence.
		d = doc(t, app.get(orderPath+"&max_price=34"))
		if got := strings.TrimSpace(d.Find(`[data-testid=sort-line]`).Text()); got != "lowest price per GPU-hour first" || rowIDs(d, `[data-testid=offer-grid] [data-testid=offer-row]`) != "d1" {
			t.Errorf("one location: %q, rows %s", got, rowIDs(d, `[data-testid=offer-grid] [data-testid=offer-row]`))
		}
	})
}

// O3 in a real browser at 390 px (cards) and 1440 px (the grid): the rows
// on screen follow the sentence above them — locations by their cheapest
// $/GPU-h, rows by $/GPU-h inside each — and "Needs a quote" unfolded is in
// order too.
func TestBrowserOffersOrderNamedIsShown(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	orderCatalog(app)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	b := browserSession{t: t, ctx: ctx, srv: srv}
	perGPU := map[string]models.Money{}
	for _, o := range []string{"a1", "a2", "a3", "a4", "b1", "c1", "d1"} {
		perGPU["sim:"+o] = map[string]models.Money{"a1": 2_190_000, "a2": 2_190_000, "a3": 2_490_000, "a4": 4_000_000, "b1": 2_290_000, "c1": 3_500_000, "d1": 2_100_000}[o]
	}
	for _, w := range screenWidths {
		group, row, quotes := `[data-testid=offer-group]`, `[data-testid=offer-row]`, `[data-testid=quote-group]`
		if w == 390 {
			group, row, quotes = `[data-testid=card-group]`, `[data-testid=offer-card]`, `[data-testid=quote-card-group]`
		}
		b.do(chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+orderPath), chromedp.WaitVisible(group))
		if w == 390 {
			b.do(chromedp.Click(`[data-testid=needs-quote-cards] summary`))
		}
		if got := b.str(`document.querySelector('[data-testid=sort-line]').innerText`); got != orderSentence {
			t.Errorf("at %d px the order is named %q", w, got)
		}
		// The visible rows, location by location, as the reader sees them.
		seen := func(groupSel string) [][]string {
			t.Helper()
			raw := b.str(`[...document.querySelectorAll(` + jsString(groupSel) + `)].filter(g => g.checkVisibility())
				.map(g => [...g.querySelectorAll(` + jsString(row) + `)].map(r => r.dataset.offerId || r.dataset.cardOfferId).join(',')).join(';')`)
			var out [][]string
			for _, g := range strings.Split(raw, ";") {
				out = append(out, strings.Split(g, ","))
			}
			return out
		}
		check := func(what string, groups [][]string, want string) {
			t.Helper()
			var flat []string
			for i, g := range groups {
				for k := 1; k < len(g); k++ {
					if perGPU[g[k]] < perGPU[g[k-1]] {
						t.Errorf("at %d px %s: %s after %s inside a location", w, what, g[k], g[k-1])
					}
				}
				if i > 0 && perGPU[g[0]] < perGPU[groups[i-1][0]] {
					t.Errorf("at %d px %s: location of %s after the one of %s, though cheaper", w, what, g[0], groups[i-1][0])
				}
				for _, id := range g {
					flat = append(flat, strings.TrimPrefix(id, "sim:"))
				}
			}
			if got := strings.Join(flat, ","); got != want {
				t.Errorf("at %d px %s: %s, want %s", w, what, got, want)
			}
		}
		check("the offers that can start", seen(group), orderStartable)
		check("Needs a quote", seen(quotes), orderQuotes)
		if over := b.str(`String(document.documentElement.scrollWidth > window.innerWidth)`); over != "false" {
			t.Errorf("at %d px the page overflows", w)
		}
		saveScreenshot(t, ctx, "offers-order", w)
	}
}
