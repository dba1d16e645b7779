package web

import (
	"net/http"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B1 (first part): owners and admins see the balance, the burn rate of
// running clusters and the hours it lasts; members get a clear 403 (A2).
func TestBillingPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("b@example.com", "Billers")
		member := app.joinAccount(owner, "m@example.com", models.RoleMember)
		cl := launchFor(t, app, owner, "burner") // deposits $500
		makeJoined(t, app, cl, true)

		d := doc(t, app.login(owner).get("/billing"))
		if got := d.Find(`[data-testid=balance]`).Text(); got != "$500.00" {
			t.Errorf("balance %q", got)
		}
		if got := d.Find(`[data-testid=burn-rate]`).Text(); got != "$39.94/h" {
			t.Errorf("burn rate %q", got)
		}
		if got := d.Find(`[data-testid=hours-remaining]`).Text(); got != "12.5 h" {
			t.Errorf("hours remaining %q", got)
		}
		if d.Find(`[data-testid=ledger-row]`).Length() != 1 {
			t.Error("the deposit is not listed")
		}
		if rec := app.login(member).get("/billing"); rec.Code != http.StatusForbidden {
			t.Errorf("member: %d, want 403", rec.Code)
		}
	})
}
