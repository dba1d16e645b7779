package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
)

// launchRecord writes one launch of offer at nodes into the product's
// history (models' track.go keeps these as clusters move; jobs' tests
// prove that): ready after readyMin minutes, or failed when readyMin is 0.
func (a *testApp) launchRecord(offer string, nodes, readyMin int) {
	a.t.Helper()
	now := a.clock.Now()
	r := models.LaunchRecord{ClusterID: models.NewID("cl"), Provider: "sim", OfferID: "sim:" + offer, Nodes: nodes,
		LaunchedAt: now.Add(-5 * time.Hour), Tried: 1}
	if readyMin > 0 {
		secs, at := readyMin*60-30, now.Add(-4*time.Hour).Unix()
		r.Started, r.ReadySeconds, r.ReadyUnix = 1, &secs, &at
	} else {
		end := now.Add(-4 * time.Hour).Unix()
		r.EndedUnix = &end
	}
	if err := a.db.Create(&r).Error; err != nil {
		a.t.Fatal(err)
	}
}

// Issue 24 item 6 (X2): each offer row and card says how its recent
// launches at the asked size went, with the sample size; an offer without
// one says "no launches yet"; a launch recorded later shows on the next
// request (the kept render is keyed by the record too); the API carries
// the numbers, and both sort by the record.
func TestOffersShowTrackRecord(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		cheapGPU := testOffer("cheap-gpu", "us-east", 8, 1_900_000, intp(10))
		cheapGPU.DiskGBHour = 4_000
		app.seedOffers(cheapGPU, testOffer("mid", "us-east", 8, 2_100_000, intp(10)),
			testOffer("dear", "eu-west", 8, 2_500_000, intp(10)), testOffer("scarce", "eu-west", 8, 1_000_000, intp(2)))
		track := func(query, id string) (row, card string) {
			t.Helper()
			rec := app.get("/offers?accelerator=H100_80GB&nodes=4" + query)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			d := doc(t, rec)
			return strings.TrimSpace(d.Find(`[data-testid=offer-row][data-offer-id="sim:` + id + `"] .track`).Text()),
				strings.TrimSpace(d.Find(`[data-testid=offer-card][data-card-offer-id="sim:` + id + `"] .track`).Text())
		}
		if row, card := track("", "mid"); row != "no launches yet" || card != "no launches yet" {
			t.Errorf("before any launch: row %q card %q", row, card)
		}
		app.launchRecord("mid", 4, 7)
		app.launchRecord("mid", 4, 11)
		app.launchRecord("mid", 4, 0)
		app.launchRecord("cheap-gpu", 4, 9)
		for range 5 {
			app.launchRecord("dear", 2, 8) // another size: not this row's record
		}
		for _, tt := range []struct{ id, want string }{
			{"mid", "2 of 3 recent launches started · ready in 7–11 min"},
			{"cheap-gpu", "1 of 1 recent launch started · ready in 9 min"},
			{"dear", "no launches yet"},
		} {
			if row, card := track("", tt.id); row != tt.want || card != tt.want {
				t.Errorf("%s: row %q card %q, want %q", tt.id, row, card, tt.want)
			}
		}
		d := doc(t, app.get("/offers?accelerator=H100_80GB&nodes=4&sort=track_record"))
		if got := rowIDs(d, `[data-testid=offer-grid] [data-testid=offer-row]`); got != "cheap-gpu,mid,dear,scarce" {
			t.Errorf("sorted by track record: %s", got)
		}
		if got := d.Find(`#sort option[selected]`).AttrOr("value", ""); got != "track_record" {
			t.Errorf("the sort control reads %q", got)
		}
		if title := d.Find(`[data-offer-id="sim:mid"] .track`).AttrOr("title", ""); !strings.Contains(title, "0 failed verification") {
			t.Errorf("title %q", title)
		}

		var resp api.OffersResponse
		if err := json.Unmarshal(app.get("/v1/gpu/offers?accelerator=H100_80GB&nodes=4&sort=track_record").Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		var ids []string
		var mid, dear api.TrackRecord
		for _, g := range resp.Groups {
			for _, o := range g.Offers {
				ids = append(ids, strings.TrimPrefix(o.ID, "sim:"))
				switch o.ID {
				case "sim:mid":
					mid = o.TrackRecord
				case "sim:dear":
					dear = o.TrackRecord
				}
			}
		}
		if got := strings.Join(ids, ","); got != "cheap-gpu,mid,dear,scarce" {
			t.Errorf("API sorted by track record: %s", got)
		}
		if mid.LaunchesTried != 3 || mid.LaunchesStarted != 2 || mid.SuccessRate == nil || *mid.SuccessRate != 0.667 ||
			mid.ReadyMinutesMedian == nil || *mid.ReadyMinutesMedian != 7 || *mid.ReadyMinutesP90 != 11 || mid.MachineHours < 8 ||
			mid.FailuresPer1000Hours == nil || *mid.FailuresPer1000Hours != 0 || mid.Summary != "2 of 3 recent launches started · ready in 7–11 min" {
			t.Errorf("mid's record %+v", mid)
		}
		if dear.LaunchesTried != 0 || dear.SuccessRate != nil || dear.ReadyMinutesMedian != nil || dear.Summary != "no launches yet" {
			t.Errorf("dear's record at 4 %+v", dear)
		}
	})
}
