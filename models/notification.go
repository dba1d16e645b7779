package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// Notify queues n for to under key (the idempotency key: the same key twice
// stores one mail). Inside Store.Tx it commits with the change that caused
// it. A recipient the outbox refuses is an error that writes nothing, so a
// caller mailing several people may skip that one (see notifyEach).
func (s *Store) Notify(ctx context.Context, key, to string, n Notification) error {
	key, to = strings.TrimSpace(key), strings.TrimSpace(to)
	if err := checkRecipient(key, to); err != nil {
		return err
	}
	kind := n.NotificationKind()
	if !slices.Contains(domain.NotificationKinds(), kind) {
		return fmt.Errorf("models: notification kind %q is not registered", kind)
	}
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("models: notification %s: %w", kind, err)
	}
	now := s.Now()
	row := OutboxMail{ID: NewID("mail"), Key: key, To: to, Kind: kind, Data: string(data), CreatedAt: now, NextAttemptAt: now}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "idempotency_key"}}, DoNothing: true}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("models: enqueue mail %s: %w", key, err)
	}
	return nil
}

// notifyEach queues n to every address, keyed by prefix and a hash of the
// address (short however long the address), skipping an address the outbox
// refuses so it never stops the others.
func (s *Store) notifyEach(ctx context.Context, prefix string, to []string, n Notification) error {
	for _, addr := range to {
		key := prefix + ":" + shortHash(addr)
		if checkRecipient(key, strings.TrimSpace(addr)) != nil {
			continue
		}
		if err := s.Notify(ctx, key, addr, n); err != nil {
			return err
		}
	}
	return nil
}

func checkRecipient(key, to string) error {
	if key == "" || len(key) > 191 {
		return errors.New("models: mail needs a key of 1 to 191 bytes")
	}
	if a, err := mail.ParseAddress(to); err != nil || a.Address != to {
		return fmt.Errorf("models: mail recipient %q is not a plain address", to)
	}
	return nil
}

// managers are the addresses of the organisation's owners and admins.
func (s *Store) managers(ctx context.Context, orgID string) ([]string, error) {
	members, err := s.Members(ctx, orgID)
	if err != nil {
		return nil, err
	}
	var to []string
	for _, m := range members {
		if m.Role.CanManage() {
			to = append(to, m.Email)
		}
	}
	return to, nil
}

// up1080MailOutboxKind: the outbox stores a typed notification (kind and
// its JSON data), rendered when sent (E2). Rows queued before keep their
// kind empty and are sent with the subject and bodies stored in them.
func up1080MailOutboxKind(tx *gorm.DB) error {
	if err := tx.Exec("ALTER TABLE mail_outbox ADD COLUMN kind VARCHAR(64) NOT NULL DEFAULT ''").Error; err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE mail_outbox ADD COLUMN data TEXT NOT NULL DEFAULT ''").Error
}

func mailQuoteRequest(r QuoteRequest) MailQuoteRequest {
	return MailQuoteRequest{ID: r.ID, Accelerator: r.Accelerator, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, Fabric: r.Fabric,
		Location: r.Location, StartDate: r.StartDate, DurationDays: r.DurationDays, BudgetPerHour: r.BudgetPerHour}
}
