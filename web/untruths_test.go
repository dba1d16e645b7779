package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
