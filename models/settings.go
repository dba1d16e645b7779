package models

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Settings are the operator's configuration the domain reads. main builds
// them once from the environment and flags and hands them to NewStoreWith
// before the jobs or the web start; a Store has no setter, so nothing
// changes them after start, and every transaction's Store carries the same
// value. Tests that need other settings build their Store with them.
type Settings struct {
	// DefaultMarkup is the markup of providers the operator has not set one
	// for (DEFAULT_MARKUP_PERCENT; see pricing.go).
	DefaultMarkup MarkupBP
	// EnvMarkups are the markups the environment sets (<P>_MARKUP_PERCENT),
	// by provider: they win over the operator's setting, which the
	// providers page then cannot change.
	EnvMarkups map[string]MarkupBP
	// MachineKeySecret seals the private keys pasted for SSH machines
	// (sshmachine.go) and webhook signing secrets: 32 bytes from the
	// configuration, never stored.
	MachineKeySecret []byte
	// BalanceGrace is how long an exhausted balance runs before its
	// clusters are stopped (BALANCE_GRACE; 0: DefaultBalanceGrace), for the
	// pages' "runs until" and the balance job (B6).
	BalanceGrace time.Duration
	// TerminateGrace is how long stopped, unpaid clusters wait before they
	// are terminated (B6; 0: the balance job's default).
	TerminateGrace time.Duration
	// HeartbeatLate and UnhealthyAfter drive the health job (R1; 0: its
	// defaults).
	HeartbeatLate, UnhealthyAfter time.Duration
	// Limits bound the amounts of top-ups, auto-recharges and operator
	// adjustments (B9; limits.go).
	Limits MoneyLimits
	// DefaultMaxVolumes and DefaultMaxVolumeGB are the volume quota of an
	// organisation the operator has not set one for (DEFAULT_MAX_VOLUMES,
	// DEFAULT_MAX_VOLUME_GB; 0: DefaultMaxVolumes, DefaultMaxVolumeGB).
	DefaultMaxVolumes, DefaultMaxVolumeGB int
	// WebhookAllowLoopback lets webhook endpoints use plain http to this
	// machine (development and tests; never in production, X8).
	WebhookAllowLoopback bool
	// MaxUnhealthyPercent is health damping's share (damping.go;
	// HEALTH_MAX_UNHEALTHY_PERCENT); 0 = DefaultMaxUnhealthyPercent.
	MaxUnhealthyPercent int
	// StopRefusals says, per provider name, why its machines can never be
	// stopped and started again (the customer's Stop is refused there); a
	// provider not named can stop them. main fills it from the providers.
	StopRefusals map[string]string
	// Verify are the verification thresholds (CLUSTERDECK_VERIFY_*); zero
	// fields take DefaultVerifyThresholds'.
	Verify VerifyThresholds
	// WebhookClusterView renders a cluster as the API shows it, for the
	// data of its webhook events; main passes web's (models cannot import
	// the API's types). Nil: a short summary of the cluster row (X8).
	WebhookClusterView func(ctx context.Context, tx *Store, c Cluster) (any, error)
}

// fixed is s with its defaults filled and its maps and bytes copied, so the
// caller's later changes to them do not reach a running Store.
func (s Settings) fixed() Settings {
	s.EnvMarkups = maps.Clone(s.EnvMarkups)
	s.StopRefusals = maps.Clone(s.StopRefusals)
	s.MachineKeySecret = slices.Clone(s.MachineKeySecret)
	s.Verify = s.Verify.WithDefaults()
	return s
}

// Settings are the store's settings, a copy (maps and bytes included):
// changing it changes nothing in the store.
func (s *Store) Settings() Settings { return s.settings.fixed() }
