package web

import (
	"encoding/json"
	"github.com/PuerkitoBio/goquery"
	"net/http"
	"strings"
	"testing"
)

func TestOffersPageFullAndPartial(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		cheap := testOffer("cheap", "eu-west", 8, 2_000_000, intp(3))
		community := testOffer("comm", "home", 8, 500_000, intp(10))
		community.Community = true
		app.seedOffers(
			testOffer("big", "us-east", 8, 2_490_000, nil),
			cheap, community,
		)

		full := app.get("/offers?accelerator=H100_80GB&nodes=4")
		if full.Code != http.StatusOK {
			t.Fatalf("status %d\n%s", full.Code, full.Body)
		}
		if !strings.HasPrefix(strings.ToLower(full.Body.String()), "<!doctype html>") {
			t.Error("full page is not a document")
		}
		if got := strings.Join(full.Header().Values("Vary"), ","); !strings.Contains(got, "HX-Request") {
			t.Errorf("Vary = %q, want HX-Request", got)
		}
		d := doc(t, full)
		// O3: grouped by location at the node count; what can start first,
		// what needs a quote under it (issue 13).
		groupsOf := func(d *goquery.Document, testid string) string {
			var locs []string
			d.Find(`[data-testid=offer-grid] [data-testid=` + testid + `]`).Each(func(_ int, s *goquery.Selection) {
				locs = append(locs, s.AttrOr("data-location", "")+"@"+s.AttrOr("data-nodes", ""))
			})
			return strings.Join(locs, ",")
		}
		if got, quote := groupsOf(d, "offer-group"), groupsOf(d, "quote-group"); got != "us-east@4" || quote != "eu-west@4" {
			t.Errorf("groups = %q, needing a quote %q; want us-east@4, then eu-west@4 (it cannot sell 4)", got, quote)
		}
		row := d.Find(`#offer-sim\:big`)
		// Whole cluster price, machine price and per-GPU rate: 4 × (8 × 2.49 + 500 × 0.0001).
		if got := row.Find(`[data-testid=cluster-price]`).Text(); got != "$79.88" {
			t.Errorf("cluster price = %q, want $79.88", got)
		}
		if got := row.Find(`[data-testid=machine-price]`).Text(); got != "$19.97" {
			t.Errorf("machine price = %q", got)
		}
		if got := row.Find(`[data-testid=gpu-price]`).Text(); got != "$2.49" {
			t.Errorf("per-GPU price = %q", got)
		}
		// O4: the counted location with 3 free reads not in stock at 4 and links to a quote.
		small := d.Find(`#offer-sim\:cheap`)
		if small.AttrOr("data-sell", "") != "not_in_stock" || small.Find(`[data-testid=quote-link]`).Length() != 1 {
			t.Errorf("cheap@4 should be not in stock with a quote link: %s", small.Text())
		}
		if !strings.HasPrefix(small.Find(`[data-testid=quote-link]`).AttrOr("href", ""), "/quote-requests/new?") {
			t.Error("quote link does not go to /quote-requests/new")
		}
		// O5: community hidden unless asked.
		if d.Find(`#offer-sim\:comm`).Length() != 0 {
			t.Error("community offer shown without include_community")
		}

		// The htmx request gets only the results, not the document.
		part := app.get("/offers?accelerator=H100_80GB&nodes=10&include_community=true", "HX-Request", "true")
		if part.Code != http.StatusOK || strings.Contains(strings.ToLower(part.Body.String()), "<!doctype") {
			t.Fatalf("partial: status %d, body starts %.80q", part.Code, part.Body.String())
		}
		pd := doc(t, part)
		if pd.Find(`#offer-results`).Length() != 1 || pd.Find(`#offer-filters`).Length() != 0 {
			t.Error("partial should hold #offer-results and not the filters")
		}
		// O4: uncounted location at 10 machines reads reserved ahead.
		if got := pd.Find(`#offer-sim\:big`).AttrOr("data-sell", ""); got != "reserved_ahead" {
			t.Errorf("big@10 = %q, want reserved_ahead", got)
		}
		if pd.Find(`#offer-sim\:comm [data-testid=community-warning]`).Length() != 1 {
			t.Error("community offer without its warning when asked for")
		}

		// A history restore needs the full page even though it is an htmx request.
		restore := app.get("/offers", "HX-Request", "true", "HX-History-Restore-Request", "true")
		if !strings.HasPrefix(strings.ToLower(restore.Body.String()), "<!doctype html>") {
			t.Error("history restore did not get the full page")
		}
	})
}

func TestOffersPageBadFiltersKeepInput(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		rec := app.get("/offers?accelerator=H100_80GB&nodes=99&max_price=lots")
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 422", rec.Code)
		}
		d := doc(t, rec)
		if d.Find(`[data-testid=problem-nodes]`).Length() != 1 || d.Find(`[data-testid=problem-max_price]`).Length() != 1 {
			t.Error("field problems missing")
		}
		if v, _ := d.Find(`#nodes`).Attr("value"); v != "99" {
			t.Errorf("typed value not kept: %q", v)
		}
		if v, _ := d.Find(`#max_price`).Attr("value"); v != "lots" {
			t.Errorf("typed price not kept: %q", v)
		}
	})
}

func TestOffersAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		community := testOffer("comm", "home", 8, 500_000, intp(10))
		community.Community = true
		app.seedOffers(testOffer("big", "us-east", 8, 2_490_500, nil), testOffer("many", "eu", 4, 2_000_000, intp(100)), community)

		rec := app.get("/v1/gpu/offers?accelerator=H100_80GB&nodes=9")
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var resp struct {
			Nodes            int  `json:"nodes"`
			IncludeCommunity bool `json:"include_community"`
			Count            int  `json:"count"`
			Groups           []struct {
				Location string `json:"location"`
				Offers   []map[string]any
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Count != 2 || resp.Nodes != 9 || resp.IncludeCommunity {
			t.Fatalf("resp = %+v", resp)
		}
		byID := map[string]map[string]any{}
		for _, g := range resp.Groups {
			for _, o := range g.Offers {
				byID[o["id"].(string)] = o
			}
		}
		big := byID["sim:big"]
		// O2: null count → max_nodes 8; nodes_available is JSON null.
		if big["nodes_available"] != nil || big["max_nodes"].(float64) != 8 || big["availability"] != "reserved_ahead" {
			t.Errorf("big = %v", big)
		}
		// Money as exact decimal strings; Q3: usdPerHour = gpus×nodes×perGPU + disk×nodes×rate.
		want := map[string]string{"usdPerMachineHour": "19.974", "usdPerHour": "179.766",
			"perGpuUsdPerHour": "2.4905", "rootDiskRate": "0.0001"}
		for k, v := range want {
			if big[k] != v {
				t.Errorf("%s = %v, want %s", k, big[k], v)
			}
		}
		many := byID["sim:many"]
		if many["nodes_available"].(float64) != 100 || many["max_nodes"].(float64) != 64 || many["availability"] != "available" {
			t.Errorf("many = %v (O2: min(64, 100))", many)
		}

		rec = app.get("/v1/gpu/offers?accelerator=H100_80GB&nodes=9&include_community=true")
		if !strings.Contains(rec.Body.String(), `"sim:comm"`) {
			t.Error("include_community=true did not include the community offer")
		}
	})
}

func TestOffersAPIValidation(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	tests := []struct {
		query string
		field string
	}{
		{"nodes=1", "nodes"},
		{"nodes=65", "nodes"},
		{"nodes=two", "nodes"},
		{"accelerator=TPUv5", "accelerator"},
		{"accelerator=H100_80GB&gpusPerNode=3", "gpus_per_node"},
		{"accelerator=H100_80GB&maxHourlyPrice=-2", "max_price"},
		{"interconnect=smoke", "interconnect"},
	}
	for _, tt := range tests {
		rec := app.get("/v1/gpu/offers?" + tt.query)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422", tt.query, rec.Code)
			continue
		}
		var body struct {
			Error struct {
				Code   string            `json:"code"`
				Fields map[string]string `json:"fields"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if body.Error.Code != "validation_failed" || body.Error.Fields[tt.field] == "" {
			t.Errorf("%s: body %s, want a problem on %s", tt.query, rec.Body, tt.field)
		}
	}
}

// The page's SQL statements must not grow with the catalog.
func TestOffersPageStatementsDoNotGrow(t *testing.T) {
	counts := map[int]int64{}
	for _, n := range []int{20, 2000} {
		app := newTestApp(t, openSQLite(t))
		app.seedOffers(manyOffers(n)...)
		before := app.sql.n.Load()
		rec := app.get("/offers?accelerator=H100_80GB&nodes=4")
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		counts[n] = app.sql.n.Load() - before
	}
	if counts[20] != counts[2000] || counts[20] == 0 {
		t.Errorf("SQL statements per request: %v; must be the same (and non-zero) at 20 and 2,000 offers", counts)
	}
}

func TestHealthAndReady(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	if rec := app.get("/healthz"); rec.Code != 200 {
		t.Errorf("healthz %d", rec.Code)
	}
	if rec := app.get("/readyz"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ok"`) {
		t.Errorf("readyz %d %s", rec.Code, rec.Body)
	}
	sqlDB, _ := app.db.DB()
	sqlDB.Close()
	if rec := app.get("/readyz"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("readyz with a closed database = %d, want 503", rec.Code)
	}
}

func TestErrorsAreCustomerSafe(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	rec := app.get("/no/such/page")
	if rec.Code != 404 || doc(t, rec).Find(`[data-testid=error-page]`).Length() != 1 {
		t.Errorf("404 page: %d", rec.Code)
	}
	rec = app.get("/no/such/page", "HX-Request", "true")
	if rec.Header().Get("HX-Retarget") != "#flash" || !strings.Contains(rec.Body.String(), "We could not find that.") {
		t.Errorf("htmx 404 should land in #flash: %v %s", rec.Header(), rec.Body)
	}
	rec = app.get("/v1/nothing")
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"not_found"`) {
		t.Errorf("API 404 body: %s", rec.Body)
	}
}
