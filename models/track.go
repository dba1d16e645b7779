package models

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The product's own history of machines and launches (issue 24 items
// 6–8, X2), kept as it happens so that pages read it cheaply:
//
//   - launch_records: one row per launch with what its offer and size
//     need for their track record: whether the all-machine placement was
//     tried and started (every machine came up), the time from launch to
//     ready, verification failures, machines that died after ready, and
//     the moments that give its machine-hours after ready.
//   - machine_faults: one row per machine that failed verification or was
//     declared down, by provider and machine (its host where the provider
//     names one, else its provider id), closed with the time to repair
//     when a replacement joined in its place.
//   - machine_quarantines: a machine that failed verification or died
//     after ready twice in TrackWindow is quarantined until an operator
//     releases it; providers that let the product choose machines never
//     place a quarantined one (PlaceRequest.Avoid).
//
// A machine failing verification is the cluster event of public type
// TypeNodeVerificationFailed (written by verification); addTypedEvent
// records it here, so whichever code writes that event counts it.

// TrackWindow is how far back the track record and lemon counting look.
const TrackWindow = 30 * 24 * time.Hour

// Fault kinds.
const (
	FaultVerification = "verification" // failed verification
	FaultDied         = "died"         // declared down after the cluster was ready
	FaultDown         = "down"         // declared down before ready (installing): repaired, never a lemon
)

// LemonFaults is how many faults in TrackWindow quarantine a machine.
const LemonFaults = 2

// LaunchRecord is one launch's line of its offer's track record.
type LaunchRecord struct {
	ClusterID       string `gorm:"primaryKey;size:32"`
	Provider        string `gorm:"size:64"`
	OfferID         string `gorm:"size:191"`
	Nodes           int
	LaunchedAt      time.Time `gorm:"index"`
	Tried           int       // 1 once its placement was answered: every machine came up, or it failed
	Started         int       // 1 when every machine came up (joined)
	ReadySeconds    *int      // launch → ready
	ReadyUnix       *int64    // ready, in Unix seconds (machine-hours are summed in SQL)
	EndedUnix       *int64    // failed or terminated, in Unix seconds
	VerifyFailures  int
	MachineFailures int // machines declared down after ready
}

// TableName keeps the table name explicit.
func (LaunchRecord) TableName() string { return "launch_records" }

// MachineFault is one machine failing verification or going down.
type MachineFault struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	Provider      string `gorm:"size:64;index:idx_machine_faults_machine"`
	Machine       string `gorm:"size:191;index:idx_machine_faults_machine"`
	ClusterID     string `gorm:"size:32;index"`
	Node          string `gorm:"size:32"`
	Kind          string `gorm:"size:16"`
	At            time.Time
	Detail        string     `gorm:"size:255"`
	RepairedAt    *time.Time // a replacement joined in its place
	RepairSeconds *int
	OrgID         string `gorm:"size:32;not null;default:''"` // whose cluster it was on
	Evidence      string `gorm:"size:16;not null;default:''"` // EvidenceProvider, EvidenceVerification, EvidenceTenant ("" before X19: as the provider's)
	Counted       bool   `gorm:"not null"`                    // in the track record and the lemon count (X19, fault_evidence.go)
}

// TableName keeps the table name explicit.
func (MachineFault) TableName() string { return "machine_faults" }

// MachineQuarantine is a lemon: a machine never placed again until released.
type MachineQuarantine struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	Provider      string `gorm:"size:64;index:idx_machine_quarantines_machine"`
	Machine       string `gorm:"size:191;index:idx_machine_quarantines_machine"`
	QuarantinedAt time.Time
	Reason        string `gorm:"size:255"`
	ReleasedAt    *time.Time
	ReleasedBy    string `gorm:"size:191;not null;default:''"`
}

// TableName keeps the table name explicit.
func (MachineQuarantine) TableName() string { return "machine_quarantines" }

func init() {
	register(Migration{ID: "0966_machine_track", Up: func(tx *gorm.DB) error {
		ts, serial := "datetime", "INTEGER PRIMARY KEY AUTOINCREMENT"
		if tx.Dialector.Name() == "postgres" {
			ts, serial = "timestamptz", "BIGSERIAL PRIMARY KEY"
		}
		for _, q := range []string{
			"ALTER TABLE cluster_nodes ADD COLUMN machine_host varchar(191) NOT NULL DEFAULT ''",
			"CREATE TABLE launch_records (cluster_id varchar(32) PRIMARY KEY, provider varchar(64) NOT NULL DEFAULT '', " +
				"offer_id varchar(191) NOT NULL DEFAULT '', nodes integer NOT NULL DEFAULT 0, launched_at " + ts + " NOT NULL, " +
				"tried integer NOT NULL DEFAULT 0, started integer NOT NULL DEFAULT 0, ready_seconds integer, ready_unix bigint, " +
				"ended_unix bigint, verify_failures integer NOT NULL DEFAULT 0, machine_failures integer NOT NULL DEFAULT 0)",
			"CREATE INDEX idx_launch_records_launched_at ON launch_records (launched_at)",
			"CREATE TABLE machine_faults (id " + serial + ", provider varchar(64) NOT NULL DEFAULT '', machine varchar(191) NOT NULL DEFAULT '', " +
				"cluster_id varchar(32) NOT NULL DEFAULT '', node varchar(32) NOT NULL DEFAULT '', kind varchar(16) NOT NULL DEFAULT '', " +
				"at " + ts + " NOT NULL, detail varchar(255) NOT NULL DEFAULT '', repaired_at " + ts + ", repair_seconds integer)",
			"CREATE INDEX idx_machine_faults_machine ON machine_faults (provider, machine)",
			"CREATE INDEX idx_machine_faults_cluster_id ON machine_faults (cluster_id)",
			"CREATE TABLE machine_quarantines (id " + serial + ", provider varchar(64) NOT NULL DEFAULT '', machine varchar(191) NOT NULL DEFAULT '', " +
				"quarantined_at " + ts + " NOT NULL, reason varchar(255) NOT NULL DEFAULT '', released_at " + ts + ", " +
				"released_by varchar(191) NOT NULL DEFAULT '')",
			"CREATE INDEX idx_machine_quarantines_machine ON machine_quarantines (provider, machine)",
		} {
			if err := tx.Exec(q).Error; err != nil {
				return err
			}
		}
		return nil
	}})
}

// MachineKey is how the product names a machine across clusters: its host
// where the provider names one, else its provider id.
func (n ClusterNode) MachineKey() string {
	if n.MachineHost != "" {
		return n.MachineHost
	}
	return n.ProviderNodeID
}

// ---- recording (called inside the transactions that change clusters) ----

// ensureLaunchRecord creates the cluster's record if it has none.
func (s *Store) ensureLaunchRecord(ctx context.Context, c Cluster) error {
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&LaunchRecord{
		ClusterID: c.ID, Provider: c.Provider, OfferID: c.OfferID, Nodes: c.Nodes, LaunchedAt: c.CreatedAt}).Error
}

// trackTransition keeps the launch's record as the cluster moves (item 6).
func (s *Store) trackTransition(ctx context.Context, c Cluster, ev Event) error {
	now := s.Now()
	set := map[string]any{}
	ready := func() {
		secs := int(now.Sub(c.CreatedAt).Seconds())
		set["ready_seconds"] = gorm.Expr("COALESCE(ready_seconds, ?)", max(secs, 0))
		set["ready_unix"] = gorm.Expr("COALESCE(ready_unix, ?)", now.Unix())
	}
	switch ev {
	case EventJoined:
		set["tried"], set["started"] = 1, 1
		ready()
	case EventJoinedInstall:
		set["tried"], set["started"] = 1, 1
	case EventSoftwareReady:
		ready()
	case EventFail:
		set["tried"] = 1
		set["ended_unix"] = now.Unix()
	case EventTerminated:
		set["ended_unix"] = now.Unix()
	default:
		return nil
	}
	if err := s.ensureLaunchRecord(ctx, c); err != nil {
		return err
	}
	return s.db.WithContext(ctx).Model(&LaunchRecord{}).Where("cluster_id = ?", c.ID).Updates(set).Error
}

// recordFault writes one machine fault and quarantines the machine when
// it is its LemonFaults-th counted one in TrackWindow since its last
// release (item 7). evidence says what the fault rests on (X19): a fault
// only the customer's own machine reported (EvidenceTenant) decides its
// cluster's health but counts in the public track record and towards
// quarantine only once such faults of the machine come from
// MinTenantOrgs organisations (countFault).
func (s *Store) recordFault(ctx context.Context, c Cluster, n ClusterNode, kind, detail, evidence string) error {
	now := s.Now()
	if evidence == "" {
		evidence = EvidenceProvider
	}
	f := MachineFault{Provider: c.Provider, Machine: n.MachineKey(), ClusterID: c.ID, Node: n.Name, Kind: kind, At: now,
		Detail: truncate(detail, 255), OrgID: c.OrgID, Evidence: evidence, Counted: evidence != EvidenceTenant}
	db := s.db.WithContext(ctx)
	if err := db.Create(&f).Error; err != nil {
		return err
	}
	if kind != FaultVerification && kind != FaultDied {
		return nil // not a lemon's fault
	}
	if err := s.ensureLaunchRecord(ctx, c); err != nil {
		return err
	}
	counted, err := s.countFault(ctx, f)
	if err != nil || !counted || f.Machine == "" {
		return err
	}
	var q []MachineQuarantine
	if err := db.Where("provider = ? AND machine = ?", f.Provider, f.Machine).Order("id DESC").Limit(1).Find(&q).Error; err != nil {
		return err
	}
	since := now.Add(-TrackWindow)
	if len(q) == 1 {
		if q[0].ReleasedAt == nil {
			return nil // quarantined already
		}
		if q[0].ReleasedAt.After(since) {
			since = *q[0].ReleasedAt // a release forgives what came before
		}
	}
	var faults []MachineFault
	if err := db.Where("provider = ? AND machine = ? AND kind IN ? AND at >= ? AND counted = ?",
		f.Provider, f.Machine, []string{FaultVerification, FaultDied}, since, true).Find(&faults).Error; err != nil {
		return err
	}
	if len(faults) < LemonFaults {
		return nil
	}
	reason := fmt.Sprintf("%d faults in 30 days, the last on %s of cluster %s (%s); evidence: %s",
		len(faults), n.Name, c.ID, faultLabel(kind), evidenceSummary(faults))
	if err := db.Create(&MachineQuarantine{Provider: f.Provider, Machine: f.Machine, QuarantinedAt: now, Reason: truncate(reason, 255)}).Error; err != nil {
		return err
	}
	return s.addEvent(ctx, c, c.Status, "info", n.Name, "health",
		fmt.Sprintf("Machine %s is quarantined (%s): it is not placed again until an operator releases it.", f.Machine, reason))
}

func faultLabel(kind string) string {
	switch kind {
	case FaultVerification:
		return "failed verification"
	case FaultDied:
		return "died after ready"
	}
	return "down before ready"
}

// recordDowns writes a fault for each machine a health pass declared down.
func (s *Store) recordDowns(ctx context.Context, c Cluster, downs []DownMachine) error {
	c, err := s.ClusterByID(ctx, c.ID) // a health pass loads only some columns
	if err != nil {
		return err
	}
	nodes, err := s.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	kind := FaultDown
	if c.ReadyAt != nil {
		kind = FaultDied
	}
	for _, d := range downs {
		for _, n := range nodes {
			if n.Rank == d.Rank {
				if err := s.recordFault(ctx, c, n, kind, d.Seen, d.Evidence); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// recordVerificationFailure is the TypeNodeVerificationFailed event's
// fault, for the node it names.
func (s *Store) recordVerificationFailure(ctx context.Context, c Cluster, node, msg string) error {
	c, err := s.ClusterByID(ctx, c.ID)
	if err != nil {
		return err
	}
	var nodes []ClusterNode
	if err := s.db.WithContext(ctx).Where("cluster_id = ? AND name = ?", c.ID, node).Limit(1).Find(&nodes).Error; err != nil {
		return err
	}
	n := ClusterNode{Name: node}
	if len(nodes) == 1 {
		n = nodes[0]
	}
	return s.recordFault(ctx, c, n, FaultVerification, msg, EvidenceVerification)
}

// recordRepair closes the node's latest open down fault: its replacement
// joined (item 8).
func (s *Store) recordRepair(ctx context.Context, clusterID, node string) error {
	db := s.db.WithContext(ctx)
	var open []MachineFault
	if err := db.Where("cluster_id = ? AND node = ? AND kind IN ? AND repaired_at IS NULL", clusterID, node, []string{FaultDied, FaultDown}).
		Order("id DESC").Limit(1).Find(&open).Error; err != nil || len(open) == 0 {
		return err
	}
	now := s.Now()
	secs := max(int(now.Sub(open[0].At).Seconds()), 0)
	return db.Model(&MachineFault{}).Where("id = ?", open[0].ID).Updates(map[string]any{"repaired_at": now, "repair_seconds": secs}).Error
}

// ---- the track record (item 6) ----

// TrackKey is an offer at a size.
type TrackKey struct {
	OfferID string
	Nodes   int
}

// TrackRecord is an offer's record at one size over TrackWindow.
type TrackRecord struct {
	Tried, Started     int // all-machine placements answered; of them, every machine came up
	ReadySamples       int // launches that reached ready
	ReadyP50, ReadyP90 int // launch → ready, whole minutes (rounded up)
	VerifyFailures     int
	MachineFailures    int     // machines declared down after ready
	MachineHours       float64 // after ready
}

// FailuresPer1000h is MachineFailures per 1,000 machine-hours after ready;
// false when no machine ran after ready.
func (r TrackRecord) FailuresPer1000h() (float64, bool) {
	if r.MachineHours <= 0 {
		return 0, false
	}
	return float64(r.MachineFailures) * 1000 / r.MachineHours, true
}

// Summary is the record in words: "31 of 33 recent launches started ·
// ready in 7–11 min", or "no launches yet".
func (r *TrackRecord) Summary() string {
	return string(r.AppendSummary(nil))
}

// AppendSummary appends Summary (the offers page writes hundreds of rows).
func (r *TrackRecord) AppendSummary(b []byte) []byte {
	if r == nil || r.Tried == 0 {
		return append(b, "no launches yet"...)
	}
	b = strconv.AppendInt(b, int64(r.Started), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(r.Tried), 10)
	if r.Tried == 1 {
		b = append(b, " recent launch started"...)
	} else {
		b = append(b, " recent launches started"...)
	}
	if r.ReadySamples > 0 {
		b = strconv.AppendInt(append(b, " · ready in "...), int64(r.ReadyP50), 10)
		if r.ReadyP90 != r.ReadyP50 {
			b = strconv.AppendInt(append(b, "–"...), int64(r.ReadyP90), 10)
		}
		b = append(b, " min"...)
	}
	return b
}

// SuccessRate is Started/Tried, and false with no launch tried.
func (r *TrackRecord) SuccessRate() (float64, bool) {
	if r == nil || r.Tried == 0 {
		return 0, false
	}
	return float64(r.Started) / float64(r.Tried), true
}

// compareTrack orders records best first: tried before untried, then the
// higher success rate, then more launches.
func compareTrack(a, b *TrackRecord) int {
	at, bt := a != nil && a.Tried > 0, b != nil && b.Tried > 0
	switch {
	case at != bt:
		if at {
			return -1
		}
		return 1
	case !at:
		return 0
	}
	// a.Started/a.Tried > b.Started/b.Tried, in integers
	if l, r := a.Started*b.Tried, b.Started*a.Tried; l != r {
		if l > r {
			return -1
		}
		return 1
	}
	return b.Tried - a.Tried
}

// TrackBook is every offer's record at every size, read at one moment.
type TrackBook struct {
	Records map[TrackKey]*TrackRecord
	Stamp   string // changes whenever any record would read differently
}

// For is the offer's record at nodes; nil when it has none.
func (b *TrackBook) For(offerID string, nodes int) *TrackRecord {
	if b == nil {
		return nil
	}
	return b.Records[TrackKey{offerID, nodes}]
}

// trackQuery reads the whole book in one statement: launches of the window
// by offer, size and minutes to ready, so its rows grow with the offers
// launched and the distinct minutes, never with the launches or the
// catalog. Machine-seconds after ready are summed with the moment passed in.
const trackQuery = "SELECT offer_id, nodes, (ready_seconds + 59) / 60 AS ready_min, COUNT(*) AS launches, " +
	"COALESCE(SUM(tried), 0) AS tried, COALESCE(SUM(started), 0) AS started, " +
	"COALESCE(SUM(verify_failures), 0) AS verify_failures, COALESCE(SUM(machine_failures), 0) AS machine_failures, " +
	"COALESCE(SUM(CASE WHEN ready_unix IS NULL THEN 0 ELSE nodes * (COALESCE(ended_unix, ?) - ready_unix) END), 0) AS machine_seconds " +
	"FROM launch_records WHERE launched_at >= ? GROUP BY offer_id, nodes, (ready_seconds + 59) / 60"

// OfferTrack reads every offer's track record (item 6) in one query.
// Running machines count their hours up to the start of the current hour,
// so the book (and its Stamp) changes when a launch does, or hourly.
func (s *Store) OfferTrack(ctx context.Context) (*TrackBook, error) {
	now := s.Now()
	hour := now.Truncate(time.Hour)
	rows, err := s.db.WithContext(ctx).Raw(trackQuery, hour.Unix(), now.Add(-TrackWindow)).Rows()
	if err != nil {
		return nil, fmt.Errorf("models: offer track record: %w", err)
	}
	defer rows.Close()
	book := &TrackBook{Records: map[TrackKey]*TrackRecord{}}
	dist := map[TrackKey][]readyMinutes{}
	h := fnv.New64a()
	for rows.Next() {
		var (
			k                                          TrackKey
			readyMin                                   *int64
			launches, tried, started, vf, mf, machSecs int64
		)
		if err := rows.Scan(&k.OfferID, &k.Nodes, &readyMin, &launches, &tried, &started, &vf, &mf, &machSecs); err != nil {
			return nil, fmt.Errorf("models: offer track record: %w", err)
		}
		r := book.Records[k]
		if r == nil {
			r = &TrackRecord{}
			book.Records[k] = r
		}
		r.Tried += int(tried)
		r.Started += int(started)
		r.VerifyFailures += int(vf)
		r.MachineFailures += int(mf)
		r.MachineHours += float64(machSecs) / 3600
		if readyMin != nil {
			r.ReadySamples += int(launches)
			dist[k] = append(dist[k], readyMinutes{int(*readyMin), int(launches)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: offer track record: %w", err)
	}
	keys := make([]TrackKey, 0, len(book.Records))
	for k, ms := range dist {
		slices.SortFunc(ms, func(a, b readyMinutes) int { return a.min - b.min })
		r := book.Records[k]
		r.ReadyP50, r.ReadyP90 = percentile(ms, r.ReadySamples, 50), percentile(ms, r.ReadySamples, 90)
	}
	for k := range book.Records {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b TrackKey) int {
		if a.OfferID != b.OfferID {
			if a.OfferID < b.OfferID {
				return -1
			}
			return 1
		}
		return a.Nodes - b.Nodes
	})
	for _, k := range keys {
		fmt.Fprintf(h, "%s|%d|%+v;", k.OfferID, k.Nodes, *book.Records[k])
	}
	book.Stamp = strconv.FormatUint(h.Sum64(), 36)
	return book, nil
}

// readyMinutes is how many launches were ready in min minutes.
type readyMinutes struct{ min, n int }

// percentile is the nearest-rank p-th percentile of a sorted histogram of n samples.
func percentile(ms []readyMinutes, n, p int) int {
	rank := max((n*p+99)/100, 1) // nearest rank, 1-based
	seen := 0
	for _, m := range ms {
		seen += m.n
		if seen >= rank {
			return m.min
		}
	}
	return 0
}

// ---- lemons (item 7) ----

// QuarantinedMachines names the provider's machines in quarantine, for
// PlaceRequest.Avoid.
func (s *Store) QuarantinedMachines(ctx context.Context, provider string) ([]string, error) {
	var out []string
	err := s.db.WithContext(ctx).Model(&MachineQuarantine{}).Where("provider = ? AND released_at IS NULL", provider).
		Order("machine").Pluck("machine", &out).Error
	return out, err
}

// Lemon is a quarantine with the machine's fault history.
type Lemon struct {
	MachineQuarantine
	Faults []MachineFault // newest first
}

// Lemons lists quarantines, those still in force first then the released
// ones of TrackWindow, newest first, each with its machine's faults of
// TrackWindow before it (two queries).
func (s *Store) Lemons(ctx context.Context) ([]Lemon, error) {
	db := s.db.WithContext(ctx)
	since := s.Now().Add(-TrackWindow)
	var qs []MachineQuarantine
	if err := db.Where("released_at IS NULL OR released_at >= ?", since).
		Order("CASE WHEN released_at IS NULL THEN 0 ELSE 1 END, quarantined_at DESC, id DESC").Limit(500).Find(&qs).Error; err != nil {
		return nil, err
	}
	out := make([]Lemon, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	machines := make([]string, 0, len(qs))
	for i, q := range qs {
		out[i].MachineQuarantine = q
		machines = append(machines, q.Machine)
	}
	var faults []MachineFault
	if err := db.Where("machine IN ? AND at >= ?", machines, since.Add(-TrackWindow)).Order("at DESC, id DESC").Find(&faults).Error; err != nil {
		return nil, err
	}
	for i := range out {
		for _, f := range faults {
			if f.Provider == out[i].Provider && f.Machine == out[i].Machine && !f.At.After(out[i].QuarantinedAt) &&
				f.At.After(out[i].QuarantinedAt.Add(-TrackWindow)) {
				out[i].Faults = append(out[i].Faults, f)
			}
		}
	}
	return out, nil
}

// ErrNotQuarantined refuses a release of a quarantine already released.
var ErrNotQuarantined = fmt.Errorf("this machine is not in quarantine: %w", ErrConflict)

// ReleaseMachine is an operator's release of a quarantined machine (item
// 7): placed again from now on; its faults before now no longer count
// towards a new quarantine. Audited.
func (x Actions) ReleaseMachine(ctx context.Context, id int64) (MachineQuarantine, error) {
	var q MachineQuarantine
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		db := tx.db.WithContext(ctx)
		if err := db.Where("id = ?", id).Take(&q).Error; err != nil {
			return nil, notFound(err, "quarantine")
		}
		if q.ReleasedAt != nil {
			return nil, ErrNotQuarantined
		}
		now := tx.Now()
		res := db.Model(&MachineQuarantine{}).Where("id = ? AND released_at IS NULL", id).
			Updates(map[string]any{"released_at": now, "released_by": truncate(x.a.Name, 191)})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			return nil, ErrNotQuarantined
		}
		q.ReleasedAt, q.ReleasedBy = &now, x.a.Name
		return x.audit("machine.release", q.Provider+":"+q.Machine, "released from quarantine ("+q.Reason+")"), nil
	})
	return q, err
}

// ---- time to repair (item 8) ----

// RepairBuckets are the time-to-repair histogram's upper bounds, seconds.
var RepairBuckets = []float64{60, 300, 600, 900, 1800, 3600, 7200, 14400, 43200}

// RepairHistogram is every repair so far: machine declared down → its
// replacement joined.
type RepairHistogram struct {
	Count   uint64
	Sum     float64            // seconds
	Buckets map[float64]uint64 // cumulative, by upper bound
}

// RepairTimes reads the histogram in one query.
func (s *Store) RepairTimes(ctx context.Context) (RepairHistogram, error) {
	sel := "COUNT(*) AS n, COALESCE(SUM(repair_seconds), 0) AS total"
	for i, b := range RepairBuckets {
		sel += fmt.Sprintf(", COALESCE(SUM(CASE WHEN repair_seconds <= %d THEN 1 ELSE 0 END), 0) AS b%d", int(b), i)
	}
	row := s.db.WithContext(ctx).Raw("SELECT " + sel + " FROM machine_faults WHERE repair_seconds IS NOT NULL").Row()
	vals := make([]int64, 2+len(RepairBuckets))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := row.Scan(ptrs...); err != nil {
		return RepairHistogram{}, fmt.Errorf("models: repair times: %w", err)
	}
	h := RepairHistogram{Count: uint64(vals[0]), Sum: float64(vals[1]), Buckets: map[float64]uint64{}}
	for i, b := range RepairBuckets {
		h.Buckets[b] = uint64(vals[2+i])
	}
	return h, nil
}

// RepairSummary is the operator page's figure: repairs of TrackWindow.
type RepairSummary struct {
	Repairs int
	Median  time.Duration
	P90     time.Duration
	Longest time.Duration
}

// RecentRepairs summarises the repairs of TrackWindow (at most the last
// 10,000).
func (s *Store) RecentRepairs(ctx context.Context) (RepairSummary, error) {
	var secs []int
	since := s.Now().Add(-TrackWindow)
	if err := s.db.WithContext(ctx).Model(&MachineFault{}).Where("repair_seconds IS NOT NULL AND repaired_at >= ?", since).
		Order("repaired_at DESC").Limit(10000).Pluck("repair_seconds", &secs).Error; err != nil {
		return RepairSummary{}, err
	}
	r := RepairSummary{Repairs: len(secs)}
	if len(secs) == 0 {
		return r, nil
	}
	slices.Sort(secs)
	at := func(p int) time.Duration {
		return time.Duration(secs[max((len(secs)*p+99)/100, 1)-1]) * time.Second
	}
	r.Median, r.P90, r.Longest = at(50), at(90), time.Duration(secs[len(secs)-1])*time.Second
	return r, nil
}
