package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// B1, B3, API3: "billing balance" prints the balance, burn, hours it lasts
// and the month's spend (--json the API's body); "billing usage" a month's
// rows per machine; a bad month is the API's field error (exit 1); a
// member's key is refused with forbidden (exit 1).
func TestCLIBilling(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "billing", "balance")
		if code != 0 {
			t.Fatalf("balance: %d %s", code, errOut)
		}
		mustContain(t, "idle balance", out, "$500.00", "nothing is running", "Spent in "+d.clock.Now().Format("2006-01"))

		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)
		d.clock.Advance(time.Hour)
		out, _, _ = d.gpu(t, "billing", "balance")
		// The hour run is owed before the pass writes it: $500 less $39.94 (B8).
		mustContain(t, "running balance", out, "hours at this burn", "$39.94/h", "$460.06", "11.5 hours")
		b := mustJSON(t, "balance --json", func() string { o, _, _ := d.gpu(t, "billing", "balance", "--json"); return o }())
		if b["burnRate"] != "39.94" || b["hoursRemaining"] == nil {
			t.Errorf("balance --json: %v", b)
		}

		month := d.clock.Now().Format("2006-01")
		out, errOut, code = d.gpu(t, "billing", "usage", "--month", month)
		if code != 0 {
			t.Fatalf("usage: %d %s", code, errOut)
		}
		mustContain(t, "usage", out, cl.ID, "train", "MINUTES", "Total for "+month)
		u := mustJSON(t, "usage --json", func() string { o, _, _ := d.gpu(t, "billing", "usage", "--json"); return o }())
		if u["month"] != month {
			t.Errorf("usage --json: %v", u)
		}
		if out, _, code := d.gpu(t, "billing", "usage", "--month", "2020-01"); code != 0 || !strings.Contains(out, "No usage in 2020-01") {
			t.Errorf("empty month: %d %s", code, out)
		}
		if _, errOut, code := d.gpu(t, "billing", "usage", "--month", "January"); code != 1 || !strings.Contains(errOut, "month") {
			t.Errorf("bad month: %d %s", code, errOut)
		}
		if _, _, code := d.gpu(t, "billing", "overdraft"); code != 2 {
			t.Errorf("unknown billing command: exit %d", code)
		}

		member := d.memberKey(t, "m@example.com")
		for _, sub := range []string{"balance", "usage"} {
			if _, errOut, code := d.gpu(t, "billing", sub, "--key", member); code != 1 || !strings.Contains(errOut, "forbidden") {
				t.Errorf("member %s: %d %s", sub, code, errOut)
			}
		}
	})
}

// memberKey joins a member to d's organisation and returns their API key.
func (d *deck) memberKey(t *testing.T, email string) string {
	t.Helper()
	ctx := context.Background()
	u, _, err := d.store.Signup(ctx, models.SignupInput{Email: email, Name: "Member", Password: "correct horse battery", OrgName: "Own"}, "192.0.2.2")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := d.store.CreateInvite(ctx, d.org.ID, models.RoleOwner, d.user.ID, email, models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.store.AcceptInvite(ctx, token, u, ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := d.store.CreateAPIKey(ctx, d.org.ID, d.env.ID, u.ID, "member")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// B5, X6, API3: "billing budgets set" sets the key's environment's
// monthly budget, "billing budgets" lists it with the spend, the share
// used and the forecast, the balance's run-out and the running cluster's;
// a bad amount is the API's field error (exit 1); "remove" removes it; a
// member's key is refused.
func TestCLIBudgets(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)
		d.clock.Advance(time.Hour)
		out, errOut, code := d.gpu(t, "billing", "budgets", "set", d.env.ID, "100")
		if code != 0 {
			t.Fatalf("set: %d %s", code, errOut)
		}
		mustContain(t, "set", out, "Budget of default ("+d.env.ID+"): $100.00 a month; $39.94 spent this month (39 %).")
		out, errOut, code = d.gpu(t, "billing", "budgets")
		if code != 0 {
			t.Fatalf("budgets: %d %s", code, errOut)
		}
		mustContain(t, "budgets", out, "ENVIRONMENT", d.env.ID, "$100.00", "$39.94", "39 %", "$39.94/h", "runs out at", cl.ID, "train")
		b := mustJSON(t, "budgets --json", func() string { o, _, _ := d.gpu(t, "billing", "budgets", "--json"); return o }())
		envs, _ := b["environments"].([]any)
		if len(envs) != 1 || envs[0].(map[string]any)["amount"] != "100.00" || b["balanceRunOutAt"] == nil {
			t.Errorf("budgets --json: %v", b)
		}
		if _, errOut, code := d.gpu(t, "billing", "budgets", "set", d.env.ID, "0.001"); code != 1 || !strings.Contains(errOut, "amount") {
			t.Errorf("bad amount: %d %s", code, errOut)
		}
		if _, _, code := d.gpu(t, "billing", "budgets", "set", d.env.ID); code != 2 {
			t.Errorf("set without an amount: exit %d, want 2", code)
		}
		member := d.memberKey(t, "m@example.com")
		if _, errOut, code := d.gpu(t, "billing", "budgets", "set", d.env.ID, "5", "--key", member); code != 1 || !strings.Contains(errOut, "forbidden") {
			t.Errorf("member: %d %s", code, errOut)
		}
		if out, errOut, code := d.gpu(t, "billing", "budgets", "remove", d.env.ID); code != 0 || !strings.Contains(out, "No budget for default ("+d.env.ID+")") {
			t.Fatalf("remove: %d %s %s", code, out, errOut)
		}
		if _, ok, _ := d.store.BudgetFor(context.Background(), d.org.ID, d.env.ID); ok {
			t.Error("budget still set after remove")
		}
	})
}
