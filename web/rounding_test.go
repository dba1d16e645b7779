package web

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// hourFigure is every hourly rate a page prints as text: "$39.942192/h",
// "$19.97/machine-h", "$2.490137/GPU-h".
var hourFigure = regexp.MustCompile(`\$[0-9,]+\.[0-9]+/[A-Za-z-]*h\b`)

// Q6, O7: one rounding of prices per page. Hourly rates are
// shown exact (models.PriceUSD, as the API) on every customer page; only
// amounts of money (balances, charges, totals) are rounded to the cent. A
// rate with sub-cent digits must never also appear rounded to the cent.
func TestOneRoundingOfPricesPerPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("r@example.com", "Rounders")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_137, intp(20))) // $19.971096/machine-h
		if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "test-deposit:round", "test"); err != nil {
			t.Fatal(err)
		}
		q, err := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email, Workload: models.Workload{Name: "rounder", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		cl = makeJoined(t, app, cl, true)
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_137, intp(20))) // fresh prices for the offers and launch pages
		rates := []models.Money{cl.USDPerHour, cl.MachineHour}
		for _, r := range rates {
			if models.PriceUSD(r) == models.USD(r) {
				t.Fatalf("test rate %d has no sub-cent digits", r)
			}
		}
		c := app.login(acc)
		d := doc(t, c.get("/billing"))
		href, _ := d.Find(`[data-testid=usage-line-toggle]`).Attr("href")
		href, _, _ = strings.Cut(href, "#")
		pages := map[string]string{
			"offers":  "/offers?accelerator=H100_80GB&nodes=2",
			"launch":  "/clusters/new?offer=sim:h100x8&nodes=2",
			"cluster": "/clusters/" + cl.ID,
			"billing": href,
		}
		for name, path := range pages {
			rec := c.get(path)
			if rec.Code != 200 {
				t.Errorf("%s %s: %d", name, path, rec.Code)
				continue
			}
			text := doc(t, rec).Find("main").Text()
			exact := 0
			for _, r := range rates {
				if strings.Contains(text, models.PriceUSD(r)) {
					exact++
				}
				if strings.Contains(text, models.USD(r)+"/") {
					t.Errorf("%s page shows %s rounded to the cent (%s) beside exact rates: %q", name, models.PriceUSD(r), models.USD(r), hourFigure.FindAllString(text, -1))
				}
			}
			if exact == 0 {
				t.Errorf("%s page shows no exact rate: %q", name, hourFigure.FindAllString(text, -1))
			}
		}
	})
}
