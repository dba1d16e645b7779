package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// A3, L1: an Idempotency-Key is the environment's. prod's
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

// A3, V2: a quote made in prod with prod's volume,
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

// B9, L2, B5, A2, V3: creating or growing a volume passes a
// launch's admission. With $0 nothing is created; the balance, less one
// hour of every cluster and volume, must cover one hour of the volume (or
// of the GB added) and at least $10; the organisation's volume quota
// (count and GB) holds; a reached budget answers 409 budget_reached. Each
// refusal changes nothing; the page shows it under the size.
func TestVolumesPassLaunchAdmission(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("vol-adm@example.com", "Volume Admission")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		errOf := func(body map[string]any) map[string]any { e, _ := body["error"].(map[string]any); return e }

		// $0: nothing, through the API or the page.
		code, body := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"free","location":"us-east","sizeGb":100}`)
		if code != http.StatusPaymentRequired || errCode(body) != "insufficient_balance" || errOf(body)["shortfall"] != "10.00" {
			t.Fatalf("a volume with $0: %d %v", code, body)
		}
		browser := app.login(acc)
		rec := browser.post("/volumes", url.Values{"name": {"free"}, "location": {"us-east"}, "size_gb": {"100"}})
		if rec.Code != http.StatusPaymentRequired || !strings.Contains(doc(t, rec).Find(`[data-testid=problem-size_gb]`).Text(), "at least $10") {
			t.Errorf("the page's volume with $0: %d %q", rec.Code, doc(t, rec).Find(`[data-testid=problem-size_gb]`).Text())
		}
		if n := volumeCount(t, app); n != 0 {
			t.Fatalf("%d volumes created with $0", n)
		}

		// $15: a 50,000 GB volume ($6.85/h) passes; then $15 less $6.85
		// covers neither another volume nor growing it ($10 at least).
		if _, err := app.store.Deposit(ctx, acc.org.ID, 15*models.Micro, "dep15:"+acc.org.ID, "test"); err != nil {
			t.Fatal(err)
		}
		code, v := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"big","location":"us-east","sizeGb":50000}`)
		if code != http.StatusCreated {
			t.Fatalf("a volume $15 covers: %d %v", code, v)
		}
		big := v["id"].(string)
		if code, body := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"more","location":"us-east","sizeGb":10}`); code != http.StatusPaymentRequired ||
			errOf(body)["committed"] != "6.85" {
			t.Errorf("a second volume the balance less the first's hour does not cover: %d %v", code, body)
		}
		if code, body := apiJSON(t, app, "POST", "/v1/volumes/"+big+"/grow", tok, `{"sizeGb":100000}`); code != http.StatusPaymentRequired ||
			errCode(body) != "insufficient_balance" {
			t.Errorf("growing past the balance: %d %v", code, body)
		}
		if got, _ := app.store.VolumeForOrg(ctx, acc.org.ID, big); got.SizeGB != 50000 || volumeCount(t, app) != 1 {
			t.Fatalf("refusals changed the volumes: %+v, %d volumes", got, volumeCount(t, app))
		}

		// The volume quota: count and GB, operator-set.
		if _, err := app.store.Deposit(ctx, acc.org.ID, 1000*models.Micro, "dep1000:"+acc.org.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.SetOrgVolumeQuota(ctx, acc.org.ID, 2, 60_000); err != nil {
			t.Fatal(err)
		}
		if code, body := apiJSON(t, app, "POST", "/v1/volumes/"+big+"/grow", tok, `{"sizeGb":60001}`); code != http.StatusForbidden ||
			errCode(body) != "quota_exceeded" || errOf(body)["limit"] != float64(60_000) {
			t.Errorf("growing past the GB quota: %d %v", code, body)
		}
		if code, body := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"second","location":"us-east","sizeGb":10000}`); code != http.StatusCreated {
			t.Fatalf("a second volume within the quota: %d %v", code, body)
		}
		if code, body := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"third","location":"us-east","sizeGb":1}`); code != http.StatusForbidden ||
			errCode(body) != "quota_exceeded" || errOf(body)["resource"] != "volumes" {
			t.Errorf("a third volume over a quota of 2: %d %v", code, body)
		}
		if n := volumeCount(t, app); n != 2 {
			t.Fatalf("%d volumes, want 2", n)
		}

		// A reached budget: no volume created or grown in the environment.
		if _, err := app.store.SetOrgVolumeQuota(ctx, acc.org.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(2 * time.Hour)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		as := app.store.As(models.Actor{OrgID: acc.org.ID, Role: models.RoleOwner, Name: acc.user.Email})
		if _, err := as.SetBudget(ctx, acc.env.ID, 5*models.Micro); err != nil { // $15.07 spent on volumes
			t.Fatal(err)
		}
		for _, r := range []struct{ path, body string }{
			{"/v1/volumes", `{"name":"over","location":"us-east","sizeGb":10}`},
			{"/v1/volumes/" + big + "/grow", `{"sizeGb":50001}`},
		} {
			if code, body := apiJSON(t, app, "POST", r.path, tok, r.body); code != http.StatusConflict || errCode(body) != "budget_reached" {
				t.Errorf("POST %s over a reached budget: %d %v", r.path, code, body)
			}
		}
		rec = browser.post("/volumes/"+big+"/grow", url.Values{"size_gb": {"50001"}})
		if rec.Code != http.StatusConflict || !strings.Contains(doc(t, rec).Find(`[data-testid=problem-size_gb]`).Text(), "budget") {
			t.Errorf("the page's grow over a reached budget: %d %q", rec.Code, doc(t, rec).Find(`[data-testid=problem-size_gb]`).Text())
		}
		if got, _ := app.store.VolumeForOrg(ctx, acc.org.ID, big); got.SizeGB != 50000 || volumeCount(t, app) != 2 {
			t.Errorf("refusals changed the volumes: %+v, %d volumes", got, volumeCount(t, app))
		}
	})
}

// B9, A2: the operator sees each organisation's volume quota
// beside its machines and GPUs on /admin (the deployment's default until
// set), sets it there (audited), and 0 restores the default; a launch that
// creates a volume is held to it too.
func TestOperatorSetsVolumeQuota(t *testing.T) {
	eachAppSet(t, func(s *models.Settings) { s.DefaultMaxVolumes, s.DefaultMaxVolumeGB = 7, 700 }, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		cust := app.signupAccount("cust@example.com", "Customer")
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		row := doc(t, oc.get("/admin")).Find(`#org-` + cust.org.ID)
		if row.Find(`input[name=max_volumes]`).AttrOr("value", "") != "7" || row.Find(`input[name=max_volume_gb]`).AttrOr("value", "") != "700" {
			t.Fatalf("the admin row does not show the default volume quota: %q", row.Text())
		}
		bad := url.Values{"max_machines": {"64"}, "max_gpus": {"512"}, "max_volumes": {"-1"}, "max_volume_gb": {"5"}}
		if rec := oc.post("/admin/orgs/"+cust.org.ID+"/quota", bad, "HX-Request", "true"); rec.Code != http.StatusUnprocessableEntity ||
			doc(t, rec).Find(`[data-testid=problem-max_volumes]`).Length() != 1 {
			t.Errorf("a bad volume quota: %d", rec.Code)
		}
		if org, _ := app.store.OrgByID(ctx, cust.org.ID); org.MaxVolumes != 0 || org.MaxVolumeGB != 0 {
			t.Fatalf("a refused form changed the quota: %+v", org)
		}
		good := url.Values{"max_machines": {"64"}, "max_gpus": {"512"}, "max_volumes": {"1"}, "max_volume_gb": {"300"}}
		if rec := oc.post("/admin/orgs/"+cust.org.ID+"/quota", good); rec.Code != http.StatusSeeOther {
			t.Fatalf("set the volume quota: %d", rec.Code)
		}
		if org, _ := app.store.OrgByID(ctx, cust.org.ID); org.MaxVolumes != 1 || org.MaxVolumeGB != 300 {
			t.Fatalf("quota = %+v", org)
		}
		if acts := app.auditActions(cust.org.ID); !contains(acts, "org.quota_change") {
			t.Errorf("not audited: %v", acts)
		}

		// A launch creating a 400 GB volume is over the 300 GB quota.
		launchFor(t, app, cust, "seed")
		tok := apiKeyFor(t, app, cust)
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok,
			`{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGb":400},"name":"with-vol"}`)
		if code != http.StatusForbidden || errCode(body) != "quota_exceeded" {
			t.Errorf("a launch creating a volume over the quota: %d %v", code, body)
		}
		if n := volumeCount(t, app); n != 0 {
			t.Errorf("%d volumes after the refused launch", n)
		}

		if rec := oc.post("/admin/orgs/"+cust.org.ID+"/quota", url.Values{"max_machines": {"64"}, "max_gpus": {"512"}, "max_volumes": {"0"}, "max_volume_gb": {"0"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("restore the default: %d", rec.Code)
		}
		if v := doc(t, oc.get("/admin")).Find(`#org-`+cust.org.ID+` input[name=max_volume_gb]`).AttrOr("value", ""); v != "700" {
			t.Errorf("0 does not restore the default: %q", v)
		}
	})
}
