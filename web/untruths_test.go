package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// O3: a price ceiling that leaves nothing says what the cheapest offer
// matching the other filters costs, and its link lifts the ceiling to it.
func TestOffersCeilingSaysCheapestMatch(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		community := testOffer("comm", "home", 8, 500_000, intp(10))
		community.Community = true // cheaper, but not asked for: not the answer
		app.seedOffers(testOffer("big", "us-east", 8, 2_490_000, nil), testOffer("pricier", "eu-west", 8, 2_990_000, nil), community)

		r := app.get("/offers?accelerator=H100_80GB&nodes=2&max_price=5")
		if r.Code != http.StatusOK {
			t.Fatalf("status %d", r.Code)
		}
		d := doc(t, r)
		got := strings.Join(strings.Fields(d.Find(`[data-testid=no-offers] [data-testid=cheapest-match]`).Text()), " ")
		// 2 × (8 × $2.49 + 500 GB × $0.0001) = $39.94 per hour.
		if !strings.Contains(got, "Your ceiling is $5.00 per hour; the cheapest offer matching the other filters costs $39.94 per hour") {
			t.Errorf("the empty state says %q", got)
		}
		lift := d.Find(`[data-testid=lift-ceiling]`)
		if strings.TrimSpace(lift.Text()) != "Lift the ceiling to $39.94" {
			t.Errorf("lift link %q", lift.Text())
		}
		u, err := url.Parse(lift.AttrOr("href", ""))
		if err != nil || u.Path != "/offers" || u.Query().Get("max_price") != "39.94" || u.Query().Get("nodes") != "2" || u.Query().Get("accelerator") != "H100_80GB" {
			t.Fatalf("lift link goes to %q", lift.AttrOr("href", ""))
		}
		// Followed, the ceiling shows the cheapest match and not the pricier.
		d = doc(t, app.get(u.String()))
		if d.Find(`#offer-grid #offer-sim\:big, [data-testid=offer-grid] #offer-sim\:big`).Length() != 1 || d.Find(`[data-testid=offer-grid] #offer-sim\:pricier`).Length() != 0 {
			t.Errorf("after lifting: big %d, pricier %d", d.Find(`[data-testid=offer-grid] #offer-sim\:big`).Length(), d.Find(`[data-testid=offer-grid] #offer-sim\:pricier`).Length())
		}
		if d.Find(`[data-testid=no-offers]`).Length() != 0 {
			t.Error("the lifted ceiling still shows nothing")
		}
		// Without a ceiling an empty answer names no price.
		d = doc(t, app.get("/offers?accelerator=H100_80GB&nodes=2&gpus_per_node=1"))
		if d.Find(`[data-testid=no-offers]`).Length() != 1 || d.Find(`[data-testid=cheapest-match]`).Length() != 0 {
			t.Errorf("an empty answer without a ceiling: %q", d.Find(`[data-testid=no-offers]`).Text())
		}
	})
}

// U*: a customer's error banner and error page keep the request's id out
// of the sentence, behind a closed details toggle, whole and copyable.
func TestRequestIDsBehindDetails(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	c := app.login(app.signupAccount("refs@example.com", "Refs Lab"))
	for _, tc := range []struct {
		name    string
		rec     *httptest.ResponseRecorder
		message string
	}{
		{"htmx banner", c.get("/clusters/nope", "HX-Request", "true"), `[data-testid=flash]`},
		{"error page", c.get("/clusters/nope"), `[data-testid=error-page]`},
	} {
		rid := tc.rec.Header().Get(echo.HeaderXRequestID)
		if rid == "" || tc.rec.Code != http.StatusNotFound {
			t.Fatalf("%s: status %d, request id %q", tc.name, tc.rec.Code, rid)
		}
		d := doc(t, tc.rec)
		box := d.Find(tc.message)
		ref := box.Find(`details[data-testid=request-ref]`)
		if ref.Length() != 1 || ref.Is(`[open]`) {
			t.Fatalf("%s: %d closed details toggles in %q", tc.name, ref.Length(), box.Text())
		}
		if got := ref.Find(`code[data-testid=request-id]`).Text(); got != rid {
			t.Errorf("%s: the reference reads %q, want %q", tc.name, got, rid)
		}
		if ref.Find(`[data-copy=request-`+rid+`]`).Length() != 1 || ref.Find(`#request-`+rid).Length() != 1 {
			t.Errorf("%s: no copy button for the reference", tc.name)
		}
		outside := box.Clone()
		outside.Find(`details`).Remove()
		if strings.Contains(outside.Text(), rid) {
			t.Errorf("%s: the id is in the sentence: %q", tc.name, outside.Text())
		}
	}
}
