package models

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ReservationTick counts what one pass of the reservations job did.
type ReservationTick struct {
	Launched, HandedOver, Warned, Ended, Failed int
}

// beforeReservedStart reports whether reservation id (of a cluster) starts
// after now: its cluster's billing stays held until then (X18).
func (s *Store) beforeReservedStart(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	var r Reservation
	if err := s.db.WithContext(ctx).Select("start_at").Where("id = ?", id).Take(&r).Error; err != nil {
		return false, notFound(err, "reservation "+id)
	}
	return s.Now().Before(r.StartAt), nil
}

// AdvanceReservations is the reservations job's pass (X18): it launches
// each booking's cluster at its launch time, hands it over at the start
// (billing from the later of the start and ready, late hours credited),
// relaunches a cluster that failed before the start (bounded), gives up a
// booking its source could not deliver (deposit refunded, late hours
// credited), warns a day and an hour before the term ends and releases the
// machines at its end. Each reservation moves in its own transaction; a
// rerun finds nothing left to do (every money entry is keyed).
func (s *Store) AdvanceReservations(ctx context.Context, n *ClusterNotify) (ReservationTick, error) {
	var t ReservationTick
	now := s.Now()
	var rs []Reservation
	err := s.db.WithContext(ctx).Where("(status = ? AND start_at <= ?) OR status = ? OR (status = ? AND end_at <= ?)",
		ReservationBooked, now.Add(48*time.Hour), ReservationLaunching, ReservationHandedOver, now.Add(reservationWarnLong)).
		Order("start_at, id").Limit(500).Find(&rs).Error
	if err != nil {
		return t, fmt.Errorf("models: due reservations: %w", err)
	}
	var errs []error
	for _, r := range rs {
		if err := s.Tx(ctx, func(tx *Store) error { return tx.advance(ctx, r.ID, n, &t) }); err != nil {
			errs = append(errs, fmt.Errorf("reservation %s: %w", r.ID, err))
		}
	}
	return t, errors.Join(errs...)
}

func (s *Store) advance(ctx context.Context, id string, n *ClusterNotify, t *ReservationTick) error {
	var r Reservation
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error; err != nil {
		return err
	}
	now := s.Now()
	switch r.Status {
	case ReservationBooked:
		if now.Before(r.LaunchAt()) {
			return nil
		}
		if err := s.launchReservation(ctx, &r, n); err != nil {
			return err
		}
		t.Launched++
	case ReservationLaunching:
		c, err := s.ClusterByID(ctx, r.ClusterID)
		if err != nil {
			return err
		}
		switch {
		case c.Status == StatusReady || c.Status == StatusDegraded:
			if now.Before(r.StartAt) {
				return nil // verified early: held unbilled until the start
			}
			t.HandedOver++
			return s.handOver(ctx, r, c, n)
		case c.Status.Terminal():
			if r.Attempts < reservationAttempts && now.Before(r.EndAt) {
				if err := s.reservationEvent(ctx, r, TypeReservationLaunched,
					fmt.Sprintf("Cluster %s did not come up (%s); launching again.", c.ID, c.LastError)); err != nil {
					return err
				}
				t.Launched++
				return s.launchReservation(ctx, &r, n)
			}
			t.Failed++
			return s.failReservation(ctx, r, "launch_failed:"+c.LastError, n)
		case r.Source == SourceBestEffort && !now.Before(r.StartAt.Add(BestEffortDeadline)):
			if _, err := s.RequestTerminate(ctx, r.OrgID, c.ID, "reservation "+r.ID); err != nil {
				return err
			}
			t.Failed++
			return s.failReservation(ctx, r, "not_delivered", n)
		}
	case ReservationHandedOver:
		return s.runTerm(ctx, r, n, t)
	}
	return nil
}

// reservationQuote is the quote a reservation's cluster launches from: the
// locked price per machine-hour, all GPU (root disk included), as a private
// offer's (X9).
func reservationQuote(r Reservation, o Offer, now time.Time) Quote {
	return Quote{ID: NewID("qt"), OrgID: r.OrgID, EnvID: r.EnvID, OfferID: o.ID, Provider: o.Provider, Location: o.Location,
		LocationName: o.LocationName, Accelerator: o.Accelerator, MachineKind: o.MachineKind, Interconnect: o.Interconnect,
		Community: o.Community, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, PerGPUHour: r.MachineHour / Money(max(1, r.GPUsPerNode)),
		RootDiskGB: o.RootDiskGB, USDPerHour: r.ClusterHour(), Availability: availability(o), ExpiresAt: now.Add(QuoteTTL),
		PrivateOfferID: r.PrivateOfferID, CreatedAt: now}
}

// launchReservation places r's cluster: verified before hand-over, the
// booker's SSH keys, at the locked price. Its machines were backed at
// booking, so stock and the balance are not asked again (the deposit
// stands for them); the cluster's own hold replaces the booking's in the
// calendar.
func (s *Store) launchReservation(ctx context.Context, r *Reservation, n *ClusterNotify) error {
	o, err := s.OfferByID(ctx, r.OfferID)
	if err != nil {
		return s.failReservation(ctx, *r, "offer_gone", n)
	}
	now := s.Now()
	q := reservationQuote(*r, o, now)
	if err := s.db.WithContext(ctx).Create(&q).Error; err != nil {
		return fmt.Errorf("models: reservation quote: %w", err)
	}
	var keys []string
	if r.UserID != "" {
		ks, err := s.SSHKeys(ctx, r.OrgID, r.UserID)
		if err != nil {
			return err
		}
		for _, k := range ks {
			keys = append(keys, k.PublicKey)
		}
	}
	c, err := s.insertCluster(ctx, LaunchParams{OrgID: r.OrgID, EnvID: r.EnvID, QuoteID: q.ID, SSHKeys: keys,
		Actor: "reservation " + r.ID, Verify: true,
		Workload: Workload{Name: fmt.Sprintf("rsv-%s-%d", DefaultClusterName(r.Accelerator, r.Nodes), r.Attempts+1), Software: "none"}}, q, o)
	if err != nil {
		return err
	}
	if err := s.db.WithContext(ctx).Model(&Cluster{}).Where("id = ?", c.ID).Updates(map[string]any{
		"reservation_id": r.ID, "machine_hour": r.MachineHour, "usd_per_hour": r.ClusterHour()}).Error; err != nil {
		return err
	}
	if err := s.db.WithContext(ctx).Model(&Quote{}).Where("id = ?", q.ID).Update("used_by_cluster", c.ID).Error; err != nil {
		return err
	}
	r.Status, r.ClusterID, r.Attempts = ReservationLaunching, c.ID, r.Attempts+1
	if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("id = ?", r.ID).Updates(map[string]any{
		"status": r.Status, "cluster_id": c.ID, "attempts": r.Attempts, "updated_at": now}).Error; err != nil {
		return err
	}
	return s.reservationEvent(ctx, *r, TypeReservationLaunched, fmt.Sprintf(
		"Cluster %s launched %d minutes before the start (boot, verification and slack), attempt %d.",
		c.ID, int(r.StartAt.Sub(now)/time.Minute), r.Attempts))
}

// LateHours is the started hours between the start and the hand-over.
func LateHours(start, handedOver time.Time) int {
	late := handedOver.Sub(start)
	if late <= 0 {
		return 0
	}
	return int((late + time.Hour - 1) / time.Hour)
}

// handOver starts r's term on its ready cluster c: billing from the later
// of the start and c's hand-over, the deposit credited back against the
// usage, each started hour late credited one machine-hour per machine.
func (s *Store) handOver(ctx context.Context, r Reservation, c Cluster, n *ClusterNotify) error {
	at := r.StartAt
	if c.HandedOverAt != nil && c.HandedOverAt.After(at) {
		at = *c.HandedOverAt
	}
	if c.UnbilledAt != nil { // ready before the start: the held run ends, billing starts at the start
		if _, err := s.MeterCluster(ctx, c.ID); err != nil {
			return err
		}
		if err := s.db.WithContext(ctx).Exec("UPDATE clusters SET unbilled_at = NULL, bill_from = ? WHERE id = ? AND unbilled_at IS NOT NULL",
			at, c.ID).Error; err != nil {
			return err
		}
	}
	late := LateHours(r.StartAt, at)
	credit := Money(late) * Money(r.Nodes) * r.MachineHour
	if credit > 0 {
		if _, err := s.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerAdjustment, Amount: credit, ClusterID: c.ID,
			IdemKey: "reservation-late:" + r.ID, Description: fmt.Sprintf("Reservation %s handed over late: %d machine-hours credited", r.ID, late*r.Nodes)}); err != nil {
			return err
		}
	}
	if _, err := s.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerAdjustment, Amount: r.Deposit,
		IdemKey: "reservation-deposit-applied:" + r.ID, Description: "Reservation deposit applied to the term — " + r.ID}); err != nil {
		return err
	}
	now := s.Now()
	res := s.db.WithContext(ctx).Model(&Reservation{}).Where("id = ? AND status = ?", r.ID, ReservationLaunching).
		Updates(map[string]any{"status": ReservationHandedOver, "handed_over_at": at, "late_credit": credit, "updated_at": now})
	if res.Error != nil || res.RowsAffected != 1 {
		return errors.Join(res.Error, ErrConflict)
	}
	r.Status, r.HandedOverAt, r.LateCredit = ReservationHandedOver, &at, credit
	msg := fmt.Sprintf("Cluster %s handed over verified at %s; billing from there at %s/machine-h until %s.",
		c.ID, at.Format(time.RFC3339), PriceUSD(r.MachineHour), r.EndAt.Format(time.RFC3339))
	if late > 0 {
		msg += fmt.Sprintf(" %d hour(s) late: %s credited (%d machine-hours).", late, USD(credit), late*r.Nodes)
	}
	if err := s.reservationEvent(ctx, r, TypeReservationHandedOver, msg); err != nil {
		return err
	}
	return s.mailReservation(ctx, n, r, "handed-over", msg)
}

// runTerm warns before the term ends and releases the machines at its end.
// Billing ends at the end exactly; a cluster the customer ended early ends
// the reservation then.
func (s *Store) runTerm(ctx context.Context, r Reservation, n *ClusterNotify, t *ReservationTick) error {
	now := s.Now()
	c, err := s.ClusterByID(ctx, r.ClusterID)
	if err != nil {
		return err
	}
	if !now.Before(r.EndAt) || c.Status.Terminal() {
		at := minTime(now, r.EndAt)
		if err := s.db.WithContext(ctx).Exec("UPDATE clusters SET unbilled_at = ? WHERE id = ? AND unbilled_at IS NULL AND released_at IS NULL",
			r.EndAt, c.ID).Error; err != nil {
			return err
		}
		if !c.Status.Terminal() {
			if _, err := s.RequestTerminate(ctx, r.OrgID, c.ID, "reservation "+r.ID); err != nil {
				return err
			}
		}
		if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("id = ?", r.ID).
			Updates(map[string]any{"status": ReservationEnded, "ended_at": at, "updated_at": now}).Error; err != nil {
			return err
		}
		r.Status = ReservationEnded
		t.Ended++
		msg := "The term ended at " + at.Format(time.RFC3339) + "; the machines are released."
		if err := s.reservationEvent(ctx, r, TypeReservationEnded, msg); err != nil {
			return err
		}
		return s.mailReservation(ctx, n, r, "ended", msg)
	}
	for i, w := range []time.Duration{reservationWarnLong, reservationWarnShort} {
		if r.Warned > i || now.Before(r.EndAt.Add(-w)) {
			continue
		}
		if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("id = ?", r.ID).Update("warned", i+1).Error; err != nil {
			return err
		}
		r.Warned = i + 1
		t.Warned++
		msg := fmt.Sprintf("The term ends at %s (in %s): the machines are released then. Copy what you need off them; reserve again to keep going.",
			r.EndAt.Format(time.RFC3339), r.EndAt.Sub(now).Round(time.Minute))
		if err := s.reservationEvent(ctx, r, TypeReservationEnding, msg); err != nil {
			return err
		}
		if err := s.mailReservation(ctx, n, r, fmt.Sprintf("ending-%d", i+1), msg); err != nil {
			return err
		}
	}
	return nil
}

// failReservation gives r up: the deposit refunded in full and, past the
// start, each started hour late credited one machine-hour per machine
// (the stated credit).
func (s *Store) failReservation(ctx context.Context, r Reservation, reason string, n *ClusterNotify) error {
	now := s.Now()
	if _, err := s.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerRefund, Amount: r.Deposit,
		IdemKey: "reservation-refund:" + r.ID, Description: "Reservation not delivered — " + r.ID + ": deposit refund"}); err != nil {
		return err
	}
	var credit Money
	if late := min(LateHours(r.StartAt, now), r.Hours()); late > 0 {
		credit = Money(late) * Money(r.Nodes) * r.MachineHour
		if _, err := s.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerAdjustment, Amount: credit,
			IdemKey: "reservation-late:" + r.ID, Description: fmt.Sprintf("Reservation %s not delivered: %d machine-hours credited", r.ID, late*r.Nodes)}); err != nil {
			return err
		}
	}
	if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("id = ?", r.ID).Updates(map[string]any{"status": ReservationFailed,
		"refund": r.Deposit, "late_credit": credit, "last_error": truncateRunes(reason, 255), "ended_at": now, "updated_at": now}).Error; err != nil {
		return err
	}
	r.Status = ReservationFailed
	msg := fmt.Sprintf("Not delivered (%s): the %s deposit is refunded", reason, USD(r.Deposit))
	if credit > 0 {
		msg += fmt.Sprintf(" and %s credited for the hours late", USD(credit))
	}
	msg += "."
	if err := s.reservationEvent(ctx, r, TypeReservationFailed, msg); err != nil {
		return err
	}
	return s.mailReservation(ctx, n, r, "failed", msg)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
