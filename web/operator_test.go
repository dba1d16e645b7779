package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/views"
)

// operatorFor makes acc a site operator and logs them in.
func operatorFor(t *testing.T, app *testApp, acc account) *client {
	t.Helper()
	if _, err := app.store.SetOperator(context.Background(), acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	return app.login(acc)
}

// OP2: a markup set on the providers page reaches every price a customer
// sees and pays with the same figures: the picker page, GET /v1/gpu/offers,
// the quote, and the launched cluster's locked rates (what billing charges).
func TestMarkupSameInPickerQuoteAndCluster(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_000_000, intp(20)))
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		if rec := oc.post("/admin/providers/sim/markup", url.Values{"markup": {"-4"}}); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("a negative markup: %d", rec.Code)
		}
		rec := oc.post("/admin/providers/sim/markup", url.Values{"markup": {"12.5"}}, "HX-Request", "true")
		if d := doc(t, rec); rec.Code != http.StatusOK || d.Find(`#markup-sim`).AttrOr("value", "") != "12.5" {
			t.Fatalf("set markup: %d %s", rec.Code, rec.Body)
		}
		if d := doc(t, oc.get("/admin/providers")); d.Find(`[data-provider=sim] #markup-sim`).AttrOr("value", "") != "12.5" ||
			!strings.Contains(d.Find(`[data-provider=sim]`).Text(), "20") {
			t.Errorf("providers page: %s", d.Find(`[data-testid=admin-provider-table]`).Text())
		}

		cust := app.signupAccount("ada@example.com", "Ada Labs")
		app.store.Deposit(context.Background(), cust.org.ID, 1000*models.Micro, "dep", "test")
		tok := apiKeyFor(t, app, cust)
		// 2.00 + 12.5 % = 2.25 per GPU-hour; 100 µ$ + 12.5 % = 112.5 → 113 per GB-hour (half up).
		const machine, cluster = "18.0565", "36.113"
		code, offers := apiJSON(t, app, http.MethodGet, "/v1/gpu/offers?accelerator=H100_80GB&nodes=2", tok, "")
		o := offers["groups"].([]any)[0].(map[string]any)["offers"].([]any)[0].(map[string]any)
		if code != 200 || o["usdPerHour"] != cluster || o["usdPerMachineHour"] != machine || o["perGpuUsdPerHour"] != "2.25" {
			t.Errorf("API offers: %d %v", code, o)
		}
		row := doc(t, app.login(cust).get("/offers?accelerator=H100_80GB&nodes=2")).Find(`[data-testid=offer-row]`)
		// The page's figures are the API's, exact (O3: no rounding apart).
		if row.Find(`[data-testid=cluster-price]`).Text() != "$"+cluster || row.Find(`[data-testid=machine-price]`).Text() != "$"+machine {
			t.Errorf("picker page: %q %q", row.Find(`[data-testid=cluster-price]`).Text(), row.Find(`[data-testid=machine-price]`).Text())
		}
		code, q := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		if code != 201 || q["usdPerHour"] != cluster || q["usdPerMachineHour"] != machine {
			t.Fatalf("quote: %d %v", code, q)
		}
		code, cl := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters", tok, `{"quoteId":"`+q["id"].(string)+`"}`, "Idempotency-Key", "k1")
		if code != 201 || cl["usdPerHour"] != cluster || cl["usdPerMachineHour"] != machine {
			t.Errorf("cluster: %d %v", code, cl)
		}
		if !contains(app.auditActions(oc.orgOf(t, app)), "provider.markup") {
			t.Error("the markup change is not audited")
		}
	})
}

// orgOf is the org of the signed-in operator's session (their own).
func (c *client) orgOf(t *testing.T, app *testApp) string {
	t.Helper()
	var u models.User
	if err := app.db.Where("email = ?", "op@deck.example").Take(&u).Error; err != nil {
		t.Fatal(err)
	}
	var m models.Membership
	if err := app.db.Where("user_id = ?", u.ID).Take(&m).Error; err != nil {
		t.Fatal(err)
	}
	return m.OrgID
}

// X9: an operator turns a quoted request into a private offer; the customer
// is mailed, sees it (marked as theirs) in the picker and the API, quotes and
// launches it at its locked price until it expires. Another organisation
// sees nothing and cannot quote it. POST /v1/quote-requests is idempotent.
func TestPrivateOfferFromInboxToLaunch(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		other := app.signupAccount("bo@example.org", "Bo Corp")
		app.store.Deposit(context.Background(), cust.org.ID, 1000*models.Micro, "dep", "test")
		tok, otherTok := apiKeyFor(t, app, cust), apiKeyFor(t, app, other)
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))

		body := `{"accelerator":"H100_80GB","nodes":4,"gpusPerNode":8,"fabric":"infiniband","startDate":"2026-12-10","durationDays":28}`
		code, qr := apiJSON(t, app, http.MethodPost, "/v1/quote-requests", tok, body, "Idempotency-Key", "qr-1")
		if code != 201 {
			t.Fatalf("quote request: %d %v", code, qr)
		}
		id := qr["id"].(string)
		if code, again := apiJSON(t, app, http.MethodPost, "/v1/quote-requests", tok, body, "Idempotency-Key", "qr-1"); code != 200 || again["id"] != id {
			t.Errorf("same key, same body: %d %v", code, again)
		}
		changed := strings.Replace(body, `"nodes":4`, `"nodes":6`, 1)
		if code, e := apiJSON(t, app, http.MethodPost, "/v1/quote-requests", tok, changed, "Idempotency-Key", "qr-1"); code != 409 || errCode(e) != "idempotency_key_reused" {
			t.Errorf("same key, another body: %d %v", code, e)
		}
		var n int64
		app.db.Model(&models.QuoteRequest{}).Count(&n)
		if n != 1 {
			t.Errorf("%d requests stored, want 1", n)
		}

		form := url.Values{"offer_id": {"sim:h100x8"}, "nodes": {"4"}, "price": {"18.40"}, "valid_until": {"2026-12-03"}}
		if rec := oc.post("/admin/quote-requests/"+id+"/private-offers", form); rec.Code != http.StatusUnprocessableEntity ||
			doc(t, rec).Find(`[data-testid=not-quoted]`).Length() != 1 {
			t.Errorf("a request not yet quoted: %d", rec.Code)
		}
		if rec := oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"quoted"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("mark quoted: %d", rec.Code)
		}
		if d := doc(t, oc.get("/admin/quote-requests?status=quoted")); d.Find(`[data-testid=qr-private-offer]`).Length() != 1 {
			t.Error("the inbox does not link a quoted request to its private offer form")
		}
		if rec := oc.post("/admin/quote-requests/"+id+"/private-offers", form); rec.Code != http.StatusSeeOther {
			t.Fatalf("make the private offer: %d %s", rec.Code, rec.Body)
		}
		var po models.PrivateOffer
		if err := app.db.Take(&po).Error; err != nil || po.OrgID != cust.org.ID || po.MachineHour != 18_400_000 {
			t.Fatalf("private offer %+v %v", po, err)
		}
		var mail models.OutboxMail
		if err := app.db.Where("idempotency_key = ? AND to_addr = ?", "private-offer:"+po.ID, "ada@example.com").Take(&mail).Error; err != nil {
			t.Errorf("no mail to the customer: %v", err)
		} else if mail, err = views.RenderOutbox(mail); err != nil {
			t.Error(err)
		} else if !strings.Contains(mail.Text, "Launch your private offer") || !strings.Contains(mail.Text, "/clusters/new?private="+po.ID) {
			t.Errorf("the mail does not link the private offer's launch:\n%s", mail.Text)
		}
		// The request's page says it is quoted and links the launch (RQ1).
		rp := doc(t, app.login(cust).get("/quote-requests/"+id))
		if st := rp.Find(`[data-testid=qr-status-text]`).Text(); strings.Contains(st, "sent your contact") {
			t.Errorf("status text %q", st)
		}
		if href := rp.Find(`[data-testid=qr-launch-private]`).AttrOr("href", ""); href != "/clusters/new?private="+po.ID {
			t.Errorf("the request's page links %q, want the private offer's launch", href)
		}

		// Theirs in the picker and the API; nobody else's.
		row := doc(t, app.login(cust).get("/offers?accelerator=H100_80GB&nodes=2")).Find(`[data-testid=private-offer-row]`)
		if row.Length() != 1 || row.Find(`[data-testid=private-cluster-price]`).Text() != "$73.60/h" || !strings.Contains(row.Text(), "yours") {
			t.Errorf("customer's picker: %q", row.Text())
		}
		if n := doc(t, app.login(other).get("/offers?accelerator=H100_80GB&nodes=2")).Find(`[data-testid=private-offer-row]`).Length(); n != 0 {
			t.Errorf("another organisation's picker shows %d private offers", n)
		}
		_, offers := apiJSON(t, app, http.MethodGet, "/v1/gpu/offers?accelerator=H100_80GB&nodes=2", tok, "")
		if pos, _ := offers["privateOffers"].([]any); len(pos) != 1 || pos[0].(map[string]any)["usdPerHour"] != "73.60" {
			t.Errorf("API private offers: %v", offers["privateOffers"])
		}
		if _, offers := apiJSON(t, app, http.MethodGet, "/v1/gpu/offers?accelerator=H100_80GB&nodes=2", otherTok, ""); offers["privateOffers"] != nil {
			t.Errorf("another organisation's API shows %v", offers["privateOffers"])
		}
		shape := `{"accelerator":"H100_80GB","nodes":4,"gpusPerNode":8,"privateOfferId":"` + po.ID + `"}`
		if code, e := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/quote", otherTok, shape); code != 409 || errCode(e) != "no_capacity" {
			t.Errorf("another organisation quotes it: %d %v", code, e)
		}

		// Launch at the locked price, from the page's link and from the API.
		lp := doc(t, app.login(cust).get("/clusters/new?private="+po.ID))
		if got := lp.Find(`[data-testid=quote-price]`).Text(); got != "$73.60/h" {
			t.Errorf("launch page price %q", got)
		}
		code, cl := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters", tok, `{"accelerator":"H100_80GB","nodes":4,"gpusPerNode":8,"privateOfferId":"`+po.ID+`"}`, "Idempotency-Key", "l1")
		if code != 201 || cl["usdPerHour"] != "73.60" || cl["usdPerMachineHour"] != "18.40" {
			t.Fatalf("launch: %d %v", code, cl)
		}

		// Past its last day: no quote, no launch, not in the picker.
		app.clock.Set(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		code, e := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/quote", tok, shape)
		if ex, _ := e["error"].(map[string]any); code != 409 || ex["reason"] != models.PrivateOfferExpired {
			t.Errorf("quote after expiry: %d %v", code, e)
		}
		if n := doc(t, app.login(cust).get("/offers?accelerator=H100_80GB&nodes=2")).Find(`[data-testid=private-offer-row]`).Length(); n != 0 {
			t.Errorf("an expired private offer is still in the picker")
		}
		if !contains(app.auditActions(cust.org.ID), "private_offer.create") {
			t.Error("the private offer is not in the customer's audit log")
		}
	})
}

// OP2: balance adjustments (a ledger entry with its reason, once per form),
// the audit log across organisations, and the jobs page.
func TestAdminBalanceAuditAndJobs(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		d := doc(t, oc.get("/admin/orgs/"+cust.org.ID+"/balance"))
		token := d.Find(`[data-testid=adjust-form] input[name=token]`).AttrOr("value", "")
		if token == "" {
			t.Fatal("no form token")
		}
		// An adjustment asks before it is sent (B9).
		if d.Find(`[data-testid=adjust-form]`).AttrOr("data-confirm", "") == "" {
			t.Error("the balance adjustment form does not ask for a confirmation")
		}
		bad := url.Values{"amount": {"twelve"}, "reason": {"credit"}, "token": {token}}
		if rec := oc.post("/admin/orgs/"+cust.org.ID+"/adjustments", bad); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("bad amount: %d", rec.Code)
		}
		form := url.Values{"amount": {"25"}, "reason": {"Outage credit"}, "token": {token}}
		for range 2 { // a double submit adjusts once
			if rec := oc.post("/admin/orgs/"+cust.org.ID+"/adjustments", form); rec.Code != http.StatusSeeOther {
				t.Fatalf("adjust: %d %s", rec.Code, rec.Body)
			}
		}
		if b, _ := app.store.Balance(context.Background(), cust.org.ID); b != 25*models.Micro {
			t.Errorf("balance %d", b)
		}
		d = doc(t, oc.get("/admin/orgs/"+cust.org.ID+"/balance"))
		if d.Find(`[data-testid=admin-balance]`).Text() != "$25.00" || !strings.Contains(d.Find(`[data-kind=adjustment]`).Text(), "Outage credit") {
			t.Errorf("balance page: %s", d.Find(`[data-testid=admin-balance-page]`).Text())
		}

		d = doc(t, oc.get("/admin/audit"))
		adj := d.Find(`[data-testid=admin-audit-row][data-action="balance.adjust"]`)
		if adj.Length() != 1 || !strings.Contains(adj.Text(), "Ada Labs") || !strings.Contains(adj.Text(), "op@deck.example") {
			t.Errorf("audit across orgs: %s", d.Find(`[data-testid=admin-audit]`).Text())
		}
		one := doc(t, oc.get("/admin/audit?org="+cust.org.ID)).Find(`[data-testid=admin-audit-row]`)
		if one.Length() == 0 || one.Length() >= d.Find(`[data-testid=admin-audit-row]`).Length() ||
			one.Find(`td:nth-child(2)`).Text() != strings.Repeat("Ada Labs", one.Length()) {
			t.Errorf("audit of one org: %d rows: %s", one.Length(), one.Text())
		}

		if err := app.store.RecordJobRun(context.Background(), "catalog", testNow, testNow.Add(1500*time.Millisecond), nil); err != nil {
			t.Fatal(err)
		}
		job := doc(t, oc.get("/admin/jobs")).Find(`[data-testid=admin-job-row][data-job=catalog]`)
		if !strings.Contains(job.Text(), "1.5s") || job.Find(`[data-testid=job-ok]`).Length() != 1 {
			t.Errorf("jobs page: %q", job.Text())
		}
	})
}

// fakeJobs is the scheduler as web sees it (web never imports jobs).
type fakeJobs struct{ ran []string }

func (f *fakeJobs) RunNow(_ context.Context, name string) error {
	f.ran = append(f.ran, name)
	return nil
}
func (f *fakeJobs) Names() []string  { return []string{"catalog", "mail"} }
func (f *fakeJobs) Kick(name string) { f.ran = append(f.ran, "kick:"+name) }
func (f *fakeJobs) Schedule(name string) string {
	return map[string]string{"catalog": "@every 1m"}[name]
}

// OP2: the jobs page shows each scheduled job's schedule and "run now"
// runs exactly that job through the JobRunner interface.
func TestAdminRunJobNow(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		fj := &fakeJobs{}
		app.e = New(Deps{
			Config: Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
			Store:  app.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FakeClock: app.clock,
			Static: static.FS, Jobs: fj,
		})
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		d := doc(t, oc.get("/admin/jobs"))
		row := d.Find(`[data-testid=admin-job-row][data-job=catalog]`)
		if !strings.Contains(row.Text(), "@every 1m") || !strings.Contains(row.Text(), "never ran") || row.Find(`[data-testid=run-job]`).Length() != 1 {
			t.Errorf("catalog row: %q", row.Text())
		}
		if rec := oc.post("/admin/jobs/nope/run", nil); rec.Code != http.StatusNotFound {
			t.Errorf("unknown job: %d", rec.Code)
		}
		if rec := oc.post("/admin/jobs/mail/run", nil); rec.Code != http.StatusSeeOther || len(fj.ran) != 1 || fj.ran[0] != "mail" {
			t.Errorf("run now: %d, ran %v", rec.Code, fj.ran)
		}
	})
}

// clockJobs is a scheduler whose per-minute jobs follow the fake clock.
type clockJobs struct {
	fakeJobs
	clock *models.FakeClock
	at    []time.Time
}

func (f *clockJobs) RunDue(context.Context) ([]string, error) {
	f.at = append(f.at, f.clock.Now())
	return []string{"gpu-watch"}, nil
}

// OP2, X15: moving the development fake clock runs the jobs the move made
// due at once, on the moved time, and says which ran.
func TestDevClockRunsTheDueJobs(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	fj := &clockJobs{clock: app.clock}
	app.e = New(Deps{
		Config: Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  app.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FakeClock: app.clock,
		Static: static.FS, Jobs: fj,
	})
	before := app.clock.Now()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/dev/clock", strings.NewReader("minutes=10"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = "127.0.0.1:5555"
	rec := app.do(req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ran":["gpu-watch"]`) {
		t.Fatalf("POST /dev/clock: %d %s", rec.Code, rec.Body)
	}
	if len(fj.at) != 1 || !fj.at[0].Equal(before.Add(10*time.Minute)) {
		t.Fatalf("due jobs ran at %v, want once at %s", fj.at, before.Add(10*time.Minute))
	}
}
