package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Reserved capacity (X18). A reservation is a quote with a start and a
// term: one offer (public, or the organisation's private offer, X9) at one
// size, from StartAt for a whole number of hours, at a price per
// machine-hour locked at booking. A deposit is taken from the prepaid
// balance at booking (one ledger entry, keyed by the reservation); it is
// credited back at hand-over, and from there every machine bills as it
// runs, per machine, as any cluster does (B2). Cancelling and changing are
// allowed within windows stated before booking (ReservationTerms).
//
// Where the machines come from is stated on each offer (CapacitySource):
// machines the operator holds (the SSH provider: a booking holds its
// machines for its days and every launch or booking that would take them is
// refused), an upstream's own reservation API where one exists, or best
// effort on on-demand capacity with a stated credit. No booking is accepted
// that its source cannot back on every day it covers.
//
// A job launches the cluster ahead of StartAt (boot time and verification
// lead, ReservationLead) so it is verified and ready at StartAt; a cluster
// ready early is held unbilled until StartAt. Billing starts at hand-over,
// the later of StartAt and ready; each started hour late is credited one
// machine-hour per machine on the bill. Warnings go out a day and an hour
// before the term ends; at its end the machines are released.

// Reservation statuses.
const (
	ReservationBooked     = "booked"      // accepted; the cluster is not launched yet
	ReservationLaunching  = "launching"   // its cluster is being placed and verified ahead of the start
	ReservationHandedOver = "handed_over" // the term runs: the cluster is ready and billing
	ReservationEnded      = "ended"       // the term ended; the machines were released
	ReservationCancelled  = "cancelled"   // cancelled by the customer before the start
	ReservationFailed     = "failed"      // the source could not deliver; the deposit refunded
)

// Capacity sources (X18).
const (
	SourceHeld       = "held"                 // machines the operator holds (SSH provider)
	SourceUpstream   = "upstream_reservation" // an upstream's own reservation API
	SourceBestEffort = "best_effort"          // on-demand capacity, a stated credit when missing
)

// Reservation bounds and windows.
const (
	ReservationHorizonDays = 120                 // the calendar and bookings reach this far ahead
	ReservationMaxHours    = 90 * 24             // the longest term
	ReservationDepositPct  = 10                  // the deposit is this share of the term's price
	ReservationVerifyLead  = 25 * time.Minute    // verification and a swap's re-check before the start
	ReservationFullRefund  = 7 * 24 * time.Hour  // cancel this long before the start: deposit refunded in full
	ReservationHalfRefund  = 24 * time.Hour      // cancel this long before the start: half refunded
	ReservationGrace       = time.Hour           // a booking can be cancelled in full this long after it was made
	BestEffortDeadline     = 24 * time.Hour      // best effort not handed over this long after the start: failed, refunded
	MaxOpenReservations    = 20                  // open (booked, launching, handed over) per organisation
	MaxBookingsPerHour     = 30                  // bookings per organisation per hour
	reservationAttempts    = 3                   // launches tried before the start is given up
	reservationWarnLong    = 24 * time.Hour      // first warning before the term ends
	reservationWarnShort   = time.Hour           // last warning before the term ends
	reservationLaunchSlack = 10 * time.Minute    // added to the lead for the job's ticks and the agents' check-in
	reservationSpreadShare = 5                   // boot jitter: up to 1/5 of the boot time (the providers' spread)
	reservationUpstreamTag = "upstream-reserved" // a provider that sells reservations upstream (none yet)
)

// UpstreamReservationProviders are the providers whose own reservation API
// backs a booking. None of the configured clouds exposes one to us today;
// their offers are sold best effort with the stated credit.
var UpstreamReservationProviders = map[string]bool{}

// CapacitySource is where a booking on o gets its machines (X18).
func CapacitySource(o Offer) string {
	switch {
	case o.Provider == "ssh":
		return SourceHeld
	case UpstreamReservationProviders[o.Provider]:
		return SourceUpstream
	}
	return SourceBestEffort
}

// SourceText states the source and its promise, as pages and the API show it.
func SourceText(source string) string {
	switch source {
	case SourceHeld:
		return "Machines the operator holds: they are held for your days, and nothing else may take them. Each started hour late is credited one machine-hour per machine."
	case SourceUpstream:
		return "Reserved at the provider through its own reservation API. Each started hour late is credited one machine-hour per machine."
	}
	return fmt.Sprintf("Best effort on on-demand capacity: launched ahead of your start; each started hour late is credited one machine-hour per machine, and if the cluster is not handed over within %d hours of the start the booking ends with the deposit refunded in full.",
		int(BestEffortDeadline/time.Hour))
}

// Reservation is one booking.
type Reservation struct {
	ID             string `gorm:"primaryKey;size:32"`
	OrgID          string `gorm:"size:32;index"`
	EnvID          string `gorm:"size:32"`
	OfferID        string `gorm:"size:191;index"`
	PrivateOfferID string `gorm:"size:32"`
	RequestID      string `gorm:"size:32"` // the capacity request it closes (RQ1), when booked from a private offer
	FromClusterID  string `gorm:"size:32"` // "reserve the same shape again"
	Provider       string `gorm:"size:64"`
	Location       string `gorm:"size:128"`
	LocationName   string `gorm:"size:191"`
	Accelerator    string `gorm:"size:64"`
	Interconnect   string `gorm:"size:32"`
	MachineKind    string `gorm:"size:32"`
	GPUsPerNode    int    `gorm:"column:gpus_per_node"`
	Nodes          int
	MachineHour    Money  `gorm:"column:machine_hour"` // locked at booking
	Source         string `gorm:"size:32"`
	StartAt        time.Time
	EndAt          time.Time
	LeadSeconds    int
	Deposit        Money
	Status         string `gorm:"size:16;index"`
	ClusterID      string `gorm:"size:32"`
	Attempts       int
	HandedOverAt   *time.Time
	LateCredit     Money
	Refund         Money
	CancelledAt    *time.Time
	EndedAt        *time.Time
	Warned         int     // 0, 1 (a day before the end), 2 (an hour before)
	LastError      string  `gorm:"size:255"`
	IdemKey        *string `gorm:"size:191"`
	RequestHash    string  `gorm:"size:64"`
	CreatedBy      string  `gorm:"size:191"`
	UserID         string  `gorm:"size:32"` // the booker: their SSH keys go on the machines
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ReservationEvent is one step of a reservation's trail: booked, changed,
// launched, handed over, credited, warned, ended, cancelled, failed. The
// customer and the operator read the same rows.
type ReservationEvent struct {
	ID            string `gorm:"primaryKey;size:32"`
	ReservationID string `gorm:"size:32;index"`
	OrgID         string `gorm:"size:32;index"`
	Type          string `gorm:"size:64"`
	Message       string `gorm:"size:1000"`
	CreatedAt     time.Time
}

// up1200Reservations adds reservations, their trail and a cluster's
// reservation (X18).
func up1200Reservations(tx *gorm.DB) error {
	type reservation struct {
		ID             string `gorm:"primaryKey;size:32"`
		OrgID          string `gorm:"size:32;index"`
		EnvID          string `gorm:"size:32"`
		OfferID        string `gorm:"size:191;index"`
		PrivateOfferID string `gorm:"size:32"`
		RequestID      string `gorm:"size:32"`
		FromClusterID  string `gorm:"size:32"`
		Provider       string `gorm:"size:64"`
		Location       string `gorm:"size:128"`
		LocationName   string `gorm:"size:191"`
		Accelerator    string `gorm:"size:64"`
		Interconnect   string `gorm:"size:32"`
		MachineKind    string `gorm:"size:32"`
		GPUsPerNode    int    `gorm:"column:gpus_per_node"`
		Nodes          int
		MachineHour    int64  `gorm:"column:machine_hour"`
		Source         string `gorm:"size:32"`
		StartAt        time.Time
		EndAt          time.Time
		LeadSeconds    int
		Deposit        int64
		Status         string `gorm:"size:16;index"`
		ClusterID      string `gorm:"size:32"`
		Attempts       int
		HandedOverAt   *time.Time
		LateCredit     int64
		Refund         int64
		CancelledAt    *time.Time
		EndedAt        *time.Time
		Warned         int
		LastError      string  `gorm:"size:255"`
		IdemKey        *string `gorm:"size:191"`
		RequestHash    string  `gorm:"size:64"`
		CreatedBy      string  `gorm:"size:191"`
		UserID         string  `gorm:"size:32"`
		CreatedAt      time.Time
		UpdatedAt      time.Time
	}
	type reservationEvent struct {
		ID            string `gorm:"primaryKey;size:32"`
		ReservationID string `gorm:"size:32;index"`
		OrgID         string `gorm:"size:32;index"`
		Type          string `gorm:"size:64"`
		Message       string `gorm:"size:1000"`
		CreatedAt     time.Time
	}
	if err := tx.Table("reservations").Migrator().CreateTable(&reservation{}); err != nil {
		return err
	}
	if err := tx.Exec("CREATE UNIQUE INDEX idx_reservations_idem ON reservations (org_id, idem_key)").Error; err != nil {
		return err
	}
	if err := tx.Table("reservation_events").Migrator().CreateTable(&reservationEvent{}); err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE clusters ADD COLUMN reservation_id VARCHAR(32) NOT NULL DEFAULT ''").Error
}

// up1201PrivateOfferTerms dates private offers: a start and a term (X18).
func up1201PrivateOfferTerms(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	if err := tx.Exec("ALTER TABLE private_offers ADD COLUMN start_at " + ts).Error; err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE private_offers ADD COLUMN term_hours INTEGER NOT NULL DEFAULT 0").Error
}

// Hours is the term's length in hours.
func (r Reservation) Hours() int { return int(r.EndAt.Sub(r.StartAt) / time.Hour) }

// ClusterHour is the whole cluster's locked price per hour.
func (r Reservation) ClusterHour() Money { return r.MachineHour * Money(r.Nodes) }

// Total is the term's price at the locked rate: what the term bills when
// handed over on time (less late credits when not).
func (r Reservation) Total() Money { return r.ClusterHour() * Money(r.Hours()) }

// Lead is how long before StartAt its cluster is launched.
func (r Reservation) Lead() time.Duration { return time.Duration(r.LeadSeconds) * time.Second }

// LaunchAt is when the job launches its cluster.
func (r Reservation) LaunchAt() time.Time { return r.StartAt.Add(-r.Lead()) }

// Open reports a reservation still to deliver or running.
func (r Reservation) Open() bool {
	return r.Status == ReservationBooked || r.Status == ReservationLaunching || r.Status == ReservationHandedOver
}

// Shape is "4 × 8 × H100 80GB".
func (r Reservation) Shape() string {
	return fmt.Sprintf("%d × %d × %s", r.Nodes, r.GPUsPerNode, strings.ReplaceAll(r.Accelerator, "_", " "))
}

// Terms are the windows stated before booking and enforced after.
func (r Reservation) Terms() ReservationTerms {
	booked := r.CreatedAt
	full := r.StartAt.Add(-ReservationFullRefund)
	if g := booked.Add(ReservationGrace); full.Before(g) {
		full = g
	}
	if full.After(r.LaunchAt()) {
		full = r.LaunchAt()
	}
	half := r.StartAt.Add(-ReservationHalfRefund)
	if half.Before(full) {
		half = full
	}
	return ReservationTerms{FullRefundUntil: full, HalfRefundUntil: half, ChangeUntil: full, LaunchAt: r.LaunchAt(),
		Deposit: r.Deposit, Total: r.Total(), Source: r.Source, SourceText: SourceText(r.Source)}
}

// ReservationTerms: cancel before FullRefundUntil and the whole deposit is
// refunded; before HalfRefundUntil, half of it; later, none. The start and
// the term can be changed before ChangeUntil. The cluster is launched at
// LaunchAt.
type ReservationTerms struct {
	FullRefundUntil, HalfRefundUntil, ChangeUntil, LaunchAt time.Time
	Deposit, Total                                          Money
	Source, SourceText                                      string
}

// RefundAt is the deposit refunded by a cancellation at now (whole
// micro-dollars: the deposit is whole cents, so half of it is exact).
func (t ReservationTerms) RefundAt(now time.Time) Money {
	switch {
	case now.Before(t.FullRefundUntil):
		return t.Deposit
	case now.Before(t.HalfRefundUntil):
		return t.Deposit / 2
	}
	return 0
}

// ReservationLead is how long before the start a cluster of bootSeconds
// machines is launched: the boot time with its spread, one more boot for a
// machine swapped at verification, the verification itself, and slack for
// the job's ticks and the agents' check-in.
func ReservationLead(bootSeconds int) time.Duration {
	boot := time.Duration(max(bootSeconds, 60)) * time.Second
	return boot + boot/reservationSpreadShare + boot + ReservationVerifyLead + reservationLaunchSlack
}

// depositFor is ReservationDepositPct of total, at least one cluster-hour,
// at most the total, rounded up to whole cents.
func depositFor(total, clusterHour Money) Money {
	d := total * ReservationDepositPct / 100
	d = max(d, clusterHour)
	d = min(d, total)
	const cent = Micro / 100
	if r := d % cent; r != 0 {
		d += cent - r
	}
	return d
}

// ReservationInput is a booking as sent.
type ReservationInput struct {
	OfferID        string
	PrivateOfferID string
	Nodes          int
	StartAt        string // RFC 3339, on a whole hour
	DurationHours  int
	FromClusterID  string
	IdemKey        string
	RequestHash    string
	Preview        bool // price and terms only; nothing is written
}

// ErrReservationState is a cancel or change the reservation's status or
// windows no longer allow.
var ErrReservationState = errors.New("reservation: not allowed now")

// ReservationStateError says why.
type ReservationStateError struct{ Message string }

func (e *ReservationStateError) Error() string { return e.Message }
func (e *ReservationStateError) Unwrap() error { return ErrReservationState }

// ReservationBoundsError is a tenant bound reached (X19).
type ReservationBoundsError struct{ Message string }

func (e *ReservationBoundsError) Error() string { return e.Message }

// reservationOffer resolves in to the offer, size and price it books.
func (s *Store) reservationOffer(ctx context.Context, orgID string, in ReservationInput) (Offer, PrivateOffer, int, Money, error) {
	fe := FieldErrors{}
	var po PrivateOffer
	offerID, nodes := strings.TrimSpace(in.OfferID), in.Nodes
	if in.PrivateOfferID != "" {
		p, err := s.PrivateOfferForOrg(ctx, orgID, in.PrivateOfferID)
		if err != nil {
			return Offer{}, po, 0, 0, FieldErrors{"privateOfferId": "unknown private offer of your organisation"}
		}
		if !p.Live(s.Now()) {
			return Offer{}, po, 0, 0, &NoCapacityError{Reason: PrivateOfferExpired, Shape: p.Request()}
		}
		po, offerID = p, p.OfferID
		if nodes == 0 {
			nodes = p.Nodes
		}
		if nodes != p.Nodes {
			fe["nodes"] = fmt.Sprintf("the private offer is for %d machines", p.Nodes)
		}
	}
	o, err := s.OfferByID(ctx, offerID)
	if errors.Is(err, ErrNotFound) {
		fe["offerId"] = "unknown offer; list them with GET /v1/gpu/offers"
	} else if err != nil {
		return Offer{}, po, 0, 0, err
	}
	maxNodes := MaxNodes
	if po.ID != "" {
		maxNodes = CapacityMaxNodes
	}
	if nodes < MinNodes || nodes > maxNodes {
		fe["nodes"] = fmt.Sprintf("a reserved cluster has %d to %d machines", MinNodes, maxNodes)
	}
	if len(fe) > 0 {
		return Offer{}, po, 0, 0, fe
	}
	if po.ID != "" {
		return o, po, nodes, po.MachineHour, nil
	}
	priced, err := s.customerPrices(ctx, []Offer{o})
	if err != nil {
		return Offer{}, po, 0, 0, err
	}
	return o, po, nodes, priced[0].MachineHour(), nil
}

// newReservation validates in and builds the row (not written).
func (s *Store) newReservation(ctx context.Context, a Actor, in ReservationInput) (Reservation, Offer, error) {
	o, po, nodes, price, err := s.reservationOffer(ctx, a.OrgID, in)
	if err != nil {
		return Reservation{}, o, err
	}
	now := s.Now()
	fe := FieldErrors{}
	start, perr := time.Parse(time.RFC3339, strings.TrimSpace(in.StartAt))
	lead := ReservationLead(o.BootSeconds)
	switch {
	case perr != nil:
		fe["startAt"] = "an RFC 3339 time on a whole hour, like 2027-01-04T09:00:00Z"
	case !start.Equal(start.Truncate(time.Hour)):
		fe["startAt"] = "start on a whole hour"
	case start.Before(now.Add(lead)):
		fe["startAt"] = fmt.Sprintf("start at %s or later: the cluster is launched %d minutes ahead to be verified on time",
			now.Add(lead).Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339), int(lead/time.Minute))
	case start.After(now.AddDate(0, 0, ReservationHorizonDays)):
		fe["startAt"] = fmt.Sprintf("start within %d days", ReservationHorizonDays)
	}
	if in.DurationHours < 1 || in.DurationHours > ReservationMaxHours {
		fe["durationHours"] = fmt.Sprintf("a term of 1 to %d hours", ReservationMaxHours)
	}
	if po.ID != "" && po.StartAt != nil && perr == nil && !start.Equal(*po.StartAt) {
		fe["startAt"] = "the private offer starts at " + po.StartAt.UTC().Format(time.RFC3339)
	}
	if po.ID != "" && po.TermHours > 0 && in.DurationHours != po.TermHours {
		fe["durationHours"] = fmt.Sprintf("the private offer's term is %d hours", po.TermHours)
	}
	if len(fe) > 0 {
		return Reservation{}, o, fe
	}
	start = start.UTC()
	r := Reservation{ID: NewID("rsv"), OrgID: a.OrgID, EnvID: a.EnvID, OfferID: o.ID, PrivateOfferID: po.ID, RequestID: po.RequestID,
		FromClusterID: in.FromClusterID, Provider: o.Provider, Location: o.Location, LocationName: o.LocationName,
		Accelerator: o.Accelerator, Interconnect: o.Interconnect, MachineKind: o.MachineKind, GPUsPerNode: o.GPUsPerNode,
		Nodes: nodes, MachineHour: price, Source: CapacitySource(o), StartAt: start,
		EndAt: start.Add(time.Duration(in.DurationHours) * time.Hour), LeadSeconds: int(lead / time.Second),
		Status: ReservationBooked, RequestHash: in.RequestHash, CreatedBy: a.Name, UserID: a.UserID, CreatedAt: now, UpdatedAt: now}
	r.Deposit = depositFor(r.Total(), r.ClusterHour())
	if in.IdemKey != "" {
		k := in.IdemKey
		r.IdemKey = &k
	}
	return r, o, nil
}

// PreviewReservation prices a booking and states its terms, writing nothing.
func (s *Store) PreviewReservation(ctx context.Context, a Actor, in ReservationInput) (Reservation, error) {
	r, o, err := s.newReservation(ctx, a, in)
	if err != nil {
		return r, err
	}
	return r, s.backed(ctx, o, r, "")
}

// Book is X18: it accepts a booking the source can back on every day it
// covers, takes the deposit from the balance and writes the reservation,
// its first event, its webhook and the audit entry in one transaction
// serialised per organisation and per offer. The same idempotency key with
// the same body returns the same reservation (created false).
func (x Actions) Book(ctx context.Context, in ReservationInput, n *ClusterNotify) (r Reservation, created bool, err error) {
	if in.Preview {
		r, err := x.s.PreviewReservation(ctx, x.a, in)
		return r, false, err
	}
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if err := tx.lockOrg(ctx, x.a.OrgID); err != nil {
			return nil, err
		}
		if in.IdemKey != "" {
			var prev Reservation
			e := tx.db.WithContext(ctx).Where("org_id = ? AND idem_key = ?", x.a.OrgID, in.IdemKey).Take(&prev).Error
			if e == nil {
				if prev.RequestHash != in.RequestHash {
					return nil, ErrIdempotencyMismatch
				}
				r = prev
				return nil, nil
			}
			if !errors.Is(e, gorm.ErrRecordNotFound) {
				return nil, e
			}
		}
		if err := tx.reservationBounds(ctx, x.a.OrgID); err != nil {
			return nil, err
		}
		var o Offer
		r, o, err = tx.newReservation(ctx, x.a, in)
		if err != nil {
			return nil, err
		}
		org, err := tx.orgQuota(ctx, x.a.OrgID)
		if err != nil {
			return nil, err
		}
		if r.Nodes > org.MaxMachines || r.Nodes*r.GPUsPerNode > org.MaxGPUs {
			return nil, &QuotaError{Resource: "machines", Limit: org.MaxMachines, Requested: r.Nodes}
		}
		if err := tx.lockOffer(ctx, o.ID); err != nil {
			return nil, err
		}
		if err := tx.backed(ctx, o, r, ""); err != nil {
			return nil, err
		}
		f, err := tx.CurrentBalance(ctx, x.a.OrgID)
		if err != nil {
			return nil, err
		}
		if f.Balance() < r.Deposit {
			return nil, &InsufficientBalanceError{Admission{Balance: f.Balance(), Required: r.Deposit}}
		}
		if err := tx.db.WithContext(ctx).Create(&r).Error; err != nil {
			return nil, fmt.Errorf("models: create reservation: %w", err)
		}
		if _, err := tx.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerAdjustment, Amount: -r.Deposit,
			IdemKey: "reservation-deposit:" + r.ID, Description: "Reservation deposit — " + r.ID + " (" + r.Shape() + ")"}); err != nil {
			return nil, err
		}
		t := r.Terms()
		msg := fmt.Sprintf("Booked by %s: %s in %s from %s for %d hours at %s/machine-h (%s for the term); deposit %s taken. Source: %s. Full refund until %s, half until %s.",
			x.a.Name, r.Shape(), r.LocationName, r.StartAt.Format(time.RFC3339), r.Hours(), PriceUSD(r.MachineHour), USD(r.Total()),
			USD(r.Deposit), r.Source, t.FullRefundUntil.Format(time.RFC3339), t.HalfRefundUntil.Format(time.RFC3339))
		if err := tx.reservationEvent(ctx, r, TypeReservationBooked, msg); err != nil {
			return nil, err
		}
		if r.RequestID != "" {
			if err := tx.closeRequestWon(ctx, r); err != nil {
				return nil, err
			}
		}
		if err := tx.mailReservation(ctx, n, r, "booked", msg); err != nil {
			return nil, err
		}
		created = true
		return x.audit("reservation.book", r.ID, r.Shape()+" from "+r.StartAt.Format(time.RFC3339)), nil
	})
	return r, created, err
}

// reservationBounds is X19 for bookings: open reservations and the booking
// rate per organisation.
func (s *Store) reservationBounds(ctx context.Context, orgID string) error {
	var open, recent int64
	if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("org_id = ? AND status IN ?", orgID,
		[]string{ReservationBooked, ReservationLaunching, ReservationHandedOver}).Count(&open).Error; err != nil {
		return err
	}
	if open >= MaxOpenReservations {
		return &ReservationBoundsError{Message: fmt.Sprintf("An organisation holds at most %d open reservations; cancel one or wait for one to end.", MaxOpenReservations)}
	}
	if err := s.db.WithContext(ctx).Model(&Reservation{}).Where("org_id = ? AND created_at > ?", orgID,
		s.Now().Add(-time.Hour)).Count(&recent).Error; err != nil {
		return err
	}
	if recent >= MaxBookingsPerHour {
		return &ReservationBoundsError{Message: fmt.Sprintf("At most %d bookings an hour per organisation; try again later.", MaxBookingsPerHour)}
	}
	return nil
}

// lockOffer serialises bookings and launches on one offer (PostgreSQL row
// lock; SQLite's immediate transactions serialise writers already).
func (s *Store) lockOffer(ctx context.Context, offerID string) error {
	if !s.IsPostgres() {
		return nil
	}
	var o Offer
	return s.db.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Where("id = ?", offerID).Take(&o).Error
}

// backed refuses (no_capacity) a booking its source cannot back on some
// day it covers; exclude leaves one reservation out (a change).
func (s *Store) backed(ctx context.Context, o Offer, r Reservation, exclude string) error {
	if r.PrivateOfferID == "" && o.RefreshedAt.Before(s.Now().Add(-OfferFreshness)) {
		return &NoCapacityError{Reason: CatalogStaleReason, Shape: r.request()}
	}
	from := r.LaunchAt().Truncate(24 * time.Hour)
	days := int(r.EndAt.Sub(from)/(24*time.Hour)) + 1
	cal, err := s.calendars(ctx, []Offer{o}, from, days, exclude)
	if err != nil {
		return err
	}
	free := cal[o.ID]
	for d := range free {
		day := from.AddDate(0, 0, d)
		if !day.Add(24*time.Hour).After(r.LaunchAt()) || !day.Before(r.EndAt) {
			continue
		}
		if free[d] < r.Nodes {
			f := free[d]
			return &NoCapacityError{Reason: NotInStockReason, Shape: r.request(), Free: &f}
		}
	}
	return nil
}

func (r Reservation) request() ShapeQuery {
	return ShapeQuery{Accelerator: r.Accelerator, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, OfferID: r.OfferID, PrivateOfferID: r.PrivateOfferID}
}

// reservationEvent writes one step of the trail and its webhook (X8).
func (s *Store) reservationEvent(ctx context.Context, r Reservation, typ, msg string) error {
	e := ReservationEvent{ID: NewID("rve"), ReservationID: r.ID, OrgID: r.OrgID, Type: typ, Message: truncateRunes(msg, 1000), CreatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("models: reservation event: %w", err)
	}
	return s.queueOrgWebhooks(ctx, r.OrgID, r.EnvID, typ, r.ID+":"+e.ID, map[string]any{"reservation": map[string]any{
		"id": r.ID, "status": r.Status, "offerId": r.OfferID, "nodes": r.Nodes, "gpusPerNode": r.GPUsPerNode,
		"startAt": r.StartAt, "endAt": r.EndAt, "clusterId": r.ClusterID, "message": e.Message}})
}

// mailReservation mails the organisation's owners and admins a step of
// the reservation (E1: a typed notification, once per key).
func (s *Store) mailReservation(ctx context.Context, n *ClusterNotify, r Reservation, what, text string) error {
	to, err := s.managers(ctx, r.OrgID)
	if err != nil {
		return err
	}
	base := ""
	if n != nil {
		base = n.BaseURL
	}
	return s.notifyEach(ctx, "reservation:"+r.ID+":"+what, to, ReservationMail{ReservationID: r.ID, What: what, Shape: r.Shape(),
		EndAt: r.EndAt, Message: text, Link: base + "/reservations/" + r.ID})
}

// closeRequestWon marks the capacity request a booking closes as won (RQ2)
// and notes it on the request's trail.
func (s *Store) closeRequestWon(ctx context.Context, r Reservation) error {
	return s.db.WithContext(ctx).Model(&QuoteRequest{}).Where("id = ? AND org_id = ?", r.RequestID, r.OrgID).
		Updates(map[string]any{"status": CapacityWon, "updated_at": s.Now()}).Error
}

// ReservationForOrg loads one of the organisation's reservations.
func (s *Store) ReservationForOrg(ctx context.Context, orgID, id string) (Reservation, error) {
	var r Reservation
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&r).Error
	return r, notFound(err, "reservation "+id)
}

// ReservationsForOrg lists the organisation's reservations, newest first
// (at most 200).
func (s *Store) ReservationsForOrg(ctx context.Context, orgID string) ([]Reservation, error) {
	var out []Reservation
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("start_at DESC, id DESC").Limit(200).Find(&out).Error
	return out, err
}

// ReservationsForRequest lists the bookings made from a capacity request's
// private offers (the operator's view of the trail).
func (s *Store) ReservationsForRequest(ctx context.Context, requestID string) ([]Reservation, error) {
	var out []Reservation
	err := s.db.WithContext(ctx).Where("request_id = ?", requestID).Order("created_at").Find(&out).Error
	return out, err
}

// ReservationTrail is a reservation's events, oldest first.
func (s *Store) ReservationTrail(ctx context.Context, orgID, id string) ([]ReservationEvent, error) {
	var out []ReservationEvent
	err := s.db.WithContext(ctx).Where("org_id = ? AND reservation_id = ?", orgID, id).Order("created_at, id").Limit(500).Find(&out).Error
	return out, err
}

// CancelReservation cancels a booking before its start: the deposit's
// refund follows the terms stated at booking, as a ledger entry keyed by
// the reservation. A launched cluster is terminated. After the start, or
// once ended, it is refused and nothing changes.
func (x Actions) CancelReservation(ctx context.Context, id string, n *ClusterNotify) (Reservation, error) {
	var r Reservation
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if r, err = tx.ReservationForOrg(ctx, x.a.OrgID, id); err != nil {
			return nil, err
		}
		now := tx.Now()
		if (r.Status != ReservationBooked && r.Status != ReservationLaunching) || !now.Before(r.StartAt) {
			return nil, &ReservationStateError{Message: "Only a reservation that has not started can be cancelled; terminate its cluster to end it early."}
		}
		refund := r.Terms().RefundAt(now)
		res := tx.db.WithContext(ctx).Model(&Reservation{}).Where("id = ? AND status = ?", r.ID, r.Status).
			Updates(map[string]any{"status": ReservationCancelled, "cancelled_at": now, "refund": refund, "updated_at": now})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, ErrConflict
		}
		if r.ClusterID != "" {
			if _, err := tx.RequestTerminate(ctx, r.OrgID, r.ClusterID, "reservation "+r.ID); err != nil {
				return nil, err
			}
		}
		if refund > 0 {
			if _, err := tx.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerRefund, Amount: refund,
				IdemKey: "reservation-refund:" + r.ID, Description: "Reservation cancelled — " + r.ID + ": deposit refund"}); err != nil {
				return nil, err
			}
		}
		r.Status, r.Refund, r.CancelledAt = ReservationCancelled, refund, &now
		msg := fmt.Sprintf("Cancelled by %s; %s of the %s deposit refunded.", x.a.Name, USD(refund), USD(r.Deposit))
		if err := tx.reservationEvent(ctx, r, TypeReservationCancelled, msg); err != nil {
			return nil, err
		}
		if err := tx.mailReservation(ctx, n, r, "cancelled", msg); err != nil {
			return nil, err
		}
		return x.audit("reservation.cancel", r.ID, msg), nil
	})
	return r, err
}

// ChangeReservation moves a booking's start or term within its change
// window, at the price locked at booking: the new days must be backed, and
// the deposit is settled to the new term's (charged or refunded by the
// difference).
func (x Actions) ChangeReservation(ctx context.Context, id, startAt string, hours int, n *ClusterNotify) (Reservation, error) {
	var r Reservation
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if r, err = tx.ReservationForOrg(ctx, x.a.OrgID, id); err != nil {
			return nil, err
		}
		now := tx.Now()
		if r.Status != ReservationBooked || !now.Before(r.Terms().ChangeUntil) {
			return nil, &ReservationStateError{Message: "The start and the term can be changed until " +
				r.Terms().ChangeUntil.Format(time.RFC3339) + " only."}
		}
		o, err := tx.OfferByID(ctx, r.OfferID)
		if err != nil {
			return nil, err
		}
		start, perr := time.Parse(time.RFC3339, startAt)
		fe := FieldErrors{}
		switch {
		case perr != nil || !start.Equal(start.Truncate(time.Hour)):
			fe["startAt"] = "an RFC 3339 time on a whole hour"
		case start.Before(now.Add(r.Lead())) || start.After(now.AddDate(0, 0, ReservationHorizonDays)):
			fe["startAt"] = fmt.Sprintf("start after the launch lead and within %d days", ReservationHorizonDays)
		}
		if hours < 1 || hours > ReservationMaxHours {
			fe["durationHours"] = fmt.Sprintf("a term of 1 to %d hours", ReservationMaxHours)
		}
		if len(fe) > 0 {
			return nil, fe
		}
		if err := tx.lockOffer(ctx, o.ID); err != nil {
			return nil, err
		}
		nr := r
		nr.StartAt, nr.EndAt = start.UTC(), start.UTC().Add(time.Duration(hours)*time.Hour)
		nr.Deposit = depositFor(nr.Total(), nr.ClusterHour())
		if err := tx.backed(ctx, o, nr, r.ID); err != nil {
			return nil, err
		}
		if diff := nr.Deposit - r.Deposit; diff != 0 {
			key := fmt.Sprintf("reservation-change:%s:%d", r.ID, now.UnixNano())
			if _, err := tx.AddLedgerEntry(ctx, LedgerEntry{OrgID: r.OrgID, Kind: LedgerAdjustment, Amount: -diff, IdemKey: key,
				Description: "Reservation changed — " + r.ID + ": deposit settled to the new term"}); err != nil {
				return nil, err
			}
		}
		res := tx.db.WithContext(ctx).Model(&Reservation{}).Where("id = ? AND status = ?", r.ID, ReservationBooked).
			Updates(map[string]any{"start_at": nr.StartAt, "end_at": nr.EndAt, "deposit": nr.Deposit, "updated_at": now})
		if res.Error != nil || res.RowsAffected != 1 {
			return nil, errors.Join(res.Error, ErrConflict)
		}
		r = nr
		msg := fmt.Sprintf("Changed by %s: from %s for %d hours; deposit now %s.", x.a.Name, r.StartAt.Format(time.RFC3339), hours, USD(r.Deposit))
		if err := tx.reservationEvent(ctx, r, TypeReservationChanged, msg); err != nil {
			return nil, err
		}
		return x.audit("reservation.change", r.ID, msg), nil
	})
	return r, err
}
