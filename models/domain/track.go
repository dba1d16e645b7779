package domain

import (
	"math"
	"strconv"
)

// A launch's outcomes (X2): every accepted launch ends in one of them once,
// at the transition that ends it (trackTransition).
const (
	OutcomeReady            = "ready"             // handed over
	OutcomeReadyAfterSwap   = "ready_swap"        // handed over after verification swapped a machine
	OutcomeFailedPlacing    = "failed_placing"    // not every machine came up (L4)
	OutcomeFailedInstalling = "failed_installing" // its software failed (L6)
	OutcomeFailedVerifying  = "failed_verifying"  // verification failed (X13)
	OutcomeCancelled        = "cancelled"         // terminated or stopped before hand-over: says nothing of the offer
)

// LaunchOutcomes lists the outcomes in the order pages show them.
var LaunchOutcomes = []string{OutcomeReady, OutcomeReadyAfterSwap, OutcomeFailedPlacing, OutcomeFailedInstalling,
	OutcomeFailedVerifying, OutcomeCancelled}

// TrackKey is an offer at a size.
type TrackKey struct {
	OfferID string
	Nodes   int
}

// TrackRecord is an offer's record at one size over TrackWindow: every
// launch accepted in it, by outcome (X2).
type TrackRecord struct {
	Launches int // every launch accepted, under way and cancelled ones too
	Outcomes OutcomeCounts
	// Tried is the launches that ended in a verdict on the offer (every
	// outcome but cancelled); Started, those where every machine came up
	// (all but failed placing); Ready, those handed over (with or without a
	// swap).
	Tried, Started, Ready int
	ReadySamples          int // handed-over launches with their time to ready
	ReadyP50, ReadyP90    int // launch accepted → hand-over, whole minutes (rounded up)
	VerifyFailures        int
	MachineFailures       int     // machines declared down after ready
	MachineHours          float64 // after ready
	Ring                  RingRecord
}

// OutcomeCounts counts the launches of a record by outcome.
type OutcomeCounts struct {
	Ready, ReadyAfterSwap, FailedPlacing, FailedInstalling, FailedVerifying, Cancelled, UnderWay int
}

// Add counts n launches of outcome o.
func (c *OutcomeCounts) Add(o string, n int) {
	switch o {
	case OutcomeReady:
		c.Ready += n
	case OutcomeReadyAfterSwap:
		c.ReadyAfterSwap += n
	case OutcomeFailedPlacing:
		c.FailedPlacing += n
	case OutcomeFailedInstalling:
		c.FailedInstalling += n
	case OutcomeFailedVerifying:
		c.FailedVerifying += n
	case OutcomeCancelled:
		c.Cancelled += n
	default:
		c.UnderWay += n
	}
}

// RingRecord is the ring bus bandwidth the record's verifications measured
// (X13): the median and the worst reading, each with the line rate its
// offer's NICs had at launch.
type RingRecord struct {
	Samples       int
	Median, Worst RingReading
}

// RingReading is one ring measurement beside the line rate.
type RingReading struct {
	GBps         float64
	LineRateGBps float64 // 0: an encrypted Ethernet overlay (or unknown): no share is shown
}

// Percent is the reading as a whole per cent of the line rate; false
// without a line rate.
func (r RingReading) Percent() (int, bool) {
	if r.LineRateGBps <= 0 {
		return 0, false
	}
	return int(math.Round(r.GBps * 100 / r.LineRateGBps)), true
}

// FailuresPer1000h is MachineFailures per 1,000 machine-hours after ready;
// false when no machine ran after ready.
func (r TrackRecord) FailuresPer1000h() (float64, bool) {
	if r.MachineHours <= 0 {
		return 0, false
	}
	return float64(r.MachineFailures) * 1000 / r.MachineHours, true
}

// Summary is the record in words: "31 of 33 recent launches succeeded ·
// ready in 9 min" (the median time to ready), "no launch finished yet"
// while the only ones are under way or were cancelled, or "no launches
// yet".
func (r *TrackRecord) Summary() string {
	return string(r.AppendSummary(nil))
}

// AppendSummary appends Summary (the offers page writes hundreds of rows).
func (r *TrackRecord) AppendSummary(b []byte) []byte {
	if r == nil || r.Launches == 0 {
		return append(b, "no launches yet"...)
	}
	if r.Tried == 0 {
		return append(b, "no launch finished yet"...)
	}
	b = strconv.AppendInt(b, int64(r.Ready), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(r.Tried), 10)
	if r.Tried == 1 {
		b = append(b, " recent launch succeeded"...)
	} else {
		b = append(b, " recent launches succeeded"...)
	}
	if r.ReadySamples > 0 {
		b = strconv.AppendInt(append(b, " · ready in "...), int64(r.ReadyP50), 10)
		b = append(b, " min"...)
	}
	return b
}

// RingSummary is the ring line: "ring 368 GB/s (92 % of line rate) ·
// worst 352 GB/s (88 %)", GB/s alone without a line rate; "" when no
// verification measured it.
func (r *TrackRecord) RingSummary() string { return string(r.AppendRingSummary(nil)) }

// AppendRingSummary appends RingSummary.
func (r *TrackRecord) AppendRingSummary(b []byte) []byte {
	if r == nil || r.Ring.Samples == 0 {
		return b
	}
	b = AppendGBps(append(b, "ring "...), r.Ring.Median.GBps)
	if p, ok := r.Ring.Median.Percent(); ok {
		b = append(strconv.AppendInt(append(b, " ("...), int64(p), 10), " % of line rate)"...)
	}
	if r.Ring.Samples > 1 {
		b = AppendGBps(append(b, " · worst "...), r.Ring.Worst.GBps)
		if p, ok := r.Ring.Worst.Percent(); ok {
			b = append(strconv.AppendInt(append(b, " ("...), int64(p), 10), " %)"...)
		}
	}
	return b
}

// AppendGBps writes a bandwidth: "368 GB/s" from 100 up, "46.5 GB/s" and
// "1.8 GB/s" below.
func AppendGBps(b []byte, v float64) []byte {
	if v >= 100 {
		b = strconv.AppendFloat(b, math.Round(v), 'f', 0, 64)
	} else {
		b = strconv.AppendFloat(b, math.Round(v*10)/10, 'f', -1, 64)
	}
	return append(b, " GB/s"...)
}

// SuccessRate is Ready/Tried (launches handed over of those that ended in
// a verdict), and false with none.
func (r *TrackRecord) SuccessRate() (float64, bool) {
	if r == nil || r.Tried == 0 {
		return 0, false
	}
	return float64(r.Ready) / float64(r.Tried), true
}
