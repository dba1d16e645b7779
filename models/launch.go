package models

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// QuoteFields are a request's priced fields as sent; nil means absent. A
// launch may repeat them with its quote: another value than the quote's is a
// price change (Q5).
type QuoteFields struct {
	Accelerator      *string
	Nodes            *int
	GPUsPerNode      *int
	VolumeGB         *int
	MaxHourlyPrice   *string // decimal dollars
	Location         *string
	OfferID          *string
	IncludeCommunity *bool
	PrivateOfferID   *string // X9
	VolumeID         *string // V2
}

// Request is the shape the fields ask for, with field problems.
func (f QuoteFields) Request() (ShapeQuery, FieldErrors) {
	fe := FieldErrors{}
	r := ShapeQuery{}
	set(&r.Accelerator, f.Accelerator)
	set(&r.Nodes, f.Nodes)
	set(&r.GPUsPerNode, f.GPUsPerNode)
	set(&r.VolumeGB, f.VolumeGB)
	set(&r.Location, f.Location)
	set(&r.OfferID, f.OfferID)
	set(&r.IncludeCommunity, f.IncludeCommunity)
	set(&r.PrivateOfferID, f.PrivateOfferID)
	set(&r.VolumeID, f.VolumeID)
	if f.MaxHourlyPrice != nil && *f.MaxHourlyPrice != "" {
		m, err := ParseUSD(*f.MaxHourlyPrice)
		switch {
		case err != nil:
			fe["maxHourlyPrice"] = "a decimal dollar string like \"100\" or \"99.50\""
		case m <= 0:
			fe["maxHourlyPrice"] = "must be more than 0; leave maxHourlyPrice out for no ceiling"
		}
		r.MaxHourlyPrice = m
	}
	for k, v := range r.Validate() {
		if _, ok := fe[k]; !ok {
			fe[k] = v
		}
	}
	return r, fe
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// changed names the first field sent with another value than q's, or "".
func (f QuoteFields) changed(q Quote) string {
	switch {
	case f.Accelerator != nil && *f.Accelerator != q.Accelerator:
		return "accelerator"
	case f.Nodes != nil && *f.Nodes != q.Nodes:
		return "nodes"
	case f.GPUsPerNode != nil && *f.GPUsPerNode != q.GPUsPerNode:
		return "gpusPerNode"
	case f.VolumeGB != nil && *f.VolumeGB != q.VolumeGB:
		return "storage.persistentGb"
	case f.Location != nil && *f.Location != q.Location:
		return "location"
	case f.OfferID != nil && *f.OfferID != q.OfferID:
		return "offerId"
	case f.IncludeCommunity != nil && *f.IncludeCommunity != q.IncludeCommunity:
		return "include_community"
	case f.PrivateOfferID != nil && *f.PrivateOfferID != q.PrivateOfferID:
		return "privateOfferId"
	case f.VolumeID != nil && *f.VolumeID != q.VolumeID:
		return "volumeId"
	}
	if f.MaxHourlyPrice != nil {
		m, err := ParseUSD(*f.MaxHourlyPrice)
		if err != nil || m != q.MaxHourlyPrice {
			return "maxHourlyPrice"
		}
	}
	return ""
}

// merged is q's shape with the fields sent applied (a new location drops
// the quote's offer).
func (f QuoteFields) merged(q Quote) (ShapeQuery, FieldErrors) {
	r := q.Request()
	override, _ := f.Request()
	if f.Accelerator != nil {
		r.Accelerator = override.Accelerator
	}
	if f.Nodes != nil {
		r.Nodes = override.Nodes
	}
	if f.GPUsPerNode != nil {
		r.GPUsPerNode = override.GPUsPerNode
	}
	if f.VolumeGB != nil {
		r.VolumeGB = override.VolumeGB
	}
	if f.MaxHourlyPrice != nil {
		r.MaxHourlyPrice = override.MaxHourlyPrice
	}
	if f.Location != nil {
		r.Location = override.Location
		r.OfferID = ""
	}
	if f.OfferID != nil {
		r.OfferID = override.OfferID
	}
	if f.IncludeCommunity != nil {
		r.IncludeCommunity = override.IncludeCommunity
	}
	if f.PrivateOfferID != nil {
		r.PrivateOfferID = override.PrivateOfferID
	}
	if f.VolumeID != nil {
		r.VolumeID = override.VolumeID
	}
	return r, r.Validate()
}

// LaunchInput is one launch (L1): a quote, or (without QuoteID) an offer and
// a size in Priced, and the workload.
type LaunchInput struct {
	QuoteID string
	Priced  QuoteFields // repeated priced fields, or the shape to quote when QuoteID is ""
	// FreshQuote makes a price_changed refusal carry a fresh quote for the
	// requested shape (the API's answer to Q5; the page sends people back to
	// the offers instead).
	FreshQuote bool
	// OwnEnvQuote refuses (ErrNotFound, like another organisation's) a
	// quote of another environment than the actor's: an API key acts on its
	// own environment only (A3). A dashboard session sees the whole org.
	OwnEnvQuote bool
	// DefaultName names a cluster sent without a name "<accelerator>-x<nodes>"
	// (the API's default; the page's form always holds one).
	DefaultName bool
	// SharedQuote lets a used quote launch again as a copy at its locked
	// price, under another idempotency key and with another workload: the
	// launch page reuses one quote for every tab that shows it (X12), and two tabs launching two workloads mean two clusters; the
	// same workload again is "already launched" (X12). The API's quote ids
	// stay single-use.
	SharedQuote bool
	IdemKey     string // "" = none
	RequestHash string // the request as sent, for L1's same-key-different-body check
	SSHKeyIDs   []string
	Workload
	// Watch is the GPU watch chosen at launch (X15; gpuwatch.go); nil =
	// the defaults (stall alerts on, no idle rule).
	Watch *WatchPolicy
	// Verify: verified before hand-over (X13).
	Verify bool
}

// DefaultClusterName is the name a cluster of nodes × accel gets unless told
// otherwise ("h100-x2").
func DefaultClusterName(accel string, nodes int) string {
	return strings.ToLower(strings.Split(accel, "_")[0]) + "-x" + strconv.Itoa(nodes)
}

// Launch is L1: it finds the quote (checking repeated priced fields and the
// quote's age, Q5), resolves the actor's own SSH keys and launches, writing
// the cluster, its nodes, its event, the quote's use and the audit entry in
// one transaction. created is false when an earlier launch with the same
// idempotency key is returned. A fresh quote offered with a price_changed
// refusal is the only thing a refused launch leaves behind.
func (x Actions) Launch(ctx context.Context, in LaunchInput) (c Cluster, created bool, err error) {
	if in.Watch != nil {
		if fe := in.Watch.Validate(); len(fe) > 0 {
			return Cluster{}, false, fe
		}
	}
	q, err := x.launchQuote(ctx, in)
	if err != nil {
		return Cluster{}, false, err
	}
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		keys, err := tx.publicKeys(ctx, x.a, in.SSHKeyIDs)
		if err != nil {
			return nil, err
		}
		w := in.Workload
		if w.Software == "" && in.DefaultName {
			w.Software = "none"
		}
		if w.Name == "" && in.DefaultName {
			w.Name = DefaultClusterName(q.Accelerator, q.Nodes)
		}
		c, created, err = tx.LaunchCluster(ctx, LaunchParams{OrgID: x.a.OrgID, EnvID: x.a.EnvID, QuoteID: q.ID,
			IdemKey: in.IdemKey, RequestHash: in.RequestHash, SSHKeys: keys, Actor: x.a.Name, Workload: w,
			SharedQuote: in.SharedQuote, Verify: in.Verify})
		if err != nil || !created {
			return nil, err
		}
		if in.Watch != nil && *in.Watch != DefaultWatchPolicy() {
			if err := tx.launchWatch(ctx, c, *in.Watch); err != nil {
				return nil, err
			}
		}
		return x.audit("cluster.launch", c.ID, c.Name), nil
	})
	if err != nil {
		return Cluster{}, false, err
	}
	return c, created, nil
}

// launchQuote is the quote a launch uses: for an offer and a size a fresh
// one, or a reusable unused one of the same price (A3: retried offer
// launches do not grow the quotes table), or the given one unless a repeated priced field differs or it
// expired unused (Q5).
func (x Actions) launchQuote(ctx context.Context, in LaunchInput) (Quote, error) {
	if in.QuoteID == "" {
		r, fe := in.Priced.Request()
		if (in.Priced.OfferID == nil || *in.Priced.OfferID == "") && (in.Priced.PrivateOfferID == nil || *in.Priced.PrivateOfferID == "") {
			fe["quoteId"] = "send a quoteId, or an offerId (or privateOfferId) with nodes and gpusPerNode"
		}
		if len(fe) > 0 {
			return Quote{}, fe
		}
		return x.s.ReuseQuote(ctx, x.a.OrgID, x.a.EnvID, r)
	}
	q, err := x.s.QuoteForOrg(ctx, x.a.OrgID, in.QuoteID)
	if err == nil && in.OwnEnvQuote && q.EnvID != x.a.EnvID {
		err = fmt.Errorf("models: quote %s is in another environment than the actor's: %w", q.ID, ErrNotFound)
	}
	if err != nil {
		return q, err
	}
	if field := in.Priced.changed(q); field != "" {
		pc := &PriceChangedError{Reason: "field:" + field, Old: q}
		if r, fe := in.Priced.merged(q); len(fe) == 0 && in.FreshQuote {
			pc.New = x.freshQuote(ctx, r)
		}
		return q, pc
	}
	if q.Expired(x.s.Now()) && q.UsedByCluster == "" {
		pc := &PriceChangedError{Reason: "expired", Old: q}
		if in.FreshQuote {
			pc.New = x.freshQuote(ctx, q.Request())
		}
		return q, pc
	}
	return q, nil
}

// freshQuote prices r for the actor, or nil when nothing fits it now.
func (x Actions) freshQuote(ctx context.Context, r ShapeQuery) *Quote {
	nq, err := x.s.CreateQuote(ctx, x.a.OrgID, x.a.EnvID, r)
	if err != nil {
		return nil
	}
	return &nq
}

// publicKeys resolves the actor's own SSH key ids (the signed-in user's, or
// an API key's creator's) to public keys.
func (s *Store) publicKeys(ctx context.Context, a Actor, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys, err := s.SSHKeysForUser(ctx, a.OrgID, a.UserID, ids)
	if errors.Is(err, ErrNotFound) {
		return nil, FieldErrors{"sshKeyIds": "unknown SSH key ids; list yours in the dashboard's settings"}
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.PublicKey)
	}
	return out, nil
}

// quoteInEnv refuses launching q in another environment than the one it
// was made in (A3): its volume, its budget and its
// idempotency belong there. A dashboard session that switched environment
// since is told to switch back.
func (s *Store) quoteInEnv(ctx context.Context, q Quote, envID string) error {
	if q.EnvID == envID {
		return nil
	}
	name := "another environment"
	if env, err := s.EnvironmentForOrg(ctx, q.OrgID, q.EnvID); err == nil {
		name = "environment " + env.Name
	}
	return FieldErrors{"quoteId": "This price was quoted in " + name + ", and a quote launches only in its own environment. Switch to it to launch, or quote again here."}
}
