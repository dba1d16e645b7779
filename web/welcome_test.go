package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// B1, L2: a new account's welcome says its balance is $0.00 and links to
// adding funds, the step before any launch.
func TestWelcomeFlashSaysTheBalanceAndLinksToFunds(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		c := app.client()
		rec := c.post("/signup", url.Values{"email": {"new@example.com"}, "name": {"New Person"}, "password": {testPassword}, "org_name": {"New Lab"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("signup: %d\n%s", rec.Code, rec.Body)
		}
		d := doc(t, c.get(location(rec)))
		f := d.Find(`[data-testid=flash]`)
		if !strings.Contains(f.Text(), "Your balance is $0.00") {
			t.Errorf("welcome %q does not say the balance", f.Text())
		}
		if href, _ := f.Find(`[data-testid=flash-action]`).Attr("href"); href != "/billing#add-funds" {
			t.Errorf("welcome links to %q, want /billing#add-funds", href)
		}
	})
}

// L2: a quote's "Add funds" keeps the quote: the billing page links back
// to it and a test-mode top-up returns there.
func TestAddFundsFromAQuoteComesBack(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("poor@example.com", "Poor Lab")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		c := app.login(acc)
		quote := "/clusters/new?offer=sim:h100x8&nodes=2"
		d := doc(t, c.get(quote))
		href, ok := d.Find(`[data-testid=top-up]`).Attr("href")
		if !ok || !strings.Contains(href, "back="+url.QueryEscape(quote)) {
			t.Fatalf("the quote's Add funds is %q, want it to carry the quote", href)
		}
		b := doc(t, c.get(strings.TrimSuffix(href, "#add-funds")))
		if back, _ := b.Find(`[data-testid=top-up-back]`).Attr("href"); back != quote {
			t.Errorf("the billing page's way back is %q", back)
		}
		rec := c.post("/billing/top-ups", url.Values{"amount": {"100"}, "back": {b.Find(`input[name=back]`).AttrOr("value", "")}})
		if rec.Code != http.StatusSeeOther || location(rec) != quote {
			t.Errorf("after the top-up: %d to %q, want back to %q", rec.Code, location(rec), quote)
		}
		if rec := c.post("/billing/top-ups", url.Values{"amount": {"5"}, "back": {"https://evil.example/"}}); location(rec) != "/billing" {
			t.Errorf("a foreign back leads to %q", location(rec))
		}
	})
}
