package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// A quote request is RQ1's "request a quote": reserved capacity, a
// cluster larger than self-serve, or a fast fabric, answered by people
// (sales) rather than by the picker; ShapeQuery, by contrast, is the shape
// a locked price is computed for (Q1).

// ValidCapacityStatus reports whether s is one of CapacityStatuses.
func ValidCapacityStatus(s string) bool { return slices.Contains(CapacityStatuses, CapacityStatus(s)) }

// Fabrics a request may ask for: an interconnect or "any".
var Fabrics = []string{"any", "ethernet", "infiniband", "roce"}

// Bounds of a capacity request. Nodes go far past self-serve's MaxNodes:
// larger clusters are what the form is for.
const (
	CapacityMinNodes       = 2
	CapacityMaxNodes       = 512
	CapacityMaxGPUsPerNode = 8
	CapacityMaxDays        = 3 * 365
	CapacityMaxLeadDays    = 2 * 365 // how far ahead a start date may be
	CapacityMaxNotes       = 2000    // runes
	CapacityMaxOpNote      = 1000    // runes
	CapacityMaxLocation    = 128
	CapacityMaxPhone       = 32
	capacityMaxBudget      = 10_000_000 * Micro // $10M per hour: a typo guard, not a policy
)

// DefaultSalesEmail receives new requests when SALES_EMAIL is not set.
const DefaultSalesEmail = "sales@clusterdeck.local"

// QuoteRequest is a stored request for a quote. Budget is the most the
// customer means to pay for the whole cluster per hour, in micro-dollars
// (0: not given), the same unit and meaning as a quote's maxHourlyPrice.
type QuoteRequest struct {
	ID            string `gorm:"primaryKey;size:32"`
	OrgID         string `gorm:"size:32"`
	EnvID         string `gorm:"size:32"`
	UserID        string `gorm:"size:32"`  // who asked (for an API key: its creator)
	Requester     string `gorm:"size:300"` // the audit actor: an email or "api_key:<prefix>"
	Accelerator   string `gorm:"size:64"`
	Nodes         int
	GPUsPerNode   int       `gorm:"column:gpus_per_node"`
	Fabric        string    `gorm:"size:32"`
	Location      string    `gorm:"size:128"` // preference; "" = anywhere
	StartDate     time.Time // midnight UTC of the first day
	DurationDays  int
	BudgetPerHour Money          `gorm:"column:budget_per_hour"`
	ContactName   string         `gorm:"size:191"`
	ContactEmail  string         `gorm:"size:254"`
	ContactPhone  string         `gorm:"size:32"`
	Notes         string         `gorm:"size:8000"`
	Status        CapacityStatus `gorm:"size:16"`
	StatusVersion int            // bumped by every status change: the key of its mail
	OperatorNote  string         `gorm:"size:4000"` // operators only; never shown to the customer
	IdemKey       *string        `gorm:"size:191"`  // the API's Idempotency-Key (0602); nil without one
	RequestHash   string         `gorm:"size:64"`   // the body sent with it
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// TableName keeps the table's original name, capacity_requests, which
// predates the type's name.
func (QuoteRequest) TableName() string { return "capacity_requests" }

func up0300CapacityRequests(tx *gorm.DB) error {
	type capacityRequest struct {
		ID            string `gorm:"primaryKey;size:32"`
		OrgID         string `gorm:"size:32"`
		EnvID         string `gorm:"size:32"`
		UserID        string `gorm:"size:32"`
		Requester     string `gorm:"size:300"`
		Accelerator   string `gorm:"size:64"`
		Nodes         int
		GPUsPerNode   int    `gorm:"column:gpus_per_node"`
		Fabric        string `gorm:"size:32"`
		Location      string `gorm:"size:128"`
		StartDate     time.Time
		DurationDays  int
		BudgetPerHour int64  `gorm:"column:budget_per_hour"`
		ContactName   string `gorm:"size:191"`
		ContactEmail  string `gorm:"size:254"`
		ContactPhone  string `gorm:"size:32"`
		Notes         string `gorm:"size:8000"`
		Status        string `gorm:"size:16"`
		StatusVersion int
		OperatorNote  string `gorm:"size:4000"`
		CreatedAt     time.Time
		UpdatedAt     time.Time
	}
	if err := tx.Table("capacity_requests").Migrator().CreateTable(&capacityRequest{}); err != nil {
		return err
	}
	if err := tx.Exec("CREATE INDEX idx_capacity_requests_org ON capacity_requests (org_id, created_at)").Error; err != nil {
		return err
	}
	return tx.Exec("CREATE INDEX idx_capacity_requests_status ON capacity_requests (status, created_at)").Error
}

func up0602CapacityRequestIdempotency(tx *gorm.DB) error {
	for _, q := range []string{
		"ALTER TABLE capacity_requests ADD COLUMN idem_key VARCHAR(191)",
		"ALTER TABLE capacity_requests ADD COLUMN request_hash VARCHAR(64) NOT NULL DEFAULT ''",
		"CREATE UNIQUE INDEX idx_capacity_requests_idem ON capacity_requests (org_id, idem_key)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// Shape is "128 × 8 × H100 80GB".
func (r QuoteRequest) Shape() string { return domain.ShapeText(r.Nodes, r.GPUsPerNode, r.Accelerator) }

// StartDay is the first day asked for, "2027-01-15".
func (r QuoteRequest) StartDay() string { return r.StartDate.UTC().Format(time.DateOnly) }

// DurationText is "14 days" or "6 weeks" (whole weeks read as weeks).
func (r QuoteRequest) DurationText() string { return domain.DurationDaysText(r.DurationDays) }

// QuoteRequestInput is a request as typed (form or API). Numbers that did
// not parse arrive as 0 and are reported like any other out-of-range value;
// StartDate is YYYY-MM-DD, Duration counts DurationUnit ("days", the default,
// or "weeks"), and Budget is a decimal dollar string per hour for the whole
// cluster ("" = not given). Problems are keyed by the form's field names.
type QuoteRequestInput struct {
	OrgID, EnvID, UserID, Requester string

	Accelerator  string
	Nodes        int
	GPUsPerNode  int
	Fabric       string
	Location     string
	StartDate    string
	Duration     int
	DurationUnit string
	Budget       string
	ContactName  string
	ContactEmail string
	ContactPhone string
	Notes        string

	IdemKey     string // the API's Idempotency-Key ("" = none): the same key and body → the same request
	RequestHash string // the body as sent, for the same-key-different-body check
}

// Normalize trims what was typed; an empty fabric means any.
func (in *QuoteRequestInput) Normalize() {
	for _, p := range []*string{&in.Accelerator, &in.Fabric, &in.Location, &in.StartDate, &in.DurationUnit,
		&in.Budget, &in.ContactName, &in.ContactPhone} {
		*p = strings.TrimSpace(*p)
	}
	in.ContactEmail = NormalizeEmail(in.ContactEmail)
	in.Notes = strings.TrimSpace(strings.ReplaceAll(in.Notes, "\r\n", "\n"))
	if in.Fabric == "" {
		in.Fabric = "any"
	}
	if in.DurationUnit == "" {
		in.DurationUnit = "days"
	}
}

// validate checks the input against today (UTC) and returns the row to store.
func (in QuoteRequestInput) validate(today time.Time) (QuoteRequest, FieldErrors) {
	fe := FieldErrors{}
	r := QuoteRequest{OrgID: in.OrgID, EnvID: in.EnvID, UserID: in.UserID, Requester: in.Requester,
		Accelerator: in.Accelerator, Nodes: in.Nodes, GPUsPerNode: in.GPUsPerNode, Fabric: in.Fabric,
		Location: in.Location, ContactName: in.ContactName, ContactEmail: in.ContactEmail,
		ContactPhone: in.ContactPhone, Notes: in.Notes, Status: CapacityNew}
	if !slices.Contains(Accelerators, in.Accelerator) {
		fe["accelerator"] = "Choose one of " + strings.Join(Accelerators, ", ") + "."
	}
	if in.Nodes < CapacityMinNodes || in.Nodes > CapacityMaxNodes {
		fe["nodes"] = fmt.Sprintf("Enter %d to %d machines.", CapacityMinNodes, CapacityMaxNodes)
	}
	if in.GPUsPerNode < 1 || in.GPUsPerNode > CapacityMaxGPUsPerNode {
		fe["gpus_per_node"] = fmt.Sprintf("Enter 1 to %d GPUs per machine.", CapacityMaxGPUsPerNode)
	}
	if !slices.Contains(Fabrics, in.Fabric) {
		fe["fabric"] = "Choose any, ethernet, infiniband or roce."
	}
	if msg := optionalText(in.Location, CapacityMaxLocation); msg != "" {
		fe["location"] = msg
	}
	start, err := time.Parse(time.DateOnly, in.StartDate)
	switch {
	case in.StartDate == "":
		fe["start_date"] = "Enter the first day you need the machines."
	case err != nil:
		fe["start_date"] = "Enter a date like 2027-01-15."
	case start.Before(today):
		fe["start_date"] = "Pick today or a later day."
	case start.After(today.AddDate(0, 0, CapacityMaxLeadDays)):
		fe["start_date"] = "Pick a day within two years."
	}
	r.StartDate = start
	perUnit := map[string]int{"days": 1, "weeks": 7}[in.DurationUnit]
	switch {
	case perUnit == 0:
		fe["duration"] = "Count the duration in days or weeks."
	case in.Duration < 1:
		fe["duration"] = "Enter how long you need the machines, in days or weeks."
	case in.Duration > CapacityMaxDays/perUnit:
		fe["duration"] = fmt.Sprintf("Enter at most %d days (%d weeks).", CapacityMaxDays, CapacityMaxDays/7)
	default:
		r.DurationDays = in.Duration * perUnit
	}
	if in.Budget != "" {
		m, err := ParseUSD(in.Budget)
		switch {
		case err != nil:
			fe["budget"] = "Enter dollars per hour like 250 or 249.50, or leave it empty."
		case m <= 0:
			fe["budget"] = "Enter a budget above $0, or leave it empty."
		case m > capacityMaxBudget:
			fe["budget"] = "That budget is too large; check the number."
		}
		r.BudgetPerHour = m
	}
	if msg := NameProblem(in.ContactName, 191, "a name we can ask for"); msg != "" {
		fe["contact_name"] = msg
	}
	if msg := EmailProblem(in.ContactEmail); msg != "" {
		fe["contact_email"] = msg
	}
	if msg := phoneProblem(in.ContactPhone); msg != "" {
		fe["contact_phone"] = msg
	}
	if utf8.RuneCountInString(in.Notes) > CapacityMaxNotes {
		fe["notes"] = fmt.Sprintf("Use at most %d characters.", CapacityMaxNotes)
	} else if !utf8.ValidString(in.Notes) {
		fe["notes"] = "Use plain text."
	}
	return r, fe
}

// optionalText checks a short optional line: empty, or plain text of at most max runes.
func optionalText(s string, max int) string {
	if s == "" {
		return ""
	}
	return NameProblem(s, max, "")
}

func phoneProblem(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > CapacityMaxPhone {
		return fmt.Sprintf("Use at most %d characters.", CapacityMaxPhone)
	}
	digits := 0
	for _, r := range s {
		switch {
		case unicode.IsDigit(r) && r < 128:
			digits++
		case strings.ContainsRune("+-(). ", r):
		default:
			return "Use digits, spaces and + - ( ) only."
		}
	}
	if digits < 5 {
		return "Enter a phone number with its area code."
	}
	return ""
}

// CapacityNotify is where the mails of a request go and link to.
type CapacityNotify struct {
	BaseURL    string // links in mails, e.g. https://deck.example.com
	SalesEmail string // receives every new request ("" = DefaultSalesEmail)
}

func (n CapacityNotify) sales() string {
	if n.SalesEmail == "" {
		return DefaultSalesEmail
	}
	return n.SalesEmail
}

// CreateQuoteRequest validates and stores a request and, in the same
// transaction, queues E1's "quote request received" mails (one to the
// customer, one to sales) and writes the audit entry; who gives the actor
// and address (its action, target and detail are filled here). Bad input
// stores nothing and returns FieldErrors keyed by the form's field names.
func (s *Store) CreateQuoteRequest(ctx context.Context, in QuoteRequestInput, n CapacityNotify, who AuditEntry) (QuoteRequest, error) {
	r, _, err := s.createQuoteRequest(ctx, in, n, who)
	return r, err
}

// createQuoteRequest is CreateQuoteRequest; created is false when an
// earlier request with the same Idempotency-Key and body is returned.
func (s *Store) createQuoteRequest(ctx context.Context, in QuoteRequestInput, n CapacityNotify, who AuditEntry) (QuoteRequest, bool, error) {
	in.Normalize()
	now := s.Now()
	r, fe := in.validate(now.Truncate(24 * time.Hour))
	if len(fe) > 0 {
		return QuoteRequest{}, false, fe
	}
	if in.OrgID == "" {
		return QuoteRequest{}, false, fmt.Errorf("models: capacity request needs an org")
	}
	r.ID, r.CreatedAt, r.UpdatedAt = NewID("qr"), now, now
	if in.IdemKey != "" {
		r.IdemKey, r.RequestHash = &in.IdemKey, in.RequestHash
	}
	var prev *QuoteRequest
	err := s.Tx(ctx, func(tx *Store) error {
		org, err := tx.OrgByID(ctx, r.OrgID)
		if err != nil {
			return err
		}
		if prev, err = tx.capacityByKey(ctx, in); prev != nil || err != nil {
			return err
		}
		if err := tx.db.Create(&r).Error; err != nil {
			return fmt.Errorf("models: create capacity request: %w", err)
		}
		to, err := tx.capacityCustomer(ctx, r)
		if err != nil {
			return err
		}
		q := mailQuoteRequest(r)
		if err := tx.Notify(ctx, "capacity-request:"+r.ID+":received", to, QuoteReceivedMail{ContactName: r.ContactName,
			ContactEmail: r.ContactEmail, Request: q, Link: n.BaseURL + "/quote-requests/" + r.ID}); err != nil {
			return err
		}
		if err := tx.Notify(ctx, "capacity-request:"+r.ID+":sales", n.sales(), QuoteSalesMail{OrgID: org.ID, OrgName: org.Name,
			Requester: r.Requester, ContactName: r.ContactName, ContactEmail: r.ContactEmail, ContactPhone: r.ContactPhone,
			Notes: r.Notes, Request: q, Link: n.BaseURL + "/admin/quote-requests?status=new"}); err != nil {
			return err
		}
		who.OrgID, who.Action, who.Target, who.Detail = r.OrgID, "quote_request.create", r.ID, r.Shape()
		return tx.AuditLog(ctx, who)
	})
	if err != nil && in.IdemKey != "" {
		// A concurrent request with the same key won the unique index.
		if p, lerr := s.capacityByKey(ctx, in); p != nil || lerr != nil {
			prev, err = p, lerr
		}
	}
	switch {
	case err != nil:
		return QuoteRequest{}, false, err
	case prev != nil:
		return *prev, false, nil
	}
	return r, true, nil
}

// capacityByKey is the organisation's earlier request with in's
// Idempotency-Key (nil when none): the same body returns it, another body is
// ErrIdempotencyMismatch (as launches, L1).
func (s *Store) capacityByKey(ctx context.Context, in QuoteRequestInput) (*QuoteRequest, error) {
	if in.IdemKey == "" {
		return nil, nil
	}
	var prev QuoteRequest
	err := s.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND idem_key = ?", in.OrgID, in.EnvID, in.IdemKey).Take(&prev).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("models: capacity request by key: %w", err)
	case prev.RequestHash != in.RequestHash:
		return nil, ErrIdempotencyMismatch
	}
	return &prev, nil
}

// capacityCustomer is where a request's status mails go: the account that
// asked while it is still a member of the org; otherwise the contact given.
// Mail never goes to an address nobody in the org typed.
func (s *Store) capacityCustomer(ctx context.Context, r QuoteRequest) (string, error) {
	if r.UserID != "" {
		m, err := s.Member(ctx, r.OrgID, r.UserID)
		if err == nil {
			return m.Email, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", err
		}
	}
	return r.ContactEmail, nil
}

// QuoteRequests lists the org's requests, newest first.
func (s *Store) QuoteRequests(ctx context.Context, orgID string) ([]QuoteRequest, error) {
	var out []QuoteRequest
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id DESC").Limit(500).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: capacity requests: %w", err)
	}
	return out, nil
}

// QuoteRequestForOrg loads one of the org's requests; another org's id is
// ErrNotFound, as if it did not exist.
func (s *Store) QuoteRequestForOrg(ctx context.Context, orgID, id string) (QuoteRequest, error) {
	var r QuoteRequest
	err := s.db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Take(&r).Error
	return r, notFound(err, "capacity request "+id)
}

// QuoteRequestRow is a request with its organisation's name (operators).
type QuoteRequestRow struct {
	QuoteRequest
	OrgName string
}

// AdminQuoteRequests lists every org's requests for the operators' inbox,
// newest first; status "" means all of them.
func (s *Store) AdminQuoteRequests(ctx context.Context, status string) ([]QuoteRequestRow, error) {
	if status != "" && !ValidCapacityStatus(status) {
		return nil, FieldErrors{"status": "Filter by new, contacted, quoted, won or lost."}
	}
	q := s.db.WithContext(ctx).Table("capacity_requests").
		Select("capacity_requests.*, orgs.name AS org_name").
		Joins("JOIN orgs ON orgs.id = capacity_requests.org_id")
	if status != "" {
		q = q.Where("capacity_requests.status = ?", status)
	}
	var out []QuoteRequestRow
	if err := q.Order("capacity_requests.created_at DESC, capacity_requests.id DESC").Limit(500).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("models: admin capacity requests: %w", err)
	}
	return out, nil
}

// QuoteRequestCounts counts every org's requests by status (the inbox's filter).
func (s *Store) QuoteRequestCounts(ctx context.Context) (map[CapacityStatus]int, error) {
	var rows []struct {
		Status CapacityStatus
		N      int
	}
	err := s.db.WithContext(ctx).Table("capacity_requests").Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: count capacity requests: %w", err)
	}
	out := map[CapacityStatus]int{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// QuoteRequestByID loads any org's request (operators only).
func (s *Store) QuoteRequestByID(ctx context.Context, id string) (QuoteRequest, error) {
	var r QuoteRequest
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error
	return r, notFound(err, "capacity request "+id)
}

// SetQuoteRequestStatus is the operator's update: a new status and the
// internal note, written as they are (the last save wins; there is no
// transition to lose). A status that changes bumps StatusVersion, queues one
// mail to the customer keyed by it, and writes a quote_request.status entry
// in the customer's audit log with who as the actor; a note-only save writes
// quote_request.note and mails nobody. changed reports a status change.
func (s *Store) SetQuoteRequestStatus(ctx context.Context, id, status, note string, n CapacityNotify, who AuditEntry) (r QuoteRequest, changed bool, err error) {
	note = strings.TrimSpace(strings.ReplaceAll(note, "\r\n", "\n"))
	fe := FieldErrors{}
	if !ValidCapacityStatus(status) {
		fe["status"] = "Choose new, contacted, quoted, won or lost."
	}
	if utf8.RuneCountInString(note) > CapacityMaxOpNote || !utf8.ValidString(note) {
		fe["operator_note"] = fmt.Sprintf("Use at most %d characters of plain text.", CapacityMaxOpNote)
	}
	if len(fe) > 0 {
		return QuoteRequest{}, false, fe
	}
	err = s.Tx(ctx, func(tx *Store) error {
		before, err := tx.QuoteRequestByID(ctx, id)
		if err != nil {
			return err
		}
		changed = before.Status != CapacityStatus(status)
		up := map[string]any{"operator_note": note, "updated_at": tx.Now()}
		if changed {
			up["status"] = status
			up["status_version"] = gorm.Expr("status_version + 1")
		}
		if err := tx.db.Model(&QuoteRequest{}).Where("id = ?", id).Updates(up).Error; err != nil {
			return fmt.Errorf("models: set capacity request status %s: %w", id, err)
		}
		if r, err = tx.QuoteRequestByID(ctx, id); err != nil {
			return err
		}
		who.OrgID, who.Target = r.OrgID, r.ID
		if !changed {
			if before.OperatorNote == note {
				return nil
			}
			who.Action, who.Detail = "quote_request.note", "internal note edited"
			return tx.AuditLog(ctx, who)
		}
		who.Action, who.Detail = "quote_request.status", string(before.Status)+" → "+status
		if err := tx.AuditLog(ctx, who); err != nil {
			return err
		}
		to, err := tx.capacityCustomer(ctx, r)
		if err != nil {
			return err
		}
		return tx.Notify(ctx, "capacity-request:"+r.ID+":status:"+strconv.Itoa(r.StatusVersion), to, QuoteStatusMail{
			ContactName: r.ContactName, Status: r.Status, Request: mailQuoteRequest(r), Link: n.BaseURL + "/quote-requests/" + r.ID})
	})
	if err != nil {
		return QuoteRequest{}, false, err
	}
	return r, changed, nil
}
