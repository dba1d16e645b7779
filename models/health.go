package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Recovery modes (R3).
const (
	RecoveryRestart = "restart"
	RecoveryOff     = "off"
)

// HealthStatuses are the statuses whose machines a health pass checks (R1);
// a verifying cluster's too, so a machine lost mid-verification is swapped
// or named at once (X13).
var HealthStatuses = []ClusterStatus{StatusInstalling, StatusVerifying, StatusReady, StatusDegraded}

// RecoveryPolicy is a cluster's opt-in automatic recovery (R3).
type RecoveryPolicy struct {
	Mode            string `json:"mode"`
	MaxAttempts     int    `json:"maxAttempts"`
	CooldownMinutes int    `json:"cooldownMinutes"`
}

// Validate reports each field's problem (mode restart|off, 1–10 attempts,
// 1–120 minutes of cooldown).
func (p RecoveryPolicy) Validate() FieldErrors {
	fe := FieldErrors{}
	if p.Mode != RecoveryRestart && p.Mode != RecoveryOff {
		fe["mode"] = "Choose restart or off."
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > 10 {
		fe["maxAttempts"] = "Between 1 and 10 attempts."
	}
	if p.CooldownMinutes < 1 || p.CooldownMinutes > 120 {
		fe["cooldownMinutes"] = "Between 1 and 120 minutes."
	}
	return fe
}

// DefaultRecoveryPolicy is what the policy form offers before one is set
// (R3): off, and 3 attempts 5 minutes apart once turned on.
var DefaultRecoveryPolicy = RecoveryPolicy{Mode: RecoveryOff, MaxAttempts: 3, CooldownMinutes: 5}

// PolicyForm is the policy the form starts from: the cluster's own, with
// DefaultRecoveryPolicy's numbers where none were set (R3).
func (c Cluster) PolicyForm() RecoveryPolicy {
	p := c.Policy()
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultRecoveryPolicy.MaxAttempts
	}
	if p.CooldownMinutes == 0 {
		p.CooldownMinutes = DefaultRecoveryPolicy.CooldownMinutes
	}
	return p
}

// Policy is the cluster's recovery policy; mode off when none was set.
func (c Cluster) Policy() RecoveryPolicy {
	p := RecoveryPolicy{Mode: c.RecoveryMode, MaxAttempts: c.RecoveryMaxAttempts, CooldownMinutes: c.RecoveryCooldownMinutes}
	if p.Mode == "" {
		p.Mode = RecoveryOff
	}
	return p
}

// MachineOutcome is what one recovery attempt did to one machine (R4).
type MachineOutcome struct {
	Node    string `json:"node"`
	Outcome string `json:"outcome"` // restarted, skipped (cannot be recovered), failed
	Message string `json:"message,omitempty"`
}

// Machine outcomes of a recovery attempt.
const (
	OutcomeRestarted = "restarted"
	OutcomeSkipped   = "skipped"
	OutcomeFailed    = "failed"
)

// Recovery is R4's report: the policy, the open episode and the last attempt.
type Recovery struct {
	RecoveryPolicy
	EpisodeStartedAt *time.Time
	AttemptsUsed     int
	LastAttemptAt    *time.Time
	Outcomes         []MachineOutcome
	NextAttemptAt    *time.Time // automatic attempts wait for it (cooldown)
	Requested        bool       // a "recover now" waits for the recovery job
	Exhausted        bool
}

// Recovery reports the cluster's recovery (R4).
func (c Cluster) Recovery() Recovery {
	r := Recovery{RecoveryPolicy: c.Policy(), EpisodeStartedAt: c.EpisodeStartedAt, AttemptsUsed: c.RecoveryAttempts,
		LastAttemptAt: c.RecoveryLastAt, NextAttemptAt: c.RecoveryNextAt, Requested: c.RecoverRequestedAt != nil,
		Exhausted: c.Problem().Kind == KindRecoveryExhausted}
	r.Outcomes = c.RecoveryOutcome.V
	return r
}

// RecoveryDue reports whether the recovery job should make an attempt now:
// "recover now" was asked, or the policy allows one and its cooldown is over.
func (c Cluster) RecoveryDue(now time.Time) bool {
	if !c.CanRecoverNow() {
		return false
	}
	if c.RecoverRequestedAt != nil {
		return true
	}
	return c.RecoveryMode == RecoveryRestart && c.RecoveryAttempts < c.RecoveryMaxAttempts &&
		(c.RecoveryNextAt == nil || !now.Before(*c.RecoveryNextAt))
}

// RecoverySpent reports R5's end: the policy's attempts are used and the
// last cooldown passed without the cluster becoming healthy.
func (c Cluster) RecoverySpent(now time.Time) bool {
	return c.Status == StatusDegraded && c.EpisodeStartedAt != nil && c.RecoveryMode == RecoveryRestart &&
		c.RecoveryAttempts >= c.RecoveryMaxAttempts && c.Problem().Kind != KindRecoveryExhausted &&
		c.RecoverRequestedAt == nil && (c.RecoveryNextAt == nil || !now.Before(*c.RecoveryNextAt))
}

// ---- health passes (R1, R2) ----

// LiveClustersAfter is one batch of a health pass: clusters whose machines
// are checked, by id after afterID, with the columns a pass decides on. A
// cluster being stopped is left out: its machines go down on purpose (B6).
func (s *Store) LiveClustersAfter(ctx context.Context, afterID string, limit int) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Select("id, org_id, status, provider, episodes, episode_started_at, degraded_from, "+
		"terminate_requested_at, last_error").Where("status IN ? AND id > ? AND stop_requested_at IS NULL", HealthStatuses, afterID).
		Order("id").Limit(limit).Find(&out).Error
	return out, err
}

// HealthNodes loads the machines of a batch of clusters in one query, with
// the columns a pass decides on (scanned by hand: a pass reads every
// machine of the fleet, and reflection per row is most of its cost).
func (s *Store) HealthNodes(ctx context.Context, clusterIDs []string) (map[string][]ClusterNode, error) {
	out := make(map[string][]ClusterNode, len(clusterIDs))
	rows, err := s.db.WithContext(ctx).Model(&ClusterNode{}).
		Select("id, cluster_id, rank, name, status, mesh_at, heartbeat_at, down_since, down_passes, hw_fault").
		Where("cluster_id IN ?", clusterIDs).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n ClusterNode
		if err := rows.Scan(&n.ID, &n.ClusterID, &n.Rank, &n.Name, &n.Status, &n.MeshAt, &n.HeartbeatAt, &n.DownSince, &n.DownPasses, &n.HWFault); err != nil {
			return nil, err
		}
		out[n.ClusterID] = append(out[n.ClusterID], n)
	}
	return out, rows.Err()
}

// HealthMarks is what one health pass writes for a batch in at most two
// statements: machines seen unwell (their condition's clock starts or goes
// on) and machines well again (the clock and a down status are cleared).
type HealthMarks struct {
	Unwell []string // node ids
	Well   []string // node ids that were unwell or down
}

// MarkHealth writes a batch's marks.
func (s *Store) MarkHealth(ctx context.Context, m HealthMarks) error {
	db := s.db.WithContext(ctx)
	if len(m.Unwell) > 0 {
		if err := db.Exec("UPDATE cluster_nodes SET down_since = COALESCE(down_since, ?), down_passes = down_passes + 1 WHERE id IN ?",
			s.Now(), m.Unwell).Error; err != nil {
			return err
		}
	}
	if len(m.Well) > 0 {
		return db.Exec("UPDATE cluster_nodes SET down_since = NULL, down_passes = 0, seen = '', message = '', "+
			"status = CASE WHEN status NOT IN (?, ?) THEN status WHEN step = ? THEN ? ELSE ? END WHERE id IN ?",
			NodeDown, NodeRestarting, StepSoftware, NodeInstalling, NodeReady, m.Well).Error
	}
	return nil
}

// DownMachine is a machine a health pass declared unhealthy and what it saw.
type DownMachine struct {
	Rank int
	Name string
	Seen string // e.g. "stopped at the provider (instance stopped)"
	// Evidence is what Seen rests on (X19): EvidenceProvider (the
	// default) or EvidenceTenant (the machine's own agent: a GPU error it
	// reported, its silence).
	Evidence string
}

// MarkMachinesDown is R2: machines that left running after admission. A
// ready or installing cluster becomes degraded (a new unhealthy episode,
// one mail); a degraded one records them. Each machine reads down with what
// was seen; billing is untouched.
func (s *Store) MarkMachinesDown(ctx context.Context, c Cluster, downs []DownMachine, n *ClusterNotify) (Cluster, error) {
	slices.SortFunc(downs, func(a, b DownMachine) int { return a.Rank - b.Rank })
	names := make([]string, len(downs))
	for i, d := range downs {
		names[i] = d.Name + ": " + d.Seen
	}
	msg := "Machine down after admission — " + strings.Join(names, "; ") + ". Billing continues at the locked rate."
	set := map[string]any{}
	ch := change{event: EventMachineDown, node: downs[0].Name, step: "health", msg: msg, set: set,
		guard: "terminate_requested_at IS NULL", notify: n, try: c.Episodes + 1}
	if c.Status == StatusDegraded {
		ch.event, ch.notify, ch.kind = EventHealthNoted, nil, "error"
	} else {
		set["degraded_from"] = string(c.Status)
		set["last_error"] = truncateWords(MachinesDown(strings.Join(names, "; ")).String(), 255) // the mail quotes it: never cut mid-word
	}
	if c.EpisodeStartedAt == nil {
		set["episode_started_at"], set["episodes"] = s.Now(), c.Episodes+1
		set["recovery_attempts"], set["recovery_next_at"], set["recover_requested_at"] = 0, nil, nil
	}
	ch.nodes = func(tx *Store) error {
		for _, d := range downs {
			if err := tx.nodeRows(ctx, c.ID, map[string]any{"status": NodeDown, "seen": truncate(d.Seen, 255),
				"message": truncate(d.Seen, 1000)}, "rank = ?", d.Rank); err != nil {
				return err
			}
		}
		return tx.recordDowns(ctx, c, downs) // faults, lemons, time to repair (track.go)
	}
	return s.transition(ctx, c.ID, ch)
}

// MarkHealthy closes an unhealthy episode: every machine is healthy again.
// A cluster degraded by a machine returns to where it was (ready, with a
// "healthy again" mail, or installing); one degraded by its software stays
// degraded (L6).
func (s *Store) MarkHealthy(ctx context.Context, c Cluster, n *ClusterNotify) (Cluster, error) {
	set := map[string]any{"episode_started_at": nil, "recovery_attempts": 0, "recovery_next_at": nil,
		"recover_requested_at": nil, "degraded_from": "", "damped_at": nil}
	msg := "Every machine is healthy again."
	switch c.DegradedFrom {
	case string(StatusReady), string(StatusInstalling):
		ev := EventHealthy
		if c.DegradedFrom == string(StatusInstalling) {
			ev = EventHealthyInstall
		}
		set["last_error"] = ""
		return s.transition(ctx, c.ID, change{event: ev, set: set, msg: msg, step: "health", notify: n, try: c.Episodes, topic: "healthy",
			guard: "degraded_from = ? AND episode_started_at IS NOT NULL", args: []any{c.DegradedFrom}})
	}
	return s.transition(ctx, c.ID, change{event: EventHealthNoted, set: set, kind: "info", step: "health",
		msg: msg + " The cluster stays degraded by its software.", guard: "episode_started_at IS NOT NULL"})
}

// BeginRecoveryAttempt claims one recovery attempt (R3, R5) with a
// compare-and-swap on the attempts used, so two instances never make the
// same attempt; the cooldown starts now. ErrConflict when someone else
// claimed it or the cluster moved.
func (s *Store) BeginRecoveryAttempt(ctx context.Context, c Cluster) (Cluster, error) {
	now := s.Now()
	how := "automatic"
	if c.RecoverRequestedAt != nil {
		how = "recover now"
	}
	max := "no automatic attempts"
	if c.RecoveryMode == RecoveryRestart {
		max = fmt.Sprintf("of %d", c.RecoveryMaxAttempts)
	}
	return s.transition(ctx, c.ID, change{event: EventRecoveryAttempt, kind: "info", step: "recovery",
		msg:   fmt.Sprintf("Recovery attempt %d (%s, %s): restarting the machines that are down, one by one.", c.RecoveryAttempts+1, max, how),
		guard: "recovery_attempts = ? AND episode_started_at IS NOT NULL AND terminate_requested_at IS NULL", args: []any{c.RecoveryAttempts},
		set: map[string]any{"recovery_attempts": c.RecoveryAttempts + 1, "recovery_last_at": now,
			"recovery_next_at": now.Add(time.Duration(max1(c.RecoveryCooldownMinutes)) * time.Minute), "recover_requested_at": nil}})
}

func max1(n int) int { return max(n, 1) }

// FinishRecoveryAttempt records each machine's outcome of the attempt (R4):
// restarted machines read restarting until a health pass sees them running.
func (s *Store) FinishRecoveryAttempt(ctx context.Context, clusterID string, outcomes []MachineOutcome) error {
	raw, _ := json.Marshal(outcomes)
	parts := make([]string, len(outcomes))
	for i, o := range outcomes {
		parts[i] = o.Node + " " + o.Outcome
		if o.Message != "" {
			parts[i] += " (" + o.Message + ")"
		}
	}
	return s.Tx(ctx, func(tx *Store) error {
		if err := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ?", clusterID).
			Updates(map[string]any{"recovery_outcome": string(raw), "updated_at": tx.Now()}).Error; err != nil {
			return err
		}
		for _, o := range outcomes {
			if o.Outcome == OutcomeRestarted {
				if err := tx.nodeRows(ctx, clusterID, map[string]any{"status": NodeRestarting, "message": "Restarted by recovery.",
					"hw_fault": "", "hw_fault_at": nil}, // the restart is the cure: a GPU still broken reports again
					"name = ? AND status = ?", o.Node, NodeDown); err != nil {
					return err
				}
			}
		}
		c, err := tx.ClusterByID(ctx, clusterID)
		if err != nil {
			return err
		}
		for _, o := range outcomes { // R3, R4: each machine's own event names it
			kind, msg := "step", o.Node+" restarted in place through its provider (the same machine and address); it reads restarting until a health pass sees it running."
			switch o.Outcome {
			case OutcomeSkipped:
				kind, msg = "error", o.Node+" skipped: "+o.Message+"."
			case OutcomeFailed:
				kind, msg = "error", o.Node+" could not be restarted: "+o.Message+"."
			}
			if err := tx.addEvent(ctx, c, c.Status, kind, o.Node, "recovery", msg); err != nil {
				return err
			}
		}
		return tx.addEvent(ctx, c, c.Status, "info", "", "recovery", "Recovery attempt done: "+strings.Join(parts, "; ")+".")
	})
}

// MarkRecoveryExhausted is R5's end: still degraded, lastError
// recovery_exhausted, one mail. Terminate is the way out.
func (s *Store) MarkRecoveryExhausted(ctx context.Context, c Cluster, n *ClusterNotify) (Cluster, error) {
	return s.transition(ctx, c.ID, change{event: EventRecoveryExhausted, notify: n, always: true, try: c.Episodes,
		step: "recovery", guard: "last_error <> ? AND episode_started_at IS NOT NULL", args: []any{RecoveryExhausted().String()},
		set: map[string]any{"last_error": RecoveryExhausted().String()},
		msg: fmt.Sprintf("Recovery exhausted: %d attempts spent and a machine is still down. Terminate is the way out.", c.RecoveryAttempts)})
}
