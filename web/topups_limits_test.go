package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// B7, B9: production without a payment provider never
// credits money nobody paid: a top-up through the API or the dashboard is
// refused (409 top_ups_off) and changes nothing, and the billing page offers
// none; an invoice-only deployment (INVOICE_ONLY=1) behaves the same.
func TestTopUpsOffWithoutPayments(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		for name, cfg := range map[string]func(*Config){
			"production without Stripe": func(c *Config) { c.Production = true },
			"invoice only":              func(c *Config) { c.TopUpsOff = true },
		} {
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
				app := newTestAppWith(t, db, func(d *Deps) { cfg(&d.Config) })
				ctx := context.Background()
				acc := app.signupAccount(fmt.Sprintf("rich-%d@example.com", len(name)), "Rich "+name)
				tok := apiKeyFor(t, app, acc)
				code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"1000000.00"}`)
				if e, _ := out["error"].(map[string]any); code != http.StatusConflict || e["code"] != "top_ups_off" {
					t.Errorf("API top-up: %d %v, want 409 top_ups_off", code, out)
				}
				code, out = apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"25.00"}`)
				if code != http.StatusConflict {
					t.Errorf("API top-up of $25: %d %v, want 409", code, out)
				}
				c := app.login(acc)
				if rec := c.post("/billing/top-ups", url.Values{"amount": {"1000000.00"}}); rec.Code != http.StatusConflict {
					t.Errorf("dashboard top-up: %d, want 409", rec.Code)
				}
				if bal, _ := app.store.Balance(ctx, acc.org.ID); bal != 0 {
					t.Errorf("balance %s, want $0: credited without a payment", models.USD(bal))
				}
				var n int64
				if err := app.db.Model(&models.TopUp{}).Where("org_id = ?", acc.org.ID).Count(&n).Error; err != nil || n != 0 {
					t.Errorf("%d top-ups recorded (%v), want none", n, err)
				}
				rec := c.get("/billing")
				d := doc(t, rec)
				if rec.Code != http.StatusOK || d.Find("[data-testid=top-up-form]").Length() != 0 ||
					d.Find("[data-testid=top-ups-off]").Length() != 1 || d.Find("[data-testid=test-mode-badge]").Length() != 0 ||
					d.Find("[data-testid=auto-recharge]").Length() != 0 {
					t.Errorf("billing page %d: offers a top-up or claims test mode", rec.Code)
				}
				if rec := app.apiGet("/v1/billing/balance", tok); !strings.Contains(rec.Body.String(), `"testMode":false`) {
					t.Errorf("balance says test mode: %s", rec.Body)
				}
				op := operatorFor(t, app, app.signupAccount(fmt.Sprintf("op-%d@deck.example", len(name)), "Ops "+name))
				if mode := doc(t, op.get("/admin/payments")).Find("[data-testid=payments-mode]").Text(); !strings.Contains(mode, "Invoice only") {
					t.Errorf("operator's payments page says %q", mode)
				}
			})
		}
	})
}

// B9: a top-up over the maximum is refused naming it and
// credits nothing; the dashboard's form shows the same maximum as the rule.
func TestTopUpMaximum(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("max@example.com", "Maxed")
		tok := apiKeyFor(t, app, acc)
		code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"999999999999.99"}`)
		e, _ := out["error"].(map[string]any)
		fields, _ := e["fields"].(map[string]any)
		if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(fields["amount"]), "$50,000.00") {
			t.Errorf("a $999,999,999,999.99 top-up: %d %v, want 422 naming $50,000.00", code, out)
		}
		c := app.login(acc)
		label := func() string {
			return doc(t, c.get("/billing")).Find("[data-testid=top-up-form] label[for=amount]").Text()
		}
		if l := label(); !strings.Contains(l, "$50,000.00") {
			t.Errorf("form label %q does not show the default maximum", l)
		}
		// The server restarted with MAX_TOP_UP_USD=100 on the same database.
		app = newTestAppSet(t, app.db, func(s *models.Settings) { s.Limits.MaxTopUp = 100 * models.Micro }, nil)
		c = app.login(acc)
		if l := label(); !strings.Contains(l, "$100.00") {
			t.Errorf("form label %q does not show MAX_TOP_UP_USD", l)
		}
		if m := doc(t, c.get("/billing")).Find("[data-testid=auto-recharge-max]").Text(); m != "$100.00" {
			t.Errorf("auto-recharge shows the maximum %q, want $100.00", m)
		}
		rec := c.post("/billing/top-ups", url.Values{"amount": {"100.01"}})
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "$100.00") {
			t.Errorf("dashboard top-up over the maximum: %d", rec.Code)
		}
		if bal, _ := app.store.Balance(ctx, acc.org.ID); bal != 0 {
			t.Errorf("balance %s after refused top-ups", models.USD(bal))
		}
	})
}

// B9: an organisation whose ledger sums past int64 (ten
// $999,999,999,999.99 deposits written before the bounds) breaks neither
// another organisation's billing page nor the operator's /metrics.
func TestHugeLedgerBreaksNoOneElse(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		huge := app.signupAccount("huge@example.com", "Huge")
		for i := range 10 {
			le := models.LedgerEntry{ID: models.NewID("le"), OrgID: huge.org.ID, Kind: models.LedgerDeposit,
				Status: models.EntryCompleted, Amount: 999_999_999_999_990_000, IdemKey: fmt.Sprintf("old-%d", i), CreatedAt: testNow}
			if err := app.db.Create(&le).Error; err != nil {
				t.Fatal(err)
			}
		}
		other := app.signupAccount("other@example.com", "Other")
		if rec := app.login(other).get("/billing"); rec.Code != http.StatusOK {
			t.Errorf("another organisation's billing page: %d", rec.Code)
		}
		if _, ok := sample(scrape(t, app), "clusterdeck_ledger_entries", "kind=deposit,status=completed"); !ok {
			t.Error("no ledger gauge")
		}
	})
}
