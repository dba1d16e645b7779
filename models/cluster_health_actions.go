package models

import (
	"context"
	"fmt"
)

// SetRecoveryPolicy sets a cluster's opt-in recovery (R3): validated with
// field errors, written with its event and audit entry in one transaction.
// An ended cluster refuses it (ErrConflict).
func (x Actions) SetRecoveryPolicy(ctx context.Context, clusterID string, p RecoveryPolicy) (Cluster, error) {
	if fe := p.Validate(); len(fe) > 0 {
		return Cluster{}, fe
	}
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.ClusterForOrg(ctx, x.a.OrgID, clusterID); err != nil {
			return nil, err
		}
		if !c.CanSetRecovery() {
			return nil, fmt.Errorf("models: cluster %s has ended: %w", c.ID, ErrConflict)
		}
		mode := p.Mode
		if mode == RecoveryOff {
			mode = ""
		}
		if err := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ?", c.ID).Updates(map[string]any{
			"recovery_mode": mode, "recovery_max_attempts": p.MaxAttempts,
			"recovery_cooldown_minutes": p.CooldownMinutes, "updated_at": tx.Now()}).Error; err != nil {
			return nil, err
		}
		detail := fmt.Sprintf("mode %s, %d attempts, %d minutes apart", p.Mode, p.MaxAttempts, p.CooldownMinutes)
		if err := tx.addEvent(ctx, c, c.Status, "request", "", "recovery", "Recovery policy set by "+x.a.Name+": "+detail+"."); err != nil {
			return nil, err
		}
		if c, err = tx.ClusterByID(ctx, c.ID); err != nil {
			return nil, err
		}
		return x.audit("cluster.recovery_policy", c.ID, detail), nil
	})
	return c, err
}

// ErrNothingToRecover refuses "recover now" on a cluster with no machine down.
var ErrNothingToRecover = fmt.Errorf("no machine of this cluster is down: %w", ErrConflict)

// RecoverNow records the actor's request for one recovery attempt at once
// (R5), with its event and audit entry; the recovery job makes it. Only a
// degraded cluster with a machine down accepts it.
func (x Actions) RecoverNow(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.ClusterForOrg(ctx, x.a.OrgID, clusterID); err != nil {
			return nil, err
		}
		if !c.CanRecoverNow() {
			return nil, ErrNothingToRecover
		}
		if c.RecoverRequestedAt == nil {
			res := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ? AND recover_requested_at IS NULL", c.ID).
				Updates(map[string]any{"recover_requested_at": tx.Now(), "updated_at": tx.Now()})
			if res.Error != nil {
				return nil, res.Error
			}
			if err := tx.addEvent(ctx, c, c.Status, "request", "", "recovery", "Recover now requested by "+x.a.Name+"."); err != nil {
				return nil, err
			}
		}
		if c, err = tx.ClusterByID(ctx, c.ID); err != nil {
			return nil, err
		}
		return x.audit("cluster.recover_now", c.ID, c.Name), nil
	})
	return c, err
}
