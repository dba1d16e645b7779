package models

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Reversing a top-up (B1, B9, OP2): an operator takes back
// what a top-up credited (a charge-back, a mistaken card) with a reversing
// ledger entry — never a delete — keyed by the top-up, so a top-up is
// reversed at most once and by at most what it credited. The balance may go
// negative; clusters then follow the usual balance rules (B6).

// reversalKey is the reversing entry's idempotency key: one per top-up.
func reversalKey(topUpID string) string { return "top-up-reversal:" + topUpID }

// CreditedTopUp is a completed top-up with what was reversed of it.
type CreditedTopUp struct {
	TopUp
	Reversed   Money      // taken back (positive); 0: not reversed
	ReversedAt *time.Time // when
}

// CreditedTopUps lists the organisation's completed top-ups, newest first
// (at most limit), each with its reversal if any.
func (s *Store) CreditedTopUps(ctx context.Context, orgID string, limit int) ([]CreditedTopUp, error) {
	var ts []TopUp
	if err := s.db.WithContext(ctx).Where("org_id = ? AND status = ?", orgID, TopUpCompleted).
		Order("completed_at DESC, id DESC").Limit(limit).Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("models: credited top-ups: %w", err)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = reversalKey(t.ID)
	}
	var revs []LedgerEntry
	if err := s.db.WithContext(ctx).Where("org_id = ? AND idem_key IN ?", orgID, keys).Find(&revs).Error; err != nil {
		return nil, fmt.Errorf("models: top-up reversals: %w", err)
	}
	byKey := map[string]LedgerEntry{}
	for _, e := range revs {
		byKey[e.IdemKey] = e
	}
	out := make([]CreditedTopUp, len(ts))
	for i, t := range ts {
		out[i].TopUp = t
		if e, ok := byKey[reversalKey(t.ID)]; ok {
			at := e.CreatedAt
			out[i].Reversed, out[i].ReversedAt = -e.Amount, &at
		}
	}
	return out, nil
}

// ReverseTopUp takes back amount ("" for all of it) of the organisation's
// completed top-up topUpID, with a reason the customer sees: a refund
// entry of minus that amount in the ledger and an audit entry in the
// organisation's log commit together, under the organisation's lock.
// Refused with field problems, changing nothing: a top-up not credited,
// one already reversed, more than it credited, not whole cents, no reason.
func (x Actions) ReverseTopUp(ctx context.Context, orgID, topUpID, amount, reason string) (LedgerEntry, error) {
	reason = strings.TrimSpace(reason)
	fe := FieldErrors{}
	if reason == "" || utf8.RuneCountInString(reason) > 200 || !CleanString(reason) || strings.ContainsAny(reason, "\r\n") {
		fe["reason"] = "Say why in one line of at most 200 characters; the customer sees it."
	}
	var e LedgerEntry
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if err := tx.lockOrg(ctx, orgID); err != nil {
			return nil, err
		}
		t, err := tx.TopUpForOrg(ctx, orgID, topUpID)
		if err != nil {
			return nil, err
		}
		m := t.Amount
		if a := strings.TrimPrefix(strings.TrimSpace(amount), "$"); a != "" {
			if m, err = ParseUSD(a); err != nil || m <= 0 || m%10_000 != 0 {
				fe["amount"] = "Enter the dollars to take back, like 25.00 (whole cents), or leave it empty for the whole top-up."
			}
		}
		var prior []LedgerEntry
		if err := tx.db.WithContext(ctx).Where("org_id = ? AND idem_key = ?", orgID, reversalKey(t.ID)).Limit(1).Find(&prior).Error; err != nil {
			return nil, fmt.Errorf("models: top-up reversal: %w", err)
		}
		switch {
		case t.Status != TopUpCompleted:
			fe["topUp"] = "Only a credited top-up can be reversed; " + t.ID + " is " + t.Status + "."
		case len(prior) > 0:
			fe["topUp"] = fmt.Sprintf("Top-up %s was already reversed (%s on %s); a top-up is reversed once.",
				t.ID, USD(-prior[0].Amount), prior[0].CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
		case fe["amount"] == "" && m > t.Amount:
			fe["amount"] = "At most the " + USD(t.Amount) + " the top-up credited."
		}
		if len(fe) > 0 {
			return nil, fe
		}
		e = LedgerEntry{ID: NewID("le"), OrgID: orgID, Kind: LedgerRefund, Amount: -m, IdemKey: reversalKey(t.ID),
			Description: "Top-up " + t.ID + " reversed: " + reason}
		created, err := tx.AddLedgerEntry(ctx, e)
		if err != nil {
			return nil, err
		}
		if !created { // a concurrent reversal won (the key is unique)
			return nil, FieldErrors{"topUp": "Top-up " + t.ID + " was already reversed; a top-up is reversed once."}
		}
		a := x.a.entry("balance.reverse_top_up", t.ID, "-$"+DecimalUSD(m)+" of "+USD(t.Amount)+": "+reason)
		a.OrgID = orgID
		return &a, nil
	})
	return e, err
}
