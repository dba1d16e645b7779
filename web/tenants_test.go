package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// Issue 20 item 8 (L1, A3): an Idempotency-Key is the environment's. prod's
// key replaying default's launch body and key makes prod's own launch; it
// never answers with default's cluster (which prod's key cannot even GET).
// The same holds for quote requests.
func TestIdempotencyKeyStaysInItsEnvironment(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("idem@example.com", "Idem Labs")
		launchFor(t, app, acc, "seed") // seeds the offer and $500
		if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "more:"+acc.org.ID, "test"); err != nil {
			t.Fatal(err)
		}
		prod, err := app.store.CreateEnvironment(ctx, acc.org.ID, "prod")
		if err != nil {
			t.Fatal(err)
		}
		_, prodKey, err := app.store.CreateAPIKey(ctx, acc.org.ID, prod.ID, acc.user.ID, "prod-ci")
		if err != nil {
			t.Fatal(err)
		}
		defaultKey := apiKeyFor(t, app, acc)

		body := `{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"name":"train"}`
		code, first := apiJSON(t, app, "POST", "/v1/gpu/clusters", defaultKey, body, "Idempotency-Key", "launch-1")
		if code != http.StatusCreated {
			t.Fatalf("default's launch: %d %v", code, first)
		}
		if code, again := apiJSON(t, app, "POST", "/v1/gpu/clusters", defaultKey, body, "Idempotency-Key", "launch-1"); code != http.StatusOK || again["id"] != first["id"] {
			t.Fatalf("default's replay is its first launch: %d %v", code, again)
		}
		code, replay := apiJSON(t, app, "POST", "/v1/gpu/clusters", prodKey, body, "Idempotency-Key", "launch-1")
		if code != http.StatusCreated || replay["id"] == first["id"] {
			t.Fatalf("prod's key replaying default's key and body: %d %v (default's cluster is %v)", code, replay, first["id"])
		}
		if cl, err := app.store.ClusterForOrg(ctx, acc.org.ID, replay["id"].(string)); err != nil || cl.EnvID != prod.ID {
			t.Errorf("prod's launch is not in prod: %+v %v", cl, err)
		}
		if code, got := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+replay["id"].(string), prodKey, ""); code != http.StatusOK {
			t.Errorf("prod's own launch through prod's key: %d %v", code, got)
		}
		if code, again := apiJSON(t, app, "POST", "/v1/gpu/clusters", prodKey, body, "Idempotency-Key", "launch-1"); code != http.StatusOK || again["id"] != replay["id"] {
			t.Errorf("prod's replay is prod's launch: %d %v", code, again)
		}

		qr := `{"accelerator":"H100_80GB","nodes":16,"gpusPerNode":8,"startDate":"2027-01-04","durationDays":7}`
		code, r1 := apiJSON(t, app, "POST", "/v1/quote-requests", defaultKey, qr, "Idempotency-Key", "qr-1")
		if code != http.StatusCreated {
			t.Fatalf("default's quote request: %d %v", code, r1)
		}
		code, r2 := apiJSON(t, app, "POST", "/v1/quote-requests", prodKey, qr, "Idempotency-Key", "qr-1")
		if code != http.StatusCreated || r2["id"] == r1["id"] {
			t.Errorf("prod's key replaying default's quote request: %d %v (default's is %v)", code, r2, r1["id"])
		}
	})
}

// Issue 20 item 9 (A3, V2): a quote made in prod with prod's volume,
// submitted from the dashboard while in default, launches nothing: a quote
// launches in its own environment only, the page says so, and prod's
// volume stays free for prod (it can still delete it). A volume mounts on
// its own environment's clusters only, even under a quote that names it in
// another environment.
func TestQuoteAndVolumeStayInTheirEnvironment(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("envq@example.com", "Env Labs")
		launchFor(t, app, acc, "seed") // seeds us-east and $500
		prod, err := app.store.CreateEnvironment(ctx, acc.org.ID, "prod")
		if err != nil {
			t.Fatal(err)
		}
		_, prodKey, err := app.store.CreateAPIKey(ctx, acc.org.ID, prod.ID, acc.user.ID, "prod-ci")
		if err != nil {
			t.Fatal(err)
		}
		code, v := apiJSON(t, app, "POST", "/v1/volumes", prodKey, `{"name":"prod-data","location":"us-east","sizeGb":100}`)
		if code != http.StatusCreated {
			t.Fatalf("prod's volume: %d %v", code, v)
		}
		volID := v["id"].(string)
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", prodKey, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeId":"`+volID+`"}`)
		if code != http.StatusCreated {
			t.Fatalf("prod's quote: %d %v", code, q)
		}
		before := clusterCount(t, app)

		browser := app.login(acc) // in the default environment
		rec := browser.post("/clusters", url.Values{"quote_id": {q["id"].(string)}, "form_token": {"tab-in-default-0123456789"},
			"name": {"stray"}, "software": {"none"}})
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("dashboard launch of prod's quote from default: %d %s", rec.Code, location(rec))
		}
		if msg := doc(t, rec).Find(`[data-testid=problem-quote]`).Text(); !strings.Contains(msg, "environment prod") {
			t.Errorf("the page does not say the quote is prod's: %q", msg)
		}
		if n := clusterCount(t, app); n != before {
			t.Fatalf("a cluster was created: %d → %d", before, n)
		}
		if code, body := apiJSON(t, app, "DELETE", "/v1/volumes/"+volID, prodKey, ""); code != http.StatusNoContent {
			t.Errorf("prod deletes its volume: %d %v", code, body)
		}

		// A quote of default naming prod's volume (written before quotes
		// checked it) mounts nothing either.
		code, v = apiJSON(t, app, "POST", "/v1/volumes", prodKey, `{"name":"prod-data2","location":"us-east","sizeGb":100}`)
		if code != http.StatusCreated {
			t.Fatalf("prod's second volume: %d %v", code, v)
		}
		volID = v["id"].(string)
		code, q = apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", prodKey, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeId":"`+volID+`"}`)
		if code != http.StatusCreated {
			t.Fatalf("prod's second quote: %d %v", code, q)
		}
		if err := app.db.Model(&models.Quote{}).Where("id = ?", q["id"]).Update("env_id", acc.env.ID).Error; err != nil {
			t.Fatal(err)
		}
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", apiKeyFor(t, app, acc), `{"quoteId":"`+q["id"].(string)+`","name":"stray2"}`)
		if code != http.StatusUnprocessableEntity || errCode(body) == "" {
			t.Errorf("default's launch mounting prod's volume: %d %v", code, body)
		}
		if n := clusterCount(t, app); n != before {
			t.Fatalf("a cluster was created: %d → %d", before, n)
		}
		if got, _ := app.store.VolumeForOrg(ctx, acc.org.ID, volID); got.ClusterID != "" {
			t.Errorf("prod's volume was attached: %+v", got)
		}
	})
}
