package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Volume is a persistent volume of one environment (V1–V5): it lives in one
// location, is attached to at most one cluster at a time (and a cluster has
// at most one), outlives that cluster's terminate, and bills by the GB-hour
// from creation until it is deleted (V3, B2), attached or not.
type Volume struct {
	ID           string `gorm:"primaryKey;size:32"`
	OrgID        string `gorm:"size:32;index"`
	EnvID        string `gorm:"size:32;index"`
	Name         string `gorm:"size:63"`
	Provider     string `gorm:"size:64"`
	Location     string `gorm:"size:128"`
	LocationName string `gorm:"size:191"`
	SizeGB       int    `gorm:"column:size_gb"`
	GBHour       Money  `gorm:"column:gb_hour"` // the rate, locked at creation (VolumeRate)
	// ClusterID is the cluster it is, or was last, attached to; it is
	// attached while that cluster has not ended (Attachment).
	ClusterID string `gorm:"size:32"`
	// CreatedWith is the cluster whose launch created it (persistentGb,
	// V2), "" for one created on its own.
	CreatedWith string `gorm:"size:32"`
	CreatedBy   string `gorm:"size:191"`
	// SizeSince is when the current size started to bill; BilledUntil how
	// far its usage is written to the ledger.
	SizeSince   time.Time
	BilledUntil *time.Time
	DeletedAt   *time.Time // billing stops here; a deleted volume is gone from every list
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// VolumeRate is the persistent volume rate of a location in micro-dollars
// per GB-hour: the one rate the quote prices persistentGb at (Q3) and a
// volume bills at, so the two always agree. It is Clusterdeck's own, the
// same in every location today, and not marked up (OP2).
func VolumeRate(location string) Money { return VolumeGBHour }

// HourRate is the volume's price per hour at its size.
func (v Volume) HourRate() Money { return Money(v.SizeGB) * v.GBHour }

// UsageRef is the volume's name in the ledger's node_id column ("vol:<id>"),
// so its usage keys read "usage:vol:<id>:<period start>" (B1).
func (v Volume) UsageRef() string { return "vol:" + v.ID }

func up0760Volumes(tx *gorm.DB) error {
	type volume struct {
		ID           string `gorm:"primaryKey;size:32"`
		OrgID        string `gorm:"size:32;index"`
		EnvID        string `gorm:"size:32;index"`
		Name         string `gorm:"size:63"`
		Provider     string `gorm:"size:64"`
		Location     string `gorm:"size:128"`
		LocationName string `gorm:"size:191"`
		SizeGB       int    `gorm:"column:size_gb"`
		GBHour       int64  `gorm:"column:gb_hour"`
		ClusterID    string `gorm:"size:32"`
		CreatedWith  string `gorm:"size:32"`
		CreatedBy    string `gorm:"size:191"`
		SizeSince    time.Time
		BilledUntil  *time.Time
		DeletedAt    *time.Time
		CreatedAt    time.Time
		UpdatedAt    time.Time
	}
	if err := tx.Table("volumes").Migrator().CreateTable(&volume{}); err != nil {
		return err
	}
	for _, q := range []string{
		// V1: a cluster has at most one volume.
		"CREATE UNIQUE INDEX idx_volumes_cluster ON volumes (cluster_id) WHERE cluster_id <> ''",
		"ALTER TABLE quotes ADD COLUMN volume_id varchar(32) NOT NULL DEFAULT ''",
		"ALTER TABLE clusters ADD COLUMN volume_id varchar(32) NOT NULL DEFAULT ''",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// VolumeInput is a volume to create (the form's and the API's fields).
type VolumeInput struct {
	Name     string
	Location string
	SizeGB   int
}

// MinVolumeGB is the smallest volume.
const MinVolumeGB = 1

// VolumeLocation is a location volumes can be created in: one where
// datacenter (not community, V5) offers are sold.
type VolumeLocation struct {
	Provider, Location, LocationName string
}

// Label is "Ashburn, US (us-east-1)".
func (l VolumeLocation) Label() string {
	if l.LocationName == "" || l.LocationName == l.Location {
		return l.Location
	}
	return l.LocationName + " (" + l.Location + ")"
}

// VolumeLocations lists the locations a volume can be created in, by id.
func (s *Store) VolumeLocations(ctx context.Context) ([]VolumeLocation, error) {
	var out []VolumeLocation
	err := s.db.WithContext(ctx).Model(&Offer{}).Select("provider, location, MAX(location_name) AS location_name").
		Where("community = ?", false).Group("provider, location").Order("location, provider").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: volume locations: %w", err)
	}
	return out, nil
}

func (s *Store) volumeLocation(ctx context.Context, loc string) (VolumeLocation, bool, error) {
	all, err := s.VolumeLocations(ctx)
	if err != nil {
		return VolumeLocation{}, false, err
	}
	for _, l := range all {
		if l.Location == loc {
			return l, true, nil
		}
	}
	return VolumeLocation{}, false, nil
}

// Validate returns the input's field problems, by the form's names.
func (in VolumeInput) Validate() FieldErrors {
	fe := FieldErrors{}
	if !nameRe.MatchString(in.Name) {
		fe["name"] = "Use 1 to 63 lower-case letters, digits and dashes, starting and ending with a letter or digit."
	}
	if in.Location == "" {
		fe["location"] = "Choose the location the volume lives in."
	}
	if in.SizeGB < MinVolumeGB || in.SizeGB > MaxVolumeGB {
		fe["sizeGb"] = fmt.Sprintf("Enter a size of %d to %d GB.", MinVolumeGB, MaxVolumeGB)
	}
	return fe
}

// VolumeAttachedError refuses deleting or growing a volume while a cluster
// is attached to it, or attaching it to a second one (V3): the API's 409
// volume_attached.
type VolumeAttachedError struct {
	Volume      Volume
	ClusterID   string
	ClusterName string
	Action      string // "delete", "grow" or "attach"
}

func (e *VolumeAttachedError) Error() string {
	if e.Action == "attach" {
		return fmt.Sprintf("Volume %s is attached to cluster %s (%s). A volume mounts on one cluster at a time: terminate %s first, or create another volume.",
			e.Volume.Name, e.ClusterName, e.ClusterID, e.ClusterName)
	}
	return fmt.Sprintf("Volume %s is attached to cluster %s (%s) and cannot be %s while it is. Terminate the cluster first; the volume is kept.",
		e.Volume.Name, e.ClusterName, e.ClusterID, map[string]string{"delete": "deleted", "grow": "grown"}[e.Action])
}

// VolumeForOrg loads a live (not deleted) volume through its organisation.
func (s *Store) VolumeForOrg(ctx context.Context, orgID, id string) (Volume, error) {
	var v Volume
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ? AND deleted_at IS NULL", orgID, id).Take(&v).Error
	return v, notFound(err, "volume "+id)
}

// VolumesForOrg lists an organisation's live volumes, in one environment
// when envID is not "", newest first.
func (s *Store) VolumesForOrg(ctx context.Context, orgID, envID string) ([]Volume, error) {
	q := s.db.WithContext(ctx).Where("org_id = ? AND deleted_at IS NULL", orgID)
	if envID != "" {
		q = q.Where("env_id = ?", envID)
	}
	var out []Volume
	if err := q.Order("created_at DESC, id DESC").Limit(500).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: volumes of %s: %w", orgID, err)
	}
	return out, nil
}

// Attachment is the cluster v is attached to: the one it was last attached
// to while that cluster has not ended (nil when detached).
func (s *Store) Attachment(ctx context.Context, v Volume) (*Cluster, error) {
	if v.ClusterID == "" {
		return nil, nil
	}
	c, err := s.ClusterByID(ctx, v.ClusterID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c.Status.Terminal() {
		return nil, nil
	}
	return &c, nil
}

// Attachments maps each of the volumes' live clusters by volume id, in one query.
func (s *Store) Attachments(ctx context.Context, vs []Volume) (map[string]Cluster, error) {
	ids := []string{}
	for _, v := range vs {
		if v.ClusterID != "" {
			ids = append(ids, v.ClusterID)
		}
	}
	out := map[string]Cluster{}
	if len(ids) == 0 {
		return out, nil
	}
	var cs []Cluster
	if err := s.db.WithContext(ctx).Where("id IN ? AND status NOT IN ?", ids, []ClusterStatus{StatusFailed, StatusTerminated}).
		Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("models: volume attachments: %w", err)
	}
	byID := map[string]Cluster{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	for _, v := range vs {
		if c, ok := byID[v.ClusterID]; ok {
			out[v.ID] = c
		}
	}
	return out, nil
}

// VolumeOfCluster is the volume attached to (or created with) a cluster, or
// nil. A deleted one is still returned (the cluster page says so).
func (s *Store) VolumeOfCluster(ctx context.Context, c Cluster) (*Volume, error) {
	if c.VolumeID == "" {
		return nil, nil
	}
	var v Volume
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", c.OrgID, c.VolumeID).Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("models: volume of %s: %w", c.ID, err)
	}
	return &v, nil
}

// CreateVolume is V2's standalone volume: it bills from now at its
// location's rate. It passes a launch's admission (admitVolume: budget,
// volume quota, balance). The volume and its audit entry commit together.
func (x Actions) CreateVolume(ctx context.Context, in VolumeInput) (Volume, error) {
	in.Name, in.Location = strings.TrimSpace(in.Name), strings.TrimSpace(in.Location)
	fe := in.Validate()
	loc, ok, err := x.s.volumeLocation(ctx, in.Location)
	if err != nil {
		return Volume{}, err
	}
	if _, bad := fe["location"]; !bad && !ok {
		fe["location"] = "No datacenter sells machines in " + in.Location + ": choose one of the listed locations."
	}
	if len(fe) > 0 {
		return Volume{}, fe
	}
	var v Volume
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if err := tx.lockOrg(ctx, x.a.OrgID); err != nil {
			return nil, err
		}
		if err := tx.admitVolume(ctx, x.a.OrgID, x.a.EnvID, 1, in.SizeGB, VolumeRate(loc.Location)); err != nil {
			return nil, err
		}
		var err error
		v, err = tx.insertVolume(ctx, x.a.OrgID, x.a.EnvID, in.Name, loc, in.SizeGB, VolumeRate(loc.Location), "", x.a.Name)
		if err != nil {
			return nil, err
		}
		return x.audit("volume.create", v.ID, fmt.Sprintf("%s, %d GB in %s", v.Name, v.SizeGB, v.Location)), nil
	})
	return v, err
}

func (s *Store) insertVolume(ctx context.Context, orgID, envID, name string, loc VolumeLocation, gb int, rate Money, clusterID, actor string) (Volume, error) {
	now := s.Now()
	v := Volume{ID: NewID("vol"), OrgID: orgID, EnvID: envID, Name: name, Provider: loc.Provider, Location: loc.Location,
		LocationName: loc.LocationName, SizeGB: gb, GBHour: rate, ClusterID: clusterID, CreatedBy: actor,
		SizeSince: now, CreatedAt: now, UpdatedAt: now}
	if err := s.db.WithContext(ctx).Create(&v).Error; err != nil {
		return Volume{}, fmt.Errorf("models: create volume: %w", err)
	}
	return v, nil
}

// lockedVolume reads a live volume of the actor's organisation inside a
// transaction that serialises with launches (lockOrg), so no launch attaches
// it meanwhile.
func (x Actions) lockedVolume(ctx context.Context, tx *Store, id string) (Volume, error) {
	if err := tx.lockOrg(ctx, x.a.OrgID); err != nil {
		return Volume{}, err
	}
	return tx.VolumeForOrg(ctx, x.a.OrgID, id)
}

// GrowVolume makes a detached volume larger (V3) once the growth passes a
// launch's admission (admitVolume): what it used at its old size is
// written first, and the new size bills from now.
func (x Actions) GrowVolume(ctx context.Context, id string, sizeGB int) (Volume, error) {
	var v Volume
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if v, err = x.lockedVolume(ctx, tx, id); err != nil {
			return nil, err
		}
		switch {
		case sizeGB <= v.SizeGB:
			return nil, FieldErrors{"sizeGb": fmt.Sprintf("A volume only grows: enter more than its %d GB.", v.SizeGB)}
		case sizeGB > MaxVolumeGB:
			return nil, FieldErrors{"sizeGb": fmt.Sprintf("Enter at most %d GB.", MaxVolumeGB)}
		}
		if c, err := tx.Attachment(ctx, v); err != nil {
			return nil, err
		} else if c != nil {
			return nil, &VolumeAttachedError{Volume: v, ClusterID: c.ID, ClusterName: c.Name, Action: "grow"}
		}
		if err := tx.admitVolume(ctx, x.a.OrgID, v.EnvID, 0, sizeGB-v.SizeGB, v.GBHour); err != nil {
			return nil, err
		}
		now := tx.Now()
		if err := tx.meterVolume(ctx, v, now, now); err != nil {
			return nil, err
		}
		old := v.SizeGB
		v.SizeGB, v.SizeSince, v.BilledUntil, v.UpdatedAt = sizeGB, now, &now, now
		if err := tx.db.WithContext(ctx).Model(&Volume{}).Where("id = ?", v.ID).
			Updates(map[string]any{"size_gb": sizeGB, "size_since": now, "billed_until": now, "updated_at": now}).Error; err != nil {
			return nil, fmt.Errorf("models: grow volume: %w", err)
		}
		return x.audit("volume.grow", v.ID, fmt.Sprintf("%s, %d GB → %d GB", v.Name, old, sizeGB)), nil
	})
	return v, err
}

// DeleteVolume deletes a detached volume (V3): its billing stops now, and
// its last partial hour is written with it.
func (x Actions) DeleteVolume(ctx context.Context, id string) (Volume, error) {
	var v Volume
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if v, err = x.lockedVolume(ctx, tx, id); err != nil {
			return nil, err
		}
		if c, err := tx.Attachment(ctx, v); err != nil {
			return nil, err
		} else if c != nil {
			return nil, &VolumeAttachedError{Volume: v, ClusterID: c.ID, ClusterName: c.Name, Action: "delete"}
		}
		now := tx.Now()
		v.DeletedAt = &now
		if err := tx.meterVolume(ctx, v, now, now); err != nil {
			return nil, err
		}
		res := tx.db.WithContext(ctx).Model(&Volume{}).Where("id = ? AND deleted_at IS NULL", v.ID).
			Updates(map[string]any{"deleted_at": now, "billed_until": now, "updated_at": now})
		if res.Error != nil {
			return nil, fmt.Errorf("models: delete volume: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return nil, fmt.Errorf("models: volume %s deleted meanwhile: %w", v.ID, ErrConflict)
		}
		return x.audit("volume.delete", v.ID, v.Name), nil
	})
	return v, err
}

// attachVolume is V2 inside a launch: the quote's existing volume (refused
// when gone, of another environment, elsewhere or attached to a live cluster) or, for a quote with
// persistentGb, a new volume in the cluster's location, attached to c.
func (s *Store) attachVolume(ctx context.Context, c Cluster, q Quote, actor string) (string, error) {
	if q.VolumeID == "" {
		if q.VolumeGB <= 0 {
			return "", nil
		}
		if err := s.checkVolumeQuota(ctx, c.OrgID, 1, q.VolumeGB); err != nil {
			return "", err
		}
		loc := VolumeLocation{Provider: q.Provider, Location: q.Location, LocationName: q.LocationName}
		v, err := s.insertVolume(ctx, c.OrgID, c.EnvID, c.Name, loc, q.VolumeGB, q.VolumeGBHour, c.ID, actor)
		if err != nil {
			return "", err
		}
		if err := s.db.WithContext(ctx).Model(&Volume{}).Where("id = ?", v.ID).Update("created_with", c.ID).Error; err != nil {
			return "", fmt.Errorf("models: launch volume: %w", err)
		}
		return v.ID, nil
	}
	v, err := s.VolumeForOrg(ctx, c.OrgID, q.VolumeID)
	if errors.Is(err, ErrNotFound) {
		return "", FieldErrors{"volumeId": "This volume was deleted: choose another or create one with the cluster."}
	}
	if err != nil {
		return "", err
	}
	if v.EnvID != c.EnvID { // A3: a volume mounts on its own environment's clusters only
		return "", FieldErrors{"volumeId": fmt.Sprintf("volume %s belongs to another environment; a cluster mounts a volume of its own environment only", v.Name)}
	}
	if err := volumeFits(v, q.Location); err != nil {
		return "", err
	}
	if att, err := s.Attachment(ctx, v); err != nil {
		return "", err
	} else if att != nil {
		return "", &VolumeAttachedError{Volume: v, ClusterID: att.ID, ClusterName: att.Name, Action: "attach"}
	}
	res := s.db.WithContext(ctx).Model(&Volume{}).Where("id = ? AND deleted_at IS NULL", v.ID).
		Updates(map[string]any{"cluster_id": c.ID, "updated_at": s.Now()})
	if res.Error != nil {
		return "", fmt.Errorf("models: attach volume: %w", res.Error)
	}
	return v.ID, nil
}

func volumeFits(v Volume, location string) error {
	if location != "" && v.Location != location {
		return FieldErrors{"volumeId": fmt.Sprintf("volume %s is in %s; a cluster mounting it runs in %s too", v.Name, v.Location, v.Location)}
	}
	return nil
}

// pinVolume applies a request's volumeId to its shape (V2): the volume's
// size is priced and its location pins the offer. An unknown volume, one
// in another location than asked, or one attached to a live cluster is
// refused here, before any price.
func (s *Store) pinVolume(ctx context.Context, orgID, envID string, r *ShapeQuery) error {
	if r.VolumeID == "" {
		return nil
	}
	v, err := s.VolumeForOrg(ctx, orgID, r.VolumeID)
	if err == nil && envID != "" && v.EnvID != envID {
		err = ErrNotFound
	}
	if errors.Is(err, ErrNotFound) {
		return FieldErrors{"volumeId": "no such volume in this environment; list yours with GET /v1/volumes"}
	}
	if err != nil {
		return err
	}
	if r.VolumeGB != 0 && r.VolumeGB != v.SizeGB {
		return FieldErrors{"storage.persistentGb": "send persistentGb to create a volume with the cluster, or volumeId to mount one, not both"}
	}
	if r.Location != "" && r.Location != v.Location {
		return FieldErrors{"location": fmt.Sprintf("volume %s is in %s: a cluster mounting it runs there", v.Name, v.Location)}
	}
	if att, err := s.Attachment(ctx, v); err != nil {
		return err
	} else if att != nil {
		return &VolumeAttachedError{Volume: v, ClusterID: att.ID, ClusterName: att.Name, Action: "attach"}
	}
	r.VolumeGB, r.Location = v.SizeGB, v.Location
	return nil
}

// ---- billing (B2, V3) ----

// volumeCharge is the cumulative charge of v's current size after m whole
// minutes, rounded down; each period is the difference of two of these, so
// a size's periods sum exactly to its total (as for machines).
func volumeCharge(v Volume, m int64) Money { return v.HourRate() * Money(m) / 60 }

// volumeRows computes v's closed, unwritten periods at its current size:
// each clock hour up to now, and the last partial one up to stop (its
// deletion, or a grow) when stop is not zero.
func volumeRows(v Volume, now, stop time.Time) (time.Time, []usageRow) {
	from := v.SizeSince
	if v.BilledUntil != nil && v.BilledUntil.After(from) {
		from = *v.BilledUntil
	}
	if v.DeletedAt != nil && (stop.IsZero() || v.DeletedAt.Before(stop)) {
		stop = *v.DeletedAt
	}
	var until time.Time
	var rows []usageRow
	for p := from.Truncate(UsagePeriod); ; p = p.Add(UsagePeriod) {
		end := p.Add(UsagePeriod)
		last := !stop.IsZero() && !end.Before(stop)
		if last {
			end = stop
		} else if end.After(now) {
			break // the open period: Accumulating
		}
		if !end.After(from) {
			break
		}
		start := maxTime(p, from)
		m0, m1 := minutesSince(v.SizeSince, start), minutesSince(v.SizeSince, end)
		until = end
		if m1 > m0 {
			rows = append(rows, usageRow{orgID: v.OrgID, nodeID: v.UsageRef(), amount: volumeCharge(v, m1) - volumeCharge(v, m0),
				minutes: m1 - m0, start: start, end: end,
				desc: fmt.Sprintf("Volume — %s, %d GB, %s–%s", v.Name, v.SizeGB, start.Format("Jan 2 15:04"), end.Format("15:04"))})
		}
		if last {
			break
		}
	}
	return until, rows
}

// meterVolume writes v's closed periods (up to stop when not zero) and
// moves its mark, inside the caller's transaction.
func (s *Store) meterVolume(ctx context.Context, v Volume, now, stop time.Time) error {
	until, rows := volumeRows(v, now, stop)
	if len(rows) > 0 {
		if _, err := s.insertUsage(ctx, rows); err != nil {
			return fmt.Errorf("models: meter volume %s: %w", v.ID, err)
		}
	}
	if until.IsZero() {
		return nil
	}
	return s.db.WithContext(ctx).Model(&Volume{}).Where("id = ? AND (billed_until IS NULL OR billed_until < ?)", v.ID, until).
		Update("billed_until", until).Error
}

// meterVolumes is the volumes' part of a metering pass: every volume with a
// closed, unwritten period, a page at a time, each in its own transaction
// with its mark.
func (s *Store) meterVolumes(ctx context.Context, now time.Time) (volumes int, entries int64, err error) {
	after := ""
	hour := now.Truncate(UsagePeriod)
	for {
		var page []Volume
		err := s.db.WithContext(ctx).
			Where("id > ?", after).
			Where("(deleted_at IS NULL AND COALESCE(billed_until, size_since) < ?) OR "+
				"(deleted_at IS NOT NULL AND (billed_until IS NULL OR billed_until < deleted_at))", hour).
			Order("id").Limit(meterPageSize).Find(&page).Error
		if err != nil || len(page) == 0 {
			return volumes, entries, err
		}
		after = page[len(page)-1].ID
		for _, v := range page {
			var n int64
			err := s.Tx(ctx, func(tx *Store) error {
				until, rows := volumeRows(v, now, time.Time{})
				if len(rows) > 0 {
					var err error
					if n, err = tx.insertUsage(ctx, rows); err != nil {
						return err
					}
				}
				if until.IsZero() {
					return nil
				}
				return tx.db.WithContext(ctx).Model(&Volume{}).
					Where("id = ? AND (billed_until IS NULL OR billed_until < ?)", v.ID, until).
					Update("billed_until", until).Error
			})
			if err != nil {
				return volumes, entries, fmt.Errorf("models: meter volume %s: %w", v.ID, err)
			}
			volumes++
			entries += n
		}
		if len(page) < meterPageSize {
			return volumes, entries, nil
		}
	}
}

// volumeOpen is v's open period up to now: from its mark, never written;
// nothing once it is deleted (its last period is written then).
func volumeOpen(v Volume, now time.Time) (minutes int64, amount Money) {
	if v.DeletedAt != nil {
		return 0, 0
	}
	from := v.SizeSince
	if v.BilledUntil != nil && v.BilledUntil.After(from) {
		from = *v.BilledUntil
	}
	m0, m1 := minutesSince(v.SizeSince, from), minutesSince(v.SizeSince, now)
	if m1 <= m0 {
		return 0, 0
	}
	return m1 - m0, volumeCharge(v, m1) - volumeCharge(v, m0)
}

// volumeMoneyOf adds the volumes of envIDs to their environments' money
// for budgets (B5, X6): a volume bills its environment from creation until
// deleted, attached or not (V3), so its periods starting in w count as
// spend, its open period while now is in w as spend owed, and every volume
// not deleted burns its hourly rate.
func (s *Store) volumeMoneyOf(ctx context.Context, out map[string]*envMoney, envIDs []string, w UsageWindow, now time.Time) error {
	var vs []Volume
	err := s.db.WithContext(ctx).Where("env_id IN ? AND created_at < ? AND (deleted_at IS NULL OR deleted_at >= ?)", envIDs, w.To, w.From).
		Order("id").Find(&vs).Error
	if err != nil {
		return fmt.Errorf("models: budget volumes: %w", err)
	}
	if len(vs) == 0 {
		return nil
	}
	envOf := make(map[string]string, len(vs))
	refs := make([]string, len(vs))
	for i, v := range vs {
		refs[i] = v.UsageRef()
		envOf[v.UsageRef()] = v.EnvID
	}
	var sums []struct {
		NodeID string
		Amount Money
	}
	err = s.db.WithContext(ctx).Table("ledger_entries").Select("node_id, COALESCE(SUM(amount), 0) AS amount").
		Where("kind = ? AND node_id IN ? AND period_start >= ? AND period_start < ?", LedgerUsage, refs, w.From, w.To).
		Group("node_id").Scan(&sums).Error
	if err != nil {
		return fmt.Errorf("models: budget volume spend: %w", err)
	}
	for _, r := range sums {
		out[envOf[r.NodeID]].spend -= r.Amount
	}
	for _, v := range vs {
		m := out[v.EnvID]
		if w.contains(now) {
			_, acc := volumeOpen(v, now)
			m.spend += acc
			m.open += acc
		}
		if v.DeletedAt == nil {
			m.burn += v.HourRate()
		}
	}
	return nil
}

// VolumeUsage is a volume's line on the billing page (B3, X11): what is
// written and what its open period has run up so far.
type VolumeUsage struct {
	Volume                  Volume
	Attached                *Cluster // nil: detached (and still billing unless deleted)
	Minutes                 int64
	Completed, Accumulating Money
}

// Total is the volume's accrued cost.
func (u VolumeUsage) Total() Money { return u.Completed + u.Accumulating }

// VolumeUsageForMonth is the organisation's volumes that billed in window w
// (its periods starting in it; the open one while now is in it), deleted
// ones included; a zero window means everything so far.
func (s *Store) VolumeUsageForMonth(ctx context.Context, orgID string, w UsageWindow) ([]VolumeUsage, error) {
	var vs []Volume
	q := s.db.WithContext(ctx).Where("org_id = ?", orgID)
	if !w.To.IsZero() {
		q = q.Where("created_at < ? AND (deleted_at IS NULL OR deleted_at >= ?)", w.To, w.From)
	}
	if err := q.Order("created_at DESC, id").Limit(500).Find(&vs).Error; err != nil {
		return nil, fmt.Errorf("models: volume usage of %s: %w", orgID, err)
	}
	if len(vs) == 0 {
		return nil, nil
	}
	refs := make([]string, len(vs))
	for i, v := range vs {
		refs[i] = v.UsageRef()
	}
	var sums []struct {
		NodeID  string
		Amount  Money
		Minutes int64
	}
	sq := s.db.WithContext(ctx).Table("ledger_entries").Select("node_id, SUM(amount) AS amount, SUM(minutes) AS minutes").
		Where("org_id = ? AND kind = ? AND node_id IN ?", orgID, LedgerUsage, refs)
	if !w.To.IsZero() {
		sq = sq.Where("period_start >= ? AND period_start < ?", w.From, w.To)
	}
	if err := sq.Group("node_id").Scan(&sums).Error; err != nil {
		return nil, fmt.Errorf("models: volume usage of %s: %w", orgID, err)
	}
	byRef := map[string]int{}
	for i, r := range sums {
		byRef[r.NodeID] = i
	}
	att, err := s.Attachments(ctx, vs)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	out := make([]VolumeUsage, 0, len(vs))
	for _, v := range vs {
		u := VolumeUsage{Volume: v}
		if c, ok := att[v.ID]; ok {
			u.Attached = &c
		}
		if i, ok := byRef[v.UsageRef()]; ok {
			u.Completed, u.Minutes = -sums[i].Amount, sums[i].Minutes
		}
		if w.contains(now) {
			m, acc := volumeOpen(v, now)
			u.Accumulating = acc
			u.Minutes += m
		}
		out = append(out, u)
	}
	return out, nil
}

// CommunityVolumeReason is V5's refusal, as the API and the pages word it.
const CommunityVolumeReason = "Community hosts take no persistent volume (V5): they are other people's machines, and nothing is kept on them after terminate. Choose a datacenter offer, or launch without a volume."

// refuseCommunityVolume is V5 before any price: a volume (persistentGb or
// volumeId) on a community offer named by the request is refused with the
// reason. (Without an offer named, FitOffer leaves community hosts out.)
func (s *Store) refuseCommunityVolume(ctx context.Context, r ShapeQuery) error {
	if r.OfferID == "" || (r.VolumeGB <= 0 && r.VolumeID == "") {
		return nil
	}
	var o Offer
	err := s.db.WithContext(ctx).Select("id, community").Where("id = ?", r.OfferID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil // offer_not_found, from FitOffer
	}
	if err != nil {
		return fmt.Errorf("models: community volume check: %w", err)
	}
	if !o.Community {
		return nil
	}
	field := "storage.persistentGb"
	if r.VolumeID != "" {
		field = "volumeId"
	}
	return FieldErrors{field: CommunityVolumeReason}
}

// ---- mounts (V4) ----

// Paths of V4's folders on the machines.
const (
	SharedDir        = "/shared"        // vm and bare_metal: node-0's folder, over NFS on every node
	SharedVolumeDir  = "/shared/volume" // vm and bare_metal: the volume, synced in and back
	HeadVolumeDir    = "/volume"        // container: the volume, on the head only
	VolumeDevicePath = "/mnt/clusterdeck-volume"
)

// Mount is one folder on a cluster's machines (V4): where, on which
// nodes, and what it holds.
type Mount struct {
	Path  string
	Nodes []string
	What  string
}

// HasSharedFolder reports whether the machine kind gets /shared (V4).
func HasSharedFolder(machineKind string) bool {
	return machineKind == "vm" || machineKind == "bare_metal"
}

// MountPlan is V4's one plan of a cluster's folders: on vm and bare_metal
// /shared from node-0 on every node with the hostfile in it, and an
// attached volume synced into /shared/volume; on container no shared
// folder, and the volume on the head only. What customers see (Mounts)
// and what each agent is ordered to mount (NodeMounts) are both read
// from it.
type MountPlan struct {
	Shared     bool    // /shared from node-0 on every node
	Volume     *Volume // the attached volume, or nil
	VolumePath string  // where the volume is: SharedVolumeDir or HeadVolumeDir; "" without one
}

// PlanMounts is c's plan with volume v attached (nil for none) (V4).
func PlanMounts(c Cluster, v *Volume) MountPlan {
	p := MountPlan{Shared: HasSharedFolder(c.MachineKind), Volume: v}
	switch {
	case v == nil:
	case p.Shared:
		p.VolumePath = SharedVolumeDir
	default:
		p.VolumePath = HeadVolumeDir
	}
	return p
}

// MountPlanFor is c's plan with the volume attached to it now (V4).
func (s *Store) MountPlanFor(ctx context.Context, c Cluster) (MountPlan, error) {
	v, err := s.VolumeOfCluster(ctx, c)
	if err != nil {
		return MountPlan{}, err
	}
	return PlanMounts(c, v), nil
}

// Mounts reports whether node rank mounts anything: every node with the
// shared folder, the head alone with a volume and no shared folder.
func (p MountPlan) Mounts(rank int) bool { return p.Shared || rank == 0 && p.Volume != nil }

// NodeMounts is one node's order of the plan (V4): node-0's address the
// others mount from, the other nodes' addresses node-0 exports to, the
// hostfile; ok false when node rank mounts nothing (a container's
// workers always).
type NodeMounts struct {
	Shared   bool
	Head     string
	Clients  []string
	Hostfile string
	Volume   *Volume
	Path     string // the volume's path
}

// ForNode is node rank's order among nodes, with the hostfile put in
// /shared (ending in a newline).
func (p MountPlan) ForNode(nodes []ClusterNode, rank int, hostfile string) (NodeMounts, bool) {
	if !p.Mounts(rank) {
		return NodeMounts{}, false
	}
	m := NodeMounts{Shared: p.Shared, Clients: []string{}, Hostfile: hostfile, Volume: p.Volume, Path: p.VolumePath}
	if !strings.HasSuffix(m.Hostfile, "\n") {
		m.Hostfile += "\n"
	}
	for _, n := range nodes {
		if n.Rank == 0 {
			m.Head = n.PrivateIP
		} else {
			m.Clients = append(m.Clients, n.PrivateIP)
		}
	}
	return m, true
}

// Mounts is what is mounted where on c's machines (V4), as customers read
// it: PlanMounts's folders with the nodes that have them.
func Mounts(c Cluster, v *Volume) []Mount {
	p := PlanMounts(c, v)
	all := make([]string, c.Nodes)
	for i := range all {
		all[i] = fmt.Sprintf("node-%d", i)
	}
	var out []Mount
	if p.Shared {
		out = append(out, Mount{Path: SharedDir, Nodes: all,
			What: "exported by node-0 over the private network (NFS), the hostfile at " + SharedDir + "/hostfile"})
	}
	if v == nil {
		return out
	}
	on := []string{}
	for i := range all {
		if p.Mounts(i) {
			on = append(on, all[i])
		}
	}
	if p.Shared {
		out = append(out, Mount{Path: p.VolumePath, Nodes: on,
			What: fmt.Sprintf("volume %s (%d GB), synced from the volume on node-0 at start and back to it every minute and at terminate", v.Name, v.SizeGB)})
		return out
	}
	return append(out, Mount{Path: p.VolumePath, Nodes: on,
		What: fmt.Sprintf("volume %s (%d GB), on the head only: containers get no shared folder", v.Name, v.SizeGB)})
}

// dropLaunchVolume deletes, with a cluster that failed to start (L4), the
// volume its launch created: it never held anything, so it is not left
// behind to bill as a detached volume. Its billing stops now (the minutes
// since the launch are charged like any volume's); a volume the cluster
// only mounted is kept.
func (s *Store) dropLaunchVolume(ctx context.Context, clusterID string) error {
	now := s.Now()
	return s.db.WithContext(ctx).Model(&Volume{}).Where("created_with = ? AND cluster_id = ? AND deleted_at IS NULL", clusterID, clusterID).
		Updates(map[string]any{"deleted_at": now, "updated_at": now}).Error
}
