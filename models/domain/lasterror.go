package domain

import "strings"

// ErrorKind is what went wrong with a cluster, the first part of its
// stored lastError (L4, L6, R2, R5, B6). Every kind is declared here and
// listed in ErrorKinds; a test holds the two equal, and another that the
// cluster page says every kind in its own words.
type ErrorKind string

// Error kinds. The stored column and the API's lastError keep the codes
// "kind:detail" (or "kind" alone for the kinds with no detail).
const (
	KindTimeout            ErrorKind = "timeout"             // timeout:<step>: a step missed its deadline (L4)
	KindNodeLost           ErrorKind = "node_lost"           // node_lost:<step>: a machine vanished at the provider (L4)
	KindGPUMismatch        ErrorKind = "gpu_mismatch"        // gpu_mismatch:<node>: a machine lacks the promised GPUs (L4)
	KindProviderRejected   ErrorKind = "provider_rejected"   // provider_rejected:no_capacity|validation (L4)
	KindInstallFailed      ErrorKind = "install_failed"      // install_failed:<node>|config (L6)
	KindCheckFailed        ErrorKind = "check_failed"        // check_failed:<software> (L6)
	KindInstallInterrupted ErrorKind = "install_interrupted" // a stop interrupted the install (B6, L6)
	KindNodeDown           ErrorKind = "node_down"           // node_down:<what was seen>: machines left running (R2)
	KindRecoveryExhausted  ErrorKind = "recovery_exhausted"  // every recovery attempt spent (R5)
	KindResumeFailed       ErrorKind = "resume_failed"       // resume_failed:<the launch code>: a resume did not come back (B6, L4)
	KindResumeCancelled    ErrorKind = "resume_cancelled"    // resume_cancelled:<stop reason>: a stop cancelled a resume (B6)
	KindVerifyFailed       ErrorKind = "verification_failed" // verification_failed:<node-N|fabric|timeout>: not handed over verified (X13)
)

// ErrorKinds lists every kind.
var ErrorKinds = []ErrorKind{KindTimeout, KindNodeLost, KindGPUMismatch, KindProviderRejected, KindInstallFailed,
	KindCheckFailed, KindInstallInterrupted, KindNodeDown, KindRecoveryExhausted, KindResumeFailed, KindResumeCancelled, KindVerifyFailed}

// bare kinds are stored without a detail.
func (k ErrorKind) bare() bool { return k == KindInstallInterrupted || k == KindRecoveryExhausted }

// Known reports whether k is a declared kind.
func (k ErrorKind) Known() bool {
	for _, d := range ErrorKinds {
		if d == k {
			return true
		}
	}
	return false
}

// LastError is a cluster's lastError as a value: its kind and what the
// kind names (a step, a node, a reason, or for a failed resume the launch
// code it failed with). Built by the constructors below only; stored and
// shown by String, read back by ParseLastError.
type LastError struct {
	Kind   ErrorKind
	Detail string
}

// Provider rejection reasons (L4).
const (
	RejectedNoCapacity = "no_capacity"
	RejectedValidation = "validation"
)

// InstallConfig is install_failed's detail when no node is to blame: the
// configuration cannot be generated (L6).
const InstallConfig = "config"

// StepReserved is the step a placement takes before any machine exists (L4).
const StepReserved = "reserved"

// StepTimeout is a step that missed its deadline (L4).
func StepTimeout(step string) LastError { return LastError{KindTimeout, step} }

// NodeLostAt is a machine that vanished at the provider during step (L4).
func NodeLostAt(step string) LastError { return LastError{KindNodeLost, step} }

// GPUMismatch is a machine without the GPUs the offer promises (L4).
func GPUMismatch(node string) LastError { return LastError{KindGPUMismatch, node} }

// ProviderRejected is the provider refusing the placement (L4): reason
// RejectedNoCapacity or RejectedValidation.
func ProviderRejected(reason string) LastError { return LastError{KindProviderRejected, reason} }

// VerificationFailed is a cluster not handed over verified (X13):
// what is the node that failed, "fabric" or "timeout".
func VerificationFailed(what string) LastError { return LastError{KindVerifyFailed, what} }

// InstallFailed is the software failing on node, or InstallConfig (L6).
func InstallFailed(node string) LastError { return LastError{KindInstallFailed, node} }

// CheckFailed is software installed that missed its check (L6).
func CheckFailed(software string) LastError { return LastError{KindCheckFailed, software} }

// InstallInterrupted is a resumed cluster whose install a stop cut off (B6, L6).
func InstallInterrupted() LastError { return LastError{Kind: KindInstallInterrupted} }

// MachinesDown is machines left running after admission, as seen (R2).
func MachinesDown(seen string) LastError { return LastError{KindNodeDown, seen} }

// RecoveryExhausted is every recovery attempt spent (R5).
func RecoveryExhausted() LastError { return LastError{Kind: KindRecoveryExhausted} }

// ResumeFailed is a resume that did not bring every machine back, with the
// launch's code it failed with (B6, L4).
func ResumeFailed(cause LastError) LastError { return LastError{KindResumeFailed, cause.String()} }

// ResumeCancelled is a resume a stop request cancelled (B6).
func ResumeCancelled(reason StopReason) LastError {
	return LastError{KindResumeCancelled, string(reason)}
}

// String is the stored and shown code: "kind:detail", or "kind"; "" for
// no error.
func (e LastError) String() string {
	if e.Kind == "" || e.Kind.bare() {
		return string(e.Kind)
	}
	return string(e.Kind) + ":" + e.Detail
}

// Cause is the launch code a failed resume failed with (B6).
func (e LastError) Cause() LastError {
	if e.Kind != KindResumeFailed {
		return LastError{}
	}
	return ParseLastError(e.Detail)
}

// ParseLastError reads a stored lastError back; the zero value for "".
// A kind that is not declared keeps its text (check Kind.Known).
func ParseLastError(s string) LastError {
	kind, detail, _ := strings.Cut(s, ":")
	return LastError{ErrorKind(kind), detail}
}
