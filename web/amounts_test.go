package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// typedAmounts is the one table of typed amounts (B3) that both the
// server's reading (models.ParseTypedUSD, TestTypedAmountsServer) and the
// page's mirror (parseAmount in static/js/app.js,
// TestBrowserTypedAmountsMirrorTheServer) must answer alike: cents, or the
// same refusal word for word.
var typedAmounts = []struct {
	in      string
	cents   int64
	problem string // "" = read as cents
}{
	{"25", 2500, ""},
	{"12.50", 1250, ""},
	{"12.5", 1250, ""},
	{"12.", 1200, ""},
	{".50", 50, ""},
	{"5,000", 500_000, ""},
	{"$5,000", 500_000, ""},
	{"$5,000.00", 500_000, ""},
	{"  $ 1,234,567.89 ", 123_456_789, ""},
	{"0005", 500, ""},
	{"0", 0, ""},
	{"999999999999.99", 99_999_999_999_999, ""},
	{"", 0, models.AmountProblemEmpty},
	{"$", 0, models.AmountProblemEmpty},
	{".", 0, models.AmountProblemEmpty},
	{"abc", 0, models.AmountProblemEmpty},
	{"5 000", 0, models.AmountProblemEmpty},
	{"+5", 0, models.AmountProblemEmpty},
	{"1e3", 0, models.AmountProblemEmpty},
	{"5.0.0", 0, models.AmountProblemEmpty},
	{"５", 0, models.AmountProblemEmpty},
	{"-5", 0, models.AmountProblemNegative},
	{"$-5", 0, models.AmountProblemNegative},
	{"-$5.00", 0, models.AmountProblemNegative},
	{"−5", 0, models.AmountProblemNegative},
	{"12.505", 0, models.AmountProblemCents},
	{"0.001", 0, models.AmountProblemCents},
	{"5,00", 0, models.AmountProblemCommas},
	{"50,00", 0, models.AmountProblemCommas},
	{"1,2345", 0, models.AmountProblemCommas},
	{",500", 0, models.AmountProblemCommas},
	{"5,000,", 0, models.AmountProblemCommas},
	{"1.234,56", 0, models.AmountProblemCommas},
	{"1000,000", 0, models.AmountProblemCommas},
	{"1234567890123", 0, models.AmountProblemTooLarge},
}

// The server reads every typed amount of the table as the table says.
func TestTypedAmountsServer(t *testing.T) {
	for _, c := range typedAmounts {
		m, err := models.ParseTypedUSD(c.in)
		var ae *models.AmountError
		switch {
		case c.problem == "" && (err != nil || m != models.Money(c.cents)*10_000):
			t.Errorf("%q: %d, %v; want %d cents", c.in, m, err, c.cents)
		case c.problem != "" && (!errors.As(err, &ae) || ae.Problem != c.problem):
			t.Errorf("%q: %d, %v; want %q", c.in, m, err, c.problem)
		}
	}
}

// B3, B4: the top-up form and the API read "5,000" and "$5,000.00" as
// five thousand dollars and refuse "5,00" saying why, crediting nothing;
// the budget and auto-recharge forms read amounts the same way.
func TestTypedAmountsTopUp(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		bg := context.Background()
		owner := app.signupAccount("amounts@example.com", "Amounts")
		c := app.login(owner)
		balance := func() models.Money {
			b, err := app.store.Balance(bg, owner.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		for _, bad := range []string{"5,00", "-25", "12.505"} {
			rec := c.post("/billing/top-ups", url.Values{"amount": {bad}})
			want := map[string]string{"5,00": models.AmountProblemCommas, "-25": models.AmountProblemNegative, "12.505": models.AmountProblemCents}[bad]
			if got := doc(t, rec).Find(`[data-testid=problem-amount]`).Text(); rec.Code != http.StatusUnprocessableEntity || got != want {
				t.Errorf("%q: %d, problem %q; want 422 %q", bad, rec.Code, got, want)
			}
		}
		if b := balance(); b != 0 {
			t.Fatalf("refused amounts credited %d", b)
		}
		if rec := c.post("/billing/top-ups", url.Values{"amount": {"5,000"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("5,000: %d %s", rec.Code, rec.Body.String())
		}
		if b := balance(); b != 5000*models.Micro {
			t.Fatalf("balance after 5,000: %d", b)
		}
		tok := apiKeyFor(t, app, owner)
		if code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"$1,000.50"}`); code != http.StatusCreated {
			t.Fatalf("API $1,000.50: %d %v", code, out)
		}
		if code, out := apiJSON(t, app, "POST", "/v1/billing/top-ups", tok, `{"amount":"1,00"}`); code != http.StatusUnprocessableEntity ||
			!strings.Contains(fmt.Sprint(out), models.AmountProblemCommas) {
			t.Errorf("API 1,00: %d %v", code, out)
		}
		if b := balance(); b != 6000_500_000 {
			t.Errorf("balance %d, want $6,000.50", b)
		}
	})
}
