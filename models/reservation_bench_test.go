package models_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// seedCalendar stores offers offers (half counted) and bookings bookings
// spread over the next 120 days, on SQLite.
func seedCalendar(b *testing.B, offers, bookings int) (*models.Store, []models.Offer) {
	b.Helper()
	ctx := context.Background()
	db := modelstest.Open(b, "sqlite")
	s := models.NewStore(db, models.NewFakeClock(t0))
	os := make([]models.Offer, offers)
	for i := range os {
		var avail *int
		if i%2 == 0 {
			avail = intp(16 + i%48)
		}
		os[i] = offer(fmt.Sprintf("o%04d", i), fmt.Sprintf("loc-%d", i%40), 8, 2_000_000, avail)
	}
	if err := s.ReplaceOffers(ctx, "sim", os, t0); err != nil {
		b.Fatal(err)
	}
	rs := make([]models.Reservation, bookings)
	for i := range rs {
		start := t0.Add(time.Duration(i%119*24+i%24) * time.Hour)
		rs[i] = models.Reservation{ID: fmt.Sprintf("rsv_%06d", i), OrgID: "org_bench", OfferID: os[i%offers].ID, Nodes: 2 + i%6,
			StartAt: start, EndAt: start.Add(time.Duration(24+i%200) * time.Hour), LeadSeconds: 3600, Status: models.ReservationBooked,
			MachineHour: 16_050_000, CreatedAt: t0, UpdatedAt: t0}
	}
	if err := db.CreateInBatches(&rs, 500).Error; err != nil {
		b.Fatal(err)
	}
	all, err := s.AllOffers(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return s, all
}

// X18 target: the calendar answers in under 50 ms for 120 days × every
// offer at 2,000 offers (with 6,000 bookings on them). Reported as
// ms/calendar beside ns/op.
func BenchmarkCalendarEveryOffer(b *testing.B) {
	s, offers := seedCalendar(b, 2000, 6000)
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		cals, err := s.Calendars(ctx, offers, models.ReservationHorizonDays)
		if err != nil || len(cals) != 2000 || len(cals[0].Days) != 120 {
			b.Fatalf("%d calendars, %v", len(cals), err)
		}
	}
	// The machine may be shared: the process's CPU time per answer is the
	// figure a loaded wall clock cannot inflate.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/calendar")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "wall-ms/calendar")
}

// One offer's calendar, as GET /v1/gpu/offers/{id}/availability asks it.
func BenchmarkCalendarOneOffer(b *testing.B) {
	s, offers := seedCalendar(b, 2000, 6000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.AvailabilityCalendar(ctx, offers[i%len(offers)].ID, models.ReservationHorizonDays); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
