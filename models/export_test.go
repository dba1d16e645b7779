package models

// SetMeterBatches shrinks a metering pass's batches for tests and returns
// the function that restores them.
func SetMeterBatches(page, chunk int) (restore func()) {
	p, c, a := meterPageSize, meterChunkRows, meterChunkArrays
	meterPageSize, meterChunkRows, meterChunkArrays = page, chunk, chunk
	return func() { meterPageSize, meterChunkRows, meterChunkArrays = p, c, a }
}

// BilledMinutes is billedMinutes, for the billing tests.
var BilledMinutes = billedMinutes
