package models

import "context"

// RequestCapacity is RQ1: the actor asks sales for reserved capacity. The
// request, its two mails (customer and sales) and the audit entry commit
// together.
func (x Actions) RequestCapacity(ctx context.Context, in CapacityRequestInput, n CapacityNotify) (CapacityRequest, error) {
	in.OrgID, in.EnvID, in.UserID, in.Requester = x.a.OrgID, x.a.EnvID, x.a.UserID, x.a.Name
	return x.s.CreateCapacityRequest(ctx, in, n, x.a.entry("", "", ""))
}

// SetCapacityRequestStatus is an operator's answer to a quote request (RQ2):
// the status and note, the customer's mail and the audit entry (in the
// customer's log) commit together.
func (x Actions) SetCapacityRequestStatus(ctx context.Context, id, status, note string, n CapacityNotify) (CapacityRequest, bool, error) {
	return x.s.SetCapacityRequestStatus(ctx, id, status, note, n, x.a.entry("", "", ""))
}
