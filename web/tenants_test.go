package web

import (
	"context"
	"net/http"
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
