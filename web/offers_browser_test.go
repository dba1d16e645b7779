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

// comparisonCatalog is a picker worth comparing (O3, "Comparing
// offers"): counted and uncounted locations, one with too few free for 4
// machines, a community host with a long name, sub-cent disk rates, and a
// 4-GPU machine the default size leaves out.
func comparisonCatalog() []models.Offer {
	at := func(o models.Offer, name string, disk models.Money, gb int) models.Offer {
		o.LocationName, o.DiskGBHour, o.RootDiskGB = name, disk, gb
		return o
	}
	ashburn := at(testOffer("ash.8x.ib", "us-east-1", 8, 2_490_000, intp(12)), "Ashburn, VA, US", 200, 2000)
	ashburn.MachineKind = "bare_metal"
	ashEth := at(testOffer("ash.8x.eth", "us-east-1", 8, 2_190_000, intp(3)), "Ashburn, VA, US", 137, 500)
	ashEth.Interconnect = "ethernet"
	ash4 := at(testOffer("ash.4x.roce", "us-east-1", 4, 2_290_000, intp(10)), "Ashburn, VA, US", 150, 500)
	ash4.Interconnect = "roce"
	// Cheaper GPUs than Ashburn's, dearer disk: last of the two by cluster
	// price, first by $/GPU-h.
	hillsboro := at(testOffer("hil.8x.ib", "us-west-1", 8, 2_390_000, nil), "Hillsboro, OR, US", 1000, 2000)
	hillsboro.MachineKind = "bare_metal"
	frankfurt := at(testOffer("fra.8x.ib", "eu-central-1", 8, 2_690_000, intp(8)), "Frankfurt, DE", 200, 2000)
	community := at(testOffer("lis.8x.eth", "pt-community-7", 8, 1_490_000, intp(20)),
		"Lisbon, PT — community host rack 7, basement, fibre uplink", 110, 1000)
	community.Community, community.Interconnect, community.MachineKind = true, "ethernet", "container"
	return []models.Offer{ashburn, ashEth, ash4, hillsboro, frankfurt, community}
}

// The picker compares offers (O3, O4, O7) in a real browser, at a
// desktop's and a phone's width, with community hosts included: the default
// machine size is the largest (8 GPUs); the summary counts what can start
// and what needs a quote; rows that can start come first, cheapest cluster
// first, and every one shows $/GPU-h, $/machine-h and $/cluster-h with the
// cluster's = the machine's × 4 as shown; the grid's columns line up across
// locations and the community badge never pushes Launch off; the size
// legend is there. Sorting by $/GPU-h swaps the results in place, puts the
// sort in the URL, and a reload of that URL keeps it. A phone shows cards
// with the price and Launch on screen and the rows needing a quote folded.
// Screenshots of both widths are saved as artefacts.
func TestBrowserOffersSortedAndLabelled(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestApp(t, openSQLite(t))
	app.seedOffers(comparisonCatalog()...)
	srv := httptest.NewServer(app.e)
	defer srv.Close()
	const path = "/offers?accelerator=H100_80GB&nodes=4&include_community=true"

	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	// rowOrder is the grid's visible rows, in order.
	const rowOrder = `[...document.querySelectorAll('[data-testid=offer-grid] [data-testid=offer-row]')].map(r => r.dataset.offerId).join(',')`

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+path),
		chromedp.WaitVisible(`[data-testid=offer-grid]`),
	); err != nil {
		t.Fatal(err)
	}
	gpus := evalJS[string](t, ctx, "the GPUs per machine", `document.getElementById('gpus_per_node').value`)
	summary := evalJS[string](t, ctx, "the summary", `document.querySelector('[data-testid=offer-summary]').innerText.replace(/\s+/g, ' ').trim()`)
	order := evalJS[string](t, ctx, "the rows", rowOrder)
	if gpus != "8" {
		t.Errorf("GPUs per machine defaults to %q, want 8 (the largest machine on offer)", gpus)
	}
	if summary != "4 can start now · 1 needs a quote" {
		t.Errorf("summary = %q, want \"4 can start now · 1 needs a quote\"", summary)
	}
	// By cluster price at 4: Lisbon $48.12, Ashburn IB $81.28, Hillsboro
	// $84.48, Frankfurt $87.68; Ashburn ethernet (3 free) needs a quote.
	byCluster := "sim:lis.8x.eth,sim:ash.8x.ib,sim:hil.8x.ib,sim:fra.8x.ib,sim:ash.8x.eth"
	if order != byCluster {
		t.Errorf("rows = %s, want %s", order, byCluster)
	}
	problems := evalJS[[]string](t, ctx, "the grid's figures and geometry", `(() => {
		const out = [], grid = document.querySelector('[data-testid=offer-grid]').getBoundingClientRect();
		const money = s => Math.round(parseFloat(s.replace(/[$,]/g, '')) * 1e6);
		const rows = [...document.querySelectorAll('[data-testid=offer-grid] [data-testid=offer-row]')];
		const lefts = new Set();
		for (const r of rows) {
			const cell = k => r.querySelector('[data-testid=' + k + ']');
			for (const k of ['gpu-price', 'machine-price', 'cluster-price', 'nodes-available']) {
				if (!cell(k) || !cell(k).innerText.trim()) out.push(r.dataset.offerId + ' has no ' + k);
			}
			if (money(cell('cluster-price').innerText) !== 4 * money(cell('machine-price').innerText)) {
				out.push(r.dataset.offerId + ': cluster ' + cell('cluster-price').innerText + ' is not 4 × ' + cell('machine-price').innerText);
			}
			const action = r.querySelector('[data-testid=launch-link], [data-testid=quote-link]').getBoundingClientRect();
			if (action.right > grid.right + 0.5 || action.right > innerWidth) out.push(r.dataset.offerId + ': the action sticks out at ' + action.right);
			if (action.left < r.cells[4].getBoundingClientRect().right - 0.5) out.push(r.dataset.offerId + ': the action overlaps the sizes');
			lefts.add([...r.cells].map(c => Math.round(c.getBoundingClientRect().left)).join(' '));
		}
		if (lefts.size !== 1) out.push('columns differ between rows: ' + [...lefts].join(' | '));
		const badge = document.querySelector('[data-testid=offer-grid] [data-testid=community-warning]');
		if (!badge) out.push('no community badge');
		else if (badge.getBoundingClientRect().right > badge.closest('td').getBoundingClientRect().right + 0.5) out.push('the community badge leaves its column');
		if (!document.querySelector('[data-testid=size-legend]').checkVisibility()) out.push('no size legend');
		const style = e => getComputedStyle(e);
		const reserved = document.querySelector('[data-offer-id="sim:hil.8x.ib"] span.chip-reserved');
		const noStock = document.querySelector('[data-offer-id="sim:ash.8x.eth"] span.chip-out');
		if (!reserved || !noStock) out.push('missing reserved-ahead or not-in-stock chips');
		else if (style(reserved).borderTopStyle !== 'dashed' || style(reserved).textDecorationLine === 'line-through' ||
			style(noStock).textDecorationLine !== 'line-through' || style(noStock).borderTopStyle === 'dashed') out.push('reserved ahead (dashed) and not in stock (struck) are not told apart');
		const dimmed = document.querySelector('[data-offer-id="sim:ash.8x.eth"]');
		if (style(dimmed).backgroundColor === style(document.querySelector('[data-offer-id="sim:ash.8x.ib"]')).backgroundColor) out.push('the row needing a quote is not dimmed');
		if (document.documentElement.scrollWidth > innerWidth) out.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
		return out;
	})()`)
	for _, p := range problems {
		t.Error(p)
	}
	wording := evalJS[string](t, ctx, "the wording", `['sim:hil.8x.ib', 'sim:ash.8x.ib', 'sim:ash.8x.eth'].map(id =>
		document.querySelector('[data-offer-id="' + id + '"] [data-testid=nodes-available]').innerText).join(' | ')`)
	if want := "in stock — up to 8 machines; available on request above 8 | 12 free here — up to 12 machines | 3 free here — up to 3 machines"; wording != want {
		t.Errorf("availability reads %q, want %q", wording, want)
	}
	saveScreenshot(t, ctx, "offers-compare", 1440)

	// Sort by $/GPU-h: in place (no reload), into the URL.
	evalJS[bool](t, ctx, "marking the page", `(window.__noReload = true)`)
	evalJS[bool](t, ctx, "choosing $/GPU-h", `(() => { const s = document.getElementById('sort'); s.value = 'gpu_price';
		s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
	// Per GPU-hour: Lisbon $1.49, Hillsboro $2.39, Ashburn IB $2.49, Frankfurt $2.69.
	byGPU := "sim:lis.8x.eth,sim:hil.8x.ib,sim:ash.8x.ib,sim:fra.8x.ib,sim:ash.8x.eth"
	poll("the $/GPU-h order in the URL", `location.search.includes('sort=gpu_price') && location.search.includes('gpus_per_node=8') &&
		document.querySelector('[data-testid=offer-summary]').nextElementSibling.innerText.includes('lowest price per GPU-hour first')`)
	if order = evalJS[string](t, ctx, "the rows", rowOrder); order != byGPU {
		t.Errorf("rows by $/GPU-h = %s, want %s", order, byGPU)
	}
	if !evalJS[bool](t, ctx, "the marker", `window.__noReload === true`) {
		t.Error("sorting reloaded the page instead of swapping the results")
	}
	// The sort is in the URL: a reload (or a shared link) keeps it.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`[data-testid=offer-grid]`)); err != nil {
		t.Fatal(err)
	}
	if sortValue := evalJS[string](t, ctx, "the sort after a reload", `document.getElementById('sort').value`); sortValue != "gpu_price" {
		t.Errorf("after a reload the sort reads %q, want gpu_price", sortValue)
	}
	saveScreenshot(t, ctx, "offers-by-gpu-price", 1440)
	// Another filter keeps the sort: the sort control belongs to the
	// filters' form, so the form's request carries it.
	evalJS[bool](t, ctx, "choosing InfiniBand", `(() => { const s = document.getElementById('interconnect'); s.value = 'infiniband';
		s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
	poll("InfiniBand, still by $/GPU-h", `location.search.includes('interconnect=infiniband') && location.search.includes('sort=gpu_price') &&
		[...document.querySelectorAll('[data-testid=offer-grid] [data-testid=offer-row]')].map(r => r.dataset.offerId).join(',') ===
		'sim:hil.8x.ib,sim:ash.8x.ib,sim:fra.8x.ib'`)

	// A phone: cards, price and Launch on screen, quotes folded.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(srv.URL+path),
		chromedp.WaitVisible(`[data-testid=offer-card-list]`),
	); err != nil {
		t.Fatal(err)
	}
	problems = evalJS[[]string](t, ctx, "the phone's cards", `(() => {
		const out = [], on = e => { if (!e || !e.checkVisibility()) return false;
			const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= innerWidth; };
		const cards = [...document.querySelectorAll('[data-testid=card-group] [data-testid=offer-card]')];
		if (cards.map(c => c.dataset.cardOfferId).join(',') !== 'sim:lis.8x.eth,sim:ash.8x.ib,sim:hil.8x.ib,sim:fra.8x.ib') out.push('cards that can start: ' + cards.map(c => c.dataset.cardOfferId));
		for (const c of cards) for (const k of ['card-cluster-price', 'card-machine-price', 'card-gpu-price', 'card-launch-link']) {
			if (!on(c.querySelector('[data-testid=' + k + ']'))) out.push(c.dataset.cardOfferId + ': ' + k + ' not on screen');
		}
		const fold = document.querySelector('[data-testid=needs-quote-cards]');
		if (!fold || fold.open) out.push('the offers needing a quote are not folded');
		if (on(document.querySelector('[data-testid=offer-grid]'))) out.push('the grid shows on a phone');
		if (document.documentElement.scrollWidth > innerWidth) out.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
		return out;
	})()`)
	for _, p := range problems {
		t.Error("phone: " + p)
	}
	saveScreenshot(t, ctx, "offers-compare", 390)
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=needs-quote-cards] summary`)); err != nil {
		t.Fatal(err)
	}
	quoteOnScreen := evalJS[bool](t, ctx, "the unfolded quote card", `(() => { const e = document.querySelector('[data-card-offer-id="sim:ash.8x.eth"] [data-testid=card-quote-link]');
		return !!e && e.checkVisibility() && e.getBoundingClientRect().right <= innerWidth; })()`)
	if !quoteOnScreen {
		t.Error("phone: unfolded, the offer needing a quote shows no Request a quote on screen")
	}
	saveScreenshot(t, ctx, "offers-needs-quote-open", 390)
}

// evalJS evaluates js in the page and fails the test when it cannot.
func evalJS[T any](t *testing.T, ctx context.Context, what, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Without JavaScript the sort still works (O3): the sort control
// belongs to the filters' form, a Sort button shows (noscript), and
// submitting it loads the page sorted with every filter kept in the URL.
func TestBrowserOffersSortWithoutJavaScript(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, time.Minute, chromedp.Flag("blink-settings", "scriptEnabled=false"))
	app := newTestApp(t, openSQLite(t))
	app.seedOffers(comparisonCatalog()...)
	srv := httptest.NewServer(app.e)
	defer srv.Close()

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+"/offers?accelerator=H100_80GB&nodes=4&include_community=true"),
		chromedp.WaitVisible(`[data-testid=sort-submit]`), // shown only without scripts
		chromedp.SendKeys(`#sort`, "$"),                   // "$/GPU-h", as a keyboard chooses
		chromedp.Click(`[data-testid=sort-submit]`),
	); err != nil {
		t.Fatal(err)
	}
	// The old page's grid is visible until the submitted form's page
	// replaces it: wait for the new page's URL, then for its grid.
	var loc string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if loc, err = chromedp.Run(ctx, chromedp.Location()); err == nil && strings.Contains(loc, "sort=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sort button loaded no sorted page: still at %s (%v)", loc, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`[data-testid=offer-grid]`)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sort=gpu_price", "gpus_per_node=8", "include_community=true", "nodes=4"} {
		if !strings.Contains(loc, want) {
			t.Errorf("after Sort the URL is %s, want %s in it", loc, want)
		}
	}
	if order := evalJS[string](t, ctx, "the rows", `[...document.querySelectorAll('[data-testid=offer-grid] [data-testid=offer-row]')].map(r => r.dataset.offerId).join(',')`); order != "sim:lis.8x.eth,sim:hil.8x.ib,sim:ash.8x.ib,sim:fra.8x.ib,sim:ash.8x.eth" {
		t.Errorf("rows without JavaScript, by $/GPU-h: %s", order)
	}
	if ran := evalJS[bool](t, ctx, "htmx", `typeof htmx !== 'undefined'`); ran {
		t.Fatal("the page's scripts ran: this test must run without JavaScript")
	}
}
