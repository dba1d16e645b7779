package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// rsvEnv is a launch environment with an operator-held (SSH) offer of
// `held` machines beside the simulated cloud's.
func rsvEnv(t *testing.T, db *gorm.DB, held int) *launchEnv {
	t.Helper()
	e := newLaunchEnv(t, db, 100_000*models.Micro)
	o := offer("rack-a", "dc-1", 8, 2_000_000, intp(held))
	o.BootSeconds = 600
	if err := e.s.ReplaceOffers(context.Background(), "ssh", []models.Offer{o}, e.s.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *launchEnv) owner() models.Actions {
	return e.s.As(models.Actor{OrgID: e.org.ID, EnvID: e.env.ID, Name: "owner@acme.example", Role: models.RoleOwner})
}

func (e *launchEnv) book(t *testing.T, in models.ReservationInput) models.Reservation {
	t.Helper()
	r, created, err := e.owner().Book(context.Background(), in, notifyAll)
	if err != nil || !created {
		t.Fatalf("book %+v: created %v, %v", in, created, err)
	}
	return r
}

// keep the catalog fresh while the clock jumps (O6): the catalog job does it.
func (e *launchEnv) refresh(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var offers []models.Offer
	if err := e.db.Where("provider = ?", "ssh").Find(&offers).Error; err != nil {
		t.Fatal(err)
	}
	for i := range offers {
		offers[i].ID = ""
	}
	if err := e.s.ReplaceOffers(ctx, "ssh", offers, e.s.Now()); err != nil {
		t.Fatal(err)
	}
}

func (e *launchEnv) advance(t *testing.T) models.ReservationTick {
	t.Helper()
	tick, err := e.s.AdvanceReservations(context.Background(), notifyAll)
	if err != nil {
		t.Fatal(err)
	}
	return tick
}

// bringUp places, joins and verifies cluster id (the provision, join and
// verify jobs' outcomes).
func (e *launchEnv) bringUp(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.s.ClusterByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	placed := make([]models.PlacedNode, c.Nodes)
	for i := range placed {
		placed[i] = models.PlacedNode{Rank: i, ProviderNodeID: id + "-m" + string(rune('a'+i)), PrivateIP: "10.0.0.1", User: "ubuntu", SSHPort: 22}
	}
	if err := e.s.MarkPlaced(ctx, id, placed); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.MarkJoined(ctx, id, notifyAll); err != nil {
		t.Fatal(err)
	}
	if c, err = e.s.ClusterByID(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, err := e.s.VerifyRunFor(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.FinishVerification(ctx, c, run, run.ReportOf(), "", "", "Verified.", nil, notifyAll); err != nil {
		t.Fatal(err)
	}
}

func (e *launchEnv) ledgerSum(t *testing.T, where string, args ...any) models.Money {
	t.Helper()
	var sum models.Money
	q := e.db.Model(&models.LedgerEntry{}).Where("org_id = ?", e.org.ID)
	if where != "" {
		q = q.Where(where, args...)
	}
	if err := q.Select("COALESCE(SUM(amount), 0)").Scan(&sum).Error; err != nil {
		t.Fatal(err)
	}
	return sum
}

func (e *launchEnv) reservation(t *testing.T, id string) models.Reservation {
	t.Helper()
	r, err := e.s.ReservationForOrg(context.Background(), e.org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// X18, B1, B2: a booking on held machines locks its price and takes its
// deposit; the cluster is launched ahead, verified early and held unbilled
// until the start; billing runs from the start to the end of the term, and
// what was quoted is billed to the micro-dollar; warnings a day and an hour
// before the end; the machines are released at the end.
func TestReservationJourneyQuotedIsBilled(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 6)
		start := t0.Add(7 * 24 * time.Hour).Truncate(time.Hour)
		in := models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 48}
		preview, _, err := e.owner().Book(ctx, models.ReservationInput{OfferID: in.OfferID, Nodes: 2, StartAt: in.StartAt, DurationHours: 48, Preview: true}, notifyAll)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		db.Model(&models.Reservation{}).Count(&n)
		if n != 0 || preview.Source != models.SourceHeld || preview.Total() != 2*48*16_050_000 {
			t.Fatalf("preview wrote %d rows, source %s, total %d", n, preview.Source, preview.Total())
		}
		before := e.ledgerSum(t, "")
		r := e.book(t, in)
		if r.MachineHour != preview.MachineHour || r.Deposit != preview.Deposit || r.Deposit != r.Total()/10 {
			t.Fatalf("booked %d/%d, previewed %d/%d", r.MachineHour, r.Deposit, preview.MachineHour, preview.Deposit)
		}
		if got := before - e.ledgerSum(t, ""); got != r.Deposit {
			t.Fatalf("deposit taken %d, want %d", got, r.Deposit)
		}
		// Nothing launches before the launch time.
		e.clock.Set(r.LaunchAt().Add(-time.Minute))
		e.refresh(t)
		if tick := e.advance(t); tick.Launched != 0 {
			t.Fatalf("launched early: %+v", tick)
		}
		e.clock.Set(r.LaunchAt())
		if tick := e.advance(t); tick.Launched != 1 {
			t.Fatalf("not launched at the launch time: %+v", tick)
		}
		r = e.reservation(t, r.ID)
		c, err := e.s.ClusterByID(ctx, r.ClusterID)
		if err != nil || c.ReservationID != r.ID || c.MachineHour != r.MachineHour || !c.Verify {
			t.Fatalf("cluster %+v %v", c, err)
		}
		e.clock.Advance(20 * time.Minute)
		e.bringUp(t, c.ID)
		c, _ = e.s.ClusterByID(ctx, c.ID)
		if c.Status != models.StatusReady || c.UnbilledAt == nil {
			t.Fatalf("ready early: status %s, held %v; want ready and held unbilled", c.Status, c.UnbilledAt)
		}
		if _, err := e.s.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.ledgerSum(t, "cluster_id = ? AND kind = ?", c.ID, models.LedgerUsage); got != 0 {
			t.Fatalf("billed %d before the start", got)
		}
		e.clock.Set(r.StartAt)
		if tick := e.advance(t); tick.HandedOver != 1 {
			t.Fatalf("not handed over at the start: %+v", tick)
		}
		r = e.reservation(t, r.ID)
		if r.Status != models.ReservationHandedOver || !r.HandedOverAt.Equal(r.StartAt) || r.LateCredit != 0 {
			t.Fatalf("hand-over %+v", r)
		}
		// The term, in big jumps: the warnings, then the end.
		e.clock.Set(r.EndAt.Add(-24 * time.Hour))
		if tick := e.advance(t); tick.Warned != 1 {
			t.Fatalf("day warning: %+v", tick)
		}
		e.clock.Set(r.EndAt.Add(-time.Hour))
		if tick := e.advance(t); tick.Warned != 1 {
			t.Fatalf("hour warning: %+v", tick)
		}
		if tick := e.advance(t); tick.Warned != 0 {
			t.Fatalf("warned twice: %+v", tick)
		}
		e.clock.Set(r.EndAt.Add(40 * time.Second))
		if tick := e.advance(t); tick.Ended != 1 {
			t.Fatalf("not ended: %+v", tick)
		}
		if _, err := e.s.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if got := -e.ledgerSum(t, "cluster_id = ? AND kind = ?", c.ID, models.LedgerUsage); got != r.Total() {
			t.Fatalf("billed %d for the term, quoted %d", got, r.Total())
		}
		if got := before - e.ledgerSum(t, ""); got != r.Total() {
			t.Fatalf("the balance moved by %d, want the quoted %d (the deposit applied)", got, r.Total())
		}
		c, _ = e.s.ClusterByID(ctx, c.ID)
		if c.TerminateRequestedAt == nil {
			t.Error("the machines are not released at the end of the term")
		}
		trail, _ := e.s.ReservationTrail(ctx, e.org.ID, r.ID)
		var types []string
		for _, ev := range trail {
			types = append(types, ev.Type)
		}
		want := []string{models.TypeReservationBooked, models.TypeReservationLaunched, models.TypeReservationHandedOver,
			models.TypeReservationEnding, models.TypeReservationEnding, models.TypeReservationEnded}
		if len(types) != len(want) {
			t.Fatalf("trail %v, want %v", types, want)
		}
		for i := range want {
			if types[i] != want[i] {
				t.Fatalf("trail %v, want %v", types, want)
			}
		}
		if _, err := e.s.ReservationTrail(ctx, "org_other", r.ID); err != nil {
			t.Fatal(err)
		}
		if other, _ := e.s.ReservationTrail(ctx, "org_other", r.ID); len(other) != 0 {
			t.Error("another organisation reads the trail")
		}
	})
}

// X18: a cluster handed over after the start bills from its hand-over, and
// each started hour late is credited one machine-hour per machine.
func TestReservationLateHoursAreCredited(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 6)
		start := t0.Add(3 * 24 * time.Hour).Truncate(time.Hour)
		r := e.book(t, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 3, StartAt: start.Format(time.RFC3339), DurationHours: 10})
		e.clock.Set(r.LaunchAt())
		e.refresh(t)
		e.advance(t)
		r = e.reservation(t, r.ID)
		e.clock.Set(r.StartAt.Add(70 * time.Minute)) // slow machines: up 70 minutes after the start
		if tick := e.advance(t); tick.HandedOver != 0 {
			t.Fatalf("handed over before ready: %+v", tick)
		}
		e.bringUp(t, r.ClusterID)
		e.advance(t)
		r = e.reservation(t, r.ID)
		wantCredit := 2 * 3 * r.MachineHour // two started hours × three machines
		if r.Status != models.ReservationHandedOver || r.LateCredit != wantCredit || !r.HandedOverAt.Equal(start.Add(70*time.Minute)) {
			t.Fatalf("late hand-over %+v, want credit %d", r, wantCredit)
		}
		if got := e.ledgerSum(t, "idem_key = ?", "reservation-late:"+r.ID); got != wantCredit {
			t.Fatalf("credited %d on the bill, want %d", got, wantCredit)
		}
		e.clock.Set(r.EndAt)
		e.advance(t)
		if _, err := e.s.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		billed := -e.ledgerSum(t, "cluster_id = ? AND kind = ?", r.ClusterID, models.LedgerUsage)
		if want := r.Total() - r.ClusterHour()*70/60; billed != want {
			t.Fatalf("billed %d, want %d (from the hand-over)", billed, want)
		}
	})
}

// X18: the cancellation windows stated before booking are enforced, the
// refund in whole micro-dollars; after the start a cancel is refused and
// nothing changes. The change window moves the start at the locked price.
func TestReservationCancelAndChangeWindows(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 60)
		start := t0.Add(10 * 24 * time.Hour).Truncate(time.Hour)
		in := func(h int) models.ReservationInput {
			return models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: h}
		}
		full, half, none, late := e.book(t, in(10)), e.book(t, in(11)), e.book(t, in(12)), e.book(t, in(13))
		terms := full.Terms()
		if !terms.FullRefundUntil.Equal(start.Add(-7*24*time.Hour)) || !terms.HalfRefundUntil.Equal(start.Add(-24*time.Hour)) {
			t.Fatalf("terms %+v", terms)
		}
		// Change inside the window: the start moves a day, the price stays.
		moved, err := e.owner().ChangeReservation(ctx, full.ID, start.Add(24*time.Hour).Format(time.RFC3339), 10, notifyAll)
		if err != nil || moved.MachineHour != full.MachineHour || !moved.StartAt.Equal(start.Add(24*time.Hour)) {
			t.Fatalf("change: %+v %v", moved, err)
		}
		if _, err := e.owner().ChangeReservation(ctx, full.ID, "tomorrow", 10, notifyAll); err == nil {
			t.Fatal("a bad start accepted")
		}
		cases := []struct {
			r    models.Reservation
			at   time.Time
			want models.Money
		}{
			{full, terms.FullRefundUntil.Add(-time.Second), full.Deposit},
			{half, terms.FullRefundUntil.Add(time.Hour), half.Deposit / 2},
			{none, terms.HalfRefundUntil.Add(time.Hour), 0},
		}
		for _, c := range cases {
			e.clock.Set(c.at)
			before := e.ledgerSum(t, "")
			got, err := e.owner().CancelReservation(ctx, c.r.ID, notifyAll)
			if err != nil || got.Refund != c.want || e.ledgerSum(t, "")-before != c.want {
				t.Errorf("cancel %s at %s: refund %d (%v), ledger %+d, want %d", c.r.ID, c.at, got.Refund, err, e.ledgerSum(t, "")-before, c.want)
			}
		}
		if _, err := e.owner().ChangeReservation(ctx, late.ID, start.Add(48*time.Hour).Format(time.RFC3339), 13, notifyAll); !errors.Is(err, models.ErrReservationState) {
			t.Fatalf("a change after the window: %v", err)
		}
		e.clock.Set(start.Add(time.Minute))
		before := e.ledgerSum(t, "")
		if _, err := e.owner().CancelReservation(ctx, late.ID, notifyAll); !errors.Is(err, models.ErrReservationState) {
			t.Fatalf("a cancel after the start: %v", err)
		}
		if e.ledgerSum(t, "") != before || e.reservation(t, late.ID).Status == models.ReservationCancelled {
			t.Fatal("a refused cancel changed something")
		}
		if _, err := e.s.As(models.Actor{OrgID: "org_other", Name: "x"}).CancelReservation(ctx, half.ID, notifyAll); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another organisation cancels: %v", err)
		}
	})
}

// X18: held machines booked ahead are refused to on-demand launches and to
// overlapping bookings that would break the booking; the calendar shows
// them taken on exactly their days.
func TestHeldCapacityIsNotOversold(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 4)
		start := t0.Add(5 * 24 * time.Hour).Truncate(24 * time.Hour)
		r := e.book(t, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 3, StartAt: start.Format(time.RFC3339), DurationHours: 48})
		var nc *models.NoCapacityError
		q, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "ssh:rack-a"})
		if err == nil {
			_, _, err = e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID, Actor: "x",
				Workload: models.Workload{Name: "od", Software: "none"}})
		}
		if !errors.As(err, &nc) {
			t.Fatalf("an on-demand launch that breaks the booking: %v", err)
		}
		_, _, err = e.owner().Book(ctx, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2,
			StartAt: start.Add(24 * time.Hour).Format(time.RFC3339), DurationHours: 4}, notifyAll)
		if !errors.As(err, &nc) {
			t.Fatalf("an overlapping booking: %v", err)
		}
		after := e.book(t, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 4, StartAt: r.EndAt.Add(24 * time.Hour).Format(time.RFC3339), DurationHours: 4})
		cal, err := e.s.AvailabilityCalendar(ctx, "ssh:rack-a", 120)
		if err != nil {
			t.Fatal(err)
		}
		if cal.Source != models.SourceHeld || len(cal.Days) != 120 {
			t.Fatalf("calendar source %s, %d days", cal.Source, len(cal.Days))
		}
		for _, d := range cal.Days {
			want := 4
			switch {
			case !d.Date.Add(24*time.Hour).After(r.LaunchAt()) || !d.Date.Before(r.EndAt):
			default:
				want = 1
			}
			if !d.Date.Add(24*time.Hour).After(after.LaunchAt()) || !d.Date.Before(after.EndAt) {
			} else {
				want = 0
			}
			if d.Free != want {
				t.Errorf("%s: %d free, want %d", d.Date.Format(time.DateOnly), d.Free, want)
			}
		}
		if _, err := e.s.AvailabilityCalendar(ctx, "ssh:rack-a", 121); err == nil {
			t.Error("a calendar past the horizon")
		}
	})
}

// X18, X19, L1: the same idempotency key and body return the same booking,
// another body is refused; an organisation holds a bounded number of open
// reservations; bad input is refused with nothing written.
func TestReservationIdempotencyBoundsAndBadInput(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 200)
		start := t0.Add(4 * 24 * time.Hour).Truncate(time.Hour)
		in := models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 5, IdemKey: "k1", RequestHash: "h1"}
		a := e.book(t, in)
		b, created, err := e.owner().Book(ctx, in, notifyAll)
		if err != nil || created || b.ID != a.ID {
			t.Fatalf("retry: %s created %v %v", b.ID, created, err)
		}
		in.RequestHash = "h2"
		if _, _, err := e.owner().Book(ctx, in, notifyAll); !errors.Is(err, models.ErrIdempotencyMismatch) {
			t.Fatalf("another body under the key: %v", err)
		}
		before := e.ledgerSum(t, "")
		for _, bad := range []models.ReservationInput{
			{OfferID: "ssh:rack-a", Nodes: 2, StartAt: "2026-13-01", DurationHours: 5},
			{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Add(30 * time.Minute).Format(time.RFC3339), DurationHours: 5},
			{OfferID: "ssh:rack-a", Nodes: 2, StartAt: t0.Format(time.RFC3339), DurationHours: 5},
			{OfferID: "ssh:rack-a", Nodes: 2, StartAt: t0.AddDate(0, 0, 121).Truncate(time.Hour).Format(time.RFC3339), DurationHours: 5},
			{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 0},
			{OfferID: "ssh:rack-a", Nodes: 65, StartAt: start.Format(time.RFC3339), DurationHours: 5},
			{OfferID: "ssh:nope", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 5},
		} {
			var fe models.FieldErrors
			if _, _, err := e.owner().Book(ctx, bad, notifyAll); !errors.As(err, &fe) {
				t.Errorf("%+v: %v, want field errors", bad, err)
			}
		}
		if e.ledgerSum(t, "") != before {
			t.Fatal("a refused booking moved money")
		}
		for i := 1; i < models.MaxOpenReservations; i++ {
			e.book(t, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 5 + i})
		}
		var be *models.ReservationBoundsError
		if _, _, err := e.owner().Book(ctx, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 2, StartAt: start.Format(time.RFC3339), DurationHours: 99}, notifyAll); !errors.As(err, &be) {
			t.Fatalf("booking past the open bound: %v", err)
		}
	})
}

// X18, X9, RQ2: the large deal closes. A request for 128 × 8 H100 from a
// date becomes a dated private offer of 128 machines on held capacity
// (refused beyond what the source backs, when it is made); it cannot be
// launched now (no_capacity private_offer_dated, not a provider
// validation), it is booked from its start at its private price, the
// request is won, and the booking is on the request's trail; a second
// booking the stock cannot back is no_capacity.
func TestLargePrivateDealIsBookedAhead(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := rsvEnv(t, db, 180)
		if err := db.Model(&models.Org{}).Where("id = ?", e.org.ID).Updates(map[string]any{"max_machines": 512, "max_gpus": 4096}).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Deposit(ctx, e.org.ID, 900_000*models.Micro, "dep-big", "test"); err != nil {
			t.Fatal(err)
		}
		in := validCapacityInput("", "usr_t")
		in.Nodes = 128
		req, err := e.actions().RequestCapacity(ctx, in, notify)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.actions().SetQuoteRequestStatus(ctx, req.ID, "quoted", "", notify); err != nil {
			t.Fatal(err)
		}
		start := t0.AddDate(0, 0, 35).Truncate(24 * time.Hour)
		offerIn := models.PrivateOfferInput{RequestID: req.ID, OfferID: "ssh:rack-a", Nodes: 300, Price: "15.00", ValidUntil: "2026-12-20",
			StartAt: start.Format(time.DateOnly), TermDays: 28}
		if _, err := e.actions().CreatePrivateOffer(ctx, offerIn, notify); !hasField(err, "nodes") {
			t.Fatalf("300 machines on a source of 180: %v", err)
		}
		offerIn.Nodes = 128
		undated := offerIn
		undated.StartAt, undated.TermDays = "", 0
		if _, err := e.actions().CreatePrivateOffer(ctx, undated, notify); !hasField(err, "nodes") {
			t.Fatalf("an undated offer beyond 64: %v", err)
		}
		po, err := e.actions().CreatePrivateOffer(ctx, offerIn, notify)
		if err != nil || po.Nodes != 128 || po.StartAt == nil || !po.StartAt.Equal(start) || po.TermHours != 28*24 {
			t.Fatalf("dated offer: %+v %v", po, err)
		}
		var nc *models.NoCapacityError
		if _, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, po.Request()); !errors.As(err, &nc) || nc.Reason != models.PrivateOfferDated {
			t.Fatalf("launching a dated offer now: %v", err)
		}
		r, created, err := e.actions().Book(ctx, models.ReservationInput{PrivateOfferID: po.ID, StartAt: start.Format(time.RFC3339), DurationHours: 28 * 24}, notifyAll)
		if err != nil || !created || r.Nodes != 128 || r.MachineHour != 15*models.Micro || r.RequestID != req.ID || r.Source != models.SourceHeld {
			t.Fatalf("booking the private offer: %+v %v", r, err)
		}
		if r.Total() != 128*15*models.Micro*28*24 {
			t.Fatalf("total %d", r.Total())
		}
		got, err := e.s.QuoteRequestForOrg(ctx, e.org.ID, req.ID)
		if err != nil || got.Status != models.CapacityWon {
			t.Fatalf("request after booking: %s %v", got.Status, err)
		}
		trail, err := e.s.ReservationsForRequest(ctx, req.ID)
		if err != nil || len(trail) != 1 || trail[0].ID != r.ID {
			t.Fatalf("the request's trail: %+v %v", trail, err)
		}
		if _, _, err := e.actions().Book(ctx, models.ReservationInput{OfferID: "ssh:rack-a", Nodes: 64,
			StartAt: start.Add(48 * time.Hour).Format(time.RFC3339), DurationHours: 24}, notifyAll); !errors.As(err, &nc) || nc.Reason != models.NotInStockReason {
			t.Fatalf("a booking the held machines cannot back: %v", err)
		}
	})
}
