package models

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The GPU watch (X15): per cluster, the stall
// alert (on by default, with an off switch) and the idle rule (opt-in: off
// by default, as the seeds promise no idle stop, L7), with the episode each
// has open so an alert is sent once per episode, not every tick. A cluster
// without a row has the defaults.

// Watch defaults and bounds.
const (
	DefaultIdleBelowPct     = 5
	DefaultIdleHours        = 2
	DefaultIdleGraceMinutes = 60
	MaxStallMinutes         = 60 // the stall rule reads the last hour's minute points
	MaxIdleHours            = 24 // the idle rule reads the last day's points
)

// GPUWatch is one cluster's watch settings and its open episodes.
type GPUWatch struct {
	ClusterID string `gorm:"primaryKey;size:32"`
	OrgID     string `gorm:"size:32;not null;index"`

	StallOff     bool // the off switch: no stall alert
	StallMinutes int  // how long a stall must hold; 0 = DefaultStallMinutes

	IdleOn           bool   // the opt-in
	IdleBelowPct     int    // every GPU below this percent is idle
	IdleHours        int    // idle this long: mail
	IdleAction       string `gorm:"size:16;not null;default:''"` // IdleMail, IdleStop or IdleTerminate
	IdleGraceMinutes int    // after the mail, this long before the stop or terminate

	// The open stall episode: its key (kind and machines), when it began,
	// what was said. "" = none.
	StallKey     string `gorm:"size:1000;not null;default:''"`
	StallSince   *time.Time
	StallMessage string `gorm:"size:1000;not null;default:''"`
	// The open idle episode: when every GPU went idle, the mail, the action.
	IdleSince    *time.Time
	IdleMailedAt *time.Time
	IdleActedAt  *time.Time

	UpdatedAt time.Time
}

// TableName implements gorm's Tabler.
func (GPUWatch) TableName() string { return "cluster_gpu_watches" }

func up0985GpuWatch(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		`CREATE TABLE cluster_gpu_watches (
			cluster_id varchar(32) PRIMARY KEY,
			org_id varchar(32) NOT NULL,
			stall_off boolean NOT NULL DEFAULT false,
			stall_minutes integer NOT NULL DEFAULT 0,
			idle_on boolean NOT NULL DEFAULT false,
			idle_below_pct integer NOT NULL DEFAULT 0,
			idle_hours integer NOT NULL DEFAULT 0,
			idle_action varchar(16) NOT NULL DEFAULT '',
			idle_grace_minutes integer NOT NULL DEFAULT 0,
			stall_key varchar(1000) NOT NULL DEFAULT '',
			stall_since ` + ts + `,
			stall_message varchar(1000) NOT NULL DEFAULT '',
			idle_since ` + ts + `,
			idle_mailed_at ` + ts + `,
			idle_acted_at ` + ts + `,
			updated_at ` + ts + ` NOT NULL
		)`,
		"CREATE INDEX idx_cluster_gpu_watches_org_id ON cluster_gpu_watches (org_id)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// WatchPolicy is what a customer sets: the stall alert and the idle rule.
type WatchPolicy struct {
	StallOff         bool
	StallMinutes     int
	IdleOn           bool
	IdleBelowPct     int
	IdleHours        int
	IdleAction       string
	IdleGraceMinutes int
}

// DefaultWatchPolicy is a cluster's policy until someone sets one: stall
// alerts after 10 minutes, no idle rule.
func DefaultWatchPolicy() WatchPolicy {
	return WatchPolicy{StallMinutes: DefaultStallMinutes, IdleBelowPct: DefaultIdleBelowPct, IdleHours: DefaultIdleHours,
		IdleAction: IdleMail, IdleGraceMinutes: DefaultIdleGraceMinutes}
}

// Validate names each field out of bounds (API names: stall.minutes,
// idle.thresholdPct, idle.hours, idle.action, idle.graceMinutes).
func (p WatchPolicy) Validate() FieldErrors {
	fe := FieldErrors{}
	if p.StallMinutes < 2 || p.StallMinutes > MaxStallMinutes {
		fe["stall.minutes"] = fmt.Sprintf("From 2 to %d minutes.", MaxStallMinutes)
	}
	if p.IdleBelowPct < 1 || p.IdleBelowPct > 50 {
		fe["idle.thresholdPct"] = "From 1 to 50 percent utilization."
	}
	if p.IdleHours < 1 || p.IdleHours > MaxIdleHours {
		fe["idle.hours"] = fmt.Sprintf("From 1 to %d hours.", MaxIdleHours)
	}
	switch p.IdleAction {
	case IdleMail, IdleStop, IdleTerminate:
	default:
		fe["idle.action"] = "Choose mail, stop or terminate."
	}
	if p.IdleGraceMinutes < 10 || p.IdleGraceMinutes > 24*60 {
		fe["idle.graceMinutes"] = "From 10 to 1440 minutes."
	}
	return fe
}

// Policy is the row's settings, with defaults for what was never set.
func (w GPUWatch) Policy() WatchPolicy {
	p := DefaultWatchPolicy()
	p.StallOff, p.IdleOn = w.StallOff, w.IdleOn
	if w.StallMinutes > 0 {
		p.StallMinutes = w.StallMinutes
	}
	if w.IdleBelowPct > 0 {
		p.IdleBelowPct = w.IdleBelowPct
	}
	if w.IdleHours > 0 {
		p.IdleHours = w.IdleHours
	}
	if w.IdleAction != "" {
		p.IdleAction = w.IdleAction
	}
	if w.IdleGraceMinutes > 0 {
		p.IdleGraceMinutes = w.IdleGraceMinutes
	}
	return p
}

// StallRule is the stall rule the policy sets.
func (p WatchPolicy) StallRule() StallRule {
	return StallRule{For: time.Duration(p.StallMinutes) * time.Minute, IdleBelow: DefaultStallIdleBelow, BusyAbove: DefaultStallBusyAbove}
}

// IdleRule is the idle rule the policy sets.
func (p WatchPolicy) IdleRule() IdleRule {
	return IdleRule{Below: float64(p.IdleBelowPct), For: time.Duration(p.IdleHours) * time.Hour}
}

// Sentence says the policy in words, for events, the audit log and pages.
func (p WatchPolicy) Sentence() string {
	stall := fmt.Sprintf("stall alerts after %d minutes", p.StallMinutes)
	if p.StallOff {
		stall = "stall alerts off"
	}
	idle := "idle rule off"
	if p.IdleOn {
		idle = fmt.Sprintf("when every GPU has been below %d %% for %d h: ", p.IdleBelowPct, p.IdleHours)
		switch p.IdleAction {
		case IdleStop:
			idle += fmt.Sprintf("mail a warning, then stop the cluster %d minutes later", p.IdleGraceMinutes)
		case IdleTerminate:
			idle += fmt.Sprintf("mail a warning, then terminate the cluster %d minutes later", p.IdleGraceMinutes)
		default:
			idle += "mail the owners"
		}
	}
	return stall + "; " + idle
}

// GPUWatchFor is a cluster's watch, through its organisation (A3); the
// defaults when none was set. ErrNotFound for another organisation's.
func (s *Store) GPUWatchFor(ctx context.Context, orgID, clusterID string) (GPUWatch, error) {
	c, err := s.ClusterForOrg(ctx, orgID, clusterID)
	if err != nil {
		return GPUWatch{}, err
	}
	return s.gpuWatch(ctx, c)
}

func (s *Store) gpuWatch(ctx context.Context, c Cluster) (GPUWatch, error) {
	var w GPUWatch
	err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return GPUWatch{ClusterID: c.ID, OrgID: c.OrgID}, nil
	}
	return w, err
}

// saveWatch writes w whole (insert or update).
func (s *Store) saveWatch(ctx context.Context, w GPUWatch) error {
	w.UpdatedAt = s.Now()
	return s.db.WithContext(ctx).Save(&w).Error
}

// SetGPUWatch sets a cluster's watch policy (X15), with its
// event and audit entry. Out-of-bounds fields are FieldErrors and change
// nothing; an ended cluster is ErrConflict. Turning the idle rule off or
// changing it closes the idle episode: a warning already mailed does not
// lead to a stop the customer no longer asked for.
func (x Actions) SetGPUWatch(ctx context.Context, clusterID string, p WatchPolicy) (GPUWatch, error) {
	if fe := p.Validate(); len(fe) > 0 {
		return GPUWatch{}, fe
	}
	var w GPUWatch
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		c, err := tx.ClusterForOrg(ctx, x.a.OrgID, clusterID)
		if err != nil {
			return nil, err
		}
		if c.Ending() {
			return nil, fmt.Errorf("models: cluster %s has ended: %w", c.ID, ErrConflict)
		}
		if w, err = tx.gpuWatch(ctx, c); err != nil {
			return nil, err
		}
		before := w.Policy()
		w.StallOff, w.StallMinutes = p.StallOff, p.StallMinutes
		w.IdleOn, w.IdleBelowPct, w.IdleHours, w.IdleAction, w.IdleGraceMinutes = p.IdleOn, p.IdleBelowPct, p.IdleHours, p.IdleAction, p.IdleGraceMinutes
		if before != w.Policy() || !p.IdleOn {
			w.IdleSince, w.IdleMailedAt, w.IdleActedAt = nil, nil, nil
		}
		if p.StallOff {
			w.StallKey, w.StallSince, w.StallMessage = "", nil, ""
		}
		if err := tx.saveWatch(ctx, w); err != nil {
			return nil, err
		}
		detail := p.Sentence()
		if err := tx.addEvent(ctx, c, c.Status, "request", "", "gpu", "GPU watch set by "+x.a.Name+": "+detail+"."); err != nil {
			return nil, err
		}
		return x.audit("cluster.gpu_watch", c.ID, detail), nil
	})
	return w, err
}

// launchWatch stores the watch a launch chose, with its event, in the
// launch's transaction.
func (s *Store) launchWatch(ctx context.Context, c Cluster, p WatchPolicy) error {
	w := GPUWatch{ClusterID: c.ID, OrgID: c.OrgID, StallOff: p.StallOff, StallMinutes: p.StallMinutes, IdleOn: p.IdleOn,
		IdleBelowPct: p.IdleBelowPct, IdleHours: p.IdleHours, IdleAction: p.IdleAction, IdleGraceMinutes: p.IdleGraceMinutes}
	if err := s.saveWatch(ctx, w); err != nil {
		return err
	}
	return s.addEvent(ctx, c, c.Status, "request", "", "gpu", "GPU watch chosen at launch: "+p.Sentence()+".")
}

// WatchedCluster is a live cluster the watch job reads, with its watch.
type WatchedCluster struct {
	Cluster Cluster
	Watch   GPUWatch
}

// ClustersToWatch lists the clusters whose GPUs the watch job judges: ready
// or degraded, not stopping, stopped or ending, not held unbilled by a
// verification (not handed over yet), with their watch rows (the defaults
// where none was set).
func (s *Store) ClustersToWatch(ctx context.Context) ([]WatchedCluster, error) {
	var cs []Cluster
	if err := s.db.WithContext(ctx).Where("status IN ? AND stop_requested_at IS NULL AND terminate_requested_at IS NULL AND unbilled_at IS NULL",
		[]ClusterStatus{StatusReady, StatusDegraded}).Order("created_at, id").Find(&cs).Error; err != nil {
		return nil, err
	}
	out := make([]WatchedCluster, 0, len(cs))
	if len(cs) == 0 {
		return out, nil
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	var ws []GPUWatch
	if err := s.db.WithContext(ctx).Where("cluster_id IN ?", ids).Find(&ws).Error; err != nil {
		return nil, err
	}
	byID := map[string]GPUWatch{}
	for _, w := range ws {
		byID[w.ClusterID] = w
	}
	for _, c := range cs {
		w, ok := byID[c.ID]
		if !ok {
			w = GPUWatch{ClusterID: c.ID, OrgID: c.OrgID}
		}
		out = append(out, WatchedCluster{Cluster: c, Watch: w})
	}
	return out, nil
}

// NoteStall records what the stall rule saw for a cluster (f nil: no stall).
// A new stall (kind or machines differ from the open one) writes its event
// and queues its mail once; the same stall again changes nothing; the end
// of a stall writes one event and closes the episode.
func (s *Store) NoteStall(ctx context.Context, n *ClusterNotify, wc WatchedCluster, f *StallFinding) error {
	return s.Tx(ctx, func(tx *Store) error {
		w, err := tx.gpuWatch(ctx, wc.Cluster)
		if err != nil {
			return err
		}
		c := wc.Cluster
		switch {
		case f == nil && w.StallKey == "":
			return nil
		case f == nil:
			msg := "GPU stall over: " + w.StallMessage
			w.StallKey, w.StallSince, w.StallMessage = "", nil, ""
			if err := tx.saveWatch(ctx, w); err != nil {
				return err
			}
			return tx.addEvent(ctx, c, c.Status, "info", "", "gpu", msg)
		case f.Key() == w.StallKey:
			return nil
		}
		since := f.Since
		w.StallKey, w.StallSince, w.StallMessage = f.Key(), &since, truncate(f.Message, 1000)
		if err := tx.saveWatch(ctx, w); err != nil {
			return err
		}
		node := ""
		if len(f.Apart) == 1 {
			node = f.Apart[0]
		}
		if err := tx.addEvent(ctx, c, c.Status, "warning", node, "gpu", "GPU stall: "+f.Message); err != nil {
			return err
		}
		return tx.queueWatchMail(ctx, n, c, fmt.Sprintf("gpu-stall:%s:%d", c.ID, since.Unix()),
			GPUStallMail{ClusterID: c.ID, Name: c.Name, Shape: c.ShapeLabel(), USDPerHour: c.USDPerHour, Message: f.Message, Link: mailLink(n, c)})
	})
}

// IdleStep is what the idle rule decided on one tick.
type IdleStep string

// Idle steps.
const (
	IdleNothing  IdleStep = ""
	IdleMailed   IdleStep = "mailed"   // the owners were mailed (with the warning when an action follows)
	IdleActed    IdleStep = "acted"    // the stop or terminate was requested
	IdleCanceled IdleStep = "canceled" // work came back after the mail: nothing will happen
)

// NoteIdle records what the idle rule saw for a cluster with the opt-in:
// since is when every GPU went idle (ok false: some GPU works, or the
// telemetry does not say). windowStart is where the series read began: a
// since at it means "at least that long" and does not open a new episode.
// It mails once when the idle time reaches the rule's hours (a warning
// naming the time of the stop or terminate when one follows), requests the
// stop or terminate once the grace after that mail passed with every GPU
// still idle, and closes the episode when work resumes.
func (s *Store) NoteIdle(ctx context.Context, n *ClusterNotify, wc WatchedCluster, since time.Time, ok bool, windowStart time.Time) (IdleStep, error) {
	step := IdleNothing
	err := s.Tx(ctx, func(tx *Store) error {
		w, err := tx.gpuWatch(ctx, wc.Cluster)
		if err != nil || !w.IdleOn {
			return err
		}
		c, p, now := wc.Cluster, w.Policy(), tx.Now()
		if !ok {
			if w.IdleSince == nil {
				return nil
			}
			mailed := w.IdleMailedAt != nil && w.IdleActedAt == nil
			w.IdleSince, w.IdleMailedAt, w.IdleActedAt = nil, nil, nil
			if err := tx.saveWatch(ctx, w); err != nil || !mailed {
				return err
			}
			step = IdleCanceled
			return tx.addEvent(ctx, c, c.Status, "info", "", "gpu", "GPUs at work again: the idle episode is over; nothing will be done.")
		}
		if w.IdleSince == nil || (since.After(*w.IdleSince) && since.After(windowStart)) {
			w.IdleSince, w.IdleMailedAt, w.IdleActedAt = &since, nil, nil // a new episode
		}
		idleFor := now.Sub(*w.IdleSince)
		switch {
		case w.IdleMailedAt == nil && idleFor >= p.IdleRule().For:
			w.IdleMailedAt = &now
			if err := tx.saveWatch(ctx, w); err != nil {
				return err
			}
			step = IdleMailed
			return tx.idleMail(ctx, n, c, p, *w.IdleSince, now)
		case w.IdleMailedAt != nil && w.IdleActedAt == nil && p.IdleAction != IdleMail &&
			!now.Before(w.IdleMailedAt.Add(time.Duration(p.IdleGraceMinutes)*time.Minute)):
			w.IdleActedAt = &now
			if err := tx.saveWatch(ctx, w); err != nil {
				return err
			}
			step = IdleActed
			detail := fmt.Sprintf("every GPU below %d %% since %s", p.IdleBelowPct, w.IdleSince.Format("15:04 MST, 2 Jan"))
			if p.IdleAction == IdleTerminate {
				_, err := tx.RequestTerminate(ctx, c.OrgID, c.ID, "the idle rule ("+detail+")")
				return err
			}
			_, err := tx.RequestStop(ctx, c.OrgID, c.ID, StopByIdle, detail+".")
			return err
		}
		return tx.saveWatch(ctx, w)
	})
	return step, err
}

// idleMail is the event and the mail of an idle episode reaching its hours.
func (s *Store) idleMail(ctx context.Context, n *ClusterNotify, c Cluster, p WatchPolicy, since, now time.Time) error {
	idle := minutes(now.Sub(since))
	what := "Nothing else happens: this cluster's idle rule only mails."
	actAt := now.Add(time.Duration(p.IdleGraceMinutes) * time.Minute)
	if p.IdleAction != IdleMail {
		verb := "stopped (compute billing ends; resume starts every machine again)"
		if p.IdleAction == IdleTerminate {
			verb = "terminated (every machine released; it cannot be started again)"
		}
		what = fmt.Sprintf("Unless a GPU gets to work before %s, the cluster will be %s, as its idle rule asks.", actAt.Format("15:04 MST, 2 Jan"), verb)
	}
	msg := fmt.Sprintf("Every GPU has been below %d %% for %s. %s", p.IdleBelowPct, idle, what)
	if err := s.addEvent(ctx, c, c.Status, "warning", "", "gpu", "Idle: "+msg); err != nil {
		return err
	}
	return s.queueWatchMail(ctx, n, c, fmt.Sprintf("gpu-idle:%s:%d", c.ID, since.Unix()), GPUIdleMail{
		ClusterID: c.ID, Name: c.Name, Shape: c.ShapeLabel(), USDPerHour: c.USDPerHour, BelowPct: p.IdleBelowPct,
		Since: since, IdleMinutes: int(now.Sub(since) / time.Minute), Action: p.IdleAction, ActAt: actAt, Link: mailLink(n, c)})
}

func mailLink(n *ClusterNotify, c Cluster) string {
	base := ""
	if n != nil {
		base = n.BaseURL
	}
	return strings.TrimRight(base, "/") + "/clusters/" + c.ID
}

// queueWatchMail queues one watch mail to the cluster's recipients (E2),
// keyed so a retried tick queues it once.
func (s *Store) queueWatchMail(ctx context.Context, n *ClusterNotify, c Cluster, key string, mail Notification) error {
	if n == nil {
		return nil
	}
	to, err := s.clusterMailRecipients(ctx, c)
	if err != nil {
		return err
	}
	return s.notifyEach(ctx, key, to, mail)
}

// X15: the watch's clocks count from the hand-over. Clusters running
// when this ships count from their billed run's start.
func up1030HandedOver(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	if err := tx.Exec("ALTER TABLE clusters ADD COLUMN handed_over_at " + ts).Error; err != nil {
		return err
	}
	return tx.Exec("UPDATE clusters SET handed_over_at = COALESCE(bill_from, ready_at) WHERE status IN ('ready', 'degraded')").Error
}

// WatchFrom is where the GPU watch's idle and stall clocks start for c
// (X15): the hand-over to the customer (ready after install and
// verification, or again after a resume), never the provisioning,
// install or verification before it, and never before the current billed
// run began.
func (c Cluster) WatchFrom() time.Time {
	var from time.Time
	for _, t := range []*time.Time{c.ReadyAt, c.BillFrom, c.HandedOverAt} {
		if t != nil && t.After(from) {
			from = *t
		}
	}
	return from
}

// Since keeps only the points at or after from: the watch judges nothing
// the machines did before the hand-over (X15).
func (g GPUMinutes) Since(from time.Time) GPUMinutes {
	out := g
	out.Nodes = make([]NodeSeries, len(g.Nodes))
	for i, n := range g.Nodes {
		k := sort.Search(len(n.Points), func(j int) bool { return !n.Points[j].At.Before(from) })
		n.Points = n.Points[k:]
		out.Nodes[i] = n
	}
	return out
}

// minutes is a duration in words: "1 minute", "45 minutes", "2 h", "2 h 30 min".
func minutes(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m == 1:
		return "1 minute"
	case m < 120:
		return fmt.Sprintf("%d minutes", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
