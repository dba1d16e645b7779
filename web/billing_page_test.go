package web

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// cells reads the text of each row's cells under sel.
func cells(d *goquery.Document, sel string) [][]string {
	var out [][]string
	d.Find(sel).Each(func(_ int, tr *goquery.Selection) {
		var row []string
		tr.Find("td").Each(func(_ int, td *goquery.Selection) { row = append(row, strings.TrimSpace(td.Text())) })
		out = append(out, row)
	})
	return out
}

func readCSV(t *testing.T, body string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:] // the header
}

// B1, B3, X11: a cluster is one usage line that opens (link or htmx) into
// its machines; the CSVs hold exactly the page's rows; the balance, spend
// and transactions follow the billing job on the fake clock.
func TestBillingPageUsageAndCSV(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("u@example.com", "Users")
		cl := makeJoined(t, app, launchFor(t, app, owner, "burner"), true) // $500, 2 machines at $19.97/h
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		c := app.login(owner)
		d := doc(t, c.get("/billing"))
		// One written hour (2 × $19.97) and the half hour accruing: B8's one balance.
		if got := d.Find(`[data-testid=balance]`).Text(); got != "$440.09" {
			t.Errorf("balance %q", got)
		}
		if got := d.Find(`[data-testid=balance-accruing]`).Text(); got != "· $19.97 accruing" {
			t.Errorf("accruing beside the balance %q", got)
		}
		if got := d.Find(`[data-testid=spend-month]`).Text(); got != "$59.91" { // and half an hour accumulating
			t.Errorf("spend this month %q", got)
		}
		lines := d.Find(`[data-testid=usage-line]`)
		if lines.Length() != 1 || !strings.Contains(lines.Text(), "Cluster usage — burner") || d.Find(`[data-testid=machine-row]`).Length() != 0 {
			t.Fatalf("usage lines: %q (machines must start closed)", lines.Text())
		}
		href, _ := d.Find(`[data-testid=usage-line-toggle]`).Attr("href")
		frag, _ := d.Find(`[data-testid=usage-line-toggle]`).Attr("hx-get")
		if d.Find(`[data-testid=spend-bar]`).Length() != chartDays {
			t.Errorf("chart bars: %d", d.Find(`[data-testid=spend-bar]`).Length())
		}

		href, _, _ = strings.Cut(href, "#") // a browser keeps the fragment
		opened := cells(doc(t, c.get(href)), `[data-testid=machine-row]`)
		if len(opened) != 2 || opened[0][0] != "node-0" || opened[0][1] != "$19.97/h" || opened[0][2] != "1.50" ||
			opened[0][3] != "$29.96" || opened[0][4] != "Accumulating" || !strings.Contains(opened[0][5], "running Nov 30 12:00 – now") {
			t.Errorf("opened rows %q", opened)
		}
		if got := cells(doc(t, c.get(frag, "HX-Request", "true")), `[data-testid=machine-row]`); !reflect.DeepEqual(got, opened) {
			t.Errorf("htmx fragment rows %q, want the page's %q", got, opened)
		}
		var usage [][]string
		for _, r := range readCSV(t, c.get("/billing/usage.csv").Body.String()) {
			if r[0] != "burner" {
				t.Errorf("usage CSV row of %q", r[0])
			}
			usage = append(usage, r[1:])
		}
		// CSV money is a plain number, the currency in
		// its own column; otherwise the page's cells.
		// B3: the CSV's hours have six decimals beside the exact minutes
		// (1.50 h on the page is 1.500000 h, 90 minutes).
		var wantUsage [][]string
		for _, r := range opened {
			wantUsage = append(wantUsage, []string{r[0], strings.TrimSuffix(strings.TrimPrefix(r[1], "$"), "/h"), r[2] + "0000", "90",
				strings.ReplaceAll(strings.TrimPrefix(r[3], "$"), ",", ""), "USD", r[4], r[5]})
		}
		if !reflect.DeepEqual(usage, wantUsage) || usage[0][4] != "29.96" || usage[0][1] != "19.97" {
			t.Errorf("usage CSV %q, want the page's rows as numbers %q", usage, wantUsage)
		}
		// B3: two machines at $29.955 each are a $59.91 line; their rows
		// add up to it (the second takes the rounding's cent), not to $59.92.
		line := d.Find(`[data-testid=usage-line] [data-testid=usage-line-amount]`).Text()
		var sum models.Money
		for _, r := range opened {
			m, err := models.ParseUSD(r[3])
			if err != nil {
				t.Fatal(err)
			}
			sum += m
		}
		if line == "" || models.USD(sum) != line {
			t.Errorf("machine rows %q add up to %s, the line says %q", opened, models.USD(sum), line)
		}
		page := cells(d, `[data-testid=ledger-row]`)
		var wantTx [][]string
		for _, r := range page {
			amount := strings.ReplaceAll(strings.Replace(r[3], "$", "", 1), ",", "")
			if _, err := strconv.ParseFloat(amount, 64); err != nil {
				t.Errorf("transaction amount %q is not a number in the CSV: %q", r[3], amount)
			}
			wantTx = append(wantTx, []string{r[0], r[1], r[2], amount, "USD"})
		}
		carried := strings.ReplaceAll(strings.Replace(d.Find(`[data-testid=ledger-carried] [data-testid=ledger-amount]`).Text(), "$", "", 1), ",", "")
		if got := readCSV(t, c.get("/billing/transactions.csv").Body.String()); !reflect.DeepEqual(got[:len(got)-1], wantTx) ||
			got[len(got)-1][1] != "Balance carried in" || got[len(got)-1][3] != carried || got[len(got)-1][4] != "USD" {
			t.Errorf("transactions CSV %q, want the page's rows %q and the balance carried in", got, wantTx)
		}
		statuses := map[string]string{}
		for _, r := range page {
			statuses[r[1]] = r[2]
		}
		if len(page) != 3 || statuses["Cluster usage — burner"] != "Completed" || statuses["Cluster usage — burner (this hour so far)"] != "Accumulating" {
			t.Errorf("transactions %q: want the deposit, one Completed usage line and one Accumulating", page)
		}

		// Another organisation's cluster is not found; a bad month is refused.
		other := app.signupAccount("o@example.com", "Others")
		if rec := app.login(other).get("/billing/usage/"+cl.ID, "HX-Request", "true"); rec.Code != http.StatusNotFound {
			t.Errorf("other org's usage line: %d", rec.Code)
		}
		if rec := c.get("/billing?month=2026-13"); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("month 13: %d", rec.Code)
		}
		// A month that is not one keeps the person on the page: this month
		// with what was wrong said inline, no status words (A4).
		rec := c.get("/billing?month=banana")
		bad := doc(t, rec)
		if msg := bad.Find(`[data-testid=month-problem]`).Text(); rec.Code != http.StatusUnprocessableEntity ||
			!strings.Contains(msg, `"banana" is not a month`) || bad.Find(`[data-testid=top-up-form]`).Length() != 1 ||
			strings.Contains(bad.Text(), "Unprocessable") {
			t.Errorf("?month=banana: %d, problem %q", rec.Code, msg)
		}
		// Last month shows nothing of this one's.
		if d := doc(t, c.get("/billing?month=2026-10")); d.Find(`[data-testid=usage-line]`).Length() != 0 {
			t.Error("October shows November's usage")
		}
	})
}

// B4, B7: "Add funds" in test mode credits at once and says so; under $5
// is refused and credits nothing; members may not add funds.
func TestBillingPageAddFundsTestMode(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("f@example.com", "Funders")
		member := app.joinAccount(owner, "fm@example.com", models.RoleMember)
		c := app.login(owner)
		if d := doc(t, c.get("/billing")); !strings.Contains(d.Find(`[data-testid=test-mode]`).Text(), "Test mode") {
			t.Error("test mode is not labelled")
		}
		rec := c.post("/billing/top-ups", url.Values{"amount": {"4.99"}})
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "5.00") {
			t.Errorf("$4.99: %d", rec.Code)
		}
		if rec := c.post("/billing/top-ups", url.Values{"amount": {"25"}}); rec.Code != http.StatusSeeOther || location(rec) != "/billing" {
			t.Fatalf("$25: %d %q", rec.Code, location(rec))
		}
		d := doc(t, c.get("/billing"))
		if got := d.Find(`[data-testid=balance]`).Text(); got != "$25.00" {
			t.Errorf("balance after $25 in test mode: %q", got)
		}
		if !strings.Contains(d.Find(`[data-testid=flash]`).Text(), "Test mode") {
			t.Error("the flash does not say test mode")
		}
		if rec := app.login(member).post("/billing/top-ups", url.Values{"amount": {"25"}}); rec.Code != http.StatusForbidden {
			t.Errorf("member: %d", rec.Code)
		}
	})
}

// B4: with Stripe, "Add funds" goes to Checkout and credits nothing yet.
func TestBillingPageAddFundsStripe(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		pay := &fakePayments{}
		app = newPaymentsApp(t, app.db, pay)
		owner := app.signupAccount("s@example.com", "Stripers")
		rec := app.login(owner).post("/billing/top-ups", url.Values{"amount": {"30.00"}})
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "https://pay.example/cs_") || len(pay.started) != 1 {
			t.Fatalf("%d %q", rec.Code, location(rec))
		}
		if bal, _ := app.store.Balance(context.Background(), owner.org.ID); bal != 0 {
			t.Errorf("credited %d before the webhook", bal)
		}
	})
}

// B1, B3: the billing API gives the page's numbers and rows; a month
// filters; members' keys get 403.
func TestBillingAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("api@example.com", "APIs")
		makeJoined(t, app, launchFor(t, app, owner, "burner"), true)
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MeterUsage(context.Background()); err != nil {
			t.Fatal(err)
		}
		tok := apiKeyFor(t, app, owner)
		code, bal := apiJSON(t, app, "GET", "/v1/billing/balance", tok, "")
		if code != http.StatusOK || bal["balance"] != "440.09" || bal["accruing"] != "19.97" || bal["burnRate"] != "39.94" || bal["spendThisMonth"] != "59.91" || bal["month"] != "2026-11" {
			t.Errorf("balance: %d %v", code, bal)
		}
		code, u := apiJSON(t, app, "GET", "/v1/billing/usage", tok, "")
		cls, _ := u["clusters"].([]any)
		if code != http.StatusOK || len(cls) != 1 {
			t.Fatalf("usage: %d %v", code, u)
		}
		ms := cls[0].(map[string]any)["machines"].([]any)
		m0 := ms[0].(map[string]any)
		if len(ms) != 2 || m0["minutes"] != 90.0 || m0["amount"] != "29.955" || m0["status"] != "accumulating" || m0["machinePrice"] != "19.97" {
			t.Errorf("machine rows %v", ms)
		}
		if code, u := apiJSON(t, app, "GET", "/v1/billing/usage?month=2026-10", tok, ""); code != http.StatusOK || len(u["clusters"].([]any)) != 0 {
			t.Errorf("October: %d %v", code, u)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/billing/usage?month=soon", tok, ""); code != http.StatusUnprocessableEntity {
			t.Errorf("bad month: %d", code)
		}
		member := app.joinAccount(owner, "am@example.com", models.RoleMember)
		if code, _ := apiJSON(t, app, "GET", "/v1/billing/balance", apiKeyFor(t, app, member), ""); code != http.StatusForbidden {
			t.Errorf("member key: %d", code)
		}
	})
}

// B1: the header shows the balance to owners and admins only; an ended
// cluster's page shows its total cost, when it ended and how long it ran.
func TestHeaderBalanceAndEndedClusterCost(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("h@example.com", "Headers")
		member := app.joinAccount(owner, "hm@example.com", models.RoleMember)
		cl := makeJoined(t, app, launchFor(t, app, owner, "short"), true)
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		d := doc(t, app.login(owner).get("/clusters/"+cl.ID))
		// The 90 minutes are owed before the pass writes them (B8).
		if got := d.Find(`[data-testid=header-balance]`).Text(); !strings.Contains(got, "$440.09") {
			t.Errorf("header balance %q", got)
		}
		if got := d.Find(`[data-testid=total-cost]`).Text(); got != "$59.91" { // 90 minutes of 2 × $19.97, not yet written
			t.Errorf("total cost %q", got)
		}
		if got := d.Find(`[data-testid=ended-at]`).Text(); !strings.Contains(got, "2026-11-30 13:30 UTC") || !strings.Contains(got, "1.50 h") {
			t.Errorf("ended %q", got)
		}
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if got := doc(t, app.login(owner).get("/clusters/"+cl.ID)).Find(`[data-testid=total-cost]`).Text(); got != "$59.91" {
			t.Errorf("total cost once written %q", got)
		}
		if doc(t, app.login(member).get("/clusters")).Find(`[data-testid=header-balance]`).Length() != 0 {
			t.Error("a member sees the balance")
		}
	})
}
