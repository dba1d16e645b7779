package models

import "context"

// SetMeterBatches shrinks a metering pass's batches for tests and returns
// the function that restores them.
func SetMeterBatches(page, chunk int) (restore func()) {
	p, c, a := meterPageSize, meterChunkRows, meterChunkArrays
	meterPageSize, meterChunkRows, meterChunkArrays = page, chunk, chunk
	return func() { meterPageSize, meterChunkRows, meterChunkArrays = p, c, a }
}

// BilledMinutes is billedMinutes, for the billing tests.
var BilledMinutes = billedMinutes

// AddPublicEvent writes one public event of the cluster, as verification
// writes node.verification_failed (X2), for the track record tests.
func AddPublicEvent(s *Store, ctx context.Context, c Cluster, typ, node, msg string) error {
	return s.Tx(ctx, func(tx *Store) error { return tx.addTypedEvent(ctx, c, c.Status, typ, "error", node, "verify", msg) })
}

// BackfillLaunchOutcomes is migration 0992's backfill, for its test.
var BackfillLaunchOutcomes = backfillLaunchOutcomes
