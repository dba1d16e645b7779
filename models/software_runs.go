package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/models/software"
)

// Software install and check (S1, S2, L5, L6).
//
// After every machine joined, an installing cluster has one SoftwareRun: its
// current attempt and that attempt's deadline. The install job plans
// SoftwareTasks for the attempt (node-0's install first, then every worker's,
// then the software's own check on node-0, repeated until it passes or the
// deadline passes); each node's agent takes its tasks through its heartbeat
// and posts their raw output back. Handlers only hand tasks out and record
// results; the install job reads them and decides every transition.

// Task kinds: the agent runs Exec.Run(kind+":"+software, script).
const (
	TaskInstall = "install"
	TaskCheck   = "check"
)

// Task statuses.
const (
	TaskPending = "pending" // planned, not yet handed to its node
	TaskSent    = "sent"    // handed to its node's agent, no result yet
	TaskOK      = "ok"      // the agent reported success
	TaskFailed  = "failed"  // the agent reported failure (non-zero exit)
)

// Output bounds. An install keeps the tail of its output (errors come
// last); a check keeps enough for `kubectl get nodes -o json` on 64 nodes,
// and an output cut at the bound fails to parse, so it never reads as ready.
const (
	MaxInstallOutput = 64 << 10
	MaxCheckOutput   = 512 << 10
)

// InstallTaskLease is how long a handed-out install may stay unanswered
// before it is handed to its node again (the agent restarted mid-install).
// Install scripts are written to be run twice.
const InstallTaskLease = 10 * time.Minute

// Markers around what node-0's Kubernetes install reports back. The agent
// keeps lines between BEGIN and END CLUSTERDECK markers out of its log.
const (
	kubeconfigBlock  = software.KubeconfigBlock
	joinCommandBlock = software.JoinCommandBlock
)

// InstallWindow is how long one install attempt may take, from readyAt or
// the retry: until then failed checks are retried, after it the cluster is
// degraded (L6). Each software says its own (models/software).
func InstallWindow(name string) time.Duration { return software.Window(name) }

// SoftwareRun is an installing cluster's software state: the attempt, its
// deadline, and what node-0 handed back for the others (Kubernetes' join
// command) and for the customer (the kubeconfig, S1).
type SoftwareRun struct {
	ClusterID        string `gorm:"primaryKey;size:32"`
	OrgID            string `gorm:"size:32;index"`
	Software         string `gorm:"size:16"`
	Attempt          int
	StartedAt        time.Time
	Deadline         time.Time
	JoinCommand      string `gorm:"size:1000"`
	JoinSource       string `gorm:"size:16"` // node or derived
	Kubeconfig       string `gorm:"type:text"`
	KubeconfigSource string `gorm:"size:16"` // "node": node-0 reported it
	UpdatedAt        time.Time
}

// TableName keeps the table name short and explicit.
func (SoftwareRun) TableName() string { return "cluster_software" }

// SoftwareTask is one install or check on one node, for one attempt.
// Installs have Seq 1; checks count up within their attempt.
type SoftwareTask struct {
	ID         string            `gorm:"primaryKey;size:32"`
	ClusterID  string            `gorm:"size:32;uniqueIndex:idx_software_tasks_slot,priority:1"`
	OrgID      string            `gorm:"size:32;index"`
	Attempt    int               `gorm:"uniqueIndex:idx_software_tasks_slot,priority:2"`
	Kind       string            `gorm:"size:16;uniqueIndex:idx_software_tasks_slot,priority:3"`
	Rank       int               `gorm:"uniqueIndex:idx_software_tasks_slot,priority:4"`
	Seq        int               `gorm:"uniqueIndex:idx_software_tasks_slot,priority:5"`
	Software   string            `gorm:"size:16"`
	Role       string            `gorm:"size:32"`
	Status     string            `gorm:"size:8;index"`
	Payload    JSON[TaskPayload] `gorm:"type:text"`
	Output     string            `gorm:"type:text"` // bounded, see MaxInstallOutput
	Summary    string            `gorm:"size:1000"` // a check's verdict, once judged
	CreatedAt  time.Time
	SentAt     *time.Time
	FinishedAt *time.Time
}

// TaskPayload is what the agent gets besides kind, software and role.
type TaskPayload struct {
	Files  map[string]string `json:"files,omitempty"` // path → content, written first
	Env    map[string]string `json:"env,omitempty"`   // exported before the script
	Script string            `json:"script"`
}

// Decode reads the task's payload.
func (t SoftwareTask) Decode() TaskPayload { return t.Payload.V }

// Finished reports whether the agent answered.
func (t SoftwareTask) Finished() bool { return t.Status == TaskOK || t.Status == TaskFailed }

// Node is the task's node name (N1).
func (t SoftwareTask) Node() string { return fmt.Sprintf("node-%d", t.Rank) }

// softwareRun0210 and softwareTask0210 are the tables as migration 0210
// created them (see Migration: later model changes never rewrite history).
type softwareRun0210 struct {
	ClusterID        string `gorm:"primaryKey;size:32"`
	OrgID            string `gorm:"size:32;index"`
	Software         string `gorm:"size:16"`
	Attempt          int
	StartedAt        time.Time
	Deadline         time.Time
	JoinCommand      string `gorm:"size:1000"`
	JoinSource       string `gorm:"size:16"`
	Kubeconfig       string `gorm:"type:text"`
	KubeconfigSource string `gorm:"size:16"`
	UpdatedAt        time.Time
}

func (softwareRun0210) TableName() string { return "cluster_software" }

type softwareTask0210 struct {
	ID         string `gorm:"primaryKey;size:32"`
	ClusterID  string `gorm:"size:32;uniqueIndex:idx_software_tasks_slot,priority:1"`
	OrgID      string `gorm:"size:32;index"`
	Attempt    int    `gorm:"uniqueIndex:idx_software_tasks_slot,priority:2"`
	Kind       string `gorm:"size:16;uniqueIndex:idx_software_tasks_slot,priority:3"`
	Rank       int    `gorm:"uniqueIndex:idx_software_tasks_slot,priority:4"`
	Seq        int    `gorm:"uniqueIndex:idx_software_tasks_slot,priority:5"`
	Software   string `gorm:"size:16"`
	Role       string `gorm:"size:32"`
	Status     string `gorm:"size:8;index"`
	Payload    string `gorm:"type:text"`
	Output     string `gorm:"type:text"`
	Summary    string `gorm:"size:1000"`
	CreatedAt  time.Time
	SentAt     *time.Time
	FinishedAt *time.Time
}

func (softwareTask0210) TableName() string { return "software_tasks" }

func up0210SoftwareTasks(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&softwareRun0210{}, &softwareTask0210{})
}

// Earlier versions stored a made-up kubeconfig (placeholder CA, derived
// token) when node-0 printed none; only node-0's is ever offered now.
func up0231DropGeneratedKubeconfigs(tx *gorm.DB) error {
	return tx.Exec("UPDATE cluster_software SET kubeconfig = '', kubeconfig_source = '' WHERE kubeconfig_source = 'generated'").Error
}

// ---- launch validation (S1) ----

// ValidateSoftware checks a launch's software against the offer's machine
// kind: none ("" too) or a registered software that runs on that kind, e.g.
// Kubernetes only on vm and bare_metal machines (S1, models/software).
func ValidateSoftware(name, machineKind string) FieldErrors {
	if msg := software.Validate(name, machineKind); msg != "" {
		return FieldErrors{"software": msg}
	}
	return nil
}

// ---- the run ----

// SoftwareRunFor returns the cluster's software run, starting attempt 1 the
// first time: its window counts from readyAt (L5).
func (s *Store) SoftwareRunFor(ctx context.Context, c Cluster) (SoftwareRun, error) {
	var run SoftwareRun
	err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&run).Error
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return run, err
	}
	start := s.Now()
	if c.ReadyAt != nil {
		start = c.ReadyAt.UTC()
	}
	run = SoftwareRun{ClusterID: c.ID, OrgID: c.OrgID, Software: c.Software, Attempt: 1,
		StartedAt: start, Deadline: start.Add(InstallWindow(c.Software)), UpdatedAt: s.Now()}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&run).Error; err != nil {
		return run, err
	}
	err = s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&run).Error
	return run, err
}

// holdAttempt makes sure the run is still at attempt, and on PostgreSQL
// locks its row until the transaction ends, so a decision about one attempt
// never lands on the next. ErrConflict when the attempt moved on.
func (s *Store) holdAttempt(ctx context.Context, clusterID string, attempt int) error {
	res := s.db.WithContext(ctx).Model(&SoftwareRun{}).Where("cluster_id = ? AND attempt = ?", clusterID, attempt).
		Update("updated_at", s.Now())
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("models: cluster %s is no longer at install attempt %d: %w", clusterID, attempt, ErrConflict)
	}
	return nil
}

// SoftwareTasks lists one attempt's tasks by kind, rank and seq.
func (s *Store) SoftwareTasks(ctx context.Context, clusterID string, attempt int) ([]SoftwareTask, error) {
	var out []SoftwareTask
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND attempt = ?", clusterID, attempt).
		Order("kind DESC, rank, seq").Find(&out).Error
	return out, err
}

// NewSoftwareTask is a task the install job plans.
type NewSoftwareTask struct {
	Kind    string
	Rank    int
	Seq     int
	Role    string
	Payload TaskPayload
}

// AddSoftwareTasks plans tasks for the cluster's current attempt. A task
// whose slot (attempt, kind, rank, seq) exists already is left alone, so a
// tick that runs twice plans once. ErrConflict when the cluster is no
// longer installing or moved to another attempt.
func (s *Store) AddSoftwareTasks(ctx context.Context, c Cluster, attempt int, tasks []NewSoftwareTask) error {
	return s.Tx(ctx, func(tx *Store) error {
		if err := tx.holdAttempt(ctx, c.ID, attempt); err != nil {
			return err
		}
		cur, err := tx.ClusterByID(ctx, c.ID)
		if err != nil {
			return err
		}
		if cur.Status != StatusInstalling {
			return fmt.Errorf("models: cluster %s is %s, not installing: %w", c.ID, cur.Status, ErrConflict)
		}
		now := tx.Now()
		for _, nt := range tasks {
			t := SoftwareTask{ID: NewID("tk"), ClusterID: c.ID, OrgID: c.OrgID, Attempt: attempt, Kind: nt.Kind,
				Rank: nt.Rank, Seq: max(nt.Seq, 1), Software: c.Software, Role: nt.Role, Status: TaskPending,
				Payload: JSONOf(nt.Payload), CreatedAt: now}
			if err := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&t).Error; err != nil {
				return fmt.Errorf("models: plan %s task for node-%d: %w", nt.Kind, nt.Rank, err)
			}
		}
		return nil
	})
}

// ---- the agent's side (handlers: protocol work only) ----

// NextSoftwareTask hands node n its next task of the current attempt and
// marks it sent: a pending one, or an install handed out more than
// InstallTaskLease ago and never answered. nil when there is none or the
// cluster is not installing.
func (s *Store) NextSoftwareTask(ctx context.Context, c Cluster, n ClusterNode) (*SoftwareTask, error) {
	if c.Status != StatusInstalling {
		return nil, nil
	}
	var run SoftwareRun
	err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Take(&run).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.Now()
	due := s.db.Where("status = ?", TaskPending).
		Or("status = ? AND kind = ? AND sent_at < ?", TaskSent, TaskInstall, now.Add(-InstallTaskLease))
	var t SoftwareTask
	err = s.db.WithContext(ctx).Where("cluster_id = ? AND rank = ? AND attempt = ?", c.ID, n.Rank, run.Attempt).
		Where(due).Order("created_at, seq, id").Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res := s.db.WithContext(ctx).Model(&SoftwareTask{}).Where("id = ?", t.ID).Where(due).
		Updates(map[string]any{"status": TaskSent, "sent_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, res.Error // someone else handed it out: the next heartbeat asks again
	}
	t.Status, t.SentAt = TaskSent, &now
	return &t, nil
}

// RecordSoftwareTaskResult stores what node n's agent reported for one of
// its tasks. The task must belong to that node of that cluster, else
// ErrNotFound. A result for a task already answered changes nothing and
// returns the task as recorded (agents retry posts). An install's outcome
// is an event, with the tail of the output when it failed; node-0's
// Kubernetes install also leaves the join command and the kubeconfig.
// Checks are judged by the install job.
func (s *Store) RecordSoftwareTaskResult(ctx context.Context, c Cluster, n ClusterNode, taskID string, ok bool, output string) (SoftwareTask, error) {
	var out SoftwareTask
	err := s.Tx(ctx, func(tx *Store) error {
		var t SoftwareTask
		err := tx.db.WithContext(ctx).Where("id = ? AND cluster_id = ? AND rank = ?", taskID, c.ID, n.Rank).Take(&t).Error
		if err != nil {
			return notFound(err, "task "+taskID)
		}
		out = t
		if t.Finished() {
			return nil
		}
		output = cleanOutput(output)
		var reported nodeReport
		if t.Kind == TaskInstall && t.Rank == 0 && headReports(t.Software) {
			output, reported = takeKubeReport(output)
		}
		status, limit := TaskFailed, MaxInstallOutput
		if ok {
			status = TaskOK
		}
		if t.Kind == TaskCheck {
			limit = MaxCheckOutput
		}
		now := tx.Now()
		t.Status, t.Output, t.FinishedAt = status, tailBytes(output, limit), &now
		res := tx.db.WithContext(ctx).Model(&SoftwareTask{}).Where("id = ? AND status IN ?", t.ID, []string{TaskPending, TaskSent}).
			Updates(map[string]any{"status": t.Status, "output": t.Output, "finished_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 { // answered meanwhile: return that answer
			return tx.db.WithContext(ctx).Where("id = ?", t.ID).Take(&out).Error
		}
		out = t
		if t.Kind != TaskInstall {
			return nil
		}
		return tx.installOutcome(ctx, c, n, t, reported)
	})
	return out, err
}

// installOutcome writes an install's event and keeps what node-0 reported.
func (s *Store) installOutcome(ctx context.Context, c Cluster, n ClusterNode, t SoftwareTask, rep nodeReport) error {
	if t.Status == TaskFailed {
		msg := fmt.Sprintf("%s: installing %s as %s failed (%s). Output:\n%s",
			n.Name, c.SoftwareLabel(), t.Role, attemptLabel(t.Attempt), tailBytes(t.Output, 1500))
		if err := s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).
			Update("message", tailBytes(msg, 1000)).Error; err != nil {
			return err
		}
		return s.addEvent(ctx, c, c.Status, "error", n.Name, StepSoftware, msg)
	}
	msg := fmt.Sprintf("%s installed %s as %s (%s).", n.Name, t.Software, t.Role, attemptLabel(t.Attempt))
	if t.Rank == 0 && headReports(t.Software) {
		note, err := s.keepKubeReport(ctx, c, n, rep)
		if err != nil {
			return err
		}
		msg += " " + note
	}
	return s.addEvent(ctx, c, c.Status, "step", n.Name, StepSoftware, msg)
}

// ---- decisions (the install job) ----

// RecordCheckVerdict stores the install job's reading of a check's output.
// The verdict is an event when it differs from the attempt's previous one,
// so a check retried every tick does not flood the history.
func (s *Store) RecordCheckVerdict(ctx context.Context, c Cluster, t SoftwareTask, summary string) error {
	summary = truncate(summary, 1000)
	if summary == "" {
		summary = "(no verdict)"
	}
	return s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&SoftwareTask{}).Where("id = ? AND summary = ?", t.ID, "").Update("summary", summary)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var prev []string
		err := tx.db.WithContext(ctx).Model(&SoftwareTask{}).
			Where("cluster_id = ? AND attempt = ? AND kind = ? AND seq < ? AND summary <> ?", t.ClusterID, t.Attempt, TaskCheck, t.Seq, "").
			Order("seq DESC").Limit(1).Pluck("summary", &prev).Error
		if err != nil || (len(prev) == 1 && prev[0] == summary) {
			return err
		}
		return tx.addEvent(ctx, c, c.Status, "step", t.Node(), StepSoftware,
			fmt.Sprintf("%s check on %s (%s, check %d): %s", t.Software, t.Node(), attemptLabel(t.Attempt), t.Seq, summary))
	})
}

// MarkSoftwareReady is L5's end: the software passed its check on every
// node, so the cluster goes installing → ready; every node is ready with
// its software step done, and the ready mail is queued, all at once.
func (s *Store) MarkSoftwareReady(ctx context.Context, clusterID string, attempt int, msg string, n *ClusterNotify) (Cluster, error) {
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.holdAttempt(ctx, clusterID, attempt); err != nil {
			return err
		}
		cur, err := tx.ClusterByID(ctx, clusterID)
		if err != nil {
			return err
		}
		ch := change{event: EventSoftwareReady, step: StepSoftware, msg: msg,
			notify: n, try: attempt, nodes: func(tx *Store) error {
				return tx.nodeRows(ctx, clusterID, map[string]any{"status": NodeReady, "step": "done", "software_at": tx.Now(), "message": ""})
			}}
		if cur.Verify { // X13: verified before hand-over; the ready mail waits for it
			ch.event, ch.notify = EventSoftwareVerify, nil
			ch.msg = strings.Replace(msg, "The cluster is ready.", "Verifying every machine and the fabric before hand-over; verification is not billed, billing restarts at hand-over.", 1)
			ch.set = map[string]any{"unbilled_at": tx.Now()} // X13: verification is not billed
			ch.nodes = func(tx *Store) error {
				return tx.nodeRows(ctx, clusterID, map[string]any{"status": NodeReady, "step": StepVerify, "software_at": tx.Now(), "message": ""})
			}
		}
		c, err = tx.transition(ctx, clusterID, ch)
		return err
	})
	return c, err
}

// DegradeSoftware is L6: the software failed to install or to pass its
// check in time, so the cluster goes installing → degraded with lastError
// (install_failed:node-N or check_failed:<software>). The machines stay up
// and billing runs; the named node keeps the reason; the degraded mail of
// this attempt is queued with the change.
func (s *Store) DegradeSoftware(ctx context.Context, clusterID string, attempt int, lastError LastError, node, msg string, n *ClusterNotify) (Cluster, error) {
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.holdAttempt(ctx, clusterID, attempt); err != nil {
			return err
		}
		var err error
		c, err = tx.transition(ctx, clusterID, change{event: EventDegrade, node: node, step: StepSoftware, msg: msg,
			set: map[string]any{"last_error": truncate(lastError.String(), 255)}, notify: n, try: attempt,
			nodes: func(tx *Store) error {
				if node == "" {
					return nil
				}
				return tx.nodeRows(ctx, clusterID, map[string]any{"message": truncate(msg, 1000)}, "name = ?", node)
			}})
		return err
	})
	return c, err
}

// RetryInstall is the customer's "retry install" (L6): a cluster degraded
// by its software goes degraded → installing with a new attempt and a new
// window from now. Every node installs again (the scripts are safe to run
// twice). ErrNotFound for another organisation's cluster; ErrConflict when
// the cluster is not degraded by its software.
func (s *Store) RetryInstall(ctx context.Context, orgID, clusterID, actor string) (Cluster, error) {
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		cur, err := tx.lockedClusterForOrg(ctx, orgID, clusterID)
		if err != nil {
			return err
		}
		if !cur.CanRetryInstall() {
			return fmt.Errorf("models: cluster %s is %s (%s), not degraded by its software: %w",
				clusterID, cur.Status, cur.LastError, ErrConflict)
		}
		run, err := tx.SoftwareRunFor(ctx, cur)
		if err != nil {
			return err
		}
		now := tx.Now()
		deadline := now.Add(InstallWindow(cur.Software))
		res := tx.db.WithContext(ctx).Model(&SoftwareRun{}).Where("cluster_id = ? AND attempt = ?", clusterID, run.Attempt).
			Updates(map[string]any{"attempt": run.Attempt + 1, "started_at": now, "deadline": deadline,
				"join_command": "", "join_source": "", "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: retry install of %s: %w", clusterID, ErrConflict)
		}
		msg := fmt.Sprintf("Install retry requested by %s after %s: installing %s again (attempt %d) by %s.",
			actor, cur.LastError, cur.SoftwareLabel(), run.Attempt+1, deadline.Format(time.RFC3339))
		c, err = tx.transition(ctx, clusterID, change{event: EventRetryInstall, step: StepSoftware, msg: msg,
			set: map[string]any{"last_error": ""}, nodes: func(tx *Store) error {
				return tx.nodeRows(ctx, clusterID, map[string]any{"step": StepSoftware, "message": ""})
			}})
		return err
	})
	return c, err
}

// lockedClusterForOrg reads a cluster through its organisation and, on
// PostgreSQL, locks its row for the transaction (SQLite's immediate
// transactions serialise writers already).
func (s *Store) lockedClusterForOrg(ctx context.Context, orgID, id string) (Cluster, error) {
	q := s.db.WithContext(ctx)
	if s.IsPostgres() {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var c Cluster
	err := q.Where("org_id = ? AND id = ?", orgID, id).Take(&c).Error
	return c, notFound(err, "cluster "+id)
}

// ---- Kubernetes: join command and kubeconfig (S1) ----

// ErrKubeconfigNotReady is a Kubernetes cluster whose node-0 has not
// reported its kubeconfig (yet).
var ErrKubeconfigNotReady = errors.New("models: node-0 has not reported its kubeconfig yet")

// Kubeconfig returns the kubeconfig node-0 of a Kubernetes cluster
// reported, through its organisation (A3): only ever that one (S1).
// ErrNotFound for another organisation's cluster or a cluster not running
// Kubernetes; ErrKubeconfigNotReady before node-0 reported it.
func (s *Store) Kubeconfig(ctx context.Context, orgID, clusterID string) (string, error) {
	c, err := s.ClusterForOrg(ctx, orgID, clusterID)
	if err != nil {
		return "", err
	}
	if !headReports(c.Software) {
		return "", fmt.Errorf("models: cluster %s runs %q, not kubernetes: %w", clusterID, c.Software, ErrNotFound)
	}
	var runs []SoftwareRun
	err = s.db.WithContext(ctx).Where("cluster_id = ? AND kubeconfig_source = ? AND kubeconfig <> ?", clusterID, "node", "").
		Limit(1).Find(&runs).Error
	switch {
	case err != nil:
		return "", err
	case len(runs) == 0:
		return "", fmt.Errorf("cluster %s: %w", clusterID, ErrKubeconfigNotReady)
	}
	return runs[0].Kubeconfig, nil
}

// KubeconfigReported reports whether node-0 of the cluster reported its
// kubeconfig (the page offers the download only then).
func (s *Store) KubeconfigReported(ctx context.Context, clusterID string) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&SoftwareRun{}).
		Where("cluster_id = ? AND kubeconfig_source = ? AND kubeconfig <> ?", clusterID, "node", "").Count(&n).Error
	return n > 0, err
}

// nodeReport is what node-0's Kubernetes install printed between markers.
type nodeReport struct {
	Kubeconfig, JoinCommand string
}

// takeKubeReport cuts the kubeconfig and join command blocks out of
// node-0's install output (they are credentials, so they are not stored
// with the output).
func takeKubeReport(output string) (string, nodeReport) {
	var rep nodeReport
	output, rep.Kubeconfig = takeBlock(output, kubeconfigBlock, "[kubeconfig received; stored on the cluster]")
	output, rep.JoinCommand = takeBlock(output, joinCommandBlock, "[join command received; handed to the workers]")
	rep.JoinCommand = strings.TrimSpace(rep.JoinCommand)
	return output, rep
}

// headReports is whether node-0's install of the software prints the
// kubeconfig and join command blocks (Kubernetes).
func headReports(name string) bool {
	sw := software.Lookup(name)
	return sw != nil && sw.HeadReports
}

// BlockBegin and BlockEnd mark what a node reports inside its output
// (software.BlockBegin).
func BlockBegin(name string) string { return software.BlockBegin(name) }

// BlockEnd ends a block started with BlockBegin.
func BlockEnd(name string) string { return software.BlockEnd(name) }

// takeBlock removes the last complete block called name from output and
// returns it, with note in its place.
func takeBlock(output, name, note string) (string, string) {
	begin, end := BlockBegin(name), BlockEnd(name)
	i := strings.LastIndex(output, begin)
	if i < 0 {
		return output, ""
	}
	j := strings.Index(output[i:], end)
	if j < 0 {
		return output, ""
	}
	body := strings.Trim(output[i+len(begin):i+j], "\n")
	return output[:i] + note + output[i+j+len(end):], body
}

// keepKubeReport stores node-0's kubeconfig and its workers' join command.
// When node-0 printed no join command, workers join with the bootstrap
// token node-0's kubeadm init was given; when it printed no kubeconfig,
// none is stored (a kubeconfig it printed earlier stays). It returns a note
// for the event.
func (s *Store) keepKubeReport(ctx context.Context, c Cluster, head ClusterNode, rep nodeReport) (string, error) {
	up := map[string]any{"updated_at": s.Now()}
	var notes []string
	if validJoinCommand(rep.JoinCommand) {
		up["join_command"], up["join_source"] = rep.JoinCommand, "node"
		notes = append(notes, "Workers join with the command node-0 printed.")
	} else {
		up["join_command"], up["join_source"] = DerivedJoinCommand(c, head), "derived"
		notes = append(notes, "node-0 printed no join command: workers join with the cluster's bootstrap token.")
	}
	if strings.Contains(rep.Kubeconfig, "kind: Config") {
		up["kubeconfig"], up["kubeconfig_source"] = rep.Kubeconfig+"\n", "node"
		notes = append(notes, "The kubeconfig from node-0 is stored.")
	} else {
		// Never a made-up one: only node-0's own admin.conf is ever offered.
		notes = append(notes, "node-0 printed no kubeconfig: none can be downloaded until it does.")
	}
	err := s.db.WithContext(ctx).Model(&SoftwareRun{}).Where("cluster_id = ?", c.ID).Updates(up).Error
	return strings.Join(notes, " "), err
}

// ---- output hygiene ----

// cleanOutput makes agent output storable: valid UTF-8 (PostgreSQL text
// insists) without NUL bytes.
func cleanOutput(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// tailBytes keeps at most n bytes of the end of s, cut at a rune boundary
// and marked, since a tool's last lines say why it failed.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "[… earlier output cut …]\n"
	if n <= len(mark) {
		return truncate(s, n)
	}
	i := len(s) - n + len(mark)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return mark + s[i:]
}
