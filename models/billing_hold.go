package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Verification is not billed (X13): the provider-side burn-in is ours, as
// a cloud that burns machines in before hand-over does at its own cost.
// When a cluster enters verifying, its billing is held (unbilledAt): the
// current billed run ends there, as a stop ends it (B6). The hold ends at
// hand-over — verified, or kept as it is after a failed verification —
// when a new billed run starts (billFrom), exactly as a resume restarts
// billing. A cluster terminated while held, or after a failed
// verification the customer did not keep, is billed nothing from the
// hold on. A software install before verification is billed as usual
// (L5, L6): the hold covers verification and its swaps only.

func up0996VerifyUnbilled(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	return tx.Exec("ALTER TABLE clusters ADD COLUMN unbilled_at " + ts).Error
}

// BillingHeld reports whether the cluster's billing is held by a
// verification before hand-over (X13).
func (c Cluster) BillingHeld() bool { return c.Lifecycle().BillingHeld() }

// endBillingHold ends cluster id's hold at hand-over, in the transition's
// transaction: the held run's closed usage is written first (an install
// before verification is billed up to the hold), then billing restarts
// now for every machine. Nothing when no hold is on.
func (s *Store) endBillingHold(ctx context.Context, id string) error {
	var held []Cluster
	if err := s.db.WithContext(ctx).Select("id, unbilled_at").Where("id = ? AND unbilled_at IS NOT NULL", id).Limit(1).Find(&held).Error; err != nil {
		return fmt.Errorf("models: billing hold of %s: %w", id, err)
	}
	if len(held) == 0 {
		return nil
	}
	if _, err := s.MeterCluster(ctx, id); err != nil {
		return err
	}
	return s.db.WithContext(ctx).Exec("UPDATE clusters SET unbilled_at = NULL, bill_from = ? WHERE id = ? AND unbilled_at IS NOT NULL",
		s.Now(), id).Error
}

// earliest is the earliest of the times that are set; nil when none is.
func earliest(ts ...*time.Time) *time.Time {
	var out *time.Time
	for _, t := range ts {
		if t != nil && (out == nil || t.Before(*out)) {
			out = t
		}
	}
	return out
}

// restartVerification starts cluster c's verification over after a stop
// interrupted it (B6, X13): a new run with the next number, its window and
// swaps afresh; the interrupted run's checks are left unanswered.
func (s *Store) restartVerification(ctx context.Context, c Cluster) error {
	db := s.db.WithContext(ctx)
	var prev []VerifyRun
	if err := db.Where("cluster_id = ?", c.ID).Limit(1).Find(&prev).Error; err != nil {
		return err
	}
	now := s.Now()
	run := VerifyRun{ClusterID: c.ID, OrgID: c.OrgID, Run: 1, Status: VerifyRunning, Round: 1, MaxSwaps: c.MaxVerifySwaps(),
		StartedAt: now, Deadline: now.Add(s.settings.Verify.Window), UpdatedAt: now}
	if len(prev) == 1 {
		run.Run = prev[0].Run + 1
		if err := db.Where("cluster_id = ?", c.ID).Delete(&VerifyRun{}).Error; err != nil {
			return err
		}
	}
	return db.Create(&run).Error
}
