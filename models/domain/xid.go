package domain

// FatalXIDs are the NVIDIA Xid codes that mean a broken GPU or fabric, the
// one list verification (the machine check's kernel log), GPU telemetry (a
// machine's hardware fault) and health (which reads that fault) all judge
// by. Source: NVIDIA's Xid catalogue, "Analyzing Xid Errors with the Xid
// Catalog" (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html):
// the codes whose resolution is a GPU reset, a reboot or a service call
// (ECC, row remapping, NVLink, the GPU falling off the bus, GSP). Codes an
// application causes (13 graphics engine exception, 31 MMU fault, 43 GPU
// stopped processing, 45 preemptive cleanup; the catalogue's RESTART_APP)
// and every code not listed say nothing about the machine. The simulator's
// kernel-log words (providers/sim) print only codes of this list, with the
// same meaning (TestSimulatedXIDsAreOnTheFatalList).
var FatalXIDs = map[int]string{
	48:  "double-bit ECC error",
	63:  "ECC page retirement or row remapping recording event",
	64:  "ECC page retirement or row remapper recording failure",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "high single-bit ECC error rate",
	94:  "contained ECC error",
	95:  "uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
}

// FatalXID reports whether Xid code means a broken GPU or fabric, and what
// it means.
func FatalXID(code int) (string, bool) {
	why, ok := FatalXIDs[code]
	return why, ok
}
