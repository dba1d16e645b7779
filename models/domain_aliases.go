// The vocabulary (models/domain) under the names the store and its callers
// have always used: each exported name of models/domain is declared here as
// a type alias, the same constant, the same table or a thin wrapper, so
// models.X and domain.X are one thing. TestEveryDomainNameInModels holds
// the two lists equal.

package models

import (
	"time"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// The vocabulary's types, under the names the store and its callers use.
type (
	CapacityStatus    = domain.CapacityStatus
	NodeMinute        = domain.NodeMinute
	NodeSeries        = domain.NodeSeries
	StallRule         = domain.StallRule
	StallFinding      = domain.StallFinding
	IdleRule          = domain.IdleRule
	ErrorKind         = domain.ErrorKind
	LastError         = domain.LastError
	Lifecycle         = domain.Lifecycle
	Money             = domain.Money
	AmountError       = domain.AmountError
	NodeStep          = domain.NodeStep
	Offer             = domain.Offer
	Sellability       = domain.Sellability
	OfferSort         = domain.OfferSort
	MarkupBP          = domain.MarkupBP
	ClusterStatus     = domain.ClusterStatus
	NodeStatus        = domain.NodeStatus
	Event             = domain.Event
	ClusterTransition = domain.ClusterTransition
	StopReason        = domain.StopReason
	TrackKey          = domain.TrackKey
	TrackRecord       = domain.TrackRecord
	OutcomeCounts     = domain.OutcomeCounts
	RingRecord        = domain.RingRecord
	RingReading       = domain.RingReading
	VerifyThresholds  = domain.VerifyThresholds
	MachineVerdict    = domain.MachineVerdict
	PairVerdict       = domain.PairVerdict
	MachineCheck      = domain.MachineCheck
)

// The vocabulary's constants.
const (
	CapacityNew             = domain.CapacityNew
	CapacityContacted       = domain.CapacityContacted
	CapacityQuoted          = domain.CapacityQuoted
	CapacityWon             = domain.CapacityWon
	CapacityLost            = domain.CapacityLost
	WaitingForPeers         = domain.WaitingForPeers
	DefaultStallMinutes     = domain.DefaultStallMinutes
	DefaultStallIdleBelow   = domain.DefaultStallIdleBelow
	DefaultStallBusyAbove   = domain.DefaultStallBusyAbove
	StallSplit              = domain.StallSplit
	StallFrozen             = domain.StallFrozen
	KindTimeout             = domain.KindTimeout
	KindNodeLost            = domain.KindNodeLost
	KindGPUMismatch         = domain.KindGPUMismatch
	KindProviderRejected    = domain.KindProviderRejected
	KindInstallFailed       = domain.KindInstallFailed
	KindCheckFailed         = domain.KindCheckFailed
	KindInstallInterrupted  = domain.KindInstallInterrupted
	KindNodeDown            = domain.KindNodeDown
	KindRecoveryExhausted   = domain.KindRecoveryExhausted
	KindResumeFailed        = domain.KindResumeFailed
	KindResumeCancelled     = domain.KindResumeCancelled
	KindVerifyFailed        = domain.KindVerifyFailed
	RejectedNoCapacity      = domain.RejectedNoCapacity
	RejectedValidation      = domain.RejectedValidation
	InstallConfig           = domain.InstallConfig
	StepReserved            = domain.StepReserved
	VerifyRunning           = domain.VerifyRunning
	VerifyPassed            = domain.VerifyPassed
	VerifyFailed            = domain.VerifyFailed
	Micro                   = domain.Micro
	AmountProblemEmpty      = domain.AmountProblemEmpty
	AmountProblemNegative   = domain.AmountProblemNegative
	AmountProblemCents      = domain.AmountProblemCents
	AmountProblemCommas     = domain.AmountProblemCommas
	AmountProblemTooLarge   = domain.AmountProblemTooLarge
	MinNodes                = domain.MinNodes
	MaxNodes                = domain.MaxNodes
	UncountedMaxNodes       = domain.UncountedMaxNodes
	OfferFreshness          = domain.OfferFreshness
	Startable               = domain.Startable
	ReservedAhead           = domain.ReservedAhead
	NotInStock              = domain.NotInStock
	SortClusterPrice        = domain.SortClusterPrice
	SortGPUPrice            = domain.SortGPUPrice
	SortTrackRecord         = domain.SortTrackRecord
	MaxMarkupBP             = domain.MaxMarkupBP
	StatusProvisioning      = domain.StatusProvisioning
	StatusInstalling        = domain.StatusInstalling
	StatusVerifying         = domain.StatusVerifying
	StatusReady             = domain.StatusReady
	StatusDegraded          = domain.StatusDegraded
	StatusStopped           = domain.StatusStopped
	StatusFailed            = domain.StatusFailed
	StatusTerminated        = domain.StatusTerminated
	StepRunning             = domain.StepRunning
	StepAgent               = domain.StepAgent
	StepMesh                = domain.StepMesh
	StepSoftware            = domain.StepSoftware
	ProvisionCap            = domain.ProvisionCap
	NodeProvisioning        = domain.NodeProvisioning
	NodeReady               = domain.NodeReady
	NodeFailed              = domain.NodeFailed
	NodeTerminated          = domain.NodeTerminated
	NodeLost                = domain.NodeLost
	NodeInstalling          = domain.NodeInstalling
	NodeDown                = domain.NodeDown
	NodeRestarting          = domain.NodeRestarting
	NodeJoining             = domain.NodeJoining
	NodeStopped             = domain.NodeStopped
	EventPlaced             = domain.EventPlaced
	EventJoined             = domain.EventJoined
	EventJoinedInstall      = domain.EventJoinedInstall
	EventSoftwareReady      = domain.EventSoftwareReady
	EventDegrade            = domain.EventDegrade
	EventRetryInstall       = domain.EventRetryInstall
	EventFail               = domain.EventFail
	EventReleased           = domain.EventReleased
	EventTerminateRequested = domain.EventTerminateRequested
	EventTerminated         = domain.EventTerminated
	EventMachineDown        = domain.EventMachineDown
	EventHealthNoted        = domain.EventHealthNoted
	EventHealthy            = domain.EventHealthy
	EventHealthyInstall     = domain.EventHealthyInstall
	EventRecoveryAttempt    = domain.EventRecoveryAttempt
	EventRecoveryExhausted  = domain.EventRecoveryExhausted
	EventWorkerRequested    = domain.EventWorkerRequested
	EventReplaceRequested   = domain.EventReplaceRequested
	EventNodeJoined         = domain.EventNodeJoined
	EventNodeJoinFailed     = domain.EventNodeJoinFailed
	EventStopRequested      = domain.EventStopRequested
	EventStopped            = domain.EventStopped
	EventMachinesStopped    = domain.EventMachinesStopped
	EventResumeRequested    = domain.EventResumeRequested
	EventResumed            = domain.EventResumed
	EventResumedDegraded    = domain.EventResumedDegraded
	EventResumeFailed       = domain.EventResumeFailed
	EventJoinedVerify       = domain.EventJoinedVerify
	EventSoftwareVerify     = domain.EventSoftwareVerify
	EventVerified           = domain.EventVerified
	EventVerifyFailed       = domain.EventVerifyFailed
	EventKeepUnverified     = domain.EventKeepUnverified
	EventResumedVerify      = domain.EventResumedVerify
	NodeReleased            = domain.NodeReleased
	NodeTerminating         = domain.NodeTerminating
	NodeDegraded            = domain.NodeDegraded
	NodeVerifying           = domain.NodeVerifying
	StopByBalance           = domain.StopByBalance
	StopByBudget            = domain.StopByBudget
	StopByCustomer          = domain.StopByCustomer
	StopByIdle              = domain.StopByIdle
	OutcomeReady            = domain.OutcomeReady
	OutcomeReadyAfterSwap   = domain.OutcomeReadyAfterSwap
	OutcomeFailedPlacing    = domain.OutcomeFailedPlacing
	OutcomeFailedInstalling = domain.OutcomeFailedInstalling
	OutcomeFailedVerifying  = domain.OutcomeFailedVerifying
	OutcomeCancelled        = domain.OutcomeCancelled
	VerdictPending          = domain.VerdictPending
	VerdictPassed           = domain.VerdictPassed
	VerdictFailed           = domain.VerdictFailed
	VerdictSlow             = domain.VerdictSlow
	VerdictMeasured         = domain.VerdictMeasured
	VerdictSwapping         = domain.VerdictSwapping
)

// The vocabulary's tables (the same values, not copies).
var (
	CapacityStatuses        = domain.CapacityStatuses
	ErrorKinds              = domain.ErrorKinds
	NodeStatusesShown       = domain.NodeStatusesShown
	Accelerators            = domain.Accelerators
	MachineKinds            = domain.MachineKinds
	Interconnects           = domain.Interconnects
	GPUCounts               = domain.GPUCounts
	OfferSorts              = domain.OfferSorts
	LiveStatuses            = domain.LiveStatuses
	ProvisionSteps          = domain.ProvisionSteps
	LiveNodeStatuses        = domain.LiveNodeStatuses
	ClusterTransitions      = domain.ClusterTransitions
	ClusterStatuses         = domain.ClusterStatuses
	Events                  = domain.Events
	LaunchOutcomes          = domain.LaunchOutcomes
	DefaultVerifyThresholds = domain.DefaultVerifyThresholds
	FatalXIDs               = domain.FatalXIDs
)

// LoopbackHost is domain.LoopbackHost.
func LoopbackHost(host string) bool { return domain.LoopbackHost(host) }

// PublicHost is domain.PublicHost.
func PublicHost(host string) bool { return domain.PublicHost(host) }

// DetectStall is domain.DetectStall.
func DetectStall(series []domain.NodeSeries, now time.Time, r domain.StallRule) (domain.StallFinding, bool) {
	return domain.DetectStall(series, now, r)
}

// IdleSince is domain.IdleSince.
func IdleSince(series []domain.NodeSeries, now time.Time, r domain.IdleRule) (time.Time, bool) {
	return domain.IdleSince(series, now, r)
}

// StepTimeout is domain.StepTimeout.
func StepTimeout(step string) domain.LastError { return domain.StepTimeout(step) }

// NodeLostAt is domain.NodeLostAt.
func NodeLostAt(step string) domain.LastError { return domain.NodeLostAt(step) }

// GPUMismatch is domain.GPUMismatch.
func GPUMismatch(node string) domain.LastError { return domain.GPUMismatch(node) }

// ProviderRejected is domain.ProviderRejected.
func ProviderRejected(reason string) domain.LastError { return domain.ProviderRejected(reason) }

// VerificationFailed is domain.VerificationFailed.
func VerificationFailed(what string) domain.LastError { return domain.VerificationFailed(what) }

// InstallFailed is domain.InstallFailed.
func InstallFailed(node string) domain.LastError { return domain.InstallFailed(node) }

// CheckFailed is domain.CheckFailed.
func CheckFailed(software string) domain.LastError { return domain.CheckFailed(software) }

// InstallInterrupted is domain.InstallInterrupted.
func InstallInterrupted() domain.LastError { return domain.InstallInterrupted() }

// MachinesDown is domain.MachinesDown.
func MachinesDown(seen string) domain.LastError { return domain.MachinesDown(seen) }

// RecoveryExhausted is domain.RecoveryExhausted.
func RecoveryExhausted() domain.LastError { return domain.RecoveryExhausted() }

// ResumeFailed is domain.ResumeFailed.
func ResumeFailed(cause domain.LastError) domain.LastError { return domain.ResumeFailed(cause) }

// ResumeCancelled is domain.ResumeCancelled.
func ResumeCancelled(reason domain.StopReason) domain.LastError {
	return domain.ResumeCancelled(reason)
}

// ParseLastError is domain.ParseLastError.
func ParseLastError(s string) domain.LastError { return domain.ParseLastError(s) }

// SoftwareFailure is domain.SoftwareFailure.
func SoftwareFailure(lastError string) bool { return domain.SoftwareFailure(lastError) }

// USD is domain.USD.
func USD(m domain.Money) string { return domain.USD(m) }

// DecimalUSD is domain.DecimalUSD.
func DecimalUSD(m domain.Money) string { return domain.DecimalUSD(m) }

// ParseUSD is domain.ParseUSD.
func ParseUSD(s string) (domain.Money, error) { return domain.ParseUSD(s) }

// ParseTypedUSD is domain.ParseTypedUSD.
func ParseTypedUSD(s string) (domain.Money, error) { return domain.ParseTypedUSD(s) }

// AppendUSD is domain.AppendUSD.
func AppendUSD(dst []byte, m domain.Money) []byte { return domain.AppendUSD(dst, m) }

// AppendDecimalUSD is domain.AppendDecimalUSD.
func AppendDecimalUSD(dst []byte, m domain.Money) []byte { return domain.AppendDecimalUSD(dst, m) }

// AppendPrice is domain.AppendPrice.
func AppendPrice(dst []byte, m domain.Money) []byte { return domain.AppendPrice(dst, m) }

// PriceUSD is domain.PriceUSD.
func PriceUSD(m domain.Money) string { return domain.PriceUSD(m) }

// CustomerPrice is domain.CustomerPrice.
func CustomerPrice(rate domain.Money, bp domain.MarkupBP) domain.Money {
	return domain.CustomerPrice(rate, bp)
}

// ParsePercent is domain.ParsePercent.
func ParsePercent(s string) (domain.MarkupBP, error) { return domain.ParsePercent(s) }

// PercentText is domain.PercentText.
func PercentText(bp domain.MarkupBP) string { return domain.PercentText(bp) }

// NextStatus is domain.NextStatus.
func NextStatus(from domain.ClusterStatus, ev domain.Event) (domain.ClusterStatus, bool) {
	return domain.NextStatus(from, ev)
}

// EventMove is domain.EventMove.
func EventMove(ev domain.Event) ([]domain.ClusterStatus, domain.ClusterStatus, error) {
	return domain.EventMove(ev)
}

// StateDiagram is domain.StateDiagram.
func StateDiagram() string { return domain.StateDiagram() }

// AppendGBps is domain.AppendGBps.
func AppendGBps(b []byte, v float64) []byte { return domain.AppendGBps(b, v) }

// JudgeMachine is domain.JudgeMachine.
func JudgeMachine(in domain.MachineCheck, gpusPerNode int, accelerator string, th domain.VerifyThresholds) domain.MachineVerdict {
	return domain.JudgeMachine(in, gpusPerNode, accelerator, th)
}

// JudgePairs is domain.JudgePairs.
func JudgePairs(pairs []domain.PairVerdict, expected float64, th domain.VerifyThresholds) float64 {
	return domain.JudgePairs(pairs, expected, th)
}

// PairCulprit is domain.PairCulprit.
func PairCulprit(pairs []domain.PairVerdict, names []string, median float64, th domain.VerifyThresholds) (int, int) {
	return domain.PairCulprit(pairs, names, median, th)
}

// FatalXID is domain.FatalXID.
func FatalXID(code int) (string, bool) { return domain.FatalXID(code) }

// The notification kinds and their data (E1, E2): views word them.
type (
	Notification        = domain.Notification
	ClusterMail         = domain.ClusterMail
	GPUStallMail        = domain.GPUStallMail
	GPUIdleMail         = domain.GPUIdleMail
	BudgetAlertMail     = domain.BudgetAlertMail
	BudgetStoppedMail   = domain.BudgetStoppedMail
	BalanceMail         = domain.BalanceMail
	ChargeFailedMail    = domain.ChargeFailedMail
	PriceAboveMail      = domain.PriceAboveMail
	WebhookPausedMail   = domain.WebhookPausedMail
	PasswordResetMail   = domain.PasswordResetMail
	PasswordChangedMail = domain.PasswordChangedMail
	MailAPIKeys         = domain.MailAPIKeys
	InviteMail          = domain.InviteMail
	MailQuoteRequest    = domain.MailQuoteRequest
	QuoteReceivedMail   = domain.QuoteReceivedMail
	QuoteSalesMail      = domain.QuoteSalesMail
	QuoteStatusMail     = domain.QuoteStatusMail
	PrivateOfferMail    = domain.PrivateOfferMail
	ReservationMail     = domain.ReservationMail
)

// Notification kinds, cluster mail topics and idle actions.
const (
	KindClusterMail              = domain.KindClusterMail
	KindGPUStallMail             = domain.KindGPUStallMail
	KindGPUIdleMail              = domain.KindGPUIdleMail
	KindBudgetAlertMail          = domain.KindBudgetAlertMail
	KindBudgetStoppedMail        = domain.KindBudgetStoppedMail
	KindBalanceMail              = domain.KindBalanceMail
	KindChargeFailedMail         = domain.KindChargeFailedMail
	KindPriceAboveMail           = domain.KindPriceAboveMail
	KindWebhookPausedMail        = domain.KindWebhookPausedMail
	KindPasswordResetMail        = domain.KindPasswordResetMail
	KindPasswordChangedMail      = domain.KindPasswordChangedMail
	KindInviteMail               = domain.KindInviteMail
	KindQuoteReceivedMail        = domain.KindQuoteReceivedMail
	KindQuoteSalesMail           = domain.KindQuoteSalesMail
	KindQuoteStatusMail          = domain.KindQuoteStatusMail
	KindPrivateOfferMail         = domain.KindPrivateOfferMail
	KindReservationMail          = domain.KindReservationMail
	ClusterMailReady             = domain.ClusterMailReady
	ClusterMailHealthy           = domain.ClusterMailHealthy
	ClusterMailFailed            = domain.ClusterMailFailed
	ClusterMailDegraded          = domain.ClusterMailDegraded
	ClusterMailVerifyFailed      = domain.ClusterMailVerifyFailed
	ClusterMailRecoveryExhausted = domain.ClusterMailRecoveryExhausted
	ClusterMailNodeDown          = domain.ClusterMailNodeDown
	ClusterMailResumed           = domain.ClusterMailResumed
	ClusterMailResumedDegraded   = domain.ClusterMailResumedDegraded
	BalanceMailLow               = domain.BalanceMailLow
	BalanceMailStopped           = domain.BalanceMailStopped
	BalanceMailTerminated        = domain.BalanceMailTerminated
	IdleMail                     = domain.IdleMail
	IdleStop                     = domain.IdleStop
	IdleTerminate                = domain.IdleTerminate
)

// DecodeNotification reads a queued notification back into its type.
func DecodeNotification(kind string, data []byte) (domain.Notification, error) {
	return domain.DecodeNotification(kind, data)
}

// NotificationKinds lists every kind, sorted.
func NotificationKinds() []string { return domain.NotificationKinds() }

// ShapeText is a cluster's shape as pages and mails say it.
func ShapeText(nodes, gpusPerNode int, accelerator string) string {
	return domain.ShapeText(nodes, gpusPerNode, accelerator)
}

// DurationDaysText is "1 day", "14 days", "1 week" or "6 weeks".
func DurationDaysText(days int) string { return domain.DurationDaysText(days) }

// ValidThrough is the last day before an exclusive end.
func ValidThrough(validUntil time.Time) string { return domain.ValidThrough(validUntil) }

// FabricText names the fabric for people.
func FabricText(f string) string { return domain.FabricText(f) }

// CapacityStatusText says what a status means for the customer.
func CapacityStatusText(st domain.CapacityStatus) string { return domain.CapacityStatusText(st) }
