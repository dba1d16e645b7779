package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// X18 from the dashboard, on the real router: the offers page links each
// offer's calendar; the calendar answers 120 days at the form's size from
// the API's model call; the preview states the API's price, deposit and
// windows before booking and writes nothing; bad input gives field
// problems and changes nothing; the booking (behind a Bills confirm) takes
// the deposit as a ledger entry and is listed; an ended cluster offers
// "Reserve the same shape again", which opens the form pre-filled; another
// organisation's cluster is not reachable through it.
func TestReserveFromDashboard(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		a := app.signupAccount("ada@example.com", "Ada Labs")
		b := app.signupAccount("bo@example.org", "Bo Corp")
		cl := launchFor(t, app, a, "train") // seeds sim:h100x8 with 20 machines, 2 held
		if _, err := app.store.Deposit(ctx, a.org.ID, 5_000*models.Micro, "dep-a", "test"); err != nil {
			t.Fatal(err)
		}
		br := app.login(a)

		offers := doc(t, br.get("/offers?nodes=4"))
		link := offers.Find(`[data-testid=reserve-link]`).First().AttrOr("href", "")
		if !strings.HasPrefix(link, "/reservations/new?nodes=4&offer=") {
			t.Fatalf("offers page: reserve link %q", link)
		}

		rec := br.get("/reservations/new?offer=sim:h100x8&nodes=4")
		d := doc(t, rec)
		days := d.Find(`[data-testid=calendar-day]`)
		if rec.Code != 200 || days.Length() != models.ReservationHorizonDays || d.Find(`[data-testid=reserve-preview]`).Length() != 0 {
			t.Fatalf("calendar: %d, %d days, preview %d", rec.Code, days.Length(), d.Find(`[data-testid=reserve-preview]`).Length())
		}
		cal, err := app.store.AvailabilityCalendar(ctx, "sim:h100x8", models.ReservationHorizonDays)
		if err != nil {
			t.Fatal(err)
		}
		if f := days.Eq(10).AttrOr("data-free", ""); f != "18" || f != strconv.Itoa(cal.Days[10].Free) || days.Eq(10).AttrOr("data-bookable", "") != "true" {
			t.Errorf("day 10: free %q (model %d), bookable %q", f, cal.Days[10].Free, days.Eq(10).AttrOr("data-bookable", ""))
		}

		start := app.clock.Now().Add(10 * 24 * time.Hour).Truncate(24 * time.Hour)
		form := url.Values{"offer": {"sim:h100x8"}, "nodes": {"4"}, "date": {start.Format(time.DateOnly)}, "hour": {"9"}, "hours": {"48"}}
		balance0, _ := app.store.Balance(ctx, a.org.ID)

		// The preview: the API's own preview of the same booking.
		rec = br.get("/reservations/new?preview=1&" + form.Encode())
		d = doc(t, rec)
		pv := d.Find(`[data-testid=reserve-preview]`)
		api, err := app.store.PreviewReservation(ctx, models.Actor{OrgID: a.org.ID, EnvID: a.env.ID, UserID: a.user.ID, Role: models.RoleOwner},
			models.ReservationInput{OfferID: "sim:h100x8", Nodes: 4, StartAt: start.Add(9 * time.Hour).Format(time.RFC3339), DurationHours: 48})
		if err != nil {
			t.Fatal(err)
		}
		want := reservationRow(api)
		if rec.Code != 200 || pv.Length() != 1 || pv.Find(`[data-testid=preview-deposit]`).Text() != want.Deposit ||
			pv.Find(`[data-testid=preview-total]`).Text() != want.Total || pv.Find(`[data-testid=preview-full-refund]`).Text() != want.FullRefundUntil ||
			pv.Find(`[data-testid=preview-half-refund]`).Text() != want.HalfRefundUntil || pv.Find(`[data-testid=preview-change-until]`).Text() != want.ChangeUntil {
			t.Fatalf("preview: %d %q, want deposit %s total %s", rec.Code, pv.Text(), want.Deposit, want.Total)
		}
		bf := pv.Find(`form[data-testid=reserve-book-form]`)
		if bf.AttrOr("data-consequence", "") != "bill" || !strings.Contains(bf.AttrOr("data-confirm-detail", ""), want.Deposit) || bf.Find(`input[name=_csrf]`).Length() != 1 {
			t.Errorf("book form: consequence %q detail %q", bf.AttrOr("data-consequence", ""), bf.AttrOr("data-confirm-detail", ""))
		}
		if bal, _ := app.store.Balance(ctx, a.org.ID); bal != balance0 {
			t.Fatalf("a preview moved the balance")
		}

		// Bad input: field problems, nothing booked.
		for field, bad := range map[string]url.Values{
			"nodes": {"nodes": {"1"}}, "hours": {"hours": {"0"}}, "date": {"date": {"tomorrow"}},
		} {
			f := cloneValues(form)
			for k, v := range bad {
				f[k] = v
			}
			rec := br.post("/reservations", f)
			if d := doc(t, rec); rec.Code != 422 || d.Find(`[data-testid=problem-`+field+`]`).Length() != 1 {
				t.Errorf("bad %s: %d %q", field, rec.Code, d.Find(`[data-testid=form-problems]`).Text())
			}
		}
		far := cloneValues(form)
		far.Set("date", app.clock.Now().AddDate(0, 0, 121).Format(time.DateOnly))
		if rec := br.post("/reservations", far); rec.Code != 422 || doc(t, rec).Find(`[data-testid=problem-date]`).Length() != 1 {
			t.Errorf("a start past 120 days: %d", rec.Code)
		}
		nocsrf := cloneValues(form)
		nocsrf.Set("_csrf", "forged")
		if rec := br.post("/reservations", nocsrf); rec.Code != http.StatusForbidden {
			t.Errorf("a forged CSRF token: %d", rec.Code)
		}
		if rs, _ := app.store.ReservationsForOrg(ctx, a.org.ID); len(rs) != 0 {
			t.Fatalf("refusals booked %d", len(rs))
		}

		// The booking: deposit ledger entry, listed, and a double submit books once.
		rec = br.post("/reservations", form)
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(location(rec), "/reservations/rsv") {
			t.Fatalf("book: %d %q %s", rec.Code, location(rec), rec.Body.String())
		}
		id := strings.TrimPrefix(location(rec), "/reservations/")
		if again := br.post("/reservations", form); location(again) != "/reservations/"+id {
			t.Errorf("a double submit: %d %q", again.Code, location(again))
		}
		entries, err := app.store.LedgerEntries(ctx, a.org.ID, 50)
		if err != nil {
			t.Fatal(err)
		}
		deposits := 0
		for _, e := range entries {
			if e.IdemKey == "reservation-deposit:"+id && -e.Amount == api.Deposit {
				deposits++
			}
		}
		if bal, _ := app.store.Balance(ctx, a.org.ID); deposits != 1 || balance0-bal != api.Deposit {
			t.Errorf("deposit entries %d, balance moved %d, deposit %d", deposits, balance0-bal, api.Deposit)
		}
		if row := doc(t, br.get("/reservations")).Find(`[data-testid=reservation-row]`); row.Length() != 1 || row.AttrOr("data-reservation", "") != id {
			t.Errorf("reservations page: %q", row.Text())
		}

		// Reserve the same shape again from the ended cluster.
		if _, err := app.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		again := doc(t, br.get("/clusters/"+cl.ID)).Find(`[data-testid=reserve-again]`).AttrOr("href", "")
		if again != "/reservations/new?from="+cl.ID {
			t.Fatalf("ended cluster: reserve-again %q", again)
		}
		d = doc(t, br.get(again))
		if d.Find(`input[name=offer]`).AttrOr("value", "") != cl.OfferID || d.Find(`[data-testid=reserve-nodes]`).AttrOr("value", "") != strconv.Itoa(cl.Nodes) ||
			d.Find(`[data-testid=reserve-from]`).Length() != 1 {
			t.Errorf("pre-filled form: offer %q nodes %q", d.Find(`input[name=offer]`).AttrOr("value", ""), d.Find(`[data-testid=reserve-nodes]`).AttrOr("value", ""))
		}
		if rec := app.login(b).get(again); rec.Code != http.StatusNotFound {
			t.Errorf("another organisation opens the cluster's shape: %d", rec.Code)
		}
		if rec := app.login(b).post("/reservations", url.Values{"from": {cl.ID}, "offer": {"sim:h100x8"}, "nodes": {"2"},
			"date": {start.Format(time.DateOnly)}, "hour": {"9"}, "hours": {"4"}}); rec.Code != 422 {
			t.Errorf("another organisation books from the cluster: %d", rec.Code)
		}
	})
}
