package models

import (
	"context"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

// Volume quotas (A2, V3; B9): an organisation holds at most
// MaxVolumes live volumes of at most MaxVolumeGB together. The operator sets
// them per organisation on the admin page; 0 means the deployment's default
// (DEFAULT_MAX_VOLUMES, DEFAULT_MAX_VOLUME_GB; else these).
const (
	DefaultMaxVolumes  = 20
	DefaultMaxVolumeGB = 100_000
)

func up0921OrgVolumeQuota(tx *gorm.DB) error {
	for _, q := range []string{
		"ALTER TABLE orgs ADD COLUMN max_volumes integer NOT NULL DEFAULT 0",
		"ALTER TABLE orgs ADD COLUMN max_volume_gb integer NOT NULL DEFAULT 0",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// VolumeQuota is o's volume limits with the deployment's defaults applied.
func (s *Store) VolumeQuota(o Org) (maxVolumes, maxGB int) {
	maxVolumes, maxGB = o.MaxVolumes, o.MaxVolumeGB
	if maxVolumes == 0 {
		maxVolumes = cmpOr(s.settings.DefaultMaxVolumes, DefaultMaxVolumes)
	}
	if maxGB == 0 {
		maxGB = cmpOr(s.settings.DefaultMaxVolumeGB, DefaultMaxVolumeGB)
	}
	return maxVolumes, maxGB
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// VolumeQuotaProblems validates operator volume quotas (0 = the default).
func VolumeQuotaProblems(maxVolumes, maxGB int) FieldErrors {
	fe := FieldErrors{}
	if maxVolumes < 0 || maxVolumes > 100_000 {
		fe["max_volumes"] = "Enter a whole number from 0 (the default) to 100000."
	}
	if maxGB < 0 || maxGB > 100_000_000 {
		fe["max_volume_gb"] = "Enter a whole number from 0 (the default) to 100000000."
	}
	return fe
}

// SetOrgVolumeQuota sets the org's volume limits (0 = the default).
func (s *Store) SetOrgVolumeQuota(ctx context.Context, orgID string, maxVolumes, maxGB int) (Org, error) {
	if fe := VolumeQuotaProblems(maxVolumes, maxGB); len(fe) > 0 {
		return Org{}, fe
	}
	res := s.db.WithContext(ctx).Model(&Org{}).Where("id = ?", orgID).
		Updates(map[string]any{"max_volumes": maxVolumes, "max_volume_gb": maxGB})
	if res.Error != nil {
		return Org{}, fmt.Errorf("models: set volume quota: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return Org{}, fmt.Errorf("models: set volume quota %s: %w", orgID, ErrNotFound)
	}
	return s.OrgByID(ctx, orgID)
}

// VolumesInUse counts an organisation's live (not deleted) volumes and
// their size together.
func (s *Store) VolumesInUse(ctx context.Context, orgID string) (count, gb int, err error) {
	var row struct {
		Count int
		GB    int `gorm:"column:gb"`
	}
	err = s.db.WithContext(ctx).Model(&Volume{}).Select("COUNT(*) AS count, COALESCE(SUM(size_gb), 0) AS gb").
		Where("org_id = ? AND deleted_at IS NULL", orgID).Scan(&row).Error
	if err != nil {
		return 0, 0, fmt.Errorf("models: volumes of %s: %w", orgID, err)
	}
	return row.Count, row.GB, nil
}

// checkVolumeQuota refuses adding volumes (0 or 1) and addGB to the
// organisation's live volumes past its quota (403 quota_exceeded).
func (s *Store) checkVolumeQuota(ctx context.Context, orgID string, volumes, addGB int) error {
	org, err := s.orgQuota(ctx, orgID)
	if err != nil {
		return err
	}
	maxVolumes, maxGB := s.VolumeQuota(org)
	count, gb, err := s.VolumesInUse(ctx, orgID)
	if err != nil {
		return err
	}
	if count+volumes > maxVolumes {
		return &QuotaError{Resource: "volumes", Limit: maxVolumes, InUse: count, Requested: volumes}
	}
	if gb+addGB > maxGB {
		return &QuotaError{Resource: "GB of volumes", Limit: maxGB, InUse: gb, Requested: addGB}
	}
	return nil
}

// admitVolume is a launch's admission for a volume created (volumes = 1)
// or grown (volumes = 0) by addGB at rate in environment envID (B9): the environment's budget not reached (B5), the organisation's
// volume quota, and L2's balance: one hour of everything the organisation
// runs and keeps, volumes included, plus one hour of what is added, never
// less than $10. It runs inside the caller's transaction after lockOrg.
func (s *Store) admitVolume(ctx context.Context, orgID, envID string, volumes, addGB int, rate Money) error {
	if err := s.budgetReachedFor(ctx, Cluster{OrgID: orgID, EnvID: envID}); err != nil {
		return err
	}
	if err := s.checkVolumeQuota(ctx, orgID, volumes, addGB); err != nil {
		return err
	}
	a, err := s.AdmissionFor(ctx, orgID, Money(addGB)*rate)
	if err != nil {
		return err
	}
	if a.Shortfall() > 0 {
		a.Volume = true
		return &InsufficientBalanceError{a}
	}
	return nil
}

// quotaChange is the audit detail of a quota change.
func quotaChange(before, after Org, s *Store) string {
	bv, bg := s.VolumeQuota(before)
	av, ag := s.VolumeQuota(after)
	return "machines " + strconv.Itoa(before.MaxMachines) + " → " + strconv.Itoa(after.MaxMachines) +
		", GPUs " + strconv.Itoa(before.MaxGPUs) + " → " + strconv.Itoa(after.MaxGPUs) +
		", volumes " + strconv.Itoa(bv) + " → " + strconv.Itoa(av) +
		", volume GB " + strconv.Itoa(bg) + " → " + strconv.Itoa(ag)
}
