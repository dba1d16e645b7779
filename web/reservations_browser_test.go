package web

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// X18: the reservation page at a phone's and a desktop's width: its terms
// and trail are shown and nothing scrolls sideways.
func TestBrowserReservationPage(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	acc := app.signupAccount("rita@reserve.example.com", "Reserve Research")
	if _, err := app.store.Deposit(context.Background(), acc.org.ID, 5000*models.Micro, "rsv-journey", "test"); err != nil {
		t.Fatal(err)
	}
	offers, err := app.store.AllOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var offerID string
	for _, o := range offers {
		if o.Available && !o.Community && (o.NodesAvailable == nil || *o.NodesAvailable >= 2) {
			offerID = o.ID
			break
		}
	}
	r, _, err := app.store.As(models.Actor{OrgID: acc.org.ID, EnvID: acc.env.ID, UserID: acc.user.ID, Role: models.RoleOwner, Name: acc.user.Email}).
		Book(context.Background(), models.ReservationInput{OfferID: offerID, Nodes: 2,
			StartAt: app.clock.Now().Add(5 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339), DurationHours: 48}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`), chromedp.WaitNotPresent(`#login-form`)); err != nil {
		t.Fatal(err)
	}
	for _, w := range screenWidths {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/reservations/"+r.ID),
			chromedp.WaitVisible(`[data-testid=reservation-terms]`)); err != nil {
			t.Fatal(err)
		}
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('[data-testid=reservation-event]').length === 1 && document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil || !ok {
			shot(t, ctx)
			t.Fatalf("at %d px: the page is incomplete or scrolls sideways (%v)", w, err)
		}
		if dir := os.Getenv("SCREENSHOTS_DIR"); dir != "" {
			if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "reservation-"+strconv.FormatInt(w, 10)+".png"), buf, 0o644)
			}
		}
	}
}

// X18: booking from the dashboard at a phone's and a desktop's width: the
// calendar, the form and the preview fit (nothing scrolls sideways), and
// the booking goes through the Bills confirm to the reservation's page.
func TestBrowserReserveForm(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	acc := app.signupAccount("rena@reserve.example.com", "Reserve Form Labs")
	if _, err := app.store.Deposit(context.Background(), acc.org.ID, 5000*models.Micro, "rsv-form", "test"); err != nil {
		t.Fatal(err)
	}
	offers, err := app.store.AllOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var offerID string
	for _, o := range offers {
		if o.Available && !o.Community && (o.NodesAvailable == nil || *o.NodesAvailable >= 2) {
			offerID = o.ID
			break
		}
	}
	q := url.Values{"preview": {"1"}, "offer": {offerID}, "nodes": {"2"}, "hour": {"9"}, "hours": {"48"},
		"date": {app.clock.Now().Add(6 * 24 * time.Hour).Format(time.DateOnly)}}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`), chromedp.WaitNotPresent(`#login-form`)); err != nil {
		t.Fatal(err)
	}
	for _, w := range screenWidths {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/reservations/new?"+q.Encode()),
			chromedp.WaitVisible(`[data-testid=reserve-preview]`)); err != nil {
			t.Fatal(err)
		}
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('[data-testid=calendar-day]').length === 120 && document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil || !ok {
			shot(t, ctx)
			t.Fatalf("at %d px: the form is incomplete or scrolls sideways (%v)", w, err)
		}
		if dir := os.Getenv("SCREENSHOTS_DIR"); dir != "" {
			if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "reserve-form-"+strconv.FormatInt(w, 10)+".png"), buf, 0o644)
			}
		}
	}
	// Book: the dialog names the deposit, styled as billing, then the reservation's page.
	if err := chromedp.Do(ctx, clickLive(`[data-testid=reserve-book]`),
		chromedp.WaitVisible(`[data-testid=confirm-dialog]`)); err != nil {
		t.Fatal(err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('confirm-detail').textContent.includes('deposit') && document.querySelector('[data-testid=confirm-ok]').classList.contains('btn-primary')`))
	if err != nil || !ok {
		shot(t, ctx)
		t.Fatalf("the confirm does not name the deposit as billing (%v)", err)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`), chromedp.WaitVisible(`[data-testid=reservation-terms]`)); err != nil {
		shot(t, ctx)
		t.Fatal(err)
	}
	if rs, _ := app.store.ReservationsForOrg(context.Background(), acc.org.ID); len(rs) != 1 || rs[0].Nodes != 2 {
		t.Fatalf("booked %d reservations", len(rs))
	}
}
