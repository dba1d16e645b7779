package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Notification is a typed mail (E1, E2): its kind names the view that
// renders it, its fields are the data that view needs (ids, amounts, names,
// times, deep links), never words. A use case queues one with Store.Notify
// in the transaction of the change that causes it; the mail job renders its
// subject, text and HTML when it sends (views.RenderMail), so the wording
// lives in views and can change without touching a rule.
//
// Adding a kind: declare its struct in models/domain/notifications.go with a
// NotificationKind method returning a new constant, list it in
// notificationKinds, render it in views (mail_text.go), give it a sample in
// views' mail test (the test fails for a kind without one), and queue it
// with Notify.
type Notification interface {
	NotificationKind() string
}

// DecodeNotification reads a queued notification back into its type.
func DecodeNotification(kind string, data []byte) (Notification, error) {
	decode, ok := notificationKinds[kind]
	if !ok {
		return nil, fmt.Errorf("domain: unknown notification kind %q", kind)
	}
	n, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("domain: notification %s: %w", kind, err)
	}
	return n, nil
}

// decoder reads a T from its JSON.
func decoder[T Notification]() func([]byte) (Notification, error) {
	return func(b []byte) (Notification, error) {
		var v T
		err := json.Unmarshal(b, &v)
		return v, err
	}
}

// NotificationKinds lists every kind, sorted (views' test renders each).
func NotificationKinds() []string {
	out := make([]string, 0, len(notificationKinds))
	for k := range notificationKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The notification kinds (E1): each struct is the data its mail needs and
// nothing else; views words it. Kinds are stored in the outbox, so a kind's
// name never changes and its fields only grow (a renamed field reads as
// empty from rows queued before).
const (
	KindClusterMail         = "cluster"
	KindGPUStallMail        = "gpu_stall"
	KindGPUIdleMail         = "gpu_idle"
	KindBudgetAlertMail     = "budget_alert"
	KindBudgetStoppedMail   = "budget_stopped"
	KindBalanceMail         = "balance"
	KindChargeFailedMail    = "charge_failed"
	KindPriceAboveMail      = "price_above"
	KindWebhookPausedMail   = "webhook_paused"
	KindPasswordResetMail   = "password_reset"
	KindPasswordChangedMail = "password_changed"
	KindInviteMail          = "invite"
	KindQuoteReceivedMail   = "quote_received"
	KindQuoteSalesMail      = "quote_sales"
	KindQuoteStatusMail     = "quote_status"
	KindPrivateOfferMail    = "private_offer"
	KindReservationMail     = "reservation"
)

var notificationKinds = map[string]func([]byte) (Notification, error){
	KindClusterMail:         decoder[ClusterMail](),
	KindGPUStallMail:        decoder[GPUStallMail](),
	KindGPUIdleMail:         decoder[GPUIdleMail](),
	KindBudgetAlertMail:     decoder[BudgetAlertMail](),
	KindBudgetStoppedMail:   decoder[BudgetStoppedMail](),
	KindBalanceMail:         decoder[BalanceMail](),
	KindChargeFailedMail:    decoder[ChargeFailedMail](),
	KindPriceAboveMail:      decoder[PriceAboveMail](),
	KindWebhookPausedMail:   decoder[WebhookPausedMail](),
	KindPasswordResetMail:   decoder[PasswordResetMail](),
	KindPasswordChangedMail: decoder[PasswordChangedMail](),
	KindInviteMail:          decoder[InviteMail](),
	KindQuoteReceivedMail:   decoder[QuoteReceivedMail](),
	KindQuoteSalesMail:      decoder[QuoteSalesMail](),
	KindQuoteStatusMail:     decoder[QuoteStatusMail](),
	KindPrivateOfferMail:    decoder[PrivateOfferMail](),
	KindReservationMail:     decoder[ReservationMail](),
}

// Cluster mail topics: which outcome a ClusterMail announces (E1, R2, R5, B6).
const (
	ClusterMailReady             = "ready"
	ClusterMailHealthy           = "healthy"
	ClusterMailFailed            = "failed"
	ClusterMailDegraded          = "degraded"
	ClusterMailVerifyFailed      = "verify_failed"
	ClusterMailRecoveryExhausted = "recovery_exhausted"
	ClusterMailNodeDown          = "node_down"
	ClusterMailResumed           = "resumed"
	ClusterMailResumedDegraded   = "resumed_degraded"
)

// ClusterMail is a cluster's outcome (E1): ready, failed, degraded, a
// machine down, recovery spent, healthy again, resumed.
type ClusterMail struct {
	Topic      string     `json:"topic"`
	ClusterID  string     `json:"clusterId"`
	Name       string     `json:"name"`
	Shape      string     `json:"shape"` // "2 × 8 × H100 80GB"
	Place      string     `json:"place"` // "Lambda us-east-1"
	USDPerHour Money      `json:"usdPerHour"`
	ReadyAt    *time.Time `json:"readyAt,omitempty"`
	LastError  string     `json:"lastError,omitempty"`
	Detail     string     `json:"detail,omitempty"` // the machine that is down, for node_down
	// Automatic recovery (R5), for node_down.
	AutoRecover     bool   `json:"autoRecover,omitempty"`
	RecoverAttempts int    `json:"recoverAttempts,omitempty"`
	RecoverCooldown int    `json:"recoverCooldownMinutes,omitempty"`
	SSH             string `json:"ssh,omitempty"`          // node-0's SSH command, for ready
	Verification    string `json:"verification,omitempty"` // the hand-over report's summary
	Link            string `json:"link"`                   // the cluster's page
}

// GPUStallMail is a stall the GPU watch found (X15).
type GPUStallMail struct {
	ClusterID  string `json:"clusterId"`
	Name       string `json:"name"`
	Shape      string `json:"shape"`
	USDPerHour Money  `json:"usdPerHour"`
	Message    string `json:"message"` // the finding, naming the machines
	Link       string `json:"link"`
}

// GPUIdleMail is an idle episode reaching its hours (X15, L7).
type GPUIdleMail struct {
	ClusterID   string    `json:"clusterId"`
	Name        string    `json:"name"`
	Shape       string    `json:"shape"`
	USDPerHour  Money     `json:"usdPerHour"`
	BelowPct    int       `json:"belowPct"`
	Since       time.Time `json:"since"`
	IdleMinutes int       `json:"idleMinutes"`
	Action      string    `json:"action"` // IdleMail, IdleStop or IdleTerminate
	ActAt       time.Time `json:"actAt"`  // when the action happens (not for IdleMail)
	Link        string    `json:"link"`
}

// BudgetAlertMail is a budget threshold crossed (B5, X6).
type BudgetAlertMail struct {
	EnvName    string     `json:"envName"`
	Month      string     `json:"month"`
	Percent    int        `json:"percent"`
	Spend      Money      `json:"spend"`
	Budget     Money      `json:"budget"`
	Burn       Money      `json:"burn"`                 // per hour
	ForecastAt *time.Time `json:"forecastAt,omitempty"` // when the burn reaches the budget
	StopAt     *time.Time `json:"stopAt,omitempty"`     // at 100 %: when running clusters stop (nil: now)
	Running    []string   `json:"running,omitempty"`    // names, sorted
	Link       string     `json:"link"`
}

// BudgetStoppedMail is a reached budget stopping clusters (B5).
type BudgetStoppedMail struct {
	EnvName string    `json:"envName"`
	Month   string    `json:"month"`
	Budget  Money     `json:"budget"`
	Spend   Money     `json:"spend"`
	Stopped []string  `json:"stopped"` // names, sorted
	At      time.Time `json:"at"`
	Link    string    `json:"link"`
}

// Balance mail topics (B6).
const (
	BalanceMailLow        = "low"
	BalanceMailStopped    = "stopped"
	BalanceMailTerminated = "terminated"
)

// BalanceMail is the balance enforcement's mail (B6).
type BalanceMail struct {
	Topic          string        `json:"topic"`
	Balance        Money         `json:"balance"`
	Burn           Money         `json:"burn"`    // clusters and volumes, per hour
	Volumes        Money         `json:"volumes"` // volumes alone, per hour
	Grace          time.Duration `json:"grace"`
	TerminateGrace time.Duration `json:"terminateGrace"`
	StopAt         time.Time     `json:"stopAt,omitzero"`
	Clusters       []string      `json:"clusters,omitempty"` // stopped or terminated, by name
	Link           string        `json:"link"`
}

// ChargeFailedMail is an auto-recharge the bank declined or held (X8).
type ChargeFailedMail struct {
	ChargeID               string `json:"chargeId"`
	Amount                 Money  `json:"amount"`
	FailureCode            string `json:"failureCode"`
	AuthenticationRequired bool   `json:"authenticationRequired"`
}

// PriceAboveMail tells operators a cloud bills above a cluster's launch cost.
type PriceAboveMail struct {
	Provider  string `json:"provider"`
	ClusterID string `json:"clusterId"`
	OrgID     string `json:"orgId"`
	Nodes     int    `json:"nodes"`
	OfferID   string `json:"offerId"`
	Billed    Money  `json:"billed"`   // per machine-hour now
	Upstream  Money  `json:"upstream"` // per machine-hour at launch
	Locked    Money  `json:"locked"`   // what the customer pays per machine-hour
}

// WebhookPausedMail is a failing endpoint paused (X8).
type WebhookPausedMail struct {
	EndpointID string `json:"endpointId"`
	URL        string `json:"url"`
	Reason     string `json:"reason"` // the endpoint's stored paused reason
	Link       string `json:"link"`
}

// PasswordResetMail carries a reset link (A3).
type PasswordResetMail struct {
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expiresAt"`
	Link      string    `json:"link"`
}

// PasswordChangedMail is the notice after a reset: what ended and which
// API keys still work (name, prefix and where; never a secret).
type PasswordChangedMail struct {
	Name    string        `json:"name"`
	IP      string        `json:"ip"`
	Revoked bool          `json:"revoked"`
	Keys    []MailAPIKeys `json:"keys,omitempty"`
}

// MailAPIKeys names one live API key in a mail.
type MailAPIKeys struct {
	Name    string `json:"name"`
	Prefix  string `json:"prefix"`
	OrgName string `json:"orgName"`
	EnvName string `json:"envName"`
}

// InviteMail invites someone into an organisation.
type InviteMail struct {
	Inviter   string    `json:"inviter"`
	OrgName   string    `json:"orgName"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expiresAt"`
	Link      string    `json:"link"`
}

// MailQuoteRequest is what the quote request mails say of the request.
type MailQuoteRequest struct {
	ID            string    `json:"id"`
	Accelerator   string    `json:"accelerator"`
	Nodes         int       `json:"nodes"`
	GPUsPerNode   int       `json:"gpusPerNode"`
	Fabric        string    `json:"fabric"`
	Location      string    `json:"location"`
	StartDate     time.Time `json:"startDate"`
	DurationDays  int       `json:"durationDays"`
	BudgetPerHour Money     `json:"budgetPerHour"`
}

// QuoteReceivedMail confirms a quote request to its customer (X9).
type QuoteReceivedMail struct {
	ContactName  string           `json:"contactName"`
	ContactEmail string           `json:"contactEmail"`
	Request      MailQuoteRequest `json:"request"`
	Link         string           `json:"link"`
}

// QuoteSalesMail hands a new quote request to sales (X9).
type QuoteSalesMail struct {
	OrgID        string           `json:"orgId"`
	OrgName      string           `json:"orgName"`
	Requester    string           `json:"requester"`
	ContactName  string           `json:"contactName"`
	ContactEmail string           `json:"contactEmail"`
	ContactPhone string           `json:"contactPhone,omitempty"`
	Notes        string           `json:"notes,omitempty"`
	Request      MailQuoteRequest `json:"request"`
	Link         string           `json:"link"` // the operators' inbox
}

// QuoteStatusMail tells the customer their request's new status (X9).
type QuoteStatusMail struct {
	ContactName string           `json:"contactName"`
	Status      CapacityStatus   `json:"status"`
	Request     MailQuoteRequest `json:"request"`
	Link        string           `json:"link"`
}

// PrivateOfferMail announces a private offer made for a quote (X9).
type PrivateOfferMail struct {
	ContactName  string    `json:"contactName"`
	RequestID    string    `json:"requestId"`
	OfferID      string    `json:"offerId"`
	Accelerator  string    `json:"accelerator"`
	Nodes        int       `json:"nodes"`
	GPUsPerNode  int       `json:"gpusPerNode"`
	Location     string    `json:"location"`
	LocationName string    `json:"locationName"`
	Interconnect string    `json:"interconnect"`
	MachineHour  Money     `json:"machineHour"`
	ValidUntil   time.Time `json:"validUntil"`
	Link         string    `json:"link"` // the launch page at the locked price
	// StartAt and TermHours date the offer (X18): it is booked as a
	// reservation, not launched now.
	StartAt   *time.Time `json:"startAt,omitempty"`
	TermHours int        `json:"termHours,omitempty"`
}

func (ClusterMail) NotificationKind() string         { return KindClusterMail }
func (GPUStallMail) NotificationKind() string        { return KindGPUStallMail }
func (GPUIdleMail) NotificationKind() string         { return KindGPUIdleMail }
func (BudgetAlertMail) NotificationKind() string     { return KindBudgetAlertMail }
func (BudgetStoppedMail) NotificationKind() string   { return KindBudgetStoppedMail }
func (BalanceMail) NotificationKind() string         { return KindBalanceMail }
func (ChargeFailedMail) NotificationKind() string    { return KindChargeFailedMail }
func (PriceAboveMail) NotificationKind() string      { return KindPriceAboveMail }
func (WebhookPausedMail) NotificationKind() string   { return KindWebhookPausedMail }
func (PasswordResetMail) NotificationKind() string   { return KindPasswordResetMail }
func (PasswordChangedMail) NotificationKind() string { return KindPasswordChangedMail }
func (InviteMail) NotificationKind() string          { return KindInviteMail }
func (QuoteReceivedMail) NotificationKind() string   { return KindQuoteReceivedMail }
func (QuoteSalesMail) NotificationKind() string      { return KindQuoteSalesMail }
func (QuoteStatusMail) NotificationKind() string     { return KindQuoteStatusMail }
func (PrivateOfferMail) NotificationKind() string    { return KindPrivateOfferMail }
func (ReservationMail) NotificationKind() string     { return KindReservationMail }

// ReservationMail is a step of a reservation's life (X18): booked,
// cancelled, handed over, ending, ended, failed. Message is the step's line
// on the reservation's trail.
type ReservationMail struct {
	ReservationID string    `json:"reservationId"`
	What          string    `json:"what"` // booked, cancelled, handed-over, ending-N, ended, failed
	Shape         string    `json:"shape"`
	EndAt         time.Time `json:"endAt"`
	Message       string    `json:"message"`
	Link          string    `json:"link"` // the reservation's page
}

// Shape is "16 × 8 × H100 80GB".
func (q MailQuoteRequest) Shape() string { return ShapeText(q.Nodes, q.GPUsPerNode, q.Accelerator) }

// StartDay is the first day asked for, "2027-01-15".
func (q MailQuoteRequest) StartDay() string { return q.StartDate.UTC().Format(time.DateOnly) }

// DurationText is "14 days" or "6 weeks".
func (q MailQuoteRequest) DurationText() string { return DurationDaysText(q.DurationDays) }

// Shape is "4 × 8 × H100 80GB".
func (p PrivateOfferMail) Shape() string { return ShapeText(p.Nodes, p.GPUsPerNode, p.Accelerator) }

// ClusterHour is the whole cluster's price per hour.
func (p PrivateOfferMail) ClusterHour() Money { return p.MachineHour * Money(p.Nodes) }

// ValidThrough is the last day it can be taken, "2027-01-15".
func (p PrivateOfferMail) ValidThrough() string { return ValidThrough(p.ValidUntil) }

// ShapeText is a cluster's shape as pages and mails say it: machines ×
// GPUs per machine × accelerator (underscores read as spaces).
func ShapeText(nodes, gpusPerNode int, accelerator string) string {
	return strconv.Itoa(nodes) + " × " + strconv.Itoa(gpusPerNode) + " × " + strings.ReplaceAll(accelerator, "_", " ")
}

// DurationDaysText is "1 day", "14 days", "1 week" or "6 weeks" (whole
// weeks read as weeks).
func DurationDaysText(days int) string {
	switch {
	case days == 1:
		return "1 day"
	case days == 7:
		return "1 week"
	case days%7 == 0:
		return strconv.Itoa(days/7) + " weeks"
	}
	return strconv.Itoa(days) + " days"
}

// ValidThrough is the last day before an exclusive end, "2027-01-15".
func ValidThrough(validUntil time.Time) string {
	return validUntil.Add(-time.Second).UTC().Format(time.DateOnly)
}
