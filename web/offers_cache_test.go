package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
)

// O3: the picker's answers are rendered once per answer and served
// again, but never stale. After a refresh (catalog version), a launch that
// holds machines (no catalog write) and the freshness window passing (no
// write at all), the full page, the htmx partial and the API all say so at
// once.
func TestOffersAnswersFollowRefreshHoldsAndTime(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		const path = "offers?accelerator=H100_80GB&nodes=2"
		check := func(step, want string) {
			t.Helper()
			for _, hx := range []string{"", "true"} {
				rec := app.get("/"+path, "HX-Request", hx)
				got := strings.TrimSpace(doc(t, rec).Find(`[data-testid=nodes-available]`).Text())
				// "20 free here — up to 20 machines" (O3's wording).
				shown := got == want || want != "" && strings.HasPrefix(got, want+" here — up to ")
				if rec.Code != http.StatusOK || !shown {
					t.Errorf("%s: /offers (htmx %q) says %q free (%d), want %q", step, hx, got, rec.Code, want)
				}
			}
			var resp api.OffersResponse
			rec := app.get("/v1/gpu/" + path)
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatalf("%s: API: %v %s", step, err, rec.Body)
			}
			got := "none listed"
			if resp.Count == 1 {
				got = "in stock"
				if n := resp.Groups[0].Offers[0].NodesAvailable; n != nil {
					got = strconv.Itoa(*n) + " free"
				}
			}
			if want == "" {
				want = "none listed"
			}
			if got != want {
				t.Errorf("%s: the API says %q, want %q", step, got, want)
			}
		}
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		check("seeded", "20 free")
		check("asked again", "20 free")

		acc := app.signupAccount("cache@example.com", "Cachers")
		if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "test"); err != nil {
			t.Fatal(err)
		}
		q, err := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Actor: acc.user.Email, Workload: models.Workload{Name: "held", Software: "none"}}); err != nil {
			t.Fatal(err)
		}
		check("a launch holds 2", "18 free")

		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(30)))
		check("refreshed to 30, 2 still held", "28 free")

		app.clock.Advance(models.OfferFreshness + time.Second)
		check("past the freshness window", "")
	})
}

// The results show the form as typed, so the typed form is part of the key.
func TestOffersResultsKeyedByTypedForm(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	for _, nodes := range []string{"02", "2"} {
		rec := app.get("/offers?accelerator=H100_80GB&nodes="+nodes, "HX-Request", "true")
		if got := doc(t, rec).Find(`[data-testid=offer-nodes]`).Text(); got != nodes+" machines" {
			t.Errorf("nodes=%s: the summary says %q", nodes, got)
		}
	}
}

// The cache forgets everything once past its budget, and keeps copies.
func TestRenderCacheBudget(t *testing.T) {
	c := newRenderCache(10)
	page := []byte("123456")
	c.put("a", page)
	page[0] = 'x'
	if b, ok := c.get("a"); !ok || string(b) != "123456" {
		t.Fatalf("kept %q %v, want a copy of 123456", b, ok)
	}
	c.put("b", []byte("7890"))
	c.put("c", []byte("12"))
	if _, ok := c.get("a"); ok || c.size != 2 {
		t.Errorf("past the budget: a still kept (size %d)", c.size)
	}
	if b, ok := c.get("c"); !ok || string(b) != "12" {
		t.Errorf("the newest entry is lost: %q", b)
	}
	c.put("huge", make([]byte, 11))
	if _, ok := c.get("huge"); ok {
		t.Error("an entry larger than the budget was kept")
	}
}

// Only the public answer is kept: a signed-in page or an API key's answer
// may come to carry what is its organisation's own (private offers, X9),
// which the stamp does not cover, so it is rendered each time and never
// served to anybody else.
func TestOffersKeepOnlyThePublicAnswer(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	var h *handler
	app.e, h = newServer(Deps{
		Config: Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  app.store, FakeClock: app.clock, Static: static.FS, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	acc := app.signupAccount("own@example.com", "Owners")
	kept := func() int { h.renders.mu.Lock(); defer h.renders.mu.Unlock(); return len(h.renders.m) }

	const path = "/offers?accelerator=H100_80GB&nodes=2"
	for _, hx := range []string{"", "true"} {
		if rec := app.login(acc).get(path, "HX-Request", hx); rec.Code != http.StatusOK {
			t.Fatalf("signed in: %d", rec.Code)
		}
	}
	if rec := app.apiGet("/v1/gpu"+path, apiKeyFor(t, app, acc)); rec.Code != http.StatusOK {
		t.Fatalf("API with a key: %d %s", rec.Code, rec.Body)
	}
	if n := kept(); n != 0 {
		t.Errorf("signed-in and API-key answers were kept (%d)", n)
	}
	app.get(path)
	app.get("/v1/gpu" + path)
	if n := kept(); n != 2 {
		t.Errorf("public answers kept: %d, want the page's results and the JSON", n)
	}
}

// OP2: a markup set on the providers page reaches, at once, every
// picker answer: the public page, partial and API (which are kept), and the
// signed-in page and API key (which are not).
func TestOffersAnswersFollowMarkup(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_000_000, intp(20)))
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		cc, tok := app.login(cust), apiKeyFor(t, app, cust)
		const path = "offers?accelerator=H100_80GB&nodes=2"
		check := func(step string, cluster models.Money) {
			t.Helper()
			page := models.PriceUSD(cluster) // exact, as the API (O3)
			for _, get := range []func(string, ...string) *httptest.ResponseRecorder{app.get, cc.get} {
				for _, hx := range []string{"", "true"} {
					got := doc(t, get("/"+path, "HX-Request", hx)).Find(`[data-testid=cluster-price]`).Text()
					if got != page {
						t.Errorf("%s: /offers (htmx %q) shows %q, want %s", step, hx, got, page)
					}
				}
			}
			_, keyed := apiJSON(t, app, http.MethodGet, "/v1/gpu/"+path, tok, "")
			var public map[string]any
			if err := json.Unmarshal(app.get("/v1/gpu/"+path).Body.Bytes(), &public); err != nil {
				t.Fatal(err)
			}
			for who, resp := range map[string]map[string]any{"public": public, "API key": keyed} {
				groups, _ := resp["groups"].([]any)
				if len(groups) != 1 {
					t.Fatalf("%s: the API (%s) says %v", step, who, resp)
				}
				o := groups[0].(map[string]any)["offers"].([]any)[0].(map[string]any)
				if o["usdPerHour"] != models.DecimalUSD(cluster) {
					t.Errorf("%s: the API (%s) says %v, want %s", step, who, o["usdPerHour"], models.DecimalUSD(cluster))
				}
			}
		}
		check("no markup", 2*(8*2_000_000+500*100))
		check("asked again", 2*(8*2_000_000+500*100))
		if rec := oc.post("/admin/providers/sim/markup", url.Values{"markup": {"12.5"}}); rec.Code >= 400 {
			t.Fatalf("set markup: %d", rec.Code)
		}
		check("12.5 %", 2*(8*2_250_000+500*113))
	})
}
