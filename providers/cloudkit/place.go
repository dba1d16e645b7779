package cloudkit

import (
	"fmt"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Offer is what an adapter read from a placement's offer id, and its own
// rules, for Check.
type Offer struct {
	Parsed   bool   // the offer id has the cloud's form
	Form     string // that form, e.g. "<instance type>.<region>"
	Sold     string // where the offer is sold
	Disabled string // why that location is not sold here ("" = it is)
	MaxName  int    // the longest machine name the cloud takes (0 = no limit)
	Refusal  error  // a refusal of the cloud's own, checked last but one (nil = none)
}

// Check refuses, before anything is placed, what every cloud would
// refuse: an offer id not of the cloud's form or sold elsewhere than the
// placement's location, a location not enabled, no machine, no group name
// (or one too long for the machines' names), not one agent token per
// machine, the cloud's own refusal, and a persistent volume (V4 needs one
// on the head, which no adapter attaches: refused rather than booted
// without it, ErrUnsupported). cloud is the name customers read ("Lambda").
func Check(provider, op, cloud string, req providers.PlaceRequest, o Offer) error {
	bad := func(format string, args ...any) error { return Invalid(provider, op, req.Location, format, args...) }
	switch {
	case !o.Parsed:
		return bad("offer %q is not %s", req.OfferID, o.Form)
	case o.Sold != req.Location:
		return bad("offer %s is sold in %s, not in %q", req.OfferID, o.Sold, req.Location)
	case o.Disabled != "":
		return bad("%s", o.Disabled)
	case req.Count < 1:
		return bad("count %d: at least one machine", req.Count)
	case req.GroupName == "":
		return bad("a group name is required")
	case o.MaxName > 0 && len(MemberName(req.GroupName, req.Count-1)) > o.MaxName:
		return bad("group name %q is too long: %s names its machines with at most %d characters", req.GroupName, cloud, o.MaxName)
	case len(req.Agent.Tokens) != req.Count:
		return bad("%d agent tokens for %d machines", len(req.Agent.Tokens), req.Count)
	case o.Refusal != nil:
		return o.Refusal
	case req.Volume != nil:
		return Unsupported(provider, op, req.Location, cloud+" cannot attach a persistent volume to a machine; launch without a volume")
	}
	return nil
}

// Invalid is a placement's ErrValidation refusal at location.
func Invalid(provider, op, location, format string, args ...any) error {
	return &providers.Error{Class: providers.ErrValidation, Provider: provider, Op: op, Location: location,
		Message: fmt.Sprintf(format, args...)}
}

// Unsupported is the refusal of what the cloud cannot do (ErrUnsupported).
func Unsupported(provider, op, location, message string) error {
	return &providers.Error{Class: providers.ErrUnsupported, Provider: provider, Op: op, Code: "unsupported",
		Location: location, Message: message}
}

// NoPlaceNode is PlaceNode's refusal by a cloud that cannot promise a
// machine added to a placed group, or put in a gone one's place with its
// interconnect address (L10, X5): nothing is placed; the join fails and
// the cluster stays as it was.
func NoPlaceNode(provider, op, cloud, location string) error {
	return Unsupported(provider, op, location,
		cloud+" cannot add a machine to a placed group or replace one in place; launch a new cluster instead")
}

// Set is the allow-list of a configured list (nil: everything allowed).
func Set(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// PerGPUHour turns a machine's price in cents per hour into micro-dollars
// per GPU-hour, rounded up so that a machine is never sold below its price.
func PerGPUHour(centsPerMachineHour int64, gpus int) int64 {
	return (centsPerMachineHour*10_000 + int64(gpus) - 1) / int64(gpus)
}
