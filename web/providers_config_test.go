package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// OP1, OP2: the providers page shows, for each provider, whether it is
// enabled, whether its key is set (never the key), its regions, its markup
// and where the markup comes from, the catalog's freshness, offer count and
// last error. A markup from the environment wins, is read-only on the page
// and a POST to change it is refused with 409; the others stay editable.
func TestProvidersPageShowsConfiguration(t *testing.T) {
	const secret = "secret_lambda_key_never_shown"
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppSet(t, db, func(s *models.Settings) { s.EnvMarkups = map[string]models.MarkupBP{"lambda": 1250} }, func(d *Deps) {
			d.Config.Providers = []string{"sim", "lambda"}
			d.Config.ProviderSettings = map[string]ProviderSetting{
				"lambda": {KeyVar: "LAMBDA_API_KEY", KeySet: true, RegionsVar: "LAMBDA_REGIONS", Regions: []string{"us-east-1", "us-west-1"}, MarkupVar: "LAMBDA_MARKUP_PERCENT"},
				"sim":    {MarkupVar: "SIM_MARKUP_PERCENT"},
			}
		})
		ctx := context.Background()
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_000_000, intp(20)), testOffer("a100x8", "us-east", 8, 1_000_000, intp(2)))
		lam := testOffer("gpu_8x_h100", "us-east-1", 8, 3_000_000, nil)
		lam.Provider = "lambda"
		if err := app.store.ReplaceOffers(ctx, "lambda", []models.Offer{lam}, app.clock.Now().Add(-models.OfferFreshness-1)); err != nil {
			t.Fatal(err)
		}
		if err := app.store.RecordJobRun(ctx, "catalog", app.clock.Now(), app.clock.Now(), errors.New("lambda: list offers: 401 unauthorized")); err != nil {
			t.Fatal(err)
		}
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		rec := oc.get("/admin/providers")
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), secret) {
			t.Fatalf("providers page: %d", rec.Code)
		}
		d := doc(t, rec)
		l := d.Find(`[data-testid=admin-provider-row][data-provider=lambda]`)
		if got := strings.Join(strings.Fields(l.Find(`[data-testid=provider-key]`).Text()), " "); got != "set LAMBDA_API_KEY" {
			t.Errorf("lambda key: %q", got)
		}
		if got := l.Find(`[data-testid=provider-regions]`).Text(); !strings.Contains(got, "us-east-1, us-west-1") || !strings.Contains(got, "LAMBDA_REGIONS") {
			t.Errorf("lambda regions: %q", got)
		}
		m := l.Find(`[data-testid=provider-markup]`)
		if m.AttrOr("data-markup-source", "") != models.MarkupFromEnv || m.Find(`[data-testid=markup-value]`).Text() != "12.5%" ||
			!strings.Contains(m.Text(), "LAMBDA_MARKUP_PERCENT") || m.Find(`form, input`).Length() != 0 {
			t.Errorf("lambda markup is not read-only from the environment: %q", m.Text())
		}
		if l.AttrOr("data-stale", "") != "true" || !strings.Contains(l.Text(), "401 unauthorized") || !strings.Contains(l.Text(), "yes") {
			t.Errorf("lambda catalog: %q", l.Text())
		}
		s := d.Find(`[data-testid=admin-provider-row][data-provider=sim]`)
		if s.AttrOr("data-stale", "") != "false" || s.Find(`td.num`).Text() != "2" || s.Find(`#markup-sim`).Length() != 1 ||
			s.Find(`[data-testid=provider-markup]`).AttrOr("data-markup-source", "") != models.MarkupFromDefault ||
			strings.Contains(s.Text(), "401") {
			t.Errorf("sim row: %q", s.Text())
		}

		// The environment's markup cannot be changed here, and prices use it.
		if rec := oc.post("/admin/providers/lambda/markup", url.Values{"markup": {"3"}}); rec.Code != http.StatusConflict ||
			!strings.Contains(rec.Body.String(), "LAMBDA_MARKUP_PERCENT") {
			t.Errorf("changing an environment markup: %d", rec.Code)
		}
		if _, err := app.store.As(models.Actor{Name: "op"}).SetProviderMarkup(ctx, "lambda", "3"); !errors.Is(err, models.ErrMarkupFromEnv) {
			t.Errorf("the use case changes an environment markup: %v", err)
		}
		mk, err := app.store.Markups(ctx)
		if err != nil || mk.For("lambda") != 1250 || models.CustomerPrice(3_000_000, mk.For("lambda")) != 3_375_000 {
			t.Errorf("lambda's markup: %v %v", mk, err)
		}
		// Without one in the environment the page's edit keeps working.
		rec = oc.post("/admin/providers/sim/markup", url.Values{"markup": {"4"}}, "HX-Request", "true")
		if d := doc(t, rec); rec.Code != http.StatusOK || d.Find(`#markup-sim`).AttrOr("value", "") != "4" ||
			!strings.Contains(rec.Body.String(), `data-markup-source="operator"`) {
			t.Errorf("sim markup: %d %s", rec.Code, rec.Body)
		}
	})
}
