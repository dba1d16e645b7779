package models

import "context"

// RequestCapacity is RQ1: the actor asks sales for reserved capacity. The
// request, its two mails (customer and sales) and the audit entry commit
// together.
func (x Actions) RequestCapacity(ctx context.Context, in QuoteRequestInput, n CapacityNotify) (QuoteRequest, error) {
	r, _, err := x.RequestCapacityOnce(ctx, in, n)
	return r, err
}

// RequestCapacityOnce is RequestCapacity with the API's Idempotency-Key
// (in.IdemKey, in.RequestHash): the same key and body return the earlier
// request (created false) and write nothing; another body is
// ErrIdempotencyMismatch.
func (x Actions) RequestCapacityOnce(ctx context.Context, in QuoteRequestInput, n CapacityNotify) (QuoteRequest, bool, error) {
	in.OrgID, in.EnvID, in.UserID, in.Requester = x.a.OrgID, x.a.EnvID, x.a.UserID, x.a.Name
	return x.s.createQuoteRequest(ctx, in, n, x.a.entry("", "", ""))
}

// SetQuoteRequestStatus is an operator's answer to a quote request (RQ2):
// the status and note, the customer's mail and the audit entry (in the
// customer's log) commit together.
func (x Actions) SetQuoteRequestStatus(ctx context.Context, id, status, note string, n CapacityNotify) (QuoteRequest, bool, error) {
	return x.s.SetQuoteRequestStatus(ctx, id, status, note, n, x.a.entry("", "", ""))
}
