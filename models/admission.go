package models

import (
	"context"
	"fmt"
)

// Admission is L2's arithmetic for one launch in an organisation: the
// balance, less one hour of everything the organisation already runs,
// provisions or resumes (B6) and of every volume it keeps, must cover one
// hour of the new cluster and at least $10. Creating or growing a volume
// passes the same (admitVolume).
type Admission struct {
	Balance   Money // the one balance (B8): the ledger less what is accruing
	Committed Money // one hour of every live cluster and every volume of the organisation
	Required  Money // one hour of the new cluster (or volume size), never less than $10
	Volume    bool  // for a volume created or grown, not a launch (the wording)
}

// Shortfall is how much to add before the launch is admitted; 0 when it is.
func (a Admission) Shortfall() Money { return max(0, a.Required+a.Committed-a.Balance) }

// InsufficientBalanceError is L2's balance refusal (402-style).
type InsufficientBalanceError struct{ Admission }

func (e *InsufficientBalanceError) Error() string {
	return fmt.Sprintf("balance $%s less $%s/h already committed is under the $%s a launch needs",
		DecimalUSD(e.Balance), DecimalUSD(e.Committed), DecimalUSD(e.Required))
}

// AdmissionFor reads L2's figures for a launch at usdPerHour. Launches read
// them inside the organisation's lock (admit); pages read them to warn ahead.
func (s *Store) AdmissionFor(ctx context.Context, orgID string, usdPerHour Money) (Admission, error) {
	f, err := s.CurrentBalance(ctx, orgID)
	if err != nil {
		return Admission{}, err
	}
	balance := f.Balance()
	var committed Money
	err = s.db.WithContext(ctx).Model(&Cluster{}).Select("COALESCE(SUM(usd_per_hour), 0)").
		Where("org_id = ? AND (status IN ? OR (status = ? AND resume_requested_at IS NOT NULL))", orgID, LiveStatuses, StatusStopped).
		Scan(&committed).Error
	if err != nil {
		return Admission{}, fmt.Errorf("models: committed hour of %s: %w", orgID, err)
	}
	// Volumes bill from creation until deleted, attached or not (V3): each
	// one not already in a counted cluster's hour counts on its own
	// (B9).
	var volumes Money
	err = s.db.WithContext(ctx).Model(&Volume{}).Select("COALESCE(SUM(size_gb * gb_hour), 0)").
		Where("org_id = ? AND deleted_at IS NULL", orgID).
		Where("NOT EXISTS (SELECT 1 FROM clusters WHERE clusters.id = volumes.cluster_id AND clusters.volume_id = volumes.id AND "+
			"(clusters.status IN ? OR (clusters.status = ? AND clusters.resume_requested_at IS NOT NULL)))", LiveStatuses, StatusStopped).
		Scan(&volumes).Error
	if err != nil {
		return Admission{}, fmt.Errorf("models: committed hour of %s's volumes: %w", orgID, err)
	}
	return Admission{Balance: balance, Committed: committed + volumes, Required: RequiredBalance(usdPerHour)}, nil
}

// admit runs L2's checks and the stock check for a launch of q, inside the
// launch's transaction and after lockOrg, so concurrent launches of one
// organisation cannot together pass the quotas or overdraw the balance, and
// concurrent launches of every organisation cannot oversell an offer
// (reserveStock). It returns the quote's offer.
func (s *Store) admit(ctx context.Context, orgID string, q Quote) (Offer, error) {
	org, err := s.orgQuota(ctx, orgID)
	if err != nil {
		return Offer{}, err
	}
	machines, gpus, err := s.UsageInUse(ctx, orgID)
	if err != nil {
		return Offer{}, err
	}
	if machines+q.Nodes > org.MaxMachines {
		return Offer{}, &QuotaError{Resource: "machines", Limit: org.MaxMachines, InUse: machines, Requested: q.Nodes}
	}
	if gpus+q.Nodes*q.GPUsPerNode > org.MaxGPUs {
		return Offer{}, &QuotaError{Resource: "gpus", Limit: org.MaxGPUs, InUse: gpus, Requested: q.Nodes * q.GPUsPerNode}
	}
	offer, err := s.reserveStock(ctx, q)
	if err != nil {
		return Offer{}, err
	}
	a, err := s.AdmissionFor(ctx, orgID, q.USDPerHour)
	if err != nil {
		return Offer{}, err
	}
	if a.Shortfall() > 0 {
		return Offer{}, &InsufficientBalanceError{a}
	}
	return offer, nil
}
