package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// quoteRequestMails lists the outbox's quote-request mails by key, failing
// on a key queued twice.
func quoteRequestMails(t *testing.T, app *testApp) map[string]models.OutboxMail {
	t.Helper()
	all, err := views.RenderedMails(app.store.OutboxMails(context.Background(), 1000))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]models.OutboxMail{}
	for _, m := range all {
		if !strings.HasPrefix(m.Key, "capacity-request:") {
			continue
		}
		if _, dup := out[m.Key]; dup {
			t.Errorf("mail %s queued twice", m.Key)
		}
		out[m.Key] = m
	}
	return out
}

func quoteRequestCount(t *testing.T, app *testApp) int64 {
	t.Helper()
	var n int64
	if err := app.db.Model(&models.QuoteRequest{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func validQuoteForm() url.Values {
	return url.Values{"accelerator": {"H100_80GB"}, "nodes": {"128"}, "gpus_per_node": {"8"}, "fabric": {"infiniband"},
		"location": {"us-east"}, "start_date": {"2027-01-04"}, "duration": {"6"}, "duration_unit": {"weeks"},
		"budget": {"900"}, "contact_name": {"Ada Lovelace"}, "contact_email": {"ada@example.com"},
		"contact_phone": {"+44 20 7946 0000"}, "notes": {"Pretraining, 3 TB of checkpoints."}}
}

// RQ1: the offers page's "not in stock" link opens the form prefilled with
// that size, and the signed-in user as the contact.
func TestQuoteRequestPrefilledFromOffer(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		app.seedOffers(testOffer("small", "eu-west", 8, 2_000_000, intp(3)))
		c := app.login(acc)
		offers := doc(t, c.get("/offers?accelerator=H100_80GB&nodes=16"))
		link := offers.Find(`#offer-sim\:small [data-testid=quote-link]`).AttrOr("href", "")
		if !strings.HasPrefix(link, "/quote-requests/new?") {
			t.Fatalf("not-in-stock quote link = %q", link)
		}
		rec := c.get(link)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d", link, rec.Code)
		}
		d := doc(t, rec)
		checks := map[string]string{
			`#accelerator option[selected]`:   "H100_80GB",
			`#gpus_per_node option[selected]`: "8",
			`#fabric option[selected]`:        "infiniband",
		}
		for sel, want := range checks {
			if got := d.Find(sel).AttrOr("value", ""); got != want {
				t.Errorf("%s = %q, want %q", sel, got, want)
			}
		}
		inputs := map[string]string{"nodes": "16", "location": "eu-west", "contact_email": "ada@example.com", "contact_name": "Name of ada@example.com"}
		for name, want := range inputs {
			if got := d.Find(`input[name=`+name+`]`).AttrOr("value", ""); got != want {
				t.Errorf("input %s = %q, want %q", name, got, want)
			}
		}
		if got := d.Find(`[data-testid=prefill-note]`).Text(); !strings.Contains(got, "16 × 8 × H100 80GB") {
			t.Errorf("prefill note = %q", got)
		}
		for _, id := range []string{"accelerator", "nodes", "gpus_per_node", "fabric", "location", "start_date", "duration",
			"duration_unit", "budget", "contact_name", "contact_email", "contact_phone", "notes"} {
			if d.Find(`label[for=`+id+`]`).Length() != 1 {
				t.Errorf("input %s has no label", id)
			}
		}
		// The filter panel's plain link opens an empty form with sensible
		// defaults, and claims no size could not start.
		plain := doc(t, c.get("/quote-requests/new"))
		if got := plain.Find(`#fabric option[selected]`).AttrOr("value", ""); got != "any" {
			t.Errorf("default fabric = %q", got)
		}
		if plain.Find(`[data-testid=prefill-note]`).Length() != 0 || doc(t, c.get("/quote-requests/new?accelerator=H100_80GB&nodes=4")).Find(`[data-testid=prefill-note]`).Length() != 0 {
			t.Error("a prefill note without a whole size")
		}
	})
}

// RQ1: a size linked from one location that can start
// now elsewhere is not said to be unable to start; the note links the
// offers instead. A size nowhere sold still reads "cannot start right now".
func TestQuoteRequestPrefillSaysWhatCanStart(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		c := app.login(app.signupAccount("ada@example.com", "Ada Labs"))
		note := doc(t, c.get("/quote-requests/new?accelerator=H100_80GB&nodes=2&gpus_per_node=8&location=eu-west")).Find(`[data-testid=prefill-note]`)
		if got := note.Text(); strings.Contains(got, "cannot start") || !strings.Contains(got, "can start now in 1 location") {
			t.Errorf("a startable size's note = %q", got)
		}
		if href := note.Find(`[data-testid=prefill-offers]`).AttrOr("href", ""); href != "/offers?accelerator=H100_80GB&nodes=2&gpus_per_node=8" {
			t.Errorf("offers link %q", href)
		}
		if got := doc(t, c.get("/quote-requests/new?accelerator=H100_80GB&nodes=40&gpus_per_node=8")).Find(`[data-testid=prefill-note]`).Text(); !strings.Contains(got, "cannot start right now") {
			t.Errorf("a size nowhere startable: %q", got)
		}
	})
}

// Signed out, the link goes through log-in and comes back to the same form.
func TestQuoteRequestFormAfterLogin(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.client()
		want := "/quote-requests/new?accelerator=H100_80GB&nodes=96&gpus_per_node=8&interconnect=roce"
		rec := c.get(want)
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/login?") {
			t.Fatalf("signed out: %d %q", rec.Code, location(rec))
		}
		u, _ := url.Parse(location(rec))
		next := u.Query().Get("next")
		if next != want {
			t.Fatalf("next = %q, want %q", next, want)
		}
		rec = c.post("/login", url.Values{"email": {acc.user.Email}, "password": {testPassword}, "next": {next}})
		if rec.Code != http.StatusSeeOther || location(rec) != want {
			t.Fatalf("after log-in: %d %q", rec.Code, location(rec))
		}
		d := doc(t, c.get(location(rec)))
		if d.Find(`input[name=nodes]`).AttrOr("value", "") != "96" || d.Find(`#fabric option[selected]`).AttrOr("value", "") != "roce" {
			t.Error("the form lost its prefill through log-in")
		}
	})
}

// RQ1, A4, E1, A5: bad input is a 422 beside each field with what was typed
// kept and nothing stored or mailed; good input stores the request, mails
// the customer and sales once each, audits it and lands on its page.
func TestCreateQuoteRequestFromForm(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("ada@example.com", "Ada Labs")
		c := app.login(acc)

		bad := validQuoteForm()
		bad.Set("nodes", "1000")
		bad.Set("start_date", "2026-01-01")
		bad.Set("budget", "a lot")
		bad.Set("contact_email", "ada at example")
		bad.Set("notes", "keep <this> text")
		rec := c.post("/quote-requests", bad)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad form: %d", rec.Code)
		}
		d := doc(t, rec)
		for _, f := range []string{"nodes", "start_date", "budget", "contact_email"} {
			if d.Find(`[data-testid=problem-`+f+`]`).Length() != 1 || d.Find(`[name=`+f+`]`).AttrOr("aria-invalid", "") != "true" {
				t.Errorf("no problem shown beside %s", f)
			}
		}
		if d.Find(`[data-testid=problem-location]`).Length() != 0 {
			t.Error("a valid field shows a problem")
		}
		for name, want := range map[string]string{"nodes": "1000", "budget": "a lot", "contact_email": "ada at example", "location": "us-east"} {
			if got := d.Find(`input[name=`+name+`]`).AttrOr("value", ""); got != want {
				t.Errorf("422 lost %s: %q, want %q", name, got, want)
			}
		}
		if got := d.Find(`textarea[name=notes]`).Text(); got != "keep <this> text" {
			t.Errorf("422 lost notes: %q", got)
		}
		if d.Find(`#duration_unit option[selected]`).AttrOr("value", "") != "weeks" {
			t.Error("422 lost the duration unit")
		}
		// htmx gets the form alone.
		rec = c.post("/quote-requests", bad, "HX-Request", "true")
		if rec.Code != 422 || strings.Contains(strings.ToLower(rec.Body.String()), "<!doctype") || doc(t, rec).Find(`#quote-request-form`).Length() != 1 {
			t.Errorf("htmx 422: %d %.100s", rec.Code, rec.Body)
		}
		if n := quoteRequestCount(t, app); n != 0 {
			t.Fatalf("bad input stored %d requests", n)
		}
		if m := quoteRequestMails(t, app); len(m) != 0 {
			t.Fatalf("bad input queued mail: %v", m)
		}
		if contains(app.auditActions(acc.org.ID), "quote_request.create") {
			t.Error("bad input was audited as created")
		}

		rec = c.post("/quote-requests", validQuoteForm())
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/quote-requests/qr_") {
			t.Fatalf("create: %d %q\n%.300s", rec.Code, location(rec), rec.Body)
		}
		id := strings.TrimPrefix(location(rec), "/quote-requests/")
		d = doc(t, c.get(location(rec)))
		if !strings.Contains(d.Find(`[data-testid=flash]`).Text(), "Quote request sent") {
			t.Error("no flash after creating")
		}
		if d.Find(`[data-testid=qr-shape]`).Text() != "128 × 8 × H100 80GB" || d.Find(`[data-testid=status-badge]`).AttrOr("data-status", "") != "new" ||
			d.Find(`[data-testid=qr-budget]`).Text() != "$900.00/h" || !strings.Contains(d.Text(), "6 weeks") {
			t.Errorf("request page: %s", d.Find(`[data-testid=quote-request]`).Text())
		}
		r, err := app.store.QuoteRequestForOrg(context.Background(), acc.org.ID, id)
		if err != nil || r.UserID != acc.user.ID || r.DurationDays != 42 || r.EnvID != acc.env.ID || r.Requester != acc.user.Email {
			t.Errorf("stored %+v %v", r, err)
		}

		mails := quoteRequestMails(t, app)
		if len(mails) != 2 || mails["capacity-request:"+id+":received"].To != acc.user.Email ||
			mails["capacity-request:"+id+":sales"].To != models.DefaultSalesEmail {
			t.Errorf("mails = %+v", mails)
		}
		if !strings.Contains(mails["capacity-request:"+id+":received"].Text, "http://127.0.0.1/quote-requests/"+id) {
			t.Error("customer mail does not link to the request")
		}
		acts := app.auditActions(acc.org.ID)
		if len(acts) == 0 || acts[0] != "quote_request.create" {
			t.Errorf("audit = %v", acts)
		}

		// The list shows it with its status; the clusters page links there.
		list := doc(t, c.get("/quote-requests"))
		row := list.Find(`#qr-` + id)
		if row.Length() != 1 || row.Find(`[data-testid=status-badge]`).AttrOr("data-status", "") != "new" {
			t.Errorf("list: %s", list.Find(`main`).Text())
		}
		if doc(t, c.get("/clusters")).Find(`a[href="/quote-requests"]`).Length() == 0 {
			t.Error("the clusters page does not link to quote requests")
		}
	})
}

// Members can ask too, and sees the org's requests; the empty list teaches.
func TestQuoteRequestsEmptyAndMembers(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("ada@example.com", "Ada Labs")
		member := app.joinAccount(owner, "max@example.com", models.RoleMember)
		mc := app.login(member)
		if d := doc(t, mc.get("/quote-requests")); d.Find(`[data-testid=quote-requests-empty]`).Length() != 1 {
			t.Error("no empty state")
		}
		if rec := mc.post("/quote-requests", validQuoteForm()); rec.Code != http.StatusSeeOther {
			t.Fatalf("member create: %d", rec.Code)
		}
		if n := doc(t, app.login(owner).get("/quote-requests")).Find(`[data-testid=quote-request-row]`).Length(); n != 1 {
			t.Errorf("the owner sees %d of the org's requests", n)
		}
		if m := quoteRequestMails(t, app); len(m) != 2 {
			t.Errorf("mails: %v", m)
		}
		for _, m := range quoteRequestMails(t, app) {
			if strings.HasSuffix(m.Key, ":received") && m.To != "max@example.com" {
				t.Errorf("the receipt went to %s, not to the member who asked", m.To)
			}
		}
	})
}

// API1, API2, A3: the API creates, lists and gets with camelCase names;
// problems come under the body's names; another org's id is 404.
func TestQuoteRequestAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		a := app.signupAccount("ada@example.com", "Ada Labs")
		b := app.signupAccount("bo@example.org", "Bo Corp")
		keyA, keyB := apiKeyFor(t, app, a), apiKeyFor(t, app, b)

		code, body := apiJSON(t, app, "POST", "/v1/quote-requests", keyA,
			`{"accelerator":"H100_80GB","nodes":600,"gpusPerNode":8,"startDate":"soon","durationDays":0,"budgetPerHour":"cheap","contact":{"name":"Ada","email":"nope"}}`)
		fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
		if code != 422 || errCode(body) != "validation_failed" {
			t.Fatalf("bad body: %d %v", code, body)
		}
		for _, f := range []string{"nodes", "startDate", "durationDays", "budgetPerHour", "contact.email"} {
			if fields[f] == nil {
				t.Errorf("no problem for %s: %v", f, fields)
			}
		}
		if code, body := apiJSON(t, app, "POST", "/v1/quote-requests", keyA, `{"nodes":4,"extra":true}`); code != 422 {
			t.Errorf("unknown field: %d %v", code, body)
		}
		if n := quoteRequestCount(t, app); n != 0 {
			t.Fatalf("bad bodies stored %d requests", n)
		}

		// Without a contact, the key's creator is the contact.
		code, body = apiJSON(t, app, "POST", "/v1/quote-requests", keyA,
			`{"accelerator":"A100_80GB","nodes":256,"gpusPerNode":8,"fabric":"roce","startDate":"2027-02-01","durationDays":90,"budgetPerHour":"1234.5","notes":"api"}`)
		if code != 201 {
			t.Fatalf("create: %d %v", code, body)
		}
		id, _ := body["id"].(string)
		contact, _ := body["contact"].(map[string]any)
		if body["status"] != "new" || body["gpusPerNode"] != float64(8) || body["budgetPerHour"] != "1234.50" ||
			body["startDate"] != "2027-02-01" || body["durationDays"] != float64(90) || contact["email"] != "ada@example.com" || body["operatorNote"] != nil {
			t.Errorf("created %v", body)
		}
		mails := quoteRequestMails(t, app)
		if mails["capacity-request:"+id+":received"].To != "ada@example.com" || mails["capacity-request:"+id+":sales"].To == "" || len(mails) != 2 {
			t.Errorf("mails: %+v", mails)
		}
		if acts := app.auditActions(a.org.ID); len(acts) == 0 || acts[0] != "quote_request.create" {
			t.Errorf("audit = %v", acts)
		}

		code, body = apiJSON(t, app, "GET", "/v1/quote-requests", keyA, "")
		list, _ := body["quoteRequests"].([]any)
		if code != 200 || len(list) != 1 {
			t.Errorf("list A: %d %v", code, body)
		}
		if code, body := apiJSON(t, app, "GET", "/v1/quote-requests/"+id, keyA, ""); code != 200 || body["id"] != id {
			t.Errorf("get A: %d %v", code, body)
		}
		code, body = apiJSON(t, app, "GET", "/v1/quote-requests", keyB, "")
		if list, _ := body["quoteRequests"].([]any); code != 200 || len(list) != 0 {
			t.Errorf("B lists A's: %v", body)
		}
		if code, body := apiJSON(t, app, "GET", "/v1/quote-requests/"+id, keyB, ""); code != 404 || errCode(body) != "not_found" {
			t.Errorf("B gets A's: %d %v", code, body)
		}
		// Pages too.
		bc := app.login(b)
		if rec := bc.get("/quote-requests/" + id); rec.Code != 404 {
			t.Errorf("B's page for A's id: %d", rec.Code)
		}
		if strings.Contains(bc.get("/quote-requests").Body.String(), id) {
			t.Error("B's list shows A's request")
		}
	})
}

// RQ2, OP2: operators see every org's requests, filter by status and change
// it; each change mails the customer once and lands in their audit log; the
// internal note stays with operators. Everyone else gets 403.
func TestAdminQuoteRequestInbox(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		other := app.signupAccount("bo@example.org", "Bo Corp")
		op := app.signupAccount("op@deck.example", "Deck Ops")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		cc := app.login(cust)
		rec := cc.post("/quote-requests", validQuoteForm())
		id := strings.TrimPrefix(location(rec), "/quote-requests/")
		app.clock.Advance(time.Minute)
		form := validQuoteForm()
		form.Set("nodes", "300")
		if rec := app.login(other).post("/quote-requests", form); rec.Code != http.StatusSeeOther {
			t.Fatalf("other create: %d", rec.Code)
		}

		// Not operators: 403, for pages and for the status form.
		if rec := cc.get("/admin/quote-requests"); rec.Code != 403 {
			t.Errorf("customer GET inbox: %d", rec.Code)
		}
		if rec := cc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"won"}}); rec.Code != 403 {
			t.Errorf("customer POST status: %d", rec.Code)
		}

		oc := app.login(op)
		if got := doc(t, oc.get("/admin")).Find(`[data-testid=admin-new-quote-requests]`).Text(); !strings.Contains(got, "2 new") {
			t.Errorf("admin page link = %q", got)
		}
		d := doc(t, oc.get("/admin/quote-requests"))
		rows := d.Find(`[data-testid=admin-quote-request-row]`)
		if rows.Length() != 2 || !strings.Contains(rows.First().Text(), "Bo Corp") || !strings.Contains(rows.Last().Text(), "Ada Labs") {
			t.Fatalf("inbox rows: %d\n%s", rows.Length(), d.Find(`main`).Text())
		}
		row := d.Find(`#qr-` + id)
		for _, want := range []string{"128 × 8 × H100 80GB", "InfiniBand", "us-east", "2027-01-04", "6 weeks", "$900.00/h", "Ada Lovelace", "ada@example.com", "+44 20 7946 0000", "Pretraining", "ada@example.com"} {
			if !strings.Contains(row.Text(), want) {
				t.Errorf("inbox row lacks %q", want)
			}
		}
		if rec := oc.get("/admin/quote-requests?status=pending"); rec.Code != 400 {
			t.Errorf("unknown filter: %d", rec.Code)
		}

		// A plain form: 303 and a flash; the customer is mailed once, audited.
		rec = oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"contacted"}, "operator_note": {"zq-internal: budget is firm"}})
		if rec.Code != http.StatusSeeOther || location(rec) != "/admin/quote-requests" {
			t.Fatalf("set contacted: %d %q", rec.Code, location(rec))
		}
		if f := doc(t, oc.get("/admin/quote-requests?status=contacted")); f.Find(`[data-testid=admin-quote-request-row]`).Length() != 1 ||
			!strings.Contains(f.Find(`[data-testid=flash]`).Text(), "the customer was emailed") ||
			f.Find(`[data-testid=status-filters] a[aria-current=page]`).AttrOr("href", "") != "/admin/quote-requests?status=contacted" {
			t.Errorf("filtered inbox after the change:\n%s", f.Find(`main`).Text())
		}
		status1 := "capacity-request:" + id + ":status:1"
		mails := quoteRequestMails(t, app)
		if m := mails[status1]; m.To != cust.user.Email || !strings.Contains(m.Subject, "is now contacted") || strings.Contains(m.Text, "zq-internal") {
			t.Errorf("status mail: %+v", m)
		}
		if len(mails) != 5 { // 2 + 2 on create, 1 status change
			t.Errorf("%d mails, want 5", len(mails))
		}
		if acts := app.auditActions(cust.org.ID); acts[0] != "quote_request.status" {
			t.Errorf("customer audit = %v", acts)
		}

		// htmx: the row comes back, saved; a note-only save mails nobody.
		rec = oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"contacted"}, "operator_note": {"zq-internal: called twice"}}, "HX-Request", "true")
		if rec.Code != 200 || doc(t, rec).Find(`[data-testid=qr-saved]`).Length() != 1 {
			t.Errorf("htmx note save: %d %.200s", rec.Code, rec.Body)
		}
		rec = oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"quoted"}, "operator_note": {"zq-internal: called twice"}}, "HX-Request", "true")
		rd := rowDoc(t, rec.Body.String())
		if rec.Code != 200 || rd.Find(`tr#qr-`+id).AttrOr("data-status", "") != "quoted" || strings.Contains(strings.ToLower(rec.Body.String()), "<!doctype") {
			t.Errorf("htmx status save: %d %.200s", rec.Code, rec.Body)
		}
		if got := rd.Find(`textarea[name=operator_note]`).Text(); got != "zq-internal: called twice" {
			t.Errorf("note = %q", got)
		}
		if m := quoteRequestMails(t, app); len(m) != 6 || m["capacity-request:"+id+":status:2"].To != cust.user.Email {
			t.Errorf("after note-only and quoted: %d mails", len(m))
		}
		if acts := app.auditActions(cust.org.ID); acts[0] != "quote_request.status" || acts[1] != "quote_request.note" {
			t.Errorf("customer audit = %v", acts)
		}

		// Bad input: 422 in the row, nothing changes.
		rec = oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"maybe"}}, "HX-Request", "true")
		if rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-status]`).Length() != 1 {
			t.Errorf("bad status: %d %.200s", rec.Code, rec.Body)
		}
		if rec := oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"lost"}, "operator_note": {strings.Repeat("x", 1001)}}); rec.Code != 422 {
			t.Errorf("long note: %d", rec.Code)
		}
		if rec := oc.post("/admin/quote-requests/qr_nope/status", url.Values{"status": {"won"}}); rec.Code != 404 {
			t.Errorf("unknown id: %d", rec.Code)
		}
		if r, _ := app.store.QuoteRequestByID(ctx, id); r.Status != models.CapacityQuoted {
			t.Errorf("status = %s after refused saves", r.Status)
		}
		if m := quoteRequestMails(t, app); len(m) != 6 {
			t.Errorf("refused saves queued mail: %d", len(m))
		}

		// The customer sees the new status, never the internal note.
		page := cc.get("/quote-requests/" + id)
		pd := doc(t, page)
		if pd.Find(`[data-testid=status-badge]`).AttrOr("data-status", "") != "quoted" || strings.Contains(page.Body.String(), "zq-internal") {
			t.Errorf("customer page: %s", pd.Find(`main`).Text())
		}
		if !strings.Contains(pd.Find(`[data-testid=qr-status-text]`).Text(), "quote") {
			t.Error("the status is not explained")
		}
		code, body := apiJSON(t, app, "GET", "/v1/quote-requests/"+id, apiKeyFor(t, app, cust), "")
		if code != 200 || body["status"] != "quoted" {
			t.Errorf("API status: %d %v", code, body)
		}
		list := doc(t, cc.get("/quote-requests"))
		var statuses []string
		list.Find(`[data-testid=quote-request-row] [data-testid=status-badge]`).Each(func(_ int, s *goquery.Selection) {
			statuses = append(statuses, s.AttrOr("data-status", ""))
		})
		if strings.Join(statuses, ",") != "quoted" {
			t.Errorf("customer list statuses = %v", statuses)
		}
	})
}

// rowDoc parses a table-row fragment (an htmx swap) inside a table, where
// an HTML parser keeps the <tr>.
func rowDoc(t *testing.T, html string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader("<table><tbody>" + html + "</tbody></table>"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
