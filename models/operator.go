package models

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// AdjustBalance is an operator's correction of an organisation's balance
// (OP2, B1, B9): a signed dollar amount ("25", "-12.50"), at most
// AdjustmentLimit either way, with a reason the customer sees on their
// billing page. The ledger entry and the audit entry
// (in the organisation's log) commit together. token makes a resubmitted
// form a no-op (its entry's idempotency key); created reports a new entry.
func (x Actions) AdjustBalance(ctx context.Context, orgID, amount, reason, token string) (e LedgerEntry, created bool, err error) {
	reason = strings.TrimSpace(reason)
	fe := FieldErrors{}
	neg := strings.HasPrefix(strings.TrimSpace(amount), "-")
	m, perr := ParseUSD(strings.TrimPrefix(strings.TrimSpace(amount), "-"))
	switch {
	case perr != nil || m == 0:
		fe["amount"] = "Enter dollars like 25 or -12.50 (a minus takes money off)."
	case m > x.s.AdjustmentLimit():
		fe["amount"] = "At most " + USD(x.s.AdjustmentLimit()) + " per adjustment." // B9
	}
	if neg {
		m = -m
	}
	if reason == "" || utf8.RuneCountInString(reason) > 200 || !CleanString(reason) || strings.ContainsAny(reason, "\r\n") {
		fe["reason"] = "Say why in one line of at most 200 characters; the customer sees it."
	}
	if token == "" || len(token) > 64 {
		fe["token"] = "Reload the page and try again."
	}
	if len(fe) > 0 {
		return LedgerEntry{}, false, fe
	}
	e = LedgerEntry{ID: NewID("le"), OrgID: orgID, Kind: LedgerAdjustment, Amount: m, IdemKey: "adjustment:" + token,
		Description: "Adjustment: " + reason}
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if _, err := tx.OrgByID(ctx, orgID); err != nil {
			return nil, err
		}
		if created, err = tx.AddLedgerEntry(ctx, e); err != nil || !created {
			return nil, err
		}
		a := x.a.entry("balance.adjust", e.ID, "$"+DecimalUSD(m)+": "+reason)
		a.OrgID = orgID
		return &a, nil
	})
	return e, created, err
}

// AuditRow is an audit entry with its organisation's name (operators).
type AuditRow struct {
	AuditRecord
	OrgName string
}

// AllAuditRecords lists every organisation's entries, newest first, before
// the entry with sequence number before (0: from the newest); orgID "" means
// every organisation. more reports whether older entries remain.
func (s *Store) AllAuditRecords(ctx context.Context, orgID string, before int64) (out []AuditRow, more bool, err error) {
	q := s.db.WithContext(ctx).Table("audit_log").Select("audit_log.*, orgs.name AS org_name").
		Joins("LEFT JOIN orgs ON orgs.id = audit_log.org_id")
	if orgID != "" {
		q = q.Where("audit_log.org_id = ?", orgID)
	}
	if before > 0 {
		q = q.Where("audit_log.seq < ?", before)
	}
	if err := q.Order("audit_log.seq DESC").Limit(AuditPageSize + 1).Scan(&out).Error; err != nil {
		return nil, false, fmt.Errorf("models: audit log of every org: %w", err)
	}
	if len(out) > AuditPageSize {
		return out[:AuditPageSize], true, nil
	}
	return out, false, nil
}
