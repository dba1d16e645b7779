package models

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Mail is an email with its words already written (E2), for EnqueueMail.
// Key is its idempotency key (e.g. "cluster-ready:<id>"): enqueueing the
// same key twice stores one mail. HTML is optional. Product mails are typed
// notifications instead (Notify); this stays for mails not yet typed.
type Mail struct {
	Key, To, Subject, Text string
	HTML                   string
}

// OutboxMail is a queued email. The mail job claims rows, sends them and
// marks them sent: a crash between the business change and sending loses
// nothing (the row commits with the change), and a crash between sending
// and marking sent retries the send once the claim expires; the sender uses
// the key as the Message-ID so receivers can drop that duplicate.
type OutboxMail struct {
	ID      string `gorm:"primaryKey;size:32"`
	Key     string `gorm:"column:idempotency_key;size:191;uniqueIndex"`
	To      string `gorm:"column:to_addr;size:254"`
	Subject string `gorm:"size:300"`
	Text    string `gorm:"column:text_body"`
	HTML    string `gorm:"column:html_body"`
	// Kind and Data are a typed notification (Notify), rendered by views
	// when sent; Kind is "" for a mail queued with its words (EnqueueMail,
	// and every row queued before typed notifications), sent as stored.
	Kind          string `gorm:"size:64"`
	Data          string
	CreatedAt     time.Time
	Attempts      int
	NextAttemptAt time.Time
	ClaimedBy     string `gorm:"size:64"`
	ClaimedUntil  *time.Time
	SentAt        *time.Time
	FailedAt      *time.Time // gave up after MaxMailAttempts
	Transport     string     `gorm:"size:32"` // "smtp" or "dev_mailbox"
	LastError     string     `gorm:"size:1000"`
}

// TableName is the outbox table.
func (OutboxMail) TableName() string { return "mail_outbox" }

func up0107MailOutbox(tx *gorm.DB) error {
	type outboxMail struct {
		ID            string `gorm:"primaryKey;size:32"`
		Key           string `gorm:"column:idempotency_key;size:191;uniqueIndex:idx_mail_outbox_key"`
		To            string `gorm:"column:to_addr;size:254"`
		Subject       string `gorm:"size:300"`
		Text          string `gorm:"column:text_body"`
		HTML          string `gorm:"column:html_body"`
		CreatedAt     time.Time
		Attempts      int
		NextAttemptAt time.Time
		ClaimedBy     string `gorm:"size:64"`
		ClaimedUntil  *time.Time
		SentAt        *time.Time
		FailedAt      *time.Time
		Transport     string `gorm:"size:32"`
		LastError     string `gorm:"size:1000"`
	}
	if err := tx.Table("mail_outbox").Migrator().CreateTable(&outboxMail{}); err != nil {
		return err
	}
	return tx.Exec("CREATE INDEX idx_mail_outbox_due ON mail_outbox (sent_at, failed_at, next_attempt_at)").Error
}

// Status is the mail's state for people: pending, sent, failed.
func (m OutboxMail) Status() string {
	switch {
	case m.SentAt != nil:
		return "sent"
	case m.FailedAt != nil:
		return "failed"
	case m.Attempts > 0:
		return "retrying"
	}
	return "pending"
}

// Mail retry policy.
const (
	MaxMailAttempts = 8
	MailClaimTTL    = 5 * time.Minute
)

// mailBackoff is the wait before attempt n+1: 1, 2, 4 … minutes, at most an hour.
func mailBackoff(attempts int) time.Duration {
	return min(time.Minute<<min(max(attempts-1, 0), 6), time.Hour)
}

// EnqueueMail queues a mail whose words are written (the outbox's format
// before typed notifications; the mail job sends it as stored). Inside
// Store.Tx it commits with the change that caused it. The same Key twice
// stores one mail (the second is a no-op). New mails use Notify.
func (s *Store) EnqueueMail(ctx context.Context, m Mail) error {
	m.Key = strings.TrimSpace(m.Key)
	m.To = strings.TrimSpace(m.To)
	if err := m.check(); err != nil {
		return err
	}
	now := s.Now()
	row := OutboxMail{ID: NewID("mail"), Key: m.Key, To: m.To, Subject: truncateRunes(m.Subject, 300),
		Text: m.Text, HTML: m.HTML, CreatedAt: now, NextAttemptAt: now}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "idempotency_key"}}, DoNothing: true}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("models: enqueue mail %s: %w", m.Key, err)
	}
	return nil
}

// check refuses a mail the outbox cannot take; it writes nothing, so a
// caller inside a transaction may skip that one mail and go on.
func (m Mail) check() error {
	switch {
	case m.Key == "" || len(m.Key) > 191:
		return errors.New("models: mail needs a key of 1 to 191 bytes")
	case m.Subject == "" || strings.ContainsAny(m.Subject, "\r\n"):
		return errors.New("models: mail needs a one-line subject")
	case m.Text == "":
		return errors.New("models: mail needs a text body")
	}
	if a, err := mail.ParseAddress(m.To); err != nil || a.Address != m.To {
		return fmt.Errorf("models: mail recipient %q is not a plain address", m.To)
	}
	return nil
}

// ClaimMails takes up to limit due mails for holder until now+ttl and
// returns them. Claimed rows are invisible to other claimers until the claim
// expires (on PostgreSQL with SKIP LOCKED, so instances never wait on each
// other); each claim counts as an attempt.
func (s *Store) ClaimMails(ctx context.Context, holder string, limit int, ttl time.Duration) ([]OutboxMail, error) {
	now := s.Now()
	claim := holder + ":" + NewID("clm")
	if len(claim) > 64 {
		claim = NewID("clm")
	}
	lock := ""
	if s.IsPostgres() {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []OutboxMail
	err := s.Tx(ctx, func(tx *Store) error {
		err := tx.db.Exec(`UPDATE mail_outbox SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1
			WHERE id IN (SELECT id FROM mail_outbox
			  WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
			    AND (claimed_until IS NULL OR claimed_until < ?)
			  ORDER BY created_at, id LIMIT ?`+lock+`)`,
			claim, now.Add(ttl), now, now, limit).Error
		if err != nil {
			return err
		}
		return tx.db.Where("claimed_by = ? AND sent_at IS NULL", claim).Order("created_at, id").Find(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("models: claim mails: %w", err)
	}
	return out, nil
}

// MarkMailSent records a delivery by transport ("smtp", "dev_mailbox").
func (s *Store) MarkMailSent(ctx context.Context, m OutboxMail, transport string) error {
	res := s.db.WithContext(ctx).Model(&OutboxMail{}).Where("id = ? AND claimed_by = ?", m.ID, m.ClaimedBy).
		Updates(map[string]any{"sent_at": s.Now(), "transport": transport, "claimed_by": "", "claimed_until": nil, "last_error": ""})
	if res.Error != nil {
		return fmt.Errorf("models: mark mail %s sent: %w", m.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("models: mark mail %s sent: claim lost: %w", m.ID, ErrConflict)
	}
	return nil
}

// MarkMailFailed records a failed attempt: the mail is retried after a
// backoff, or given up after MaxMailAttempts.
func (s *Store) MarkMailFailed(ctx context.Context, m OutboxMail, sendErr error) error {
	now := s.Now()
	msg := "unknown error"
	if sendErr != nil {
		msg = truncateRunes(sendErr.Error(), 1000)
	}
	up := map[string]any{"claimed_by": "", "claimed_until": nil, "last_error": msg,
		"next_attempt_at": now.Add(mailBackoff(m.Attempts))}
	if m.Attempts >= MaxMailAttempts {
		up["failed_at"] = now
	}
	res := s.db.WithContext(ctx).Model(&OutboxMail{}).Where("id = ? AND claimed_by = ?", m.ID, m.ClaimedBy).Updates(up)
	if res.Error != nil {
		return fmt.Errorf("models: mark mail %s failed: %w", m.ID, res.Error)
	}
	return nil
}

// OutboxMails lists the newest mails (the development mailbox).
func (s *Store) OutboxMails(ctx context.Context, limit int) ([]OutboxMail, error) {
	if limit <= 0 || limit > 1000 {
		limit = 200
	}
	var out []OutboxMail
	err := s.db.WithContext(ctx).Order("created_at DESC, id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// OutboxMailByID loads one mail (the development mailbox).
func (s *Store) OutboxMailByID(ctx context.Context, id string) (OutboxMail, error) {
	var m OutboxMail
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&m).Error
	return m, notFound(err, "mail "+id)
}

// Queued is the row's id and its notification's kind and data (views
// renders them when the mail is sent, E2).
func (m OutboxMail) Queued() (id, kind, data string) { return m.ID, m.Kind, m.Data }

// Worded is the row with its subject, text and HTML filled in.
func (m OutboxMail) Worded(subject, text, html string) OutboxMail {
	m.Subject, m.Text, m.HTML = subject, text, html
	return m
}
