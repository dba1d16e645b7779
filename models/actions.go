package models

import "context"

// Actor is who performs a use case: the organisation and environment they
// act in, their role there, the person (a user, or an API key's creator),
// the name the audit log shows (an email or "api_key:<prefix>") and the
// address the request came from.
type Actor struct {
	OrgID, EnvID string
	UserID       string
	Role         Role
	Name         string
	IP           string
}

// entry is the audit entry of an action by a.
func (a Actor) entry(action, target, detail string) AuditEntry {
	return AuditEntry{OrgID: a.OrgID, UserID: a.UserID, Actor: a.Name, Action: action, Target: target, IP: a.IP, Detail: detail}
}

// Actions are the use cases: each method is one thing an actor does, with
// its rule checks, state change, events, audit entry and outbox mail in one
// transaction, so none of them is ever written without the others. Pages
// and the API call the same method and only bind and render around it.
type Actions struct {
	s *Store
	a Actor
}

// As returns the use cases performed by a.
func (s *Store) As(a Actor) Actions { return Actions{s: s, a: a} }

// do runs fn in one transaction and writes the audit entry fn returns (if
// any) in it, last: a failing audit write undoes the action.
func (x Actions) do(ctx context.Context, fn func(tx *Store) (*AuditEntry, error)) error {
	return x.s.Tx(ctx, func(tx *Store) error {
		e, err := fn(tx)
		if err != nil || e == nil {
			return err
		}
		return tx.AuditLog(ctx, *e)
	})
}

// audit is a's entry for action, as do expects it.
func (x Actions) audit(action, target, detail string) *AuditEntry {
	e := x.a.entry(action, target, detail)
	return &e
}
