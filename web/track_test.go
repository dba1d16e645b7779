package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
)

// launchRecord writes one launch of offer at nodes into the product's
// history (models' track.go keeps these as clusters move; its tests and
// jobs' prove that): ready after readyMin minutes, or failed placing when
// readyMin is 0.
func (a *testApp) launchRecord(offer string, nodes, readyMin int) {
	a.t.Helper()
	a.launchRecordRing(offer, nodes, readyMin, 0, 0)
}

// launchRecordRing is launchRecord with the ring its verification measured
// (GB/s, 0 = none) on NICs with a line rate of lineGBps (0 = an overlay).
func (a *testApp) launchRecordRing(offer string, nodes, readyMin int, ringGBps, lineGBps float64) {
	a.t.Helper()
	now := a.clock.Now()
	r := models.LaunchRecord{ClusterID: models.NewID("cl"), Provider: "sim", OfferID: "sim:" + offer, Nodes: nodes,
		LaunchedAt: now.Add(-5 * time.Hour), Tried: 1, LineRateMBps: int(lineGBps * 1000)}
	if readyMin > 0 {
		secs, at := readyMin*60-30, now.Add(-4*time.Hour).Unix()
		r.Started, r.ReadySeconds, r.ReadyUnix, r.Outcome = 1, &secs, &at, models.OutcomeReady
	} else {
		end := now.Add(-4 * time.Hour).Unix()
		r.EndedUnix, r.Outcome = &end, models.OutcomeFailedPlacing
	}
	if ringGBps > 0 {
		mbps := int(ringGBps * 1000)
		r.RingMBps = &mbps
		if readyMin == 0 {
			r.Outcome, r.Started = models.OutcomeFailedVerifying, 1
		}
	}
	if err := a.db.Create(&r).Error; err != nil {
		a.t.Fatal(err)
	}
}

// X2: each offer row and card says how its recent
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
			{"mid", "2 of 3 recent launches succeeded · ready in 7 min"},
			{"cheap-gpu", "1 of 1 recent launch succeeded · ready in 9 min"},
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
			mid.FailuresPer1000Hours == nil || *mid.FailuresPer1000Hours != 0 || mid.Summary != "2 of 3 recent launches succeeded · ready in 7 min" || mid.Launches != 3 || mid.LaunchesReady != 2 ||
			mid.Outcomes != (api.TrackOutcomes{Ready: 2, FailedPlacing: 1}) || mid.Ring != nil || mid.RingSummary != "" {
			t.Errorf("mid's record %+v", mid)
		}
		if dear.LaunchesTried != 0 || dear.SuccessRate != nil || dear.ReadyMinutesMedian != nil || dear.Summary != "no launches yet" {
			t.Errorf("dear's record at 4 %+v", dear)
		}
	})
}

// seedLemon writes a quarantined machine with two faults, the first one
// repaired in 12 minutes (models' track.go writes these as machines fail;
// jobs' tests prove that).
func (a *testApp) seedLemon(machine string) models.MachineQuarantine {
	a.t.Helper()
	now := a.clock.Now()
	twelve, repaired := 720, now.Add(-48*time.Hour+12*time.Minute)
	for _, f := range []models.MachineFault{
		{Provider: "sim", Machine: machine, ClusterID: "cl_first", Node: "node-1", Kind: models.FaultDied, At: now.Add(-48 * time.Hour),
			Detail: "failed at the provider (host hardware fault)", RepairSeconds: &twelve, RepairedAt: &repaired},
		{Provider: "sim", Machine: machine, ClusterID: "cl_second", Node: "node-0", Kind: models.FaultVerification, At: now.Add(-time.Hour),
			Detail: "2 uncorrectable ECC errors on GPU 3"},
	} {
		if err := a.db.Create(&f).Error; err != nil {
			a.t.Fatal(err)
		}
	}
	q := models.MachineQuarantine{Provider: "sim", Machine: machine, QuarantinedAt: now.Add(-time.Hour),
		Reason: "2 faults in 30 days, the last on node-0 of cluster cl_second (failed verification)"}
	if err := a.db.Create(&q).Error; err != nil {
		a.t.Fatal(err)
	}
	return q
}

// X2: the operators' lemons page lists each
// quarantined machine with its history and the time to repair; releasing
// one is audited and the page says so; customers get 403.
func TestAdminLemonsPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		cust := app.signupAccount("cust@example.com", "Acme")
		op := app.signupAccount("op@example.com", "Ops")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		if rec := app.login(cust).get("/admin/lemons"); rec.Code != http.StatusForbidden {
			t.Errorf("customer: %d", rec.Code)
		}
		oc := app.login(op)
		d := doc(t, oc.get("/admin/lemons"))
		if d.Find(`[data-testid=lemons-empty]`).Length() != 1 || d.Find(`[data-testid=repair-none]`).Length() != 1 {
			t.Error("no empty states")
		}
		q := app.seedLemon("us-east-h100-h07")
		d = doc(t, oc.get("/admin/lemons"))
		row := d.Find(`[data-testid=lemon-row][data-machine=us-east-h100-h07]`)
		if row.Length() != 1 || row.Find(`[data-testid=lemon-fault]`).Length() != 2 ||
			!strings.Contains(row.Find(`[data-testid=lemon-fault]`).Last().Text(), "died after ready") ||
			!strings.Contains(row.Find(`[data-testid=lemon-fault]`).Last().Text(), "replaced in 12 min") {
			t.Fatalf("lemon row %q", row.Text())
		}
		if got := d.Find(`[data-testid=repair-median]`).Text(); got != "12 min" {
			t.Errorf("time to repair %q", got)
		}
		if rec := app.login(cust).post(fmt.Sprintf("/admin/lemons/%d/release", q.ID), nil); rec.Code != http.StatusForbidden {
			t.Errorf("customer release: %d", rec.Code)
		}
		if rec := oc.post(fmt.Sprintf("/admin/lemons/%d/release", q.ID), nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("release: %d %s", rec.Code, rec.Body)
		}
		if got, _ := app.store.QuarantinedMachines(ctx, "sim"); len(got) != 0 {
			t.Errorf("still quarantined: %v", got)
		}
		d = doc(t, oc.get("/admin/lemons"))
		if got := d.Find(`[data-testid=lemon-released]`).Text(); !strings.Contains(got, "by op@example.com") ||
			d.Find(`[data-testid=lemon-release]`).Length() != 0 {
			t.Errorf("released line %q", got)
		}
		if rec := oc.post(fmt.Sprintf("/admin/lemons/%d/release", q.ID), nil); rec.Code != http.StatusConflict {
			t.Errorf("a second release: %d, want 409", rec.Code)
		}
		rows, _, err := app.store.AllAuditRecords(ctx, "", 0)
		if err != nil || len(rows) == 0 || rows[0].Action != "machine.release" || rows[0].Target != "sim:us-east-h100-h07" {
			t.Errorf("audit %+v %v", rows, err)
		}
	})
}

// X2, X13: the row and the card say
// "ready in N min" (the median) with the ring its verifications measured
// (median and worst, GB/s and % of the NICs' line rate; GB/s alone on an
// Ethernet overlay), and a <details> opens on every outcome, the times to
// ready and the ring beside the line rate; the API carries the same; the
// page reads every record in the same statements however many offers
// have one.
func TestOffersTrackRecordDetailAndRing(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ib := testOffer("ib", "us-east", 8, 2_100_000, intp(10))
		ib.NICs, ib.NICGbps = 8, 400
		eth := testOffer("eth", "us-east", 8, 1_500_000, intp(10))
		eth.Interconnect = "ethernet"
		app.seedOffers(ib, eth, testOffer("none", "eu-west", 8, 2_500_000, intp(10)))
		app.launchRecordRing("ib", 4, 7, 368, 400)
		app.launchRecordRing("ib", 4, 9, 376, 400)
		app.launchRecordRing("ib", 4, 12, 352, 400)
		app.launchRecordRing("ib", 4, 0, 200, 400) // failed verifying
		app.launchRecord("ib", 4, 0)               // failed placing
		app.launchRecordRing("eth", 4, 20, 1.84, 0)

		d := doc(t, app.get("/offers?accelerator=H100_80GB&nodes=4"))
		for _, sel := range []string{`[data-testid=offer-row][data-offer-id="sim:ib"]`, `[data-testid=offer-card][data-card-offer-id="sim:ib"]`} {
			box := d.Find(sel + ` details[data-testid=track]`)
			if box.Length() != 1 || box.Find(`summary .track`).Length() != 1 {
				t.Fatalf("%s: no track <details> with the line as its summary", sel)
			}
			if got := strings.TrimSpace(box.Find(`summary .track`).Text()); got != "3 of 5 recent launches succeeded · ready in 9 min" {
				t.Errorf("%s: summary %q", sel, got)
			}
			if got := strings.TrimSpace(box.Find(`summary [data-testid=track-ring]`).Text()); got != "ring 352 GB/s (88 % of line rate) · worst 200 GB/s (50 %)" {
				t.Errorf("%s: ring %q", sel, got)
			}
			detail := box.Find(`[data-testid=track-detail]`)
			outcomes := map[string]string{}
			detail.Find(`li[data-outcome]`).Each(func(_ int, li *goquery.Selection) {
				outcomes[li.AttrOr("data-outcome", "")] = li.Text()
			})
			if want := map[string]string{"ready": "3 ready", "ready_swap": "0 ready after a swap", "failed_placing": "1 failed placing",
				"failed_installing": "0 failed installing", "failed_verifying": "1 failed verifying"}; !reflect.DeepEqual(outcomes, want) {
				t.Errorf("%s: outcomes %v", sel, outcomes)
			}
			if got := detail.Find(`[data-testid=track-detail-ready]`).Text(); got != "Launch to hand-over: median 9 min, 90th percentile 12 min." {
				t.Errorf("%s: times %q", sel, got)
			}
			if got := detail.Find(`[data-testid=track-detail-ring]`).Text(); got != "Ring bus bandwidth of 4 verifications: median 352 GB/s, 88 % of the 400 GB/s line rate; worst 200 GB/s, 50 % of the 400 GB/s line rate." {
				t.Errorf("%s: ring detail %q", sel, got)
			}
		}
		if got := strings.TrimSpace(d.Find(`[data-offer-id="sim:eth"] [data-testid=track-ring]`).Text()); got != "ring 1.8 GB/s" {
			t.Errorf("overlay ring %q", got)
		}
		if d.Find(`[data-offer-id="sim:none"] details`).Length() != 0 || strings.TrimSpace(d.Find(`[data-offer-id="sim:none"] .track`).Text()) != "no launches yet" {
			t.Error("an offer without launches has a detail, or says otherwise")
		}

		var resp api.OffersResponse
		if err := json.Unmarshal(app.get("/v1/gpu/offers?accelerator=H100_80GB&nodes=4").Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		recs := map[string]api.TrackRecord{}
		for _, g := range resp.Groups {
			for _, o := range g.Offers {
				recs[o.ID] = o.TrackRecord
			}
		}
		r := recs["sim:ib"]
		if r.Ring == nil || r.Ring.Samples != 4 || r.Ring.BusBwGBpsMedian != 352 || r.Ring.BusBwGBpsWorst != 200 || r.Ring.LineRateGBps != 400 ||
			r.Ring.PercentOfLineRateMedian == nil || *r.Ring.PercentOfLineRateMedian != 88 || *r.Ring.PercentOfLineRateWorst != 50 ||
			r.RingSummary != "ring 352 GB/s (88 % of line rate) · worst 200 GB/s (50 %)" || r.SuccessRate == nil || *r.SuccessRate != 0.6 ||
			r.Outcomes != (api.TrackOutcomes{Ready: 3, FailedPlacing: 1, FailedVerifying: 1}) || *r.ReadyMinutesMedian != 9 {
			t.Errorf("ib's record %+v ring %+v", r, r.Ring)
		}
		if e := recs["sim:eth"]; e.Ring == nil || e.Ring.BusBwGBpsMedian != 1.8 || e.Ring.PercentOfLineRateMedian != nil || e.Ring.LineRateGBps != 0 {
			t.Errorf("overlay ring %+v", e.Ring)
		}
		if recs["sim:none"].Ring != nil {
			t.Error("a ring for an offer never launched")
		}
	})
}

// The track record is read in the same statements whether two offers or
// forty have launches with ring readings (no statement per offer).
func TestOffersTrackRecordStatementsDoNotGrow(t *testing.T) {
	counts := map[int]int64{}
	for _, n := range []int{2, 40} {
		app := newTestApp(t, openSQLite(t))
		offers := make([]models.Offer, 60)
		for i := range offers {
			offers[i] = testOffer(fmt.Sprintf("o%02d", i), fmt.Sprintf("loc-%d", i%10), 8, models.Money(2_000_000+i*1000), intp(10))
			offers[i].NICs, offers[i].NICGbps = 8, 400
		}
		app.seedOffers(offers...)
		for i := range n {
			app.launchRecordRing(offers[i].ProviderOffer, 4, 8, 350+float64(i), 400)
			app.launchRecord(offers[i].ProviderOffer, 4, 0)
		}
		before := app.sql.n.Load()
		rec := app.get("/offers?accelerator=H100_80GB&nodes=4")
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		counts[n] = app.sql.n.Load() - before
		if got := doc(t, rec).Find(`[data-testid=offer-grid] [data-testid=track-ring]`).Length(); got != n {
			t.Errorf("%d offers with a ring reading show %d", n, got)
		}
	}
	if counts[2] != counts[40] || counts[2] == 0 {
		t.Errorf("SQL statements per request: %v; must be the same with 2 and 40 offers launched", counts)
	}
}
