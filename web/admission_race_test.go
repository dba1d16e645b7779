package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// apiOver calls the API over a real connection to srv and decodes the answer.
func apiOver(hc *http.Client, srv *httptest.Server, path, token, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	return resp.StatusCode, out, json.NewDecoder(resp.Body).Decode(&out)
}

// launcher is one organisation launching over the API with quotes it
// locked beforehand (so every launch races in the launch transaction).
type launcher struct {
	token  string
	quotes []string
}

func newLauncher(t *testing.T, app *testApp, email string, deposit models.Money, quotes int, shapes ...string) launcher {
	t.Helper()
	acc := app.signupAccount(email, "Org "+email)
	if _, err := app.store.SetOrgQuota(context.Background(), acc.org.ID, 1000, 10_000); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.Deposit(context.Background(), acc.org.ID, deposit, "dep:"+acc.org.ID, "test"); err != nil {
		t.Fatal(err)
	}
	l := launcher{token: apiKeyFor(t, app, acc)}
	for i := range quotes {
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", l.token, shapes[i%len(shapes)])
		if code != http.StatusCreated {
			t.Fatalf("quote: %d %v", code, q)
		}
		l.quotes = append(l.quotes, q["id"].(string))
	}
	return l
}

// answer is one launch's status and error body.
type answer struct {
	code int
	body map[string]any
}

// launchAll fires one launch per quote of every launcher at once over real
// HTTP against the real router, alternately on app and on a second instance
// with its own connection pool on the same database (OP4; on PostgreSQL).
func launchAll(t *testing.T, app *testApp, ls []launcher) []answer {
	t.Helper()
	srvs := []*httptest.Server{httptest.NewServer(app.e),
		httptest.NewServer(newTestApp(t, modelstest.SecondInstance(t, app.db)).e)}
	for _, srv := range srvs {
		defer srv.Close()
	}
	hc := srvs[0].Client()
	var jobs []struct{ token, quote string }
	for _, l := range ls {
		for _, q := range l.quotes {
			jobs = append(jobs, struct{ token, quote string }{l.token, q})
		}
	}
	out := make([]answer, len(jobs))
	errs := make([]error, len(jobs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := fmt.Sprintf(`{"quoteId":%q,"name":"race-%d"}`, j.quote, i)
			out[i].code, out[i].body, errs[i] = apiOver(hc, srvs[i%2], "/v1/gpu/clusters", j.token, body)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("launch %d: %v", i, err)
		}
	}
	return out
}

// tally counts answers by status and error code ("created" for 201).
func tally(as []answer) map[string]int {
	n := map[string]int{}
	for _, a := range as {
		key := errCode(a.body)
		if a.code == http.StatusCreated {
			key = "created"
		}
		n[fmt.Sprintf("%d %s", a.code, key)]++
	}
	return n
}

// L2: counted stock is held by the launch transaction. 100
// launches from five organisations at once against an offer with room for
// ten 2-machine clusters, spread over two instances: exactly 10 are
// accepted and 90 answer 409 no_capacity at once, and the clusters hold exactly the 20 machines. Three
// launches in a row against 2 free machines: the first starts, the others
// are refused the same way.
func TestConcurrentLaunchesNeverOversellStock(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)),
			testOffer("h100x8-eu", "eu-west", 8, 2_490_000, intp(2)))
		ctx := context.Background()

		eu := newLauncher(t, app, "seq@example.com", 1000*models.Micro, 3, `{"offerId":"sim:h100x8-eu","nodes":2,"gpusPerNode":8,"accelerator":"H100_80GB"}`)
		for i, q := range eu.quotes {
			code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", eu.token, fmt.Sprintf(`{"quoteId":%q}`, q))
			e, _ := body["error"].(map[string]any)
			switch {
			case i == 0 && code != http.StatusCreated:
				t.Fatalf("first launch on 2 free machines: %d %v", code, body)
			case i > 0 && (code != http.StatusConflict || e["code"] != "no_capacity" || e["reason"] != "not_in_stock" || e["nodes_available"] != 0.0):
				t.Errorf("launch %d on 2 free machines: %d %v", i+1, code, body)
			}
		}

		var ls []launcher
		for i := range 5 {
			ls = append(ls, newLauncher(t, app, fmt.Sprintf("race%d@example.com", i), 10_000*models.Micro, 20,
				`{"offerId":"sim:h100x8","nodes":2,"gpusPerNode":8,"accelerator":"H100_80GB"}`))
		}
		got := tally(launchAll(t, app, ls))
		if got["201 created"] != 10 || got["409 no_capacity"] != 90 || len(got) != 2 {
			t.Errorf("100 concurrent launches for room for 10: %v, want 10 created and 90 409 no_capacity", got)
		}
		var held int64
		app.db.Model(&models.Cluster{}).Where("offer_id = ?", "sim:h100x8").Select("COALESCE(SUM(nodes), 0)").Scan(&held)
		if held != 20 {
			t.Errorf("clusters on the offer hold %d machines of 20", held)
		}
		groups, err := app.store.PickOffers(ctx, models.OfferFilter{Accelerator: "H100_80GB", Nodes: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			for _, o := range g.Offers {
				if *o.NodesAvailable != 0 || o.SellFor(2) != models.NotInStock {
					t.Errorf("the picker still sells %s: %d free", o.ID, *o.NodesAvailable)
				}
			}
		}
	})
}

// L2: a launch is admitted only if the balance less one hour of
// every live cluster covers one hour of the new one and at least $10,
// decided under the organisation's lock. Four organisations with $100 each
// launch 30 $8.10/h clusters each, all 120 at once on two instances: in each
// exactly 12 start (the 12th leaves $10.90 before it, the 13th would have
// $2.80), the others answer 402 with the shortfall and the top-up link, and
// what runs never exceeds the balance.
func TestConcurrentLaunchesCannotOverdraw(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		// Three offers (yes/no stock, not counted), so the launches do not
		// queue on one offer's row: only the organisation's lock orders them.
		var offers []models.Offer
		var shapes []string
		for _, loc := range []string{"us-east", "eu-west", "ap-south"} {
			o := testOffer("l40s-"+loc, loc, 1, 4_000_000, nil)
			o.Accelerator = "L40S"
			offers = append(offers, o)
			shapes = append(shapes, `{"accelerator":"L40S","nodes":2,"gpusPerNode":1,"offerId":"sim:l40s-`+loc+`"}`)
		}
		app.seedOffers(offers...)
		const orgs, each = 4, 30
		var ls []launcher
		for i := range orgs {
			ls = append(ls, newLauncher(t, app, fmt.Sprintf("burn%d@example.com", i), 100*models.Micro, each, shapes...))
		}
		answers := launchAll(t, app, ls)
		for i := range orgs {
			mine := answers[i*each : (i+1)*each]
			if got := tally(mine); got["201 created"] != 12 || got["402 insufficient_balance"] != 18 || len(got) != 2 {
				t.Errorf("org %d: 30 concurrent $8.10/h launches on $100: %v, want 12 created and 18 402 insufficient_balance", i, got)
			}
		}
		for _, a := range answers {
			e, _ := a.body["error"].(map[string]any)
			if a.code == http.StatusPaymentRequired && (e["committed"] != "97.20" || e["shortfall"] != "7.20" ||
				e["topUpUrl"] != "/billing" || !strings.Contains(e["message"].(string), "Add $7.20 at /billing")) {
				t.Errorf("refusal: %v", e)
				break
			}
		}
		var burn models.Money
		app.db.Model(&models.Cluster{}).Select("COALESCE(SUM(usd_per_hour), 0)").Scan(&burn)
		if burn != orgs*97_200_000 {
			t.Errorf("clusters burn %s/h on four $100 balances, want 4 × $97.20", models.USD(burn))
		}
	})
}

// The launch page says the same: a form whose offer ran out answers 409 with
// what can start now, and a balance that cannot cover it links to the top-up.
func TestLaunchPageRefusals(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8-eu", "eu-west", 8, 2_490_000, intp(3)),
			testOffer("h100x8", "us-east", 8, 2_600_000, intp(20)))
		acc := app.signupAccount("page@example.com", "Pagers")
		app.store.Deposit(context.Background(), acc.org.ID, 70*models.Micro, "dep", "test")
		c := app.login(acc)
		forms := make([]url.Values, 2)
		for i := range forms {
			d := doc(t, c.get("/clusters/new?offer=sim:h100x8-eu&nodes=2"))
			forms[i] = url.Values{"quote_id": {d.Find(`input[name=quote_id]`).AttrOr("value", "")},
				"form_token": {d.Find(`input[name=form_token]`).AttrOr("value", "")},
				"name":       {fmt.Sprintf("train-%d", i)}, "software": {"none"}}
		}
		if rec := c.post("/clusters", forms[0]); rec.Code != http.StatusSeeOther {
			t.Fatalf("first launch: %d", rec.Code)
		}
		rec := c.post("/clusters", forms[1])
		d := doc(t, rec)
		if rec.Code != http.StatusConflict || !strings.Contains(d.Find(`[data-testid=problem-quote]`).Text(), "has 1 machines free now") {
			t.Fatalf("second launch on the 3-machine offer: %d %s", rec.Code, d.Find(`[data-testid=problem-quote]`).Text())
		}
		alt := d.Find(`[data-testid=alternatives]`)
		if !strings.Contains(alt.Text(), "Loc us-east") || alt.Find(`a[href="/clusters/new?nodes=2&offer=sim%3Ah100x8"]`).Length() != 1 ||
			alt.Find(`a[href^="/offers?"]`).Length() != 1 {
			t.Errorf("what can start now: %s", alt.Text())
		}

		// $70 less the $39.94/h starting cannot cover a $41.70/h cluster.
		d = doc(t, c.get("/clusters/new?offer=sim:h100x8&nodes=2"))
		if got := d.Find(`[data-testid=committed]`).Text(); got != "$39.94/h" {
			t.Errorf("running and starting: %q", got)
		}
		short := d.Find(`[data-testid=shortfall]`)
		if !strings.Contains(short.Text(), "Add $11.64.") || short.Find(`a[href^="/billing?back="]`).Length() != 1 { // L2: it keeps the quote
			t.Errorf("shortfall: %q", short.Text())
		}
	})
}
