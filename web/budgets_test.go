package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// B5: owners and admins set an environment's monthly budget through the
// API, audited; bad amounts answer 422 naming the field and change
// nothing; members are refused; an API key reaches its own environment's
// budget only, and another organisation's environment is 404.
func TestBudgetsAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("budget@example.com", "Budgeters")
		tok := apiKeyFor(t, app, acc)
		admin := app.joinAccount(acc, "admin@example.com", models.RoleAdmin)
		atok := apiKeyFor(t, app, admin)
		member := app.joinAccount(acc, "member@example.com", models.RoleMember)
		mtok := apiKeyFor(t, app, member)
		staging, err := app.store.CreateEnvironment(ctx, acc.org.ID, "staging")
		if err != nil {
			t.Fatal(err)
		}
		other := app.signupAccount("other@example.com", "Others")
		path := "/v1/billing/budgets/" + acc.env.ID

		code, out := apiJSON(t, app, "PUT", path, tok, `{"amount":"500.00"}`)
		if code != http.StatusOK || out["amount"] != "500.00" || out["environment"] != "default" || out["percent"] != 0.0 ||
			out["reached"] != false || out["environmentId"] != acc.env.ID {
			t.Fatalf("put: %d %v", code, out)
		}
		if code, out := apiJSON(t, app, "PUT", path, atok, `{"amount":"750"}`); code != http.StatusOK || out["amount"] != "750.00" {
			t.Fatalf("admin put: %d %v", code, out)
		}
		for _, bad := range []string{`{"amount":"0"}`, `{"amount":"-5"}`, `{"amount":"1.001"}`, `{"amount":"ten"}`,
			`{"amount":"10000000.01"}`, `{"amount":""}`, `{}`} {
			code, out := apiJSON(t, app, "PUT", path, tok, bad)
			fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields["amount"] == nil {
				t.Errorf("%s: %d %v, want 422 naming amount", bad, code, out)
			}
		}
		if code, _ := apiJSON(t, app, "PUT", path, mtok, `{"amount":"1.00"}`); code != http.StatusForbidden {
			t.Errorf("member put: %d, want 403", code)
		}
		if code, _ := apiJSON(t, app, "DELETE", path, mtok, ""); code != http.StatusForbidden {
			t.Errorf("member delete: %d, want 403", code)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/billing/budgets", mtok, ""); code != http.StatusForbidden {
			t.Errorf("member list: %d, want 403", code)
		}
		// The key of the default environment does not reach staging's
		// budget; another organisation's key does not reach ours.
		if code, _ := apiJSON(t, app, "PUT", "/v1/billing/budgets/"+staging.ID, tok, `{"amount":"5"}`); code != http.StatusNotFound {
			t.Errorf("another environment through the key: %d, want 404", code)
		}
		if code, _ := apiJSON(t, app, "PUT", path, apiKeyFor(t, app, other), `{"amount":"5"}`); code != http.StatusNotFound {
			t.Errorf("another organisation: %d, want 404", code)
		}
		if b, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, acc.env.ID); !ok || b.Amount != 750*models.Micro {
			t.Fatalf("budget %+v %v after refusals, want $750", b, ok)
		}
		if _, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, staging.ID); ok {
			t.Error("staging got a budget")
		}

		code, out = apiJSON(t, app, "GET", "/v1/billing/budgets", tok, "")
		envs, _ := out["environments"].([]any)
		if code != http.StatusOK || len(envs) != 1 || envs[0].(map[string]any)["amount"] != "750.00" || out["month"] != app.store.Now().Format("2006-01") {
			t.Fatalf("list through the default environment's key: %d %v", code, out)
		}
		if code, out := apiJSON(t, app, "DELETE", path, tok, ""); code != http.StatusOK || out["amount"] != nil || out["environmentId"] != acc.env.ID {
			t.Fatalf("delete: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, "DELETE", path, tok, ""); code != http.StatusOK {
			t.Fatalf("delete again: %d", code)
		}
		if _, out := apiJSON(t, app, "GET", "/v1/billing/budgets", tok, ""); out["environments"].([]any)[0].(map[string]any)["amount"] != nil {
			t.Errorf("after delete: %v, want amount null", out)
		}
		var audited []string
		recs, _, _ := app.store.AuditRecords(ctx, acc.org.ID, 0, 100)
		for _, r := range recs {
			if r.Action == "billing.budget" {
				audited = append(audited, r.Actor+" "+r.Detail)
			}
		}
		if strings.Join(audited, "|") != "api_key:"+keyPrefix(t, app, tok)+" default: removed|"+
			"api_key:"+keyPrefix(t, app, atok)+" default: $750.00 a month|api_key:"+keyPrefix(t, app, tok)+" default: $500.00 a month" {
			t.Errorf("audit %q", audited)
		}
	})
}

// keyPrefix is how the audit log names a key's actions.
func keyPrefix(t *testing.T, app *testApp, tok string) string {
	t.Helper()
	p, err := app.store.AuthenticateAPIKey(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return p.Key.Prefix
}

// B5, X6: the billing page lists every environment with its budget form;
// an htmx save answers the section, a bad amount the section with the
// problem beside that environment's field (422) and nothing saved; a plain
// post redirects; members get 403.
func TestBudgetsPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("page@example.com", "Pagers")
		staging, err := app.store.CreateEnvironment(ctx, acc.org.ID, "staging")
		if err != nil {
			t.Fatal(err)
		}
		owner := app.login(acc)
		d := doc(t, owner.get("/billing"))
		if n := d.Find(`[data-testid="budget-row"]`).Length(); n != 2 {
			t.Fatalf("%d budget rows, want one per environment", n)
		}
		if got := strings.TrimSpace(d.Find(`[data-testid="balance-run-out"]`).Text()); got != "—" {
			t.Errorf("balance run-out %q while nothing runs", got)
		}
		hx := []string{"HX-Request", "true"}
		rec := owner.post("/billing/budgets/"+staging.ID, url.Values{"amount": {"12.345"}}, hx...)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad amount: %d", rec.Code)
		}
		row := doc(t, rec).Find("#budget-" + staging.ID)
		if p := row.Find(`[data-testid="budget-problem"]`).Text(); p != models.AmountProblemCents { // B3: read as the page reads it
			t.Errorf("problem %q beside staging's field", p)
		}
		if v, _ := row.Find(`[data-testid="budget-amount"]`).Attr("value"); v != "12.345" {
			t.Errorf("the typed amount is not kept: %q", v)
		}
		if _, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, staging.ID); ok {
			t.Fatal("a refused budget was saved")
		}
		rec = owner.post("/billing/budgets/"+staging.ID, url.Values{"amount": {"250"}}, hx...)
		sec := doc(t, rec)
		if rec.Code != http.StatusOK || sec.Find(`#budgets`).Length() != 1 {
			t.Fatalf("htmx save: %d %s", rec.Code, rec.Body)
		}
		if v, _ := sec.Find("#budget-" + staging.ID + ` [data-testid="budget-amount"]`).Attr("value"); v != "250.00" {
			t.Errorf("saved amount shows %q", v)
		}
		if got := strings.TrimSpace(sec.Find("#budget-" + staging.ID + ` [data-testid="budget-forecast"]`).Text()); got != "nothing runs" {
			t.Errorf("forecast %q", got)
		}
		rec = owner.post("/billing/budgets/"+acc.env.ID, url.Values{"amount": {"100"}})
		if rec.Code != http.StatusSeeOther || location(rec) != "/billing#budgets" {
			t.Fatalf("plain save: %d %s", rec.Code, location(rec))
		}
		if b, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, acc.env.ID); !ok || b.Amount != 100*models.Micro {
			t.Fatalf("budget %+v %v", b, ok)
		}
		rec = owner.post("/billing/budgets/"+acc.env.ID+"/delete", nil)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("remove: %d", rec.Code)
		}
		if _, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, acc.env.ID); ok {
			t.Error("budget not removed")
		}

		member := app.joinAccount(acc, "m@example.com", models.RoleMember)
		mc := app.login(member)
		if rec := mc.post("/billing/budgets/"+staging.ID, url.Values{"amount": {"1"}}); rec.Code != http.StatusForbidden {
			t.Errorf("member save: %d, want 403", rec.Code)
		}
		if rec := mc.post("/billing/budgets/"+staging.ID+"/delete", nil); rec.Code != http.StatusForbidden {
			t.Errorf("member remove: %d, want 403", rec.Code)
		}
		if b, ok, _ := app.store.BudgetFor(ctx, acc.org.ID, staging.ID); !ok || b.Amount != 250*models.Micro {
			t.Errorf("staging's budget %+v %v after the member's tries", b, ok)
		}
	})
}

// X6 on the page: with a cluster burning $39.94/h for 90 minutes ($59.91
// spent) against a $100 budget, the section shows 59 % used, the minute
// the budget is reached (61 minutes on), the balance's run-out (the
// ledger's $460.06 less the $19.955 of the hour still running: 662
// minutes on) and the cluster's, the earlier: its budget.
func TestBudgetsPageForecast(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("f@example.com", "Forecasters")
		cl := makeJoined(t, app, launchFor(t, app, owner, "burner"), true)
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: "f@example.com"}).
			SetBudget(ctx, owner.env.ID, 100*models.Micro); err != nil {
			t.Fatal(err)
		}
		now := app.clock.Now()
		d := doc(t, app.login(owner).get("/billing"))
		row := d.Find("#budget-" + owner.env.ID)
		at := func(m int) string {
			return now.Add(time.Duration(m) * time.Minute).UTC().Format("2006-01-02 15:04 UTC")
		}
		if got := cells(d, "#budget-"+owner.env.ID)[0]; got[2] != "$59.91" || got[3] != "59 %" || got[4] != "$39.94/h" {
			t.Errorf("budget row %q", got)
		}
		if got := strings.TrimSpace(row.Find(`[data-testid="budget-forecast"]`).Text()); got != at(61) {
			t.Errorf("forecast %q, want %s", got, at(61))
		}
		if got := strings.TrimSpace(d.Find(`[data-testid="balance-run-out"]`).Text()); got != at(662) {
			t.Errorf("balance runs out %q, want %s", got, at(662))
		}
		want := [][]string{{"burner", "default", at(61), "budget of default"}}
		if got := cells(d, `[data-testid="run-out-row"]`); !reflect.DeepEqual(got, want) {
			t.Errorf("run-out rows %q, want %q", got, want)
		}
		if href, _ := d.Find(`[data-testid="run-out-row"] a`).Attr("href"); href != "/clusters/"+cl.ID {
			t.Errorf("run-out link %q", href)
		}
	})
}

// B5: an environment whose budget for the month is reached takes no new
// cluster: the launch is refused with 409 budget_reached and creates
// nothing; a raise above the spend lets the same launch through.
func TestLaunchRefusedWhileBudgetReached(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("b@example.com", "Budgeted")
		tok := apiKeyFor(t, app, owner)
		makeJoined(t, app, launchFor(t, app, owner, "burner"), true)
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		as := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: "b@example.com"})
		if _, err := as.SetBudget(ctx, owner.env.ID, 50*models.Micro); err != nil { // $59.91 spent
			t.Fatal(err)
		}
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20))) // the catalog is fresh again
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		if code != http.StatusCreated {
			t.Fatalf("quote: %d %v", code, q)
		}
		launch := fmt.Sprintf(`{"quoteId":%q,"name":"second"}`, q["id"])
		var body map[string]any
		code, body = apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "b1")
		if e, _ := body["error"].(map[string]any); code != http.StatusConflict || e["code"] != "budget_reached" {
			t.Fatalf("launch over a reached budget: %d %v", code, body)
		}
		if list, err := app.store.ClustersForOrg(ctx, owner.org.ID); err != nil || len(list) != 1 {
			t.Fatalf("clusters after the refusal: %d %v", len(list), err)
		}
		if _, err := as.SetBudget(ctx, owner.env.ID, 500*models.Micro); err != nil {
			t.Fatal(err)
		}
		if code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "b2"); code != http.StatusCreated {
			t.Fatalf("launch after the raise: %d %v", code, body)
		}
	})
}
