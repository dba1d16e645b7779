package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// parseCents reads a shown amount ("$1,234.56", "-$19.97") as cents.
func parseCents(t *testing.T, s string) int64 {
	t.Helper()
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "$"), ",", "")
	whole, frac, ok := strings.Cut(s, ".")
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || len(frac) != 2 || err1 != nil || err2 != nil {
		t.Fatalf("not an amount in cents: %q", s)
	}
	if neg {
		return -(w*100 + f)
	}
	return w*100 + f
}

// B8: one balance. With a cluster running for minutes
// and then hours (the clock moved, periods written and open), the header,
// the billing card with what is accruing beside it, hours remaining, the
// run-out, the budgets API and GET /v1/billing/balance all give the one
// figure (the written ledger less what accrues), hours remaining and the
// run-out agree, and the transactions shown add up exactly to the balance
// shown, though two half-cent deposits would round a cent high one by one.
func TestOneBalanceEverywhere(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("one@example.com", "One Balance")
		for _, key := range []string{"half-a", "half-b"} {
			if _, err := app.store.Deposit(ctx, owner.org.ID, 10_005_000, key, "test"); err != nil {
				t.Fatal(err)
			}
		}
		makeJoined(t, app, launchFor(t, app, owner, "burner"), true) // 2 machines at $19.97/h
		c := app.login(owner)
		tok := apiKeyFor(t, app, owner)

		check := func(when string) {
			t.Helper()
			f, err := app.store.CurrentBalance(ctx, owner.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			burn, err := app.store.BurnRate(ctx, owner.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			if f.Accruing <= 0 || burn <= 0 {
				t.Fatalf("%s: accruing %d, burn %d: the test needs both", when, f.Accruing, burn)
			}
			want := models.USD(f.Balance())
			d := doc(t, c.get("/billing"))
			if got := d.Find(`[data-testid=header-balance]`).Text(); !strings.Contains(got, want) {
				t.Errorf("%s: header %q, want %s", when, got, want)
			}
			if got := d.Find(`[data-testid=balance]`).Text(); got != want {
				t.Errorf("%s: card %q, want %s", when, got, want)
			}
			if got, w := d.Find(`[data-testid=balance-accruing]`).Text(), "· "+models.USD(f.Accruing)+" accruing"; got != w {
				t.Errorf("%s: beside the balance %q, want %q", when, got, w)
			}
			hours := float64(f.Balance()) / float64(burn)
			if got, w := d.Find(`[data-testid=hours-remaining]`).Text(), fmt.Sprintf("%.1f h", hours); got != w {
				t.Errorf("%s: hours remaining %q, want %q", when, got, w)
			}
			now := app.clock.Now()
			at, _ := models.Forecast(now, f.Balance(), 0, burn)
			if got := d.Find(`[data-testid=balance-run-out]`).Text(); got != at.UTC().Format(budgetTimeLayout) {
				t.Errorf("%s: run-out %q, want %s", when, got, at.UTC().Format(budgetTimeLayout))
			}
			if gap := at.Sub(now).Hours() - hours; math.Abs(gap) > 1.0/60 {
				t.Errorf("%s: the run-out is %.2f h away, hours remaining %.2f", when, at.Sub(now).Hours(), hours)
			}

			// The rows shown, with the balance carried in, add up to the balance shown.
			sum := parseCents(t, d.Find(`[data-testid=ledger-carried] [data-testid=ledger-amount]`).Text())
			d.Find(`[data-testid=ledger-row][data-counted=true] [data-testid=ledger-amount]`).Each(func(_ int, s *goquery.Selection) {
				sum += parseCents(t, s.Text())
			})
			if sum != parseCents(t, want) {
				t.Errorf("%s: the rows shown add up to %d cents; the balance shows %s", when, sum, want)
			}
			if got := d.Find(`[data-testid=ledger-closing]`).Text(); got != want {
				t.Errorf("%s: the rows' total %q, want %s", when, got, want)
			}
			if !strings.Contains(d.Find(`[data-testid=rounding-rule]`).Text(), "rounded, halves up, to the cent") {
				t.Errorf("%s: the rounding rule is not stated", when)
			}

			code, bal := apiJSON(t, app, "GET", "/v1/billing/balance", tok, "")
			if code != http.StatusOK || bal["balance"] != models.DecimalUSD(f.Balance()) || bal["accruing"] != models.DecimalUSD(f.Accruing) {
				t.Errorf("%s: GET /v1/billing/balance %d %v, want %s less %s accruing", when, code, bal, models.DecimalUSD(f.Balance()), models.DecimalUSD(f.Accruing))
			}
			if h, _ := bal["hoursRemaining"].(float64); math.Abs(h-hours) > 1e-9 {
				t.Errorf("%s: API hours remaining %v, want %v", when, bal["hoursRemaining"], hours)
			}
			code, b := apiJSON(t, app, "GET", "/v1/billing/budgets", tok, "")
			if code != http.StatusOK || b["balance"] != models.DecimalUSD(f.Balance()) || b["balanceRunOutAt"] != at.UTC().Format(time.RFC3339) {
				t.Errorf("%s: GET /v1/billing/budgets %d balance %v run-out %v, want %s and %s", when, code, b["balance"], b["balanceRunOutAt"],
					models.DecimalUSD(f.Balance()), at.UTC().Format(time.RFC3339))
			}
		}

		app.clock.Advance(37 * time.Minute) // the first hour: nothing written yet
		check("after 37 minutes")
		app.clock.Advance(2*time.Hour + 46*time.Minute) // hours on, written by the pass
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		check("after 3 h 23 min")
	})
}
