package models

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// JobLease makes a job tick run once across instances (OP4): whoever holds
// the unexpired lease for a name runs it. It is a row, not a session-level
// advisory lock, so it works through any connection pool.
type JobLease struct {
	Name      string `gorm:"primaryKey;size:64"`
	Holder    string `gorm:"size:128"`
	ExpiresAt time.Time
}

// JobRun is the last outcome of each job, for the admin page and /metrics.
type JobRun struct {
	Name       string `gorm:"primaryKey;size:64"`
	StartedAt  time.Time
	FinishedAt time.Time
	Error      string `gorm:"size:2000"`
	Runs       int64
	Failures   int64
}

// Frozen copies of the tables as migration 0002 created them (see Migration:
// later model changes never rewrite history).
type (
	jobLeaseV0002 struct {
		Name      string `gorm:"primaryKey;size:64"`
		Holder    string `gorm:"size:128"`
		ExpiresAt time.Time
	}
	jobRunV0002 struct {
		Name       string `gorm:"primaryKey;size:64"`
		StartedAt  time.Time
		FinishedAt time.Time
		Error      string `gorm:"size:2000"`
		Runs       int64
		Failures   int64
	}
)

func (jobLeaseV0002) TableName() string { return "job_leases" }
func (jobRunV0002) TableName() string   { return "job_runs" }

func up0002JobLeases(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&jobLeaseV0002{}, &jobRunV0002{})
}

// AcquireLease takes the lease for name until now+ttl when it is free or
// expired at now (or already ours), in one atomic upsert. It reports
// whether we hold it. now is the caller's wall time, not the store's clock:
// a lease coordinates processes, and one left by a killed process must lapse
// after ttl of real time even while the development fake clock stands still.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	now = now.UTC()
	res := s.db.WithContext(ctx).Exec(
		`INSERT INTO job_leases (name, holder, expires_at) VALUES (?, ?, ?)
		 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		 WHERE job_leases.expires_at < ? OR job_leases.holder = ?`,
		name, holder, now.Add(ttl), now, holder)
	if res.Error != nil {
		return false, fmt.Errorf("models: acquire lease %s: %w", name, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ReleaseLease gives the lease back if we still hold it.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	return s.db.WithContext(ctx).Where("name = ? AND holder = ?", name, holder).Delete(&JobLease{}).Error
}

// RecordJobRun stores a finished tick's outcome.
func (s *Store) RecordJobRun(ctx context.Context, name string, started, finished time.Time, runErr error) error {
	msg, failed := "", int64(0)
	if runErr != nil {
		msg, failed = truncate(runErr.Error(), 2000), 1
	}
	return s.db.WithContext(ctx).Exec(
		`INSERT INTO job_runs (name, started_at, finished_at, error, runs, failures) VALUES (?, ?, ?, ?, 1, ?)
		 ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at, finished_at = excluded.finished_at,
		 error = excluded.error, runs = job_runs.runs + 1, failures = job_runs.failures + excluded.failures`,
		name, started, finished, msg, failed).Error
}

// JobRuns lists every job's last outcome by name.
func (s *Store) JobRuns(ctx context.Context) ([]JobRun, error) {
	var out []JobRun
	err := s.db.WithContext(ctx).Order("name").Find(&out).Error
	return out, err
}

func truncate(s string, n int) string {
	s = cleanOutput(s) // text from agents reaches SQL: UTF-8, no NUL (A4)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never cut a character in two: PostgreSQL rejects invalid UTF-8
	}
	return s[:n]
}

// CleanString reports whether s can reach SQL as it is: valid UTF-8 without
// NUL bytes (PostgreSQL refuses both; A4).
func CleanString(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// JobLastStarted is when the named job's last tick started (zero: never).
func (s *Store) JobLastStarted(ctx context.Context, name string) (time.Time, error) {
	var r JobRun
	err := s.db.WithContext(ctx).Where("name = ?", name).Limit(1).Find(&r).Error
	return r.StartedAt.UTC(), err
}

// truncateWords is s cut to at most n bytes at a word boundary, ending in
// an ellipsis when cut (a mail or a page quoting it never stops mid-word).
func truncateWords(s string, n int) string {
	s = cleanOutput(s)
	if len(s) <= n {
		return s
	}
	const ell = "…"
	cut := truncate(s, n-len(ell))
	if i := strings.LastIndexAny(cut, " \n\t"); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.—-") + ell
}
