package models

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The availability calendar (X18): per offer, how many machines can be
// booked on each day up to ReservationHorizonDays ahead. A day's figure is
// what the offer has free now (its stored count less what clusters hold,
// O2; 8 for an offer without a count) less every booking not yet launched
// whose days (from its launch to its end) touch that day; a launched
// booking's cluster is already in the holds, and its machines come back
// on the days after its term. Two statements answer every offer at once.

// CalendarDay is one day of an offer's calendar.
type CalendarDay struct {
	Date time.Time // 00:00 UTC
	Free int       // machines bookable on every hour of the day
}

// Calendar is one offer's availability.
type Calendar struct {
	Offer      Offer
	Source     string
	SourceText string
	Lead       time.Duration // how long before a start the cluster is launched
	Days       []CalendarDay
}

// Bookable reports whether n machines can be booked on day d.
func (c Calendar) Bookable(d, n int) bool { return d < len(c.Days) && c.Days[d].Free >= n }

// capacityNow is what a booking on o can count on today: the stored count
// less the holds (held already applied by the caller), or the uncounted
// most.
func capacityNow(o Offer, held int) int {
	if o.NodesAvailable == nil {
		if o.Available {
			return UncountedMaxNodes
		}
		return 0
	}
	return max(0, *o.NodesAvailable-held)
}

// calendars computes, for each offer, the machines free on each of days
// days from `from` (truncated to the day); exclude leaves a reservation out.
func (s *Store) calendars(ctx context.Context, offers []Offer, from time.Time, days int, exclude string) (map[string][]int, error) {
	from = from.UTC().Truncate(24 * time.Hour)
	offerID := ""
	if len(offers) == 1 {
		offerID = offers[0].ID
	}
	held, err := s.heldMachines(ctx, offerID)
	if err != nil {
		return nil, err
	}
	type booking struct {
		ID, OfferID, Status string
		Nodes               int
		StartAt, EndAt      time.Time
		LeadSeconds         int
	}
	q := s.db.WithContext(ctx).Table("reservations").Select("id, offer_id, status, nodes, start_at, end_at, lead_seconds").
		Where("status IN ? AND end_at > ?", []string{ReservationBooked, ReservationLaunching, ReservationHandedOver}, from)
	if offerID != "" {
		q = q.Where("offer_id = ?", offerID)
	}
	rows, err := q.Rows() // scanned by hand: thousands of rows per answer (the 50 ms target)
	if err != nil {
		return nil, fmt.Errorf("models: calendar bookings: %w", err)
	}
	var rs []booking
	for rows.Next() {
		var b booking
		if err := rows.Scan(&b.ID, &b.OfferID, &b.Status, &b.Nodes, &b.StartAt, &b.EndAt, &b.LeadSeconds); err != nil {
			rows.Close()
			return nil, fmt.Errorf("models: calendar bookings: %w", err)
		}
		rs = append(rs, b)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("models: calendar bookings: %w", err)
	}
	out := make(map[string][]int, len(offers))
	diffs := make(map[string][]int, len(offers))
	for _, o := range offers {
		diffs[o.ID] = nil
	}
	day := func(t time.Time) int { return int(t.Sub(from).Hours()) / 24 }
	for _, r := range rs {
		if r.ID == exclude {
			continue
		}
		d, ok := diffs[r.OfferID]
		if !ok {
			continue
		}
		if d == nil {
			d = make([]int, days+1)
			diffs[r.OfferID] = d
		}
		if r.Status == ReservationBooked {
			launch := r.StartAt.Add(-time.Duration(r.LeadSeconds) * time.Second)
			a, b := max(0, day(launch)), day(r.EndAt.Add(-time.Nanosecond))+1
			if launch.Before(from) {
				a = 0
			}
			if a < days && b > a {
				d[a] -= r.Nodes
				d[min(b, days)] += r.Nodes
			}
			continue
		}
		// Launched: its cluster is in the holds; its machines return on
		// the days after its term.
		if b := day(r.EndAt.Add(-time.Nanosecond)) + 1; b < days {
			d[max(0, b)] += r.Nodes
		}
	}
	for _, o := range offers {
		base := capacityNow(o, held[o.ID])
		free := make([]int, days)
		d := diffs[o.ID]
		run := 0
		for i := range free {
			if d != nil {
				run += d[i]
			}
			free[i] = max(0, base+run)
		}
		out[o.ID] = free
	}
	return out, nil
}

// AvailabilityCalendar is one offer's calendar for days days from today
// (1 to ReservationHorizonDays).
func (s *Store) AvailabilityCalendar(ctx context.Context, offerID string, days int) (Calendar, error) {
	if days < 1 || days > ReservationHorizonDays {
		return Calendar{}, FieldErrors{"days": fmt.Sprintf("1 to %d days", ReservationHorizonDays)}
	}
	o, err := s.OfferByID(ctx, offerID)
	if err != nil {
		return Calendar{}, err
	}
	if priced, err := s.customerPrices(ctx, []Offer{o}); err == nil {
		o = priced[0]
	}
	cals, err := s.Calendars(ctx, []Offer{o}, days)
	if err != nil {
		return Calendar{}, err
	}
	return cals[0], nil
}

// Calendars answers every offer's calendar for days days from today in two
// statements (the benchmark's path: every offer at once).
func (s *Store) Calendars(ctx context.Context, offers []Offer, days int) ([]Calendar, error) {
	from := s.Now().Truncate(24 * time.Hour)
	free, err := s.calendars(ctx, offers, from, days, "")
	if err != nil {
		return nil, err
	}
	dates := make([]time.Time, days)
	for d := range dates {
		dates[d] = from.AddDate(0, 0, d)
	}
	texts := map[string]string{}
	all := make([]CalendarDay, days*len(offers)) // one allocation for every day of every offer
	out := make([]Calendar, len(offers))
	for i, o := range offers {
		src := CapacitySource(o)
		if _, ok := texts[src]; !ok {
			texts[src] = SourceText(src)
		}
		c := Calendar{Offer: o, Source: src, SourceText: texts[src], Lead: ReservationLead(o.BootSeconds), Days: all[i*days : (i+1)*days : (i+1)*days]}
		for d, n := range free[o.ID] {
			c.Days[d] = CalendarDay{Date: dates[d], Free: n}
		}
		out[i] = c
	}
	return out, nil
}

// AllOffers is the stored catalog, every row (the calendar benchmark and
// the operator's views).
func (s *Store) AllOffers(ctx context.Context) ([]Offer, error) {
	var out []Offer
	err := s.db.WithContext(ctx).Order("id").Find(&out).Error
	return out, err
}

// bookedPeak is, per held offer, the most machines bookings not yet
// launched take on any day from now to the horizon: an on-demand launch on
// held capacity has no end, so it may take only what no booking needs
// (X18: nothing may break a booking).
func (s *Store) bookedPeak(ctx context.Context, offerID string) (int, error) {
	var rs []struct {
		Nodes          int
		StartAt, EndAt time.Time
		LeadSeconds    int
	}
	err := s.db.WithContext(ctx).Table("reservations").Select("nodes, start_at, end_at, lead_seconds").
		Where("offer_id = ? AND status = ?", offerID, ReservationBooked).Scan(&rs).Error
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	peak := 0
	for _, a := range rs { // the peak of overlapping intervals starts at some booking's launch
		at, n := a.StartAt.Add(-time.Duration(a.LeadSeconds)*time.Second), 0
		for _, b := range rs {
			if !b.StartAt.Add(-time.Duration(b.LeadSeconds)*time.Second).After(at) && b.EndAt.After(at) {
				n += b.Nodes
			}
		}
		peak = max(peak, n)
	}
	return peak, nil
}
