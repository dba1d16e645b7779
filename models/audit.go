package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// AuditEntry is one thing someone did in an organisation (A5): who (Actor:
// an email, "api_key:<prefix>" or "system"), what (Action, e.g.
// "cluster.launch", "api_key.create"), on what (Target), from which IP, and
// free-form Detail. The time comes from the store's clock.
type AuditEntry struct {
	OrgID, UserID, Actor, Action, Target, IP, Detail string
}

// AuditRecord is a stored audit entry. Seq orders entries as written.
type AuditRecord struct {
	Seq       int64  `gorm:"primaryKey;autoIncrement"`
	OrgID     string `gorm:"size:32"`
	UserID    string `gorm:"size:32"`
	Actor     string `gorm:"size:300"`
	Action    string `gorm:"size:64"`
	Target    string `gorm:"size:300"`
	IP        string `gorm:"column:ip;size:64"`
	Detail    string `gorm:"size:1000"`
	CreatedAt time.Time
}

// TableName keeps the table's name short and singular in meaning.
func (AuditRecord) TableName() string { return "audit_log" }

func up0106AuditLog(tx *gorm.DB) error {
	type auditRecord struct {
		Seq       int64  `gorm:"primaryKey;autoIncrement"`
		OrgID     string `gorm:"size:32"`
		UserID    string `gorm:"size:32"`
		Actor     string `gorm:"size:300"`
		Action    string `gorm:"size:64"`
		Target    string `gorm:"size:300"`
		IP        string `gorm:"column:ip;size:64"`
		Detail    string `gorm:"size:1000"`
		CreatedAt time.Time
	}
	if err := tx.Table("audit_log").Migrator().CreateTable(&auditRecord{}); err != nil {
		return err
	}
	return tx.Exec("CREATE INDEX idx_audit_log_org ON audit_log (org_id, seq)").Error
}

// AuditLog writes an entry. It uses the store's handle, so inside Store.Tx
// the entry commits (or rolls back) with the change it records.
func (s *Store) AuditLog(ctx context.Context, e AuditEntry) error {
	if e.OrgID == "" || e.Action == "" {
		return errors.New("models: audit entry needs an org and an action")
	}
	if e.Actor == "" {
		e.Actor = "system"
	}
	r := AuditRecord{OrgID: e.OrgID, UserID: truncateRunes(e.UserID, 32), Actor: truncateRunes(e.Actor, 300),
		Action: truncateRunes(e.Action, 64), Target: truncateRunes(e.Target, 300), IP: truncateRunes(e.IP, 64),
		Detail: truncateRunes(e.Detail, 1000), CreatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return fmt.Errorf("models: audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditPageSize is how many entries one page of the audit log shows.
const AuditPageSize = 50

// AuditRecords lists the org's entries, newest first, those written before
// the entry with sequence number before (0: from the newest). more reports
// whether older entries remain.
func (s *Store) AuditRecords(ctx context.Context, orgID string, before int64, limit int) (out []AuditRecord, more bool, err error) {
	if limit <= 0 || limit > 500 {
		limit = AuditPageSize
	}
	q := s.db.WithContext(ctx).Where("org_id = ?", orgID)
	if before > 0 {
		q = q.Where("seq < ?", before)
	}
	if err := q.Order("seq DESC").Limit(limit + 1).Find(&out).Error; err != nil {
		return nil, false, fmt.Errorf("models: audit log: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
