package models

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The product's own history of machines and launches (X2), kept as it happens so that pages read it cheaply:
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
	// How the launch ended (LaunchOutcomes; "" while it is under way),
	// written once by the transition that ends it; added by 0992.
	Outcome string `gorm:"size:24;not null;default:''"`
	Swaps   int    `gorm:"not null;default:0"` // machines verification swapped before the outcome
	// RingMBps is the ring bus bandwidth the launch's verification
	// measured (MB/s), nil when it measured none; LineRateMBps is what one
	// machine's NICs carry (MB/s) as its offer said at launch, 0 for an
	// Ethernet overlay (X13). Added by 0992.
	RingMBps     *int `gorm:"column:ring_mbps"`
	LineRateMBps int  `gorm:"column:line_rate_mbps;not null;default:0"`
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

func up0966MachineTrack(tx *gorm.DB) error {
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
}

func up0992LaunchOutcomes(tx *gorm.DB) error {
	for _, q := range []string{
		"ALTER TABLE launch_records ADD COLUMN outcome varchar(24) NOT NULL DEFAULT ''",
		"ALTER TABLE launch_records ADD COLUMN swaps integer NOT NULL DEFAULT 0",
		"ALTER TABLE launch_records ADD COLUMN ring_mbps integer",
		"ALTER TABLE launch_records ADD COLUMN line_rate_mbps integer NOT NULL DEFAULT 0",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return backfillLaunchOutcomes(tx)
}

// backfillLaunchOutcomes gives every cluster launched before records were
// kept at launch its record, and every record without an outcome the one
// its cluster shows (0992); a record it cannot tell stays under way.
func backfillLaunchOutcomes(tx *gorm.DB) error {
	for _, q := range []string{
		// Launches that never got a record get one now.
		"INSERT INTO launch_records (cluster_id, provider, offer_id, nodes, launched_at) SELECT id, provider, offer_id, nodes, created_at " +
			"FROM clusters WHERE NOT EXISTS (SELECT 1 FROM launch_records r WHERE r.cluster_id = clusters.id)",
		// Outcomes from what the records and the clusters say.
		"UPDATE launch_records SET outcome = 'failed_placing' WHERE tried = 1 AND started = 0",
		"UPDATE launch_records SET outcome = COALESCE((SELECT CASE WHEN c.status = 'failed' THEN 'failed_placing' " +
			"WHEN c.last_error LIKE 'verification_failed%' THEN 'failed_verifying' " +
			"WHEN c.last_error LIKE 'install_failed%' OR c.last_error LIKE 'check_failed%' THEN 'failed_installing' " +
			"WHEN launch_records.ready_seconds IS NOT NULL OR c.status = 'ready' THEN 'ready' " +
			"WHEN c.status IN ('terminated', 'stopped') AND c.ready_at IS NULL THEN 'cancelled' ELSE '' END " +
			"FROM clusters c WHERE c.id = launch_records.cluster_id), '') WHERE outcome = ''",
		"UPDATE launch_records SET outcome = 'ready' WHERE outcome = '' AND ready_seconds IS NOT NULL",
		"UPDATE launch_records SET line_rate_mbps = COALESCE((SELECT o.nics * o.nic_gbps * 125 FROM offers o " +
			"WHERE o.id = launch_records.offer_id), 0) WHERE line_rate_mbps = 0",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
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

// recordLaunch is the accepted launch's record (X2), written with the
// cluster: every launch has one from the start, its outcome pending.
func (s *Store) recordLaunch(ctx context.Context, c Cluster, o Offer) error {
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&LaunchRecord{
		ClusterID: c.ID, Provider: c.Provider, OfferID: c.OfferID, Nodes: c.Nodes, LaunchedAt: c.CreatedAt,
		LineRateMBps: o.NICs * o.NICGbps * 125}).Error
}

// ensureLaunchRecord creates the cluster's record if it has none (a
// cluster launched before records were kept at launch).
func (s *Store) ensureLaunchRecord(ctx context.Context, c Cluster) error {
	var n int64
	if err := s.db.WithContext(ctx).Model(&LaunchRecord{}).Where("cluster_id = ?", c.ID).Count(&n).Error; err != nil || n > 0 {
		return err
	}
	var offers []Offer
	if err := s.db.WithContext(ctx).Select("id", "nics", "nic_gbps").Where("id = ?", c.OfferID).Limit(1).Find(&offers).Error; err != nil {
		return err
	}
	var o Offer
	if len(offers) == 1 {
		o = offers[0]
	}
	return s.recordLaunch(ctx, c, o)
}

// trackTransition keeps the launch's record as the cluster moves (X2). The
// events that end a launch write its outcome, once (the first end wins: a
// retried install or a cluster kept after failing verification stays a
// failure), with the time from the launch to its hand-over and what its
// verification measured. Every transition goes through Store.transition,
// which calls this in its transaction, so no path is missed.
func (s *Store) trackTransition(ctx context.Context, c Cluster, ev Event) error {
	now := s.Now()
	set := map[string]any{}
	outcome, ready := "", false
	handedOver := func() {
		set["ready_unix"] = gorm.Expr("COALESCE(ready_unix, ?)", now.Unix())
	}
	switch ev {
	case EventJoined:
		set["tried"], set["started"] = 1, 1
		handedOver()
		outcome, ready = OutcomeReady, true
	case EventJoinedInstall, EventJoinedVerify:
		set["tried"], set["started"] = 1, 1
	case EventSoftwareReady:
		handedOver()
		outcome, ready = OutcomeReady, true
	case EventVerified:
		handedOver()
		outcome, ready = OutcomeReady, true
	case EventVerifyFailed:
		outcome = OutcomeFailedVerifying
	case EventKeepUnverified:
		handedOver()
	case EventDegrade:
		outcome = OutcomeFailedInstalling
	case EventFail:
		set["tried"] = 1
		set["ended_unix"] = now.Unix()
		outcome = OutcomeFailedPlacing
	case EventStopped:
		outcome = OutcomeCancelled // only while under way: stopped before hand-over
	case EventTerminated:
		set["ended_unix"] = now.Unix()
		outcome = OutcomeCancelled // only while under way: terminated before hand-over
	default:
		return nil
	}
	if err := s.ensureLaunchRecord(ctx, c); err != nil {
		return err
	}
	db := s.db.WithContext(ctx)
	if len(set) > 0 {
		if err := db.Model(&LaunchRecord{}).Where("cluster_id = ?", c.ID).Updates(set).Error; err != nil {
			return err
		}
	}
	if outcome == "" {
		return nil
	}
	end := map[string]any{"outcome": outcome}
	if ev == EventVerified || ev == EventVerifyFailed {
		var runs []VerifyRun
		if err := db.Where("cluster_id = ?", c.ID).Limit(1).Find(&runs).Error; err != nil {
			return err
		}
		if len(runs) == 1 {
			end["swaps"] = runs[0].Swaps
			if runs[0].Swaps > 0 && outcome == OutcomeReady {
				end["outcome"] = OutcomeReadyAfterSwap
			}
			if r := runs[0].ReportOf().Ring; r != nil && r.BusBW > 0 && r.Status != "pending" {
				end["ring_mbps"] = int(math.Round(r.BusBW * 1000))
			}
		}
	}
	if ready {
		end["ready_seconds"] = max(int(now.Sub(c.CreatedAt).Seconds()), 0) // launch accepted → hand-over
	}
	return db.Model(&LaunchRecord{}).Where("cluster_id = ? AND outcome = ''", c.ID).Updates(end).Error
}

// recordFault writes one machine fault and quarantines the machine when
// it is its LemonFaults-th counted one in TrackWindow since its last
// release (X2). evidence says what the fault rests on (X19): a fault
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
// joined (X2).
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

// ---- the track record (X2) ----

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
	// a.Ready/a.Tried > b.Ready/b.Tried, in integers
	if l, r := a.Ready*b.Tried, b.Ready*a.Tried; l != r {
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
	return b.Records[TrackKey{OfferID: offerID, Nodes: nodes}]
}

// trackQuery reads the whole book in one statement (X2, X13). Its first
// part counts the launches of the window by offer, size, outcome and
// minutes to ready; its second, the ring readings by offer, size, tenth of
// a GB/s and line rate. So its rows grow with the offers launched and the
// distinct minutes and readings, never with the launches or the catalog.
// Machine-seconds after ready are summed with the moment passed in.
const trackQuery = "SELECT 0 AS part, offer_id, nodes, outcome, " + readyMinSQL + " AS ready_min, COUNT(*) AS launches, " +
	"SUM(verify_failures) AS verify_failures, SUM(machine_failures) AS machine_failures, " +
	"SUM(CASE WHEN ready_unix IS NULL THEN 0 ELSE nodes * (COALESCE(ended_unix, ?) - ready_unix) END) AS machine_seconds, " +
	"NULL AS ring_min, NULL AS line_rate " +
	"FROM launch_records WHERE launched_at >= ? GROUP BY offer_id, nodes, outcome, " + readyMinSQL +
	" UNION ALL SELECT 1, offer_id, nodes, '', NULL, COUNT(*), 0, 0, 0, MIN(ring_mbps), line_rate_mbps " +
	"FROM launch_records WHERE launched_at >= ? AND ring_mbps IS NOT NULL GROUP BY offer_id, nodes, ring_mbps / 100, line_rate_mbps"

// readyMinSQL is a handed-over launch's minutes to ready, rounded up.
const readyMinSQL = "CASE WHEN outcome IN ('" + OutcomeReady + "', '" + OutcomeReadyAfterSwap + "') THEN (ready_seconds + 59) / 60 END"

// OfferTrack reads every offer's track record (X2) in one query.
// Running machines count their hours up to the start of the current hour,
// so the book (and its Stamp) changes when a launch does, or hourly.
func (s *Store) OfferTrack(ctx context.Context) (*TrackBook, error) {
	now := s.Now()
	hour := now.Truncate(time.Hour)
	since := now.Add(-TrackWindow)
	rows, err := s.db.WithContext(ctx).Raw(trackQuery, hour.Unix(), since, since).Rows()
	if err != nil {
		return nil, fmt.Errorf("models: offer track record: %w", err)
	}
	defer rows.Close()
	book := &TrackBook{Records: map[TrackKey]*TrackRecord{}}
	dist := map[TrackKey][]readyMinutes{}
	rings := map[TrackKey][]ringBucket{}
	h := fnv.New64a()
	for rows.Next() {
		var (
			k                           TrackKey
			part                        int
			outcome                     string
			readyMin, ringMin, lineRate *int64
			launches, vf, mf, machSecs  int64
		)
		if err := rows.Scan(&part, &k.OfferID, &k.Nodes, &outcome, &readyMin, &launches, &vf, &mf, &machSecs, &ringMin, &lineRate); err != nil {
			return nil, fmt.Errorf("models: offer track record: %w", err)
		}
		if part == 1 {
			if ringMin != nil {
				line := int64(0)
				if lineRate != nil {
					line = *lineRate
				}
				rings[k] = append(rings[k], ringBucket{mbps: int(*ringMin), line: int(line), n: int(launches)})
			}
			continue
		}
		r := book.Records[k]
		if r == nil {
			r = &TrackRecord{}
			book.Records[k] = r
		}
		n := int(launches)
		r.Launches += n
		r.Outcomes.Add(outcome, n)
		switch outcome {
		case OutcomeReady, OutcomeReadyAfterSwap:
			r.Tried, r.Started, r.Ready = r.Tried+n, r.Started+n, r.Ready+n
		case OutcomeFailedInstalling, OutcomeFailedVerifying:
			r.Tried, r.Started = r.Tried+n, r.Started+n
		case OutcomeFailedPlacing:
			r.Tried += n
		}
		r.VerifyFailures += int(vf)
		r.MachineFailures += int(mf)
		r.MachineHours += float64(machSecs) / 3600
		if readyMin != nil {
			r.ReadySamples += n
			dist[k] = append(dist[k], readyMinutes{int(*readyMin), n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: offer track record: %w", err)
	}
	for k, ms := range dist {
		slices.SortFunc(ms, func(a, b readyMinutes) int { return a.min - b.min })
		r := book.Records[k]
		r.ReadyP50, r.ReadyP90 = percentile(ms, r.ReadySamples, 50), percentile(ms, r.ReadySamples, 90)
	}
	for k, bs := range rings {
		r := book.Records[k]
		if r == nil { // cannot happen: a reading belongs to a launch of the window
			continue
		}
		r.Ring = ringRecord(bs)
	}
	keys := make([]TrackKey, 0, len(book.Records))
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

// ringBucket is n ring readings within one tenth of a GB/s at one line
// rate, by the lowest of them (MB/s).
type ringBucket struct{ mbps, line, n int }

// ringRecord is the median (nearest rank, to a tenth of a GB/s below) and
// the worst reading (exact) of the buckets.
func ringRecord(bs []ringBucket) RingRecord {
	slices.SortFunc(bs, func(a, b ringBucket) int {
		if a.mbps != b.mbps {
			return a.mbps - b.mbps
		}
		return a.line - b.line
	})
	var out RingRecord
	for _, b := range bs {
		out.Samples += b.n
	}
	reading := func(b ringBucket) RingReading {
		return RingReading{GBps: float64(b.mbps) / 1000, LineRateGBps: float64(b.line) / 1000}
	}
	out.Worst = reading(bs[0])
	rank, seen := max((out.Samples*50+99)/100, 1), 0
	for _, b := range bs {
		if seen += b.n; seen >= rank {
			out.Median = reading(b)
			break
		}
	}
	return out
}

// ---- lemons (X2) ----

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

// ---- time to repair (X2) ----

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
