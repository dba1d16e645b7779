package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// EndedSession is a logged-out session: its cookie (which carries the random
// session id) is refused from then on, even if a copy of it survives. Rows
// are kept until the cookie would have expired anyway (A2).
type EndedSession struct {
	SessionID string `gorm:"primaryKey;size:64"`
	UserID    string `gorm:"size:32;index"`
	EndedAt   time.Time
	ExpiresAt time.Time `gorm:"index"`
}

func up0110EndedSessions(tx *gorm.DB) error {
	type endedSession struct {
		SessionID string `gorm:"primaryKey;size:64"`
		UserID    string `gorm:"size:32;index"`
		EndedAt   time.Time
		ExpiresAt time.Time `gorm:"index"`
	}
	return tx.Table("ended_sessions").Migrator().CreateTable(&endedSession{})
}

// EndSession records that the session sid of userID was logged out; its
// cookie stops working at once. expires is when the cookie would have
// expired on its own (the row is pruned after).
func (s *Store) EndSession(ctx context.Context, userID, sid string, expires time.Time) error {
	if sid == "" {
		return nil
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO ended_sessions (session_id, user_id, ended_at, expires_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING`, sid, userID, s.Now(), expires).Error
	if err != nil {
		return fmt.Errorf("models: end session: %w", err)
	}
	return nil
}

// SessionEnded reports whether sid was logged out.
func (s *Store) SessionEnded(ctx context.Context, sid string) (bool, error) {
	if sid == "" {
		return false, nil
	}
	err := s.db.WithContext(ctx).Select("session_id").Where("session_id = ?", sid).Take(&EndedSession{}).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("models: session ended: %w", err)
	}
	return true, nil
}

// PruneEndedSessions forgets ended sessions whose cookies have expired.
func (s *Store) PruneEndedSessions(ctx context.Context) (int64, error) {
	res := s.db.WithContext(ctx).Where("expires_at < ?", s.Now()).Delete(&EndedSession{})
	return res.RowsAffected, res.Error
}
