package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Verification before hand-over (L3–L6, S2, X4, X5). A cluster
// launched with verification on (the default of every launch surface)
// goes from install (or, without software, from the mesh) to verifying,
// not ready. Every machine's agent runs the machine check (GPUs, ECC and
// row remaps, PCIe link, idle temperature, Xid lines, a short stress);
// then node-0 runs the NCCL all-reduce across every machine with
// NCCL_ALGO=Ring, and with three machines or more the pairs (i, i+1)
// run their own all-reduce, so the one slow link shows. The verify job
// (jobs/verify.go) reads every result and decides: all pass → ready; a
// machine that fails is swapped through the Replace path (X5) while swaps
// are left (MaySwapNow); swaps spent, the fabric slow as a whole, or the
// window over → degraded with the report, and the customer keeps the
// cluster as it is or terminates it. A ready cluster may run the same
// checks again ("run verification again"): the same report, no swaps.

// Verification checks (the agent runs "verify:<check>").
const (
	CheckMachine = "machine"
	CheckRing    = "ring"
	CheckPair    = "pair"
)

// VerifyTaskLease is how long a handed-out check may stay unanswered
// before it is handed out again (the agent restarted).
const VerifyTaskLease = 5 * time.Minute

// Documented durations of each check on a real machine, from which the
// benchmark derives the time verification adds before hand-over: the
// machine check (nvidia-smi -q, the kernel log, dcgmi diag -r 1 — DCGM
// documents level 1 as "quick, a few seconds to a minute"), the ring
// all-reduce from 8 B to 8 GB (about two minutes on 8–64 machines), and
// one wave of pairs (about a minute: the pairs of a wave share no machine
// and run at once).
const (
	MachineCheckDuration = time.Minute
	RingCheckDuration    = 2 * time.Minute
	PairWaveDuration     = time.Minute
)

// VerifyChecksDuration is how long the checks take on nodes machines: the
// machine check, the ring, and with three machines or more the waves of
// pairs (two waves, a third for the wrap-around pair of an odd count).
func VerifyChecksDuration(nodes int) time.Duration {
	d := MachineCheckDuration + RingCheckDuration
	switch {
	case nodes < 3:
	case nodes%2 == 1:
		d += 3 * PairWaveDuration
	default:
		d += 2 * PairWaveDuration
	}
	return d
}

// SwapJoinDeadline is how long a swap's replacement may take to join (L4,
// X5): the join job's own deadline for the offer's machine kind, counted
// from its placement — its boot steps (running, agent, mesh), plus the
// software's install window when the cluster runs software.
func (c Cluster) SwapJoinDeadline() time.Duration {
	var placed time.Time
	n := ClusterNode{JoinPlacedAt: &placed}
	step := StepMesh
	if c.Software != "" && c.Software != "none" {
		step = StepSoftware
	}
	return c.JoinDeadline(n, step).Sub(placed)
}

// SwapWindow is the time a verification swap needs: the replacement's join
// deadline and the checks run again on every machine. A swap extends the
// run's deadline to at least the swap's time plus this, so a replacement
// that boots in time is never cut off by the window.
func (c Cluster) SwapWindow() time.Duration {
	return c.SwapJoinDeadline() + VerifyChecksDuration(c.Nodes)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// MaxVerifySwaps is how many machines verification may swap: max(1, nodes/4).
func (c Cluster) MaxVerifySwaps() int { return max(1, c.Nodes/4) }

// VerifyRun is a cluster's current verification: the hand-over's (run 1)
// or a later "run again" (Rerun: never swaps).
type VerifyRun struct {
	ClusterID  string `gorm:"primaryKey;size:32"`
	OrgID      string `gorm:"size:32;index"`
	Run        int
	Rerun      bool
	Status     string `gorm:"size:16;index"`
	Round      int    // counts up after every swap: the checks run again for the new machine set
	Swaps      int
	MaxSwaps   int
	StartedAt  time.Time
	Deadline   time.Time
	FinishedAt *time.Time
	Report     JSON[VerifyReport] `gorm:"type:text"`
	UpdatedAt  time.Time
}

// TableName keeps the table name short and explicit.
func (VerifyRun) TableName() string { return "cluster_verifications" }

// VerifyTask is one check on one node for one run and round.
type VerifyTask struct {
	ID         string                  `gorm:"primaryKey;size:32"` // "vt_…"
	ClusterID  string                  `gorm:"size:32;uniqueIndex:idx_verify_tasks_slot,priority:1"`
	OrgID      string                  `gorm:"size:32"`
	Run        int                     `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:2"`
	Round      int                     `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:3"`
	Check      string                  `gorm:"column:check_kind;size:16;uniqueIndex:idx_verify_tasks_slot,priority:4"`
	Rank       int                     `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:5"`
	Peer       int                     `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:6"` // the pair's other rank; -1 otherwise
	MachineID  string                  `gorm:"size:191"`                                     // the provider's machine id of Rank when planned
	Status     string                  `gorm:"size:8;index"`
	Env        JSON[map[string]string] `gorm:"size:1000"` // exported before the script
	Script     string                  `gorm:"type:text"`
	Output     string                  `gorm:"type:text"`
	CreatedAt  time.Time
	SentAt     *time.Time
	FinishedAt *time.Time
}

// TableName keeps the table name short and explicit.
func (VerifyTask) TableName() string { return "verify_tasks" }

// Finished reports whether the agent answered.
func (t VerifyTask) Finished() bool { return t.Status == TaskOK || t.Status == TaskFailed }

// Node is the task's node name.
func (t VerifyTask) Node() string { return fmt.Sprintf("node-%d", t.Rank) }

// EnvMap decodes the task's environment.
func (t VerifyTask) EnvMap() map[string]string {
	return t.Env.V
}

// IsVerifyTask reports whether an agent's task id is a verification check's.
func IsVerifyTask(taskID string) bool { return strings.HasPrefix(taskID, "vt_") }

// Frozen copies of the tables as migration 0960 created them.
type verifyRun0960 struct {
	ClusterID  string `gorm:"primaryKey;size:32"`
	OrgID      string `gorm:"size:32;index"`
	Run        int
	Rerun      bool
	Status     string `gorm:"size:16;index"`
	Round      int
	Swaps      int
	MaxSwaps   int
	StartedAt  time.Time
	Deadline   time.Time
	FinishedAt *time.Time
	Report     string `gorm:"type:text"`
	UpdatedAt  time.Time
}

func (verifyRun0960) TableName() string { return "cluster_verifications" }

type verifyTask0960 struct {
	ID         string `gorm:"primaryKey;size:32"`
	ClusterID  string `gorm:"size:32;uniqueIndex:idx_verify_tasks_slot,priority:1"`
	OrgID      string `gorm:"size:32"`
	Run        int    `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:2"`
	Round      int    `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:3"`
	Check      string `gorm:"column:check_kind;size:16;uniqueIndex:idx_verify_tasks_slot,priority:4"`
	Rank       int    `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:5"`
	Peer       int    `gorm:"uniqueIndex:idx_verify_tasks_slot,priority:6"`
	MachineID  string `gorm:"size:191"`
	Status     string `gorm:"size:8;index"`
	Env        string `gorm:"size:1000"`
	Script     string `gorm:"type:text"`
	Output     string `gorm:"type:text"`
	CreatedAt  time.Time
	SentAt     *time.Time
	FinishedAt *time.Time
}

func (verifyTask0960) TableName() string { return "verify_tasks" }

func up0960Verification(tx *gorm.DB) error {
	if err := tx.Exec("ALTER TABLE clusters ADD COLUMN verify boolean NOT NULL DEFAULT false").Error; err != nil {
		return err
	}
	return tx.Migrator().CreateTable(&verifyRun0960{}, &verifyTask0960{})
}

// ---- the report ----

// VerifyReport is the hand-over report (X13).
type VerifyReport struct {
	Run        int              `json:"run"`
	Rerun      bool             `json:"rerun"`
	Status     string           `json:"status"` // running, passed, failed
	Summary    string           `json:"summary"`
	StartedAt  time.Time        `json:"startedAt"`
	FinishedAt *time.Time       `json:"finishedAt,omitempty"`
	Thresholds ReportThresholds `json:"thresholds"`
	Machines   []MachineVerdict `json:"machines"`
	Ring       *RingVerdict     `json:"ring,omitempty"`
	Pairs      []PairVerdict    `json:"pairs"`
	MedianPair float64          `json:"medianPairBusBwGBps,omitempty"`
	Swaps      []SwapRecord     `json:"swaps"`
	MaxSwaps   int              `json:"maxSwaps"`
}

// ReportThresholds are the thresholds the report was judged by.
type ReportThresholds struct {
	RingPercent            int `json:"ringPercent"`
	PairBelowMedianPercent int `json:"pairBelowMedianPercent"`
	IdleTempMaxC           int `json:"idleTempMaxC"`
}

// RingVerdict is the all-reduce across every machine.
type RingVerdict struct {
	Status        string  `json:"status"` // pending, passed, failed
	BusBW         float64 `json:"busBwGBps"`
	ExpectedBusBW float64 `json:"expectedBusBwGBps"` // nodespec.RingExpectedBusBW
	// LineRateGBps is what one machine's NICs carry together (0 on the
	// encrypted overlay): the track record shows BusBW as a share of it.
	LineRateGBps float64 `json:"lineRateGBps"`
	// FloorBusBW is the least bus bandwidth that passes: ExpectedBusBW ×
	// ThresholdPercent, or the overlay's floor (Overlay).
	FloorBusBW       float64 `json:"floorBusBwGBps"`
	Overlay          bool    `json:"overlay,omitempty"`
	Percent          int     `json:"percent"` // BusBW as a share of ExpectedBusBW
	ThresholdPercent int     `json:"thresholdPercent"`
	Detail           string  `json:"detail,omitempty"`
}

// Measured is the ring's figures in one phrase: "372.4 GB/s, 99 % of the
// 376.0 GB/s a healthy ring reaches on the NICs (93 % of their line rate;
// at least 85 % required)", or on the encrypted overlay "0.150 GB/s on the
// encrypted overlay (its floor: 0.100 GB/s)".
func (r RingVerdict) Measured() string {
	if r.Overlay || r.LineRateGBps <= 0 {
		return fmt.Sprintf("%s GB/s on the encrypted overlay (its floor: %s GB/s)", nodespec.GBps(r.BusBW), nodespec.GBps(r.FloorBusBW))
	}
	return fmt.Sprintf("%s GB/s, %d %% of the %s GB/s a healthy ring reaches on the NICs (%d %% of their line rate; at least %d %% required)",
		nodespec.GBps(r.BusBW), r.Percent, nodespec.GBps(r.ExpectedBusBW), int(math.Floor(100*r.BusBW/r.LineRateGBps)), r.ThresholdPercent)
}

// SwapRecord is one machine swapped before hand-over.
type SwapRecord struct {
	Node       string    `json:"node"`
	MachineID  string    `json:"machineId,omitempty"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
	Outcome    string    `json:"outcome"` // joining, joined, failed
	NewMachine string    `json:"newMachineId,omitempty"`
	// JoinedAt is when the replacement joined; At is when the swap began.
	JoinedAt *time.Time `json:"joinedAt,omitempty"`
}

// Report decodes the run's report.
func (r VerifyRun) ReportOf() VerifyReport {
	rep := r.Report.V
	if rep.Run == 0 {
		rep = VerifyReport{Run: r.Run, Rerun: r.Rerun, Status: r.Status, StartedAt: r.StartedAt, MaxSwaps: r.MaxSwaps}
	}
	return rep
}

// ---- the swap decision ----

// MaySwapNow is the one decision whether verification may swap a machine
// of c now (X13): never on a "run again", never while another
// machine joins, never past the swaps allowed or the window. It returns
// why not, for the report and the event. The verify job then asks health
// damping (Store.MayRepairAutomatically) too, as recovery does.
func (c Cluster) MaySwapNow(run VerifyRun, nodes []ClusterNode, now time.Time) (bool, string) {
	switch {
	case run.Rerun:
		return false, "a verification run again on a ready cluster never swaps machines"
	case !c.Lifecycle().MaySwapDuringVerify():
		return false, "the cluster is not verifying"
	case run.Swaps >= run.MaxSwaps:
		return false, fmt.Sprintf("the %d swap(s) allowed for %d machines are spent", run.MaxSwaps, c.Nodes)
	case !now.Before(run.Deadline):
		return false, "the verification window is over"
	}
	for _, n := range nodes {
		if n.JoinKind != "" {
			return false, n.Name + " is joining"
		}
	}
	return true, ""
}

// ---- store ----

// VerifyRunFor returns the cluster's current verification run, starting
// run 1 the first time (its window counts from now).
func (s *Store) VerifyRunFor(ctx context.Context, c Cluster) (VerifyRun, error) {
	var run VerifyRun
	err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&run).Error
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return run, err
	}
	now := s.Now()
	run = VerifyRun{ClusterID: c.ID, OrgID: c.OrgID, Run: 1, Status: VerifyRunning, Round: 1, MaxSwaps: c.MaxVerifySwaps(),
		StartedAt: now, Deadline: now.Add(s.settings.Verify.Window), UpdatedAt: now}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&run).Error; err != nil {
		return run, err
	}
	err = s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&run).Error
	return run, err
}

// VerificationFor returns the organisation's cluster's verification run,
// nil when none ran.
func (s *Store) VerificationFor(ctx context.Context, orgID, clusterID string) (*VerifyRun, error) {
	var out []VerifyRun
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ?", orgID, clusterID).Limit(1).Find(&out).Error
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// ClustersVerifying lists the clusters the verify job drives: verifying
// ones and ready ones running verification again, none being terminated.
func (s *Store) ClustersVerifying(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("terminate_requested_at IS NULL").
		Where(s.db.Where("status = ?", StatusVerifying).Or("status = ? AND EXISTS (SELECT 1 FROM cluster_verifications v WHERE v.cluster_id = clusters.id AND v.status = ? AND v.rerun = ?)",
			StatusReady, VerifyRunning, true)).
		Order("created_at, id").Find(&out).Error
	return out, err
}

// VerifyTasks lists a run's tasks (every round) by round, check, rank, peer.
func (s *Store) VerifyTasks(ctx context.Context, clusterID string, run int) ([]VerifyTask, error) {
	var out []VerifyTask
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND run = ?", clusterID, run).
		Order("round, check_kind, rank, peer").Find(&out).Error
	return out, err
}

// NewVerifyTask is a check the verify job plans.
type NewVerifyTask struct {
	Check     string
	Rank      int
	Peer      int // -1 unless a pair
	MachineID string
	Env       map[string]string
	Script    string
}

// AddVerifyTasks plans checks for the run's current round; a slot planned
// already is left alone. ErrConflict once the run moved on.
func (s *Store) AddVerifyTasks(ctx context.Context, c Cluster, run VerifyRun, tasks []NewVerifyTask) error {
	return s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&VerifyRun{}).Where("cluster_id = ? AND run = ? AND round = ? AND status = ?",
			c.ID, run.Run, run.Round, VerifyRunning).Update("updated_at", tx.Now())
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: cluster %s verification moved on: %w", c.ID, ErrConflict)
		}
		now := tx.Now()
		for _, nt := range tasks {
			t := VerifyTask{ID: NewID("vt"), ClusterID: c.ID, OrgID: c.OrgID, Run: run.Run, Round: run.Round, Check: nt.Check,
				Rank: nt.Rank, Peer: nt.Peer, MachineID: nt.MachineID, Status: TaskPending, Env: JSONOf(nt.Env), Script: nt.Script, CreatedAt: now}
			if err := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&t).Error; err != nil {
				return fmt.Errorf("models: plan %s check for node-%d: %w", nt.Check, nt.Rank, err)
			}
		}
		return nil
	})
}

// NextVerifyTask hands node n its next check of the cluster's running
// verification and marks it sent: a pending one, or one handed out more
// than VerifyTaskLease ago and never answered. nil when there is none.
func (s *Store) NextVerifyTask(ctx context.Context, c Cluster, n ClusterNode) (*VerifyTask, error) {
	if c.Status != StatusVerifying && c.Status != StatusReady {
		return nil, nil
	}
	var runs []VerifyRun
	if err := s.db.WithContext(ctx).Where("cluster_id = ? AND status = ?", c.ID, VerifyRunning).Limit(1).Find(&runs).Error; err != nil || len(runs) == 0 {
		return nil, err
	}
	run := runs[0]
	now := s.Now()
	due := s.db.Where("status = ?", TaskPending).Or("status = ? AND sent_at < ?", TaskSent, now.Add(-VerifyTaskLease))
	var t VerifyTask
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND run = ? AND round = ? AND rank = ?", c.ID, run.Run, run.Round, n.Rank).
		Where(due).Order("created_at, id").Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res := s.db.WithContext(ctx).Model(&VerifyTask{}).Where("id = ?", t.ID).Where(due).
		Updates(map[string]any{"status": TaskSent, "sent_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, res.Error
	}
	t.Status, t.SentAt = TaskSent, &now
	return &t, nil
}

// RecordVerifyResult stores what node n's agent reported for one of its
// checks. Only that node may answer (ErrNotFound otherwise); an answered
// check changes nothing. The verify job reads it.
func (s *Store) RecordVerifyResult(ctx context.Context, c Cluster, n ClusterNode, taskID string, ok bool, output string) (VerifyTask, error) {
	var out VerifyTask
	err := s.Tx(ctx, func(tx *Store) error {
		err := tx.db.WithContext(ctx).Where("id = ? AND cluster_id = ? AND rank = ?", taskID, c.ID, n.Rank).Take(&out).Error
		if err != nil {
			return notFound(err, "task "+taskID)
		}
		if out.Finished() {
			return nil
		}
		status := TaskFailed
		if ok {
			status = TaskOK
		}
		now := tx.Now()
		out.Status, out.Output, out.FinishedAt = status, tailBytes(cleanOutput(output), MaxCheckOutput), &now
		res := tx.db.WithContext(ctx).Model(&VerifyTask{}).Where("id = ? AND status IN ?", out.ID, []string{TaskPending, TaskSent}).
			Updates(map[string]any{"status": out.Status, "output": out.Output, "finished_at": now})
		if res.Error != nil || res.RowsAffected > 0 {
			return res.Error
		}
		return tx.db.WithContext(ctx).Where("id = ?", out.ID).Take(&out).Error
	})
	return out, err
}

// SaveVerifyReport keeps the run's report as it stands and writes the
// events the job found since (each with its node).
func (s *Store) SaveVerifyReport(ctx context.Context, c Cluster, run VerifyRun, rep VerifyReport, events []VerifyEvent) error {
	return s.Tx(ctx, func(tx *Store) error {
		raw, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		res := tx.db.WithContext(ctx).Model(&VerifyRun{}).Where("cluster_id = ? AND run = ? AND status = ?", c.ID, run.Run, VerifyRunning).
			Updates(map[string]any{"report": string(raw), "updated_at": tx.Now()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: cluster %s verification moved on: %w", c.ID, ErrConflict)
		}
		return tx.verifyEvents(ctx, c, events)
	})
}

// VerifyEvent is one event the verify job writes.
type VerifyEvent struct {
	Kind    string // step, error, info
	Type    string // public type ("" = none): TypeNodeVerificationFailed
	Node    string
	Message string
}

func (s *Store) verifyEvents(ctx context.Context, c Cluster, events []VerifyEvent) error {
	for _, e := range events {
		if err := s.addTypedEvent(ctx, c, c.Status, e.Type, e.Kind, e.Node, StepVerify, e.Message); err != nil {
			return err
		}
	}
	return nil
}

// StepVerify is the step of verification's events.
const StepVerify = "verify"

// SwapForVerification is X13: machine rank failed verification,
// so it is replaced the way Replace does it (X5): the node joins afresh
// with the same rank, name and address, the join job places the new
// machine and releases the old one. The failed machine is never billed:
// its unbilled gap opens at readyAt (or where billing was written up to)
// and closes when the replacement joined. MaySwapNow decides.
func (s *Store) SwapForVerification(ctx context.Context, c Cluster, run VerifyRun, rank int, rep VerifyReport, events []VerifyEvent) error {
	return s.Tx(ctx, func(tx *Store) error {
		cur, err := tx.lockedClusterForOrg(ctx, c.OrgID, c.ID)
		if err != nil {
			return err
		}
		nodes, err := tx.NodesFor(ctx, c.ID)
		if err != nil {
			return err
		}
		if ok, why := cur.MaySwapNow(run, nodes, tx.Now()); !ok {
			return fmt.Errorf("models: swap refused: %s: %w", why, ErrConflict)
		}
		var n ClusterNode
		for _, m := range nodes {
			if m.Rank == rank {
				n = m
			}
		}
		if n.ID == "" {
			return notFound(gorm.ErrRecordNotFound, fmt.Sprintf("node-%d", rank))
		}
		raw, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		now := tx.Now()
		res := tx.db.WithContext(ctx).Model(&VerifyRun{}).Where("cluster_id = ? AND run = ? AND swaps = ? AND status = ?", c.ID, run.Run, run.Swaps, VerifyRunning).
			Updates(map[string]any{"swaps": run.Swaps + 1, "round": run.Round + 1, "report": string(raw), "updated_at": now,
				"deadline": latest(run.Deadline, now.Add(cur.SwapWindow()))}) // L4: the replacement boots and the checks run again
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: cluster %s verification moved on: %w", c.ID, ErrConflict)
		}
		if err := tx.verifyEvents(ctx, cur, events); err != nil {
			return err
		}
		gapFrom := now
		if cur.ReadyAt != nil {
			gapFrom = *cur.ReadyAt
		}
		var marks []UsageMark
		if err := tx.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Limit(1).Find(&marks).Error; err != nil {
			return err
		}
		if len(marks) == 1 && marks[0].BilledUntil.After(gapFrom) {
			gapFrom = marks[0].BilledUntil // written periods are never taken back (B2)
		}
		msg := fmt.Sprintf("%s failed verification and is swapped before hand-over (swap %d of %d): a new machine of the same offer with the same name and address; the failed machine is released and never billed.",
			n.Name, run.Swaps+1, run.MaxSwaps)
		_, err = tx.transition(ctx, c.ID, change{event: EventReplaceRequested, kind: "request", node: n.Name, step: "join", msg: msg,
			guard: "joins = ?", args: []any{cur.Joins}, set: map[string]any{"joins": cur.Joins + 1},
			nodes: func(tx *Store) error {
				res := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ? AND join_kind = ''", n.ID).Updates(map[string]any{
					"status": NodeJoining, "join_kind": JoinReplace, "join_seq": cur.Joins + 1, "join_requested_at": now,
					"join_placed_at": nil, "token_gen": n.TokenGen + 1, "claimed_by": "", "claimed_at": nil,
					"message": "Failed verification: waiting for a replacement machine."})
				if res.Error != nil || res.RowsAffected != 1 {
					return errors.Join(res.Error, fmt.Errorf("models: %s is joining already: %w", n.Name, ErrConflict))
				}
				if err := tx.forgetMachine(ctx, n); err != nil {
					return err // the failed machine's GPUs and fault go with it (X5)
				}
				return tx.db.WithContext(ctx).Create(&BillingGap{ClusterID: c.ID, NodeID: n.ID, StartedAt: gapFrom}).Error
			}})
		return err
	})
}

// FinishVerification ends the run with its report: passed → the cluster is
// handed over (verifying → ready, the ready mail queued); failed → degraded
// with lastError verification_failed:<what> (the degraded mail queued); a
// run again on a ready cluster leaves it ready either way.
func (s *Store) FinishVerification(ctx context.Context, c Cluster, run VerifyRun, rep VerifyReport, what, node, msg string, events []VerifyEvent, n *ClusterNotify) (Cluster, error) {
	var out Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		now := tx.Now()
		status := VerifyPassed
		if what != "" {
			status = VerifyFailed
		}
		rep.Status, rep.FinishedAt = status, &now
		raw, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		res := tx.db.WithContext(ctx).Model(&VerifyRun{}).Where("cluster_id = ? AND run = ? AND status = ?", c.ID, run.Run, VerifyRunning).
			Updates(map[string]any{"status": status, "report": string(raw), "finished_at": now, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: cluster %s verification moved on: %w", c.ID, ErrConflict)
		}
		if err := tx.verifyEvents(ctx, c, events); err != nil {
			return err
		}
		if run.Rerun {
			out = c
			kind := "info"
			if what != "" {
				kind = "error"
			}
			return tx.addEvent(ctx, c, c.Status, kind, node, StepVerify, msg)
		}
		ch := change{event: EventVerified, step: StepVerify, msg: msg, notify: n,
			nodes: func(tx *Store) error {
				return tx.nodeRows(ctx, c.ID, map[string]any{"status": NodeReady, "step": "done", "message": ""}, "join_kind = ''")
			}}
		if what != "" {
			ch = change{event: EventVerifyFailed, step: StepVerify, node: node, msg: msg, notify: n,
				set: map[string]any{"last_error": truncate(VerificationFailed(what).String(), 255)}}
		}
		out, err = tx.transition(ctx, c.ID, ch)
		return err
	})
	return out, err
}

// VerifyAgain is "run verification again" on a ready cluster (X13): the same checks, the same report, no swaps. ErrConflict when
// the cluster is not ready or a verification is running. A ready cluster
// is the customer's: its GPUs run their jobs, so the checks run only when
// the customer confirms the disruption (X13); a *DisruptionError names it
// otherwise.
func (x Actions) VerifyAgain(ctx context.Context, clusterID string, confirmDisruption bool) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		c, err = tx.lockedClusterForOrg(ctx, x.a.OrgID, clusterID)
		if err != nil {
			return nil, err
		}
		if !c.CanVerifyAgain() {
			return nil, fmt.Errorf("models: cluster %s is %s: verification runs again on a ready cluster: %w", c.ID, c.Status, ErrConflict)
		}
		if !confirmDisruption {
			running, err := tx.StartCommandsRunning(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			return nil, &DisruptionError{Cluster: c, StartRunning: running}
		}
		var prev []VerifyRun
		if err := tx.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Limit(1).Find(&prev).Error; err != nil {
			return nil, err
		}
		now := tx.Now()
		run := VerifyRun{ClusterID: c.ID, OrgID: c.OrgID, Run: 1, Rerun: true, Status: VerifyRunning, Round: 1, MaxSwaps: 0,
			StartedAt: now, Deadline: now.Add(tx.settings.Verify.Window), UpdatedAt: now}
		if len(prev) == 1 {
			if !c.Lifecycle().VerifyAgainOffered(prev[0].Status) {
				return nil, fmt.Errorf("models: cluster %s is verifying already: %w", c.ID, ErrConflict)
			}
			run.Run = prev[0].Run + 1
			if err := tx.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Delete(&VerifyRun{}).Error; err != nil {
				return nil, err
			}
		}
		if err := tx.db.WithContext(ctx).Create(&run).Error; err != nil {
			return nil, err
		}
		if err := tx.addEvent(ctx, c, c.Status, "request", "", StepVerify, fmt.Sprintf(
			"Verification run %d requested by %s, who confirmed the disruption: every machine and the fabric are checked again on the cluster's GPUs; nothing is swapped.", run.Run, x.a.Name)); err != nil {
			return nil, err
		}
		return x.audit("cluster.verify_again", c.ID, fmt.Sprintf("run %d", run.Run)), nil
	})
	return c, err
}

// KeepUnverified is the customer's "keep it as it is" after verification
// failed (X13): degraded → ready, the report stays. ErrConflict
// unless the cluster is degraded by verification.
func (x Actions) KeepUnverified(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		cur, err := tx.lockedClusterForOrg(ctx, x.a.OrgID, clusterID)
		if err != nil {
			return nil, err
		}
		if !cur.CanKeepUnverified() {
			return nil, fmt.Errorf("models: cluster %s is %s (%s), not degraded by verification: %w", cur.ID, cur.Status, cur.LastError, ErrConflict)
		}
		c, err = tx.transition(ctx, cur.ID, change{event: EventKeepUnverified, step: StepVerify, set: map[string]any{"last_error": ""},
			msg: fmt.Sprintf("%s keeps the cluster as it is after verification failed (%s); it is handed over as it stands.", x.a.Name, cur.LastError),
			nodes: func(tx *Store) error {
				return tx.nodeRows(ctx, cur.ID, map[string]any{"status": NodeReady, "step": "done"}, "join_kind = ''")
			}})
		if err != nil {
			return nil, err
		}
		return x.audit("cluster.keep_unverified", c.ID, cur.LastError), nil
	})
	return c, err
}

// CanVerifyAgain reports whether "run verification again" applies: ready,
// not being terminated or stopped, no machine joining.
func (c Cluster) CanVerifyAgain() bool { return c.Lifecycle().CanVerifyAgain() }

// CanKeepUnverified reports whether "keep it as it is" applies: degraded
// by a failed verification, not being terminated.
func (c Cluster) CanKeepUnverified() bool { return c.Lifecycle().CanKeepUnverified() }
