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

// X18 through the real router (every exchange checked against the OpenAPI
// document): the calendar of an offer, a preview stating the terms before
// booking, the booking with its deposit, the same Idempotency-Key again,
// another organisation's 404, a change, a cancel with its refund, and the
// refusals (bad input, no capacity) that change nothing.
func TestReservationAPIJourney(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		a := app.signupAccount("ada@example.com", "Ada Labs")
		b := app.signupAccount("bo@example.org", "Bo Corp")
		keyA, keyB := apiKeyFor(t, app, a), apiKeyFor(t, app, b)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(6)))
		if _, err := app.store.Deposit(ctx, a.org.ID, 5_000*models.Micro, "dep-a", "test"); err != nil {
			t.Fatal(err)
		}
		start := app.clock.Now().Add(10 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)

		code, cal := apiJSON(t, app, "GET", "/v1/gpu/offers/sim:h100x8/availability?nodes=4&days=30", keyB, "")
		days, _ := cal["days"].([]any)
		if code != 200 || len(days) != 30 || cal["source"] != "best_effort" || days[0].(map[string]any)["bookable"] != true {
			t.Fatalf("calendar: %d %v", code, cal)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/gpu/offers/sim:h100x8/availability?days=121", keyB, ""); code != 422 {
			t.Errorf("a calendar past 120 days: %d", code)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/gpu/offers/sim:nope/availability", keyB, ""); code != 404 {
			t.Errorf("an unknown offer's calendar: %d", code)
		}

		body := `{"offerId":"sim:h100x8","nodes":4,"startAt":"` + start + `","durationHours":24`
		code, prev := apiJSON(t, app, "POST", "/v1/reservations", keyA, body+`,"preview":true}`)
		terms, _ := prev["terms"].(map[string]any)
		if code != 200 || prev["status"] != "preview" || terms["fullRefundUntil"] == nil || terms["deposit"] == nil {
			t.Fatalf("preview: %d %v", code, prev)
		}
		balance0, _ := app.store.Balance(ctx, a.org.ID)

		code, r := apiJSON(t, app, "POST", "/v1/reservations", keyA, body+`}`, "Idempotency-Key", "book-1")
		if code != 201 || r["status"] != "booked" || r["usdPerHour"] != prev["usdPerHour"] || r["terms"].(map[string]any)["deposit"] != terms["deposit"] {
			t.Fatalf("book: %d %v\npreview %v", code, r, prev)
		}
		id := r["id"].(string)
		deposit, _ := models.ParseUSD(terms["deposit"].(string))
		if balance1, _ := app.store.Balance(ctx, a.org.ID); balance0-balance1 != deposit {
			t.Fatalf("balance moved %d, deposit %d", balance0-balance1, deposit)
		}
		if code, again := apiJSON(t, app, "POST", "/v1/reservations", keyA, body+`}`, "Idempotency-Key", "book-1"); code != 200 || again["id"] != id {
			t.Fatalf("the same key again: %d %v", code, again)
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/reservations", keyA, body+`,"preview":false}`, "Idempotency-Key", "book-1"); code != 409 {
			t.Fatalf("the key with another body: %d", code)
		}
		// The calendar now shows the booked machines taken.
		_, cal = apiJSON(t, app, "GET", "/v1/gpu/offers/sim:h100x8/availability?nodes=4&days=20", keyB, "")
		if d := cal["days"].([]any)[11].(map[string]any); d["free"] != float64(2) || d["bookable"] != false {
			t.Errorf("the booked day: %v", d)
		}
		// No capacity: a second booking of 4 on the same days.
		if code, e := apiJSON(t, app, "POST", "/v1/reservations", keyA, body+`}`); code != 409 || errCode(e) != "no_capacity" {
			t.Errorf("an oversold booking: %d %v", code, e)
		}
		for _, bad := range []string{
			`{"offerId":"sim:h100x8","nodes":4,"startAt":"next week","durationHours":24}`,
			`{"offerId":"sim:h100x8","nodes":4,"startAt":"` + start + `","durationHours":0}`,
			`{"nodes":4,"startAt":"` + start + `","durationHours":4}`,
			`{"offerId":"sim:h100x8","nodes":4,"startAt":"` + start + `","durationHours":4,"price":"1"}`,
		} {
			if code, e := apiJSON(t, app, "POST", "/v1/reservations", keyA, bad); code != 422 {
				t.Errorf("%s: %d %v", bad, code, e)
			}
		}
		if code, list := apiJSON(t, app, "GET", "/v1/reservations", keyA, ""); code != 200 || len(list["reservations"].([]any)) != 1 {
			t.Errorf("list: %d %v", code, list)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/reservations/"+id, keyB, ""); code != 404 {
			t.Errorf("B reads A's reservation: %d", code)
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/reservations/"+id+"/cancel", keyB, ""); code != 404 {
			t.Errorf("B cancels A's reservation: %d", code)
		}
		later := app.clock.Now().Add(12 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		if code, ch := apiJSON(t, app, "PATCH", "/v1/reservations/"+id, keyA, `{"startAt":"`+later+`","durationHours":24}`); code != 200 || ch["startAt"] != later {
			t.Fatalf("change: %d %v", code, ch)
		}
		code, got := apiJSON(t, app, "GET", "/v1/reservations/"+id, keyA, "")
		if code != 200 || len(got["events"].([]any)) != 2 {
			t.Fatalf("get: %d %v", code, got)
		}
		// The pages: the list and the detail with its terms and trail (views get plain rows).
		if row := doc(t, app.login(a).get("/reservations")).Find(`[data-testid=reservation-row]`); row.Length() != 1 || row.AttrOr("data-reservation", "") != id {
			t.Errorf("reservations page: %q", row.Text())
		}
		dp := doc(t, app.login(a).get("/reservations/"+id))
		if dp.Find(`[data-testid=reservation-event]`).Length() != 2 || !strings.Contains(dp.Find(`[data-testid=reservation-terms]`).Text(), "Full refund until") {
			t.Errorf("reservation page: %q", dp.Find(`main`).Text())
		}
		if rec := app.login(b).get("/reservations/" + id); rec.Code != http.StatusNotFound {
			t.Errorf("B's session reads A's reservation page: %d", rec.Code)
		}
		code, cancelled := apiJSON(t, app, "POST", "/v1/reservations/"+id+"/cancel", keyA, "")
		if code != 200 || cancelled["status"] != "cancelled" || cancelled["refund"] != terms["deposit"] {
			t.Fatalf("cancel: %d %v", code, cancelled)
		}
		if balance2, _ := app.store.Balance(ctx, a.org.ID); balance2 != balance0 {
			t.Errorf("after a full refund the balance is %d, was %d", balance2, balance0)
		}
		if code, e := apiJSON(t, app, "POST", "/v1/reservations/"+id+"/cancel", keyA, ""); code != 409 || errCode(e) != "reservation_state" {
			t.Errorf("cancel twice: %d %v", code, e)
		}
	})
}

// X18: reserve the same shape again from a finished cluster: fromClusterId
// alone books its offer at its size; another organisation's cluster is a
// field problem.
func TestReserveTheSameShapeAgain(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		a := app.signupAccount("ada@example.com", "Ada Labs")
		b := app.signupAccount("bo@example.org", "Bo Corp")
		keyA, keyB := apiKeyFor(t, app, a), apiKeyFor(t, app, b)
		cl := launchFor(t, app, a, "pretrain")
		if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("status", models.StatusTerminated).Error; err != nil {
			t.Fatal(err)
		}
		start := app.clock.Now().Add(3 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		body := `{"fromClusterId":"` + cl.ID + `","startAt":"` + start + `","durationHours":8}`
		code, r := apiJSON(t, app, "POST", "/v1/reservations", keyA, body)
		if code != 201 || r["offerId"] != cl.OfferID || r["nodes"] != float64(cl.Nodes) || r["gpusPerNode"] != float64(cl.GPUsPerNode) {
			t.Fatalf("reserve again: %d %v", code, r)
		}
		if code, e := apiJSON(t, app, "POST", "/v1/reservations", keyB, body); code != 422 || errCode(e) != "validation_failed" {
			t.Fatalf("another organisation's cluster: %d %v", code, e)
		}
	})
}

// X18, RQ2: the large deal as the operator makes it on the admin page: a
// dated private offer beyond 64 machines is refused past what the source
// backs and made within it; the customer books it through the API at the
// private price; the operator's page shows the booking on the request's
// trail.
func TestDatedPrivateOfferFromAdminToBooking(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(150)))
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		if err := app.db.Model(&models.Org{}).Where("id = ?", cust.org.ID).Updates(map[string]any{"max_machines": 512, "max_gpus": 4096}).Error; err != nil {
			t.Fatal(err)
		}
		app.store.Deposit(ctx, cust.org.ID, 200_000*models.Micro, "dep", "test")
		tok := apiKeyFor(t, app, cust)
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		code, qr := apiJSON(t, app, "POST", "/v1/quote-requests", tok,
			`{"accelerator":"H100_80GB","nodes":128,"gpusPerNode":8,"fabric":"infiniband","startDate":"2027-01-04","durationDays":28}`)
		if code != 201 {
			t.Fatalf("quote request: %d %v", code, qr)
		}
		id := qr["id"].(string)
		if rec := oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"quoted"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("mark quoted: %d", rec.Code)
		}
		start := app.clock.Now().AddDate(0, 0, 30).Truncate(24 * time.Hour)
		form := url.Values{"offer_id": {"sim:h100x8"}, "nodes": {"200"}, "price": {"15.00"}, "valid_until": {start.AddDate(0, 0, -2).Format(time.DateOnly)},
			"start_at": {start.Format(time.DateOnly)}, "term_days": {"28"}}
		if rec := oc.post("/admin/quote-requests/"+id+"/private-offers", form); rec.Code != http.StatusUnprocessableEntity ||
			!strings.Contains(rec.Body.String(), "can back 150 machines") {
			t.Fatalf("200 machines on 150: %d", rec.Code)
		}
		form.Set("nodes", "128")
		if rec := oc.post("/admin/quote-requests/"+id+"/private-offers", form); rec.Code != http.StatusSeeOther {
			t.Fatalf("make the dated offer: %d %s", rec.Code, rec.Body)
		}
		var po models.PrivateOffer
		if err := app.db.Take(&po).Error; err != nil || po.Nodes != 128 || po.StartAt == nil || po.TermHours != 28*24 {
			t.Fatalf("private offer %+v %v", po, err)
		}
		code, r := apiJSON(t, app, "POST", "/v1/reservations", tok,
			`{"privateOfferId":"`+po.ID+`","startAt":"`+start.Format(time.RFC3339)+`","durationHours":672}`)
		if code != 201 || r["nodes"] != float64(128) || r["usdPerMachineHour"] != "15.00" || r["quoteRequestId"] != id {
			t.Fatalf("booking the dated offer: %d %v", code, r)
		}
		d := doc(t, oc.get("/admin/quote-requests/"+id+"/private-offer"))
		if row := d.Find(`[data-testid=request-booking]`); row.Length() != 1 || row.AttrOr("data-reservation", "") != r["id"] {
			t.Errorf("the operator's trail: %q", row.Text())
		}
	})
}
