package models

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Pick is one picker question at one moment: the catalog snapshot, the holds
// and the freshness cutoff, read by one statement (catalog.go). Its Stamp
// identifies the answer exactly: picks with equal stamps have equal Groups,
// so a caller may keep what it renders from an answer under its stamp and
// serve it again without recomputing (O3). A stamp never names a
// moment, only the inputs: the catalog version, which offers have gone
// stale, the holds and the filter. Markups are in the snapshot's prices: a
// markup change bumps the version, and the default markup is stamped.
// Anything else that changes the answer (an organisation's private offers)
// must join the stamp when it joins the answer.
type Pick struct {
	Stamp  string
	snap   *catalogSnapshot
	held   map[string]int
	cutoff time.Time
	filter OfferFilter
	track  *TrackBook // the offers' track records (WithTrack); nil = not read
}

// PreparePick reads what PickOffers needs for f; Groups computes the answer.
func (s *Store) PreparePick(ctx context.Context, f OfferFilter) (*Pick, error) {
	version, held, err := s.pickState(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.catalog(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("models: pick offers: %w", err)
	}
	p := &Pick{snap: snap, held: held, cutoff: s.Now().Add(-OfferFreshness), filter: f}
	p.Stamp = p.stamp()
	return p, nil
}

// Freshness says when the prices of the asked shape were last refreshed:
// newest is the latest refresh among its catalog rows, fresh or not (zero
// when the catalog has none); stale is true when it has some but none is
// within the freshness window — the provider's refresh is failing, which is
// not the same as no capacity (O6).
func (p *Pick) Freshness() (newest time.Time, stale bool) {
	f := p.filter
	fresh := false
	for i := range p.snap.offers {
		o := &p.snap.offers[i]
		if !f.matches(o, time.Time{}) {
			continue
		}
		if o.RefreshedAt.After(newest) {
			newest = o.RefreshedAt
		}
		fresh = fresh || !o.RefreshedAt.Before(p.cutoff)
	}
	return newest, !newest.IsZero() && !fresh
}

// Groups is PickOffers' answer.
func (p *Pick) Groups() []OfferGroup {
	f, offers := p.filter, p.snap.offers
	n := 0
	for i := range offers {
		if f.matches(&offers[i], p.cutoff) {
			n++
		}
	}
	keys := make([]offerKey, 0, n)
	for i := range offers {
		if o := &offers[i]; f.matches(o, p.cutoff) {
			k := newOfferKey(o, p.held[o.ID], f.Nodes)
			k.track = p.track.For(o.ID, f.Nodes)
			keys = append(keys, k)
		}
	}
	return groupOffers(keys, f)
}

// CheapestOverCeiling is, when a price ceiling left nothing, the lowest
// whole-cluster price per hour among the fresh offers the rest of the
// filter matches (O3): what the ceiling would have to be lifted to. ok is
// false when there is no ceiling or nothing matches without it either.
func (p *Pick) CheapestOverCeiling() (price Money, ok bool) {
	f := p.filter
	if f.MaxClusterHour <= 0 {
		return 0, false
	}
	for i := range p.snap.offers {
		o := &p.snap.offers[i]
		if !f.matches(o, p.cutoff) {
			continue
		}
		if c := o.ClusterHour(f.Nodes); !ok || c < price {
			price, ok = c, true
		}
	}
	return price, ok
}

// LargestMachine is the most GPUs per machine among the fresh offers the
// filter matches whatever its GPUs per machine (0 when none): the picker's
// default, since a cluster is usually built of the fullest machines.
func (p *Pick) LargestMachine() int {
	f := p.filter
	f.GPUsPerNode = 0
	most := 0
	for i := range p.snap.offers {
		if o := &p.snap.offers[i]; o.GPUsPerNode > most && f.matches(o, p.cutoff) {
			most = o.GPUsPerNode
		}
	}
	return most
}

// WithTrack is the same question whose answer carries each offer's track
// record at the asked size (Offer.Track) and may be sorted by it; the
// book's stamp joins the answer's.
func (p *Pick) WithTrack(b *TrackBook) *Pick {
	q := *p
	q.track = b
	q.Stamp = q.stamp()
	return &q
}

// WithGPUs is the same question at gpus per machine, on the same reads.
func (p *Pick) WithGPUs(gpus int) *Pick {
	q := *p
	q.filter.GPUsPerNode = gpus
	q.Stamp = q.stamp()
	return &q
}

// stamp lists the answer's inputs. Which offers are stale is a count: the
// snapshot's refresh times are sorted, and the stale ones are a prefix.
func (p *Pick) stamp() string {
	f := p.filter
	stale, _ := slices.BinarySearchFunc(p.snap.refreshed, p.cutoff, func(t, cutoff time.Time) int { return t.Compare(cutoff) })
	b := make([]byte, 0, 128)
	b = strconv.AppendInt(append(b, "v"...), p.snap.version, 10)
	b = strconv.AppendInt(append(b, " markup "...), int64(p.snap.markup), 10)
	b = strconv.AppendInt(append(b, " stale "...), int64(stale), 10)
	b = append(append(b, " accelerator "...), strconv.Quote(f.Accelerator)...)
	b = strconv.AppendInt(append(b, " nodes "...), int64(f.Nodes), 10)
	b = append(append(b, " interconnect "...), strconv.Quote(f.Interconnect)...)
	b = append(append(b, " kind "...), strconv.Quote(f.MachineKind)...)
	b = strconv.AppendInt(append(b, " gpus "...), int64(f.GPUsPerNode), 10)
	b = strconv.AppendInt(append(b, " max "...), int64(f.MaxClusterHour), 10)
	b = strconv.AppendBool(append(b, " community "...), f.IncludeCommunity)
	b = append(append(b, " location "...), strconv.Quote(f.Location)...)
	b = append(append(b, " sort "...), strconv.Quote(string(f.Sort))...)
	if p.track != nil {
		b = append(append(b, " track "...), p.track.Stamp...)
	}
	ids := make([]string, 0, len(p.held))
	for id := range p.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b = append(append(b, " held "...), strconv.Quote(id)...)
		b = strconv.AppendInt(append(b, '='), int64(p.held[id]), 10)
	}
	return string(b)
}
