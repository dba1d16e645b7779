package models

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"
)

// The after-ready NCCL check (X4) never runs on a cluster's GPUs once they
// are the customer's to use (X13): a verified cluster's hand-over ring is
// its reading, not a second all-reduce; an unverified cluster is measured
// only when it has no start command, which would run on the same GPUs from
// hand-over on; otherwise the check is skipped and says why.

// NCCLSkipped is a check that did not run, with why in its summary.
const NCCLSkipped = "skipped"

// RecordNCCLFromVerification records the hand-over verification's ring
// all-reduce as cluster c's NCCL check instead of running another one. A
// cluster that has a check keeps it; ErrConflict unless c is ready.
func (s *Store) RecordNCCLFromVerification(ctx context.Context, c Cluster, run VerifyRun, ring RingVerdict) error {
	summary := fmt.Sprintf("Measured before hand-over by verification run %d's ring all-reduce (NCCL_ALGO=Ring) across %d GPUs: "+
		"%s. Not run again: the cluster's GPUs are yours from hand-over.",
		run.Run, c.Nodes*c.GPUsPerNode, ring.Measured())
	check := NCCLCheck{ClusterID: c.ID, OrgID: c.OrgID, TaskID: NewID("nc"), Status: NCCLMeasured, BusBW: ring.BusBW,
		ExpectedBusBW: ring.ExpectedBusBW, Percent: ring.Percent, Summary: truncate(summary, 1000), CreatedAt: s.Now(), FinishedAt: run.FinishedAt}
	if ring.Status != VerifyPassed {
		check.Warning = truncate(fmt.Sprintf("The ring fell short of what the fabric should carry (%s): "+
			"expect slower multi-node training than the offer suggests.", ring.Measured()), 1000)
	}
	if check.FinishedAt == nil {
		now := s.Now()
		check.FinishedAt = &now
	}
	return s.addNCCLCheck(ctx, c, check, "info")
}

// SkipNCCLCheck records that cluster c's NCCL check does not run, and why.
func (s *Store) SkipNCCLCheck(ctx context.Context, c Cluster, why string) error {
	now := s.Now()
	check := NCCLCheck{ClusterID: c.ID, OrgID: c.OrgID, TaskID: NewID("nc"), Status: NCCLSkipped,
		Summary: truncate("The NCCL check is skipped: "+why, 1000), CreatedAt: now, FinishedAt: &now}
	return s.addNCCLCheck(ctx, c, check, "info")
}

// addNCCLCheck writes a check that needs no agent, once, with its event.
func (s *Store) addNCCLCheck(ctx context.Context, c Cluster, check NCCLCheck, kind string) error {
	return s.Tx(ctx, func(tx *Store) error {
		cur, err := tx.ClusterByID(ctx, c.ID)
		if err != nil {
			return err
		}
		if cur.Status != StatusReady || cur.TerminateRequestedAt != nil {
			return fmt.Errorf("models: cluster %s is %s, not ready: %w", c.ID, cur.Status, ErrConflict)
		}
		res := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&check)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return tx.addEvent(ctx, cur, cur.Status, kind, "node-0", "", check.Summary)
	})
}
