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
