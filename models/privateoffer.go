package models

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// A private offer (X9) is what a quoted capacity request becomes: one
// catalog offer at one size, at a price per machine-hour the operator
// agreed, until a day. Only its organisation sees it (in the picker, marked
// as theirs) and quotes or launches it, at that price, until it expires.
// The price is final: no markup is added to it. Launches from it are
// admitted like any other (quotas, balance, counted stock) and may repeat
// until it expires.
type PrivateOffer struct {
	ID           string `gorm:"primaryKey;size:32"`
	OrgID        string `gorm:"size:32;index"`
	RequestID    string `gorm:"size:32"`  // the capacity request it answers
	OfferID      string `gorm:"size:191"` // the catalog offer it places on
	Provider     string `gorm:"size:64"`
	Location     string `gorm:"size:128"`
	LocationName string `gorm:"size:191"`
	Accelerator  string `gorm:"size:64"`
	Interconnect string `gorm:"size:32"`
	MachineKind  string `gorm:"size:32"`
	GPUsPerNode  int    `gorm:"column:gpus_per_node"`
	Nodes        int
	MachineHour  Money     `gorm:"column:machine_hour"` // price per machine-hour, whole cents
	ValidUntil   time.Time // exclusive
	// StartAt and TermHours date the offer (X18): booked as a reservation
	// from StartAt for TermHours; nil/0 = launch now (X9). Added by
	// 1201_private_offer_terms.
	StartAt   *time.Time
	TermHours int    `gorm:"not null;default:0"`
	CreatedBy string `gorm:"size:300"`
	CreatedAt time.Time
}

func up0601PrivateOffers(tx *gorm.DB) error {
	type privateOffer struct {
		ID           string `gorm:"primaryKey;size:32"`
		OrgID        string `gorm:"size:32;index"`
		RequestID    string `gorm:"size:32"`
		OfferID      string `gorm:"size:191"`
		Provider     string `gorm:"size:64"`
		Location     string `gorm:"size:128"`
		LocationName string `gorm:"size:191"`
		Accelerator  string `gorm:"size:64"`
		Interconnect string `gorm:"size:32"`
		MachineKind  string `gorm:"size:32"`
		GPUsPerNode  int    `gorm:"column:gpus_per_node"`
		Nodes        int
		MachineHour  int64 `gorm:"column:machine_hour"`
		ValidUntil   time.Time
		CreatedBy    string `gorm:"size:300"`
		CreatedAt    time.Time
	}
	if err := tx.Table("private_offers").Migrator().CreateTable(&privateOffer{}); err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE quotes ADD COLUMN private_offer_id VARCHAR(32) NOT NULL DEFAULT ''").Error
}

// ClusterHour is the whole cluster's price per hour.
func (p PrivateOffer) ClusterHour() Money { return p.MachineHour * Money(p.Nodes) }

// LaunchPath is the dashboard's launch page for the private offer, at its
// locked price (X9).
func (p PrivateOffer) LaunchPath() string { return "/clusters/new?private=" + url.QueryEscape(p.ID) }

// Live reports whether the offer can still be quoted at now.
func (p PrivateOffer) Live(now time.Time) bool { return now.Before(p.ValidUntil) }

// ValidThrough is the last day it can be launched, "2027-01-15".
func (p PrivateOffer) ValidThrough() string { return domain.ValidThrough(p.ValidUntil) }

// asOffer is the catalog offer o at p's price: the machine price is all GPU
// (root disk included), which is exact because prices are whole cents and
// machines have 1, 2, 4 or 8 GPUs.
func (p PrivateOffer) asOffer(o Offer) Offer {
	o.PerGPUHour = p.MachineHour / Money(max(1, o.GPUsPerNode))
	o.DiskGBHour = 0
	return o
}

// PrivateOfferInput is an operator's private offer as typed: the catalog
// offer, the machine count, the price per machine-hour in dollars and the
// last day it is valid (YYYY-MM-DD, through the end of that day UTC).
type PrivateOfferInput struct {
	RequestID  string
	OfferID    string
	Nodes      int
	Price      string
	ValidUntil string
	// StartAt and TermDays date the offer (X18): booked as a reservation
	// from StartAt ("2027-01-04" at 00:00 UTC, or "2027-01-04T09:00")
	// for TermDays days, up to CapacityMaxNodes machines where its source
	// backs them; empty launches now (X9, at most MaxNodes).
	StartAt  string
	TermDays int
}

// CreatePrivateOffer is X9: an operator turns a quoted capacity request into
// a private offer for its organisation. The offer, the customer's mail and
// the audit entry (in the customer's log) commit together. Problems are
// keyed by the form's field names.
func (x Actions) CreatePrivateOffer(ctx context.Context, in PrivateOfferInput, n CapacityNotify) (PrivateOffer, error) {
	var po PrivateOffer
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		r, err := tx.QuoteRequestByID(ctx, in.RequestID)
		if err != nil {
			return nil, err
		}
		if r.Status != CapacityQuoted {
			return nil, FieldErrors{"status": "Mark the request quoted first: a private offer answers a quote."}
		}
		po, err = tx.validPrivateOffer(ctx, r, in)
		if err != nil {
			return nil, err
		}
		po.CreatedBy = x.a.Name
		if err := tx.db.WithContext(ctx).Create(&po).Error; err != nil {
			return nil, fmt.Errorf("models: create private offer: %w", err)
		}
		to, err := tx.capacityCustomer(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := tx.Notify(ctx, "private-offer:"+po.ID, to, PrivateOfferMail{ContactName: r.ContactName, RequestID: r.ID,
			OfferID: po.ID, Accelerator: po.Accelerator, Nodes: po.Nodes, GPUsPerNode: po.GPUsPerNode, Location: po.Location,
			LocationName: po.LocationName, Interconnect: po.Interconnect, MachineHour: po.MachineHour, ValidUntil: po.ValidUntil,
			Link: n.BaseURL + po.LaunchPath(), StartAt: po.StartAt, TermHours: po.TermHours}); err != nil {
			return nil, err
		}
		e := x.a.entry("private_offer.create", po.ID, r.ID+": "+po.shape()+" at $"+DecimalUSD(po.MachineHour)+"/machine-h until "+po.ValidThrough())
		e.OrgID = r.OrgID
		return &e, nil
	})
	return po, err
}

// validPrivateOffer checks in against the catalog and today and returns the row.
func (s *Store) validPrivateOffer(ctx context.Context, r QuoteRequest, in PrivateOfferInput) (PrivateOffer, error) {
	fe := FieldErrors{}
	o, err := s.OfferByID(ctx, strings.TrimSpace(in.OfferID))
	if errors.Is(err, ErrNotFound) {
		fe["offer_id"] = "Choose an offer of the catalog (its id, like sim:h100-8x-us-east)."
	} else if err != nil {
		return PrivateOffer{}, err
	}
	var startAt *time.Time
	if v := strings.TrimSpace(in.StartAt); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			t, err = time.Parse("2006-01-02T15:04", v)
		}
		switch {
		case err != nil || !t.Equal(t.Truncate(time.Hour)):
			fe["start_at"] = "Enter the start like 2027-01-04 or 2027-01-04T09:00 (UTC, on the hour)."
		case t.Before(s.Now().Add(ReservationLead(o.BootSeconds))) || t.After(s.Now().AddDate(0, 0, ReservationHorizonDays)):
			fe["start_at"] = fmt.Sprintf("Start after the launch lead and within %d days.", ReservationHorizonDays)
		default:
			startAt = &t
		}
		if in.TermDays < 1 || in.TermDays*24 > ReservationMaxHours {
			fe["term_days"] = fmt.Sprintf("A term of 1 to %d days.", ReservationMaxHours/24)
		}
	}
	maxNodes := MaxNodes
	if strings.TrimSpace(in.StartAt) != "" {
		maxNodes = CapacityMaxNodes // X18: a dated offer is booked ahead; its source must back the size
	}
	if in.Nodes < MinNodes || in.Nodes > maxNodes {
		fe["nodes"] = fmt.Sprintf("A cluster has %d to %d machines.", MinNodes, maxNodes)
	}
	price, err := ParseUSD(in.Price)
	switch {
	case err != nil || price <= 0:
		fe["price"] = "Enter dollars per machine-hour, like 19.50."
	case price%10_000 != 0:
		fe["price"] = "Use whole cents."
	case price > capacityMaxBudget:
		fe["price"] = "That price is too large; check the number."
	}
	today := s.Now().Truncate(24 * time.Hour)
	day, err := time.Parse(time.DateOnly, strings.TrimSpace(in.ValidUntil))
	switch {
	case err != nil:
		fe["valid_until"] = "Enter the last valid day like 2027-01-15."
	case day.Before(today):
		fe["valid_until"] = "Pick today or a later day."
	case day.After(today.AddDate(0, 0, CapacityMaxLeadDays)):
		fe["valid_until"] = "Pick a day within two years."
	}
	if startAt != nil && len(fe) == 0 && !day.AddDate(0, 0, 1).Before(*startAt) {
		fe["valid_until"] = "A dated offer is booked before it starts: pick a day before the start."
	}
	if len(fe) > 0 {
		return PrivateOffer{}, fe
	}
	po := PrivateOffer{ID: NewID("po"), OrgID: r.OrgID, RequestID: r.ID, OfferID: o.ID, Provider: o.Provider,
		Location: o.Location, LocationName: o.LocationName, Accelerator: o.Accelerator, Interconnect: o.Interconnect,
		MachineKind: o.MachineKind, GPUsPerNode: o.GPUsPerNode, Nodes: in.Nodes, MachineHour: price,
		ValidUntil: day.AddDate(0, 0, 1), StartAt: startAt, TermHours: in.TermDays * 24, CreatedAt: s.Now()}
	if err := s.privateStock(ctx, o, po); err != nil {
		return PrivateOffer{}, err
	}
	return po, nil
}

// privateStock checks, when the offer is made, that its source can back
// it (X18): a dated offer on every day of its term (the calendar), an
// undated one from what the offer has free now. It is checked again at
// booking or launch.
func (s *Store) privateStock(ctx context.Context, o Offer, po PrivateOffer) error {
	if po.StartAt != nil {
		r := Reservation{OfferID: o.ID, PrivateOfferID: po.ID, Nodes: po.Nodes, StartAt: *po.StartAt,
			EndAt: po.StartAt.Add(time.Duration(po.TermHours) * time.Hour), LeadSeconds: int(ReservationLead(o.BootSeconds) / time.Second)}
		var nc *NoCapacityError
		if err := s.backed(ctx, o, r, ""); errors.As(err, &nc) {
			free := 0
			if nc.Free != nil {
				free = *nc.Free
			}
			return FieldErrors{"nodes": fmt.Sprintf("Its source (%s) can back %d machines on some day of that term, not %d.", CapacitySource(o), free, po.Nodes)}
		} else if err != nil {
			return err
		}
		return nil
	}
	offers, err := s.withHolds(ctx, []Offer{o})
	if err != nil {
		return err
	}
	if free := offers[0]; free.NodesAvailable != nil && *free.NodesAvailable < po.Nodes {
		return FieldErrors{"nodes": fmt.Sprintf("The offer has %d machines free now, not %d: make a smaller offer, or date it so it is booked ahead.", *free.NodesAvailable, po.Nodes)}
	} else if free.NodesAvailable == nil && po.Nodes > UncountedMaxNodes {
		return FieldErrors{"nodes": fmt.Sprintf("The offer does not count its machines: at most %d now, or date it so it is booked ahead.", UncountedMaxNodes)}
	}
	return nil
}

func (p PrivateOffer) shape() string {
	return fmt.Sprintf("%d × %d × %s", p.Nodes, p.GPUsPerNode, strings.ReplaceAll(p.Accelerator, "_", " "))
}

// PrivateOffersFor lists the organisation's private offers that are still
// live, newest first (the picker and the API show them).
func (s *Store) PrivateOffersFor(ctx context.Context, orgID string) ([]PrivateOffer, error) {
	var out []PrivateOffer
	err := s.db.WithContext(ctx).Where("org_id = ? AND valid_until > ?", orgID, s.Now()).
		Order("created_at DESC, id DESC").Limit(100).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: private offers: %w", err)
	}
	return out, nil
}

// PrivateOffersForRequest lists every private offer made for a request (operators).
func (s *Store) PrivateOffersForRequest(ctx context.Context, requestID string) ([]PrivateOffer, error) {
	var out []PrivateOffer
	err := s.db.WithContext(ctx).Where("request_id = ?", requestID).Order("created_at DESC, id DESC").Find(&out).Error
	return out, err
}

// privateOffer is the offer a quote of the organisation for a private offer
// prices on: the catalog offer (less what clusters hold) at the private
// price. Another organisation's, an unknown or an expired one, or a shape
// other than the offer's, is no capacity.
func (s *Store) privateOffer(ctx context.Context, orgID string, r ShapeQuery) (Offer, error) {
	var p PrivateOffer
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", r.PrivateOfferID, orgID).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Offer{}, &NoCapacityError{Reason: "offer_not_found", Shape: r}
	}
	if err != nil {
		return Offer{}, fmt.Errorf("models: private offer: %w", err)
	}
	switch {
	case !p.Live(s.Now()):
		return Offer{}, &NoCapacityError{Reason: PrivateOfferExpired, Shape: r}
	case p.StartAt != nil:
		return Offer{}, &NoCapacityError{Reason: PrivateOfferDated, Shape: r}
	case r.Accelerator != p.Accelerator || r.Nodes != p.Nodes || r.GPUsPerNode != p.GPUsPerNode ||
		(r.OfferID != "" && r.OfferID != p.OfferID) || (r.Location != "" && r.Location != p.Location):
		return Offer{}, &NoCapacityError{Reason: "private_offer_shape", Shape: r}
	}
	offers := []Offer{{}}
	if err := s.db.WithContext(ctx).Where("id = ?", p.OfferID).Take(&offers[0]).Error; err != nil {
		return Offer{}, &NoCapacityError{Reason: "offer_not_found", Shape: r}
	}
	offers, err = s.withHolds(ctx, offers)
	if err != nil {
		return Offer{}, err
	}
	o := p.asOffer(offers[0])
	if r.MaxHourlyPrice > 0 && priceQuote(o, r) > r.MaxHourlyPrice {
		return Offer{}, &NoCapacityError{Reason: "above_max_hourly_price", Shape: r}
	}
	return o, nil
}

// PrivateOfferExpired is a quote or launch of a private offer past its day.
const PrivateOfferExpired = "private_offer_expired"

// PrivateOfferDated is a launch now of a private offer with a start date:
// it is booked as a reservation (X18).
const PrivateOfferDated = "private_offer_dated"

// privateValidUntil is when r's private offer ends (zero when r has none).
func (s *Store) privateValidUntil(ctx context.Context, orgID string, r ShapeQuery) (time.Time, error) {
	if r.PrivateOfferID == "" {
		return time.Time{}, nil
	}
	var p PrivateOffer
	err := s.db.WithContext(ctx).Select("valid_until").Where("id = ? AND org_id = ?", r.PrivateOfferID, orgID).Take(&p).Error
	return p.ValidUntil, notFound(err, "private offer "+r.PrivateOfferID)
}

// PrivatePick is one of the organisation's private offers as the picker
// shows it: the offer and its catalog row at the private price (Offer's
// MachineHour and ClusterHour(p.Nodes) are what a launch pays).
type PrivatePick struct {
	PrivateOffer
	Offer Offer
}

// PrivatePicks are the organisation's live private offers that match the
// picker's filter (accelerator, interconnect, machine kind, GPUs; a private
// offer has its own size, so the node count does not filter it). They are
// merged into the picker above the public offers, marked as the
// organisation's own. orgID "" (signed out) has none.
func (s *Store) PrivatePicks(ctx context.Context, orgID string, f OfferFilter) ([]PrivatePick, error) {
	if orgID == "" {
		return nil, nil
	}
	ps, err := s.PrivateOffersFor(ctx, orgID)
	if err != nil {
		return nil, err
	}
	var out []PrivatePick
	for _, p := range ps {
		if (f.Accelerator != "" && p.Accelerator != f.Accelerator) || (f.Interconnect != "" && p.Interconnect != f.Interconnect) ||
			(f.MachineKind != "" && p.MachineKind != f.MachineKind) || (f.GPUsPerNode != 0 && p.GPUsPerNode != f.GPUsPerNode) {
			continue
		}
		o, err := s.privateOffer(ctx, orgID, ShapeQuery{Accelerator: p.Accelerator, Nodes: p.Nodes,
			GPUsPerNode: p.GPUsPerNode, PrivateOfferID: p.ID})
		var nc *NoCapacityError
		if errors.As(err, &nc) {
			continue // its catalog offer is gone: nothing to launch
		}
		if err != nil {
			return nil, err
		}
		out = append(out, PrivatePick{PrivateOffer: p, Offer: o})
	}
	return out, nil
}

// CatalogOffers lists the stored catalog's rows of an accelerator at the
// providers' own prices, by id (operators choose one for a private offer).
func (s *Store) CatalogOffers(ctx context.Context, accelerator string) ([]Offer, error) {
	var out []Offer
	err := s.db.WithContext(ctx).Where("accelerator = ?", accelerator).Order("id").Limit(500).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: catalog offers: %w", err)
	}
	return out, nil
}

// PrivateOfferForOrg loads one of the organisation's private offers;
// another organisation's is ErrNotFound.
func (s *Store) PrivateOfferForOrg(ctx context.Context, orgID, id string) (PrivateOffer, error) {
	var p PrivateOffer
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Take(&p).Error
	return p, notFound(err, "private offer "+id)
}

// Request is the quote request that prices p for its organisation.
func (p PrivateOffer) Request() ShapeQuery {
	return ShapeQuery{Accelerator: p.Accelerator, Nodes: p.Nodes, GPUsPerNode: p.GPUsPerNode, PrivateOfferID: p.ID}
}
