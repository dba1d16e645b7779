package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B1, B6, B9: on the organisation's balance page an
// operator reverses a credited top-up: the form asks first (and says the
// balance would go negative and what happens then), the ledger gets a
// reversing refund entry beside the kept deposit, the audit log has it, and
// the row says it was reversed; reversing again, or more than it credited,
// is refused beside the top-up with what was typed kept. Afterwards the
// balance job runs at once, so clusters follow the usual balance rules.
func TestAdminReversesTopUp(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		jobs := &fakeJobs{}
		app = newTestAppWith(t, app.db, func(d *Deps) { d.Jobs = jobs })
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		tu, err := app.store.CreateTopUp(ctx, cust.org.ID, 500*models.Micro, true, "ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.CompleteTestTopUp(ctx, cust.org.ID, tu.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: cust.org.ID, Kind: models.LedgerUsage,
			Amount: -400 * models.Micro, IdemKey: "used", Description: "usage"}); err != nil { // $100 left
			t.Fatal(err)
		}
		page := "/admin/orgs/" + cust.org.ID + "/balance"
		path := "/admin/orgs/" + cust.org.ID + "/top-ups/" + tu.ID + "/reverse"
		d := doc(t, oc.get(page))
		form := d.Find(`[data-top-up="` + tu.ID + `"] [data-testid=reverse-form]`)
		if form.AttrOr("data-confirm", "") != "Reverse top-up "+tu.ID+" of $500.00?" {
			t.Fatalf("reverse form's confirmation %q", form.AttrOr("data-confirm", ""))
		}
		if detail := form.AttrOr("data-confirm-detail", ""); !strings.Contains(detail, "The balance becomes -$400.00") ||
			!strings.Contains(detail, "stopped after the balance grace period") {
			t.Errorf("the confirmation does not say what a negative balance does: %q", detail)
		}

		rec := oc.post(path, url.Values{"amount": {"600"}, "reason": {"Charge-back"}}, from(page)...)
		d = doc(t, rec)
		row := d.Find(`[data-top-up="` + tu.ID + `"]`)
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(row.Find(`.problem`).Text(), "At most the $500.00") ||
			row.Find(`input[name=amount]`).AttrOr("value", "") != "600" {
			t.Fatalf("more than credited: %d %q", rec.Code, row.Text())
		}

		rec = oc.post(path, url.Values{"reason": {"Card charge-back"}}, from(page)...)
		if rec.Code != http.StatusSeeOther || location(rec) != page {
			t.Fatalf("reverse: %d %s", rec.Code, rec.Body)
		}
		if len(jobs.ran) != 1 || jobs.ran[0] != "kick:balance" {
			t.Errorf("the balance job was not run at once: %v", jobs.ran)
		}
		if b, _ := app.store.Balance(ctx, cust.org.ID); b != -400*models.Micro {
			t.Errorf("balance %s, want -$400.00", models.USD(b))
		}
		d = doc(t, oc.get(page))
		if f := d.Find(`[data-testid=flash]`).Text(); !strings.Contains(f, "Reversed $500.00") || !strings.Contains(f, "-$400.00") {
			t.Errorf("flash %q", f)
		}
		row = d.Find(`[data-top-up="` + tu.ID + `"]`)
		if !strings.Contains(row.Find(`[data-testid=top-up-reversed]`).Text(), "$500.00") || row.Find(`[data-testid=reverse-form]`).Length() != 0 {
			t.Errorf("reversed row: %q", row.Text())
		}
		if d.Find(`[data-kind=refund]`).Length() != 1 || d.Find(`[data-kind=deposit]`).Length() != 1 {
			t.Errorf("the ledger shows %d refunds and %d deposits, want one each", d.Find(`[data-kind=refund]`).Length(), d.Find(`[data-kind=deposit]`).Length())
		}
		if a := doc(t, oc.get("/admin/audit")).Find(`[data-action="balance.reverse_top_up"]`); a.Length() != 1 || !strings.Contains(a.Text(), "op@deck.example") {
			t.Errorf("audit: %q", a.Text())
		}
		rec = oc.post(path, url.Values{"reason": {"again"}}, from(page)...)
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(doc(t, rec).Find(`[data-top-up="`+tu.ID+`"] .problem`).Text(), "already reversed") {
			t.Errorf("reverse twice: %d", rec.Code)
		}
		if b, _ := app.store.Balance(ctx, cust.org.ID); b != -400*models.Micro {
			t.Errorf("a second reversal moved money: %s", models.USD(b))
		}
	})
}
