package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// A run is a training run that heals itself (X17): a shape (or a list of
// acceptable offers under a price ceiling), an image and a command, a
// volume with a checkpoint directory on it, a resume command and a restart
// budget. Submitting one quotes and locks the price and launches its
// cluster all or nothing with verification before hand-over (L3, L4, X13);
// the ranks start with the node contract once the cluster is handed over
// (N1–N6), with CLUSTERDECK_CHECKPOINT_DIR in their env. When a machine
// dies, hangs or reports a fatal XID the runs job replaces that machine
// alone (X5) and restarts every rank with the resume command; the run ends
// when the command exits 0 on every rank (or on rank 0), and its machines
// are released. Its state changes are public events (run.*).

// RunStatus is a run's state.
type RunStatus string

// Run statuses.
const (
	RunLaunching  RunStatus = "launching"  // its cluster is being placed, installed and verified
	RunRunning    RunStatus = "running"    // its ranks run (generation Generation)
	RunRecovering RunStatus = "recovering" // interrupted: a machine is being replaced, or the ranks restarted
	RunFinished   RunStatus = "finished"   // the finish rule held; machines released
	RunFailed     RunStatus = "failed"     // it cannot go on (budget spent, launch failed, a rank failed); checkpoints kept
)

// Terminal reports whether nothing more happens to the run.
func (s RunStatus) Terminal() bool { return s == RunFinished || s == RunFailed }

// Finish rules.
const (
	FinishAllRanks = "all"   // every rank exits 0
	FinishRank0    = "rank0" // rank 0 exits 0
)

// Interruption causes.
const (
	CauseMachineDead = "machine_dead" // the provider or the agent's silence says the machine is gone
	CauseFatalXID    = "fatal_xid"    // the machine's GPU reported a fatal error
	CauseHang        = "hang"         // a stall naming the machine
	CausePlanned     = "planned"      // a planned stop (replace, budget, terminate, maintenance)
	CauseRankFailed  = "rank_failed"  // a rank exited non-zero on a healthy cluster
)

// CheckpointEnv is the variable every rank reads for its checkpoint
// directory; AttemptEnv counts the ranks' starts (0 = the first).
const (
	CheckpointEnv = "CLUSTERDECK_CHECKPOINT_DIR"
	AttemptEnv    = "CLUSTERDECK_RUN_ATTEMPT"
)

// Run bounds (X19).
const (
	MaxActiveRuns        = 10 // runs not ended, per organisation
	MaxRestartBudget     = 100
	MaxRunOffers         = 8
	MaxRunSubmitsPerHour = 60 // submissions per organisation per hour
	RunStallMinutes      = 4  // a run's cluster's stall rule: a hang is named within 5 minutes
	// WarnLead is how long before a planned stop the ranks are warned
	// (SIGUSR1, then SIGTERM at the stop) and the hook called, where the
	// cause allows it.
	WarnLead = 120 * time.Second
)

// Run is one training run (X17).
type Run struct {
	ID          string    `gorm:"primaryKey;size:32"`
	OrgID       string    `gorm:"size:32;index"`
	EnvID       string    `gorm:"size:32"`
	Name        string    `gorm:"size:63"`
	Status      RunStatus `gorm:"size:16;index"`
	ClusterID   string    `gorm:"size:32;index"`
	QuoteID     string    `gorm:"size:32"`
	OfferID     string    `gorm:"size:191"`
	Provider    string    `gorm:"size:64"`
	Accelerator string    `gorm:"size:64"`
	Nodes       int
	GPUsPerNode int   `gorm:"column:gpus_per_node"`
	USDPerHour  Money `gorm:"column:usd_per_hour"` // locked by the quote (Q2)

	Image             string `gorm:"size:255"`
	Command           string `gorm:"size:4000"`
	ResumeCommand     string `gorm:"size:4000"` // "" = the command again (it reads the env)
	EnvJSON           string `gorm:"column:env_json;type:text"`
	ResumeEnvJSON     string `gorm:"column:resume_env_json;type:text"`
	CheckpointDir     string `gorm:"size:255"` // the absolute path the ranks get
	CheckpointSeconds int    // how often the command checkpoints (the bound on lost work)
	FinishRule        string `gorm:"size:8"`
	RestartBudget     int
	Restarts          int
	Generation        int    // the ranks' start generation: 0 the first start, +1 per restart
	HookURL           string `gorm:"size:500"` // called before a planned stop; "" = none

	GenerationAt      *time.Time // the current generation's start order
	WarnedAt          *time.Time // the ranks were warned of a planned stop (SIGUSR1); nil = not
	WarnReason        string     `gorm:"size:255"`
	RanksStartedAt    *time.Time // the first generation's ranks all ran
	ProductiveSeconds int64      // closed running stretches less their lost work
	EndedAt           *time.Time
	Message           string `gorm:"size:1000"`
	CreatedBy         string `gorm:"size:191"`
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// RunInterruption is one stop of a run's ranks: what caused it, when it
// was detected, how long until the ranks resumed, and the work lost since
// the last checkpoint (X17).
type RunInterruption struct {
	ID          int64  `gorm:"primaryKey;autoIncrement"`
	RunID       string `gorm:"size:32;index"`
	OrgID       string `gorm:"size:32"`
	Cause       string `gorm:"size:16"`
	Node        string `gorm:"size:32"`
	Rank        int
	Message     string     `gorm:"size:1000"`
	FailedAt    time.Time  // the last moment the machine was known well
	DetectedAt  time.Time  // when Clusterdeck decided
	ResumedAt   *time.Time // the ranks run again; nil while recovering (or never)
	LostSeconds int64      // work since the last checkpoint
	Warned      bool       // the ranks were warned before the stop
	// CheckpointLanded: after a warning, whether a checkpoint newer than
	// the warning was reported; nil = not known.
	CheckpointLanded *bool
	Replaced         bool // the machine was replaced (healthy ones never are)
}

// TableName keeps the table name explicit.
func (RunInterruption) TableName() string { return "run_interruptions" }

// up1100Runs adds runs, their interruptions and the ranks' start generation (X17).
func up1100Runs(tx *gorm.DB) error {
	type run struct {
		ID                string `gorm:"primaryKey;size:32"`
		OrgID             string `gorm:"size:32;index"`
		EnvID             string `gorm:"size:32"`
		Name              string `gorm:"size:63"`
		Status            string `gorm:"size:16;index"`
		ClusterID         string `gorm:"size:32;index"`
		QuoteID           string `gorm:"size:32"`
		OfferID           string `gorm:"size:191"`
		Provider          string `gorm:"size:64"`
		Accelerator       string `gorm:"size:64"`
		Nodes             int
		GPUsPerNode       int    `gorm:"column:gpus_per_node"`
		USDPerHour        int64  `gorm:"column:usd_per_hour"`
		Image             string `gorm:"size:255"`
		Command           string `gorm:"size:4000"`
		ResumeCommand     string `gorm:"size:4000"`
		EnvJSON           string `gorm:"column:env_json;type:text"`
		ResumeEnvJSON     string `gorm:"column:resume_env_json;type:text"`
		CheckpointDir     string `gorm:"size:255"`
		CheckpointSeconds int
		FinishRule        string `gorm:"size:8"`
		RestartBudget     int
		Restarts          int
		Generation        int
		HookURL           string `gorm:"size:500"`
		GenerationAt      *time.Time
		WarnedAt          *time.Time
		WarnReason        string `gorm:"size:255"`
		RanksStartedAt    *time.Time
		ProductiveSeconds int64
		EndedAt           *time.Time
		Message           string    `gorm:"size:1000"`
		CreatedBy         string    `gorm:"size:191"`
		CreatedAt         time.Time `gorm:"index"`
		UpdatedAt         time.Time
	}
	type interruption struct {
		ID               int64  `gorm:"primaryKey;autoIncrement"`
		RunID            string `gorm:"size:32;index"`
		OrgID            string `gorm:"size:32"`
		Cause            string `gorm:"size:16"`
		Node             string `gorm:"size:32"`
		Rank             int
		Message          string `gorm:"size:1000"`
		FailedAt         time.Time
		DetectedAt       time.Time
		ResumedAt        *time.Time
		LostSeconds      int64
		Warned           bool
		CheckpointLanded *bool
		Replaced         bool
	}
	if err := tx.Table("runs").AutoMigrate(&run{}); err != nil {
		return err
	}
	if err := tx.Table("run_interruptions").AutoMigrate(&interruption{}); err != nil {
		return err
	}
	// The ranks' start generation a machine's agent reports (its
	// start command restarted with the resume command).
	return tx.Exec("ALTER TABLE node_starts ADD COLUMN generation integer NOT NULL DEFAULT 0").Error
}

// Env decodes the run's env.
func (r Run) Env() map[string]string { return decodeEnv(r.EnvJSON) }

// ResumeEnv decodes the env added on a resume.
func (r Run) ResumeEnv() map[string]string { return decodeEnv(r.ResumeEnvJSON) }

func decodeEnv(s string) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

// RunSpec is a submission (X17).
type RunSpec struct {
	Name string
	// The shape, or Offers (ids of acceptable offers, tried in order) under
	// MaxHourlyPrice (decimal dollars; required with Offers).
	Accelerator    string
	Nodes          int
	GPUsPerNode    int
	Offers         []string
	MaxHourlyPrice string
	Location       string
	VolumeGB       int    // a new volume of this size, or
	VolumeID       string // an existing one (V2)

	Image             string
	Command           string
	Env               map[string]string
	CheckpointDir     string // relative to the volume, e.g. "ckpt"
	CheckpointSeconds int    // 0 = 600
	ResumeCommand     string
	ResumeEnv         map[string]string
	RestartBudget     int    // 0 = 3
	FinishRule        string // FinishAllRanks (default) or FinishRank0
	HookURL           string
	Verify            *bool // default true (X13)
	SSHKeyIDs         []string
	IdemKey           string
}

// Validate returns field problems keyed by the API's JSON names (A4).
func (sp RunSpec) Validate() FieldErrors {
	fe := FieldErrors{}
	if sp.Name != "" && !nameRe.MatchString(sp.Name) {
		fe["name"] = "1 to 63 lower-case letters, digits and dashes, starting and ending with a letter or digit"
	}
	if len(sp.Offers) > 0 {
		if len(sp.Offers) > MaxRunOffers {
			fe["offers"] = fmt.Sprintf("at most %d offers", MaxRunOffers)
		}
		if sp.MaxHourlyPrice == "" {
			fe["maxHourlyPrice"] = "a list of offers needs a price ceiling for the whole cluster per hour"
		}
	}
	if sp.MaxHourlyPrice != "" {
		if m, err := ParseUSD(sp.MaxHourlyPrice); err != nil || m <= 0 {
			fe["maxHourlyPrice"] = "a decimal dollar string more than 0, like \"250\""
		}
	}
	w := Workload{Name: "run", Software: "none", Image: sp.Image, StartCommand: sp.Command, Env: sp.Env}
	for k, v := range w.Validate("") {
		fe[k] = v
	}
	if strings.TrimSpace(sp.Command) == "" {
		fe["command"] = "the command every rank runs"
	}
	if fe["startCommand"] != "" {
		fe["command"] = fe["startCommand"]
		delete(fe, "startCommand")
	}
	rw := Workload{Name: "run", Software: "none", StartCommand: sp.ResumeCommand, Env: sp.ResumeEnv}
	for k, v := range rw.Validate("") {
		switch k {
		case "startCommand":
			fe["resumeCommand"] = v
		case "env":
			fe["resumeEnv"] = v
		}
	}
	for _, env := range []map[string]string{sp.Env, sp.ResumeEnv} {
		for k := range env {
			if k == CheckpointEnv || k == AttemptEnv {
				fe["env"] = k + " is set by Clusterdeck for a run"
			}
		}
	}
	if sp.VolumeGB <= 0 && sp.VolumeID == "" {
		fe["volumeGb"] = "a run keeps its checkpoints on a volume: give volumeGb or volumeId"
	}
	if d := sp.CheckpointDir; d == "" || len(d) > 200 || strings.HasPrefix(d, "/") || strings.Contains(d, "..") ||
		strings.ContainsAny(d, " \t\n'\"$`\\") {
		fe["checkpointDir"] = "a relative directory on the volume, like \"ckpt\" (no spaces, quotes or ..)"
	}
	if sp.CheckpointSeconds < 0 || sp.CheckpointSeconds > 86400 {
		fe["checkpointSeconds"] = "0 to 86400 seconds"
	}
	if sp.RestartBudget < 0 || sp.RestartBudget > MaxRestartBudget {
		fe["restartBudget"] = fmt.Sprintf("0 to %d restarts", MaxRestartBudget)
	}
	if sp.FinishRule != "" && sp.FinishRule != FinishAllRanks && sp.FinishRule != FinishRank0 {
		fe["finishRule"] = "all (every rank exits 0) or rank0"
	}
	if sp.HookURL != "" {
		u, err := url.Parse(sp.HookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(sp.HookURL) > 500 {
			fe["hookUrl"] = "an http or https URL of at most 500 characters"
		}
	}
	return fe
}

// ErrTooManyRuns refuses a submission past MaxActiveRuns.
var ErrTooManyRuns = fmt.Errorf("at most %d runs may be active at once in an organisation; wait for one to end: %w", MaxActiveRuns, ErrConflict)

// ErrRunRate refuses submissions past MaxRunSubmitsPerHour.
var ErrRunRate = fmt.Errorf("at most %d runs may be submitted per hour: %w", MaxRunSubmitsPerHour, ErrConflict)

// SubmitRun is X17's submission: bounds, then a quote (the shape, or the
// first acceptable offer that fits under the ceiling), then a verified
// launch of the run's cluster with the command, the checkpoint directory
// in the env and the volume; the run row commits with the cluster. The
// same idempotency key returns the same run.
func (x Actions) SubmitRun(ctx context.Context, sp RunSpec) (Run, bool, error) {
	if fe := sp.Validate(); len(fe) > 0 {
		return Run{}, false, fe
	}
	if sp.IdemKey != "" {
		var cs []Cluster
		if err := x.s.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND idem_key = ?", x.a.OrgID, x.a.EnvID, "run:"+sp.IdemKey).
			Limit(1).Find(&cs).Error; err != nil {
			return Run{}, false, err
		}
		if len(cs) == 1 {
			if cs[0].RequestHash != sp.hash() {
				return Run{}, false, ErrIdempotencyMismatch
			}
			r, err := x.s.runForCluster(ctx, cs[0].ID)
			return r, false, err
		}
	}
	if err := x.runBounds(ctx); err != nil {
		return Run{}, false, err
	}
	q, err := x.runQuote(ctx, sp)
	if err != nil {
		return Run{}, false, err
	}
	volumePath := SharedVolumeDir
	if q.MachineKind != "" && q.MachineKind != "vm" && q.MachineKind != "bare_metal" {
		volumePath = HeadVolumeDir
	}
	ckpt := path.Join(volumePath, sp.CheckpointDir)
	env := map[string]string{}
	for k, v := range sp.Env {
		env[k] = v
	}
	env[CheckpointEnv] = ckpt
	env[AttemptEnv] = "0"
	name := sp.Name
	if name == "" {
		name = "run-" + DefaultClusterName(q.Accelerator, q.Nodes)
	}
	verify := sp.Verify == nil || *sp.Verify
	var idem string
	if sp.IdemKey != "" {
		idem = "run:" + sp.IdemKey
	}
	// A hang must be named within five minutes (X17): the stall rule holds four.
	watch := DefaultWatchPolicy()
	watch.StallMinutes = RunStallMinutes
	in := LaunchInput{QuoteID: q.ID, SSHKeyIDs: sp.SSHKeyIDs, Verify: verify, IdemKey: idem, RequestHash: sp.hash(), Watch: &watch,
		Workload: Workload{Name: name, Software: "none", Image: sp.Image, StartCommand: sp.Command, Env: env}}
	c, created, err := x.Launch(ctx, in)
	if err != nil {
		return Run{}, false, err
	}
	if !created {
		r, err := x.s.runForCluster(ctx, c.ID)
		return r, false, err
	}
	r := Run{ID: NewID("run"), OrgID: x.a.OrgID, EnvID: x.a.EnvID, Name: name, Status: RunLaunching, ClusterID: c.ID,
		QuoteID: q.ID, OfferID: c.OfferID, Provider: c.Provider, Accelerator: c.Accelerator, Nodes: c.Nodes, GPUsPerNode: c.GPUsPerNode,
		USDPerHour: c.USDPerHour, Image: sp.Image, Command: sp.Command, ResumeCommand: sp.ResumeCommand,
		EnvJSON: encodeEnv(sp.Env), ResumeEnvJSON: encodeEnv(sp.ResumeEnv), CheckpointDir: ckpt,
		CheckpointSeconds: cmp0(sp.CheckpointSeconds, 600), FinishRule: cmpS(sp.FinishRule, FinishAllRanks),
		RestartBudget: cmp0(sp.RestartBudget, 3), HookURL: sp.HookURL, CreatedBy: x.a.Name,
		Message: "Launching " + c.ID + " at $" + DecimalUSD(c.USDPerHour) + "/h (price locked)."}
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if err := tx.db.WithContext(ctx).Create(&r).Error; err != nil {
			return nil, err
		}
		return x.audit("run.submit", r.ID, r.Name), nil
	})
	return r, true, err
}

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func cmpS(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func encodeEnv(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// hash is the submission's fingerprint (L1: the same key with another body is refused).
func (sp RunSpec) hash() string {
	b, _ := json.Marshal(sp)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runBounds refuses a submission past the active-run count or the hourly rate (X19).
func (x Actions) runBounds(ctx context.Context) error {
	var active, recent int64
	if err := x.s.db.WithContext(ctx).Model(&Run{}).Where("org_id = ? AND status NOT IN ?", x.a.OrgID,
		[]RunStatus{RunFinished, RunFailed}).Count(&active).Error; err != nil {
		return err
	}
	if active >= MaxActiveRuns {
		return ErrTooManyRuns
	}
	if err := x.s.db.WithContext(ctx).Model(&Run{}).Where("org_id = ? AND created_at > ?", x.a.OrgID,
		x.s.Now().Add(-time.Hour)).Count(&recent).Error; err != nil {
		return err
	}
	if recent >= MaxRunSubmitsPerHour {
		return ErrRunRate
	}
	return nil
}

// runQuote prices the run: its shape, or the acceptable offers in order,
// the first that fits under the ceiling.
func (x Actions) runQuote(ctx context.Context, sp RunSpec) (Quote, error) {
	var ceiling Money
	if sp.MaxHourlyPrice != "" {
		ceiling, _ = ParseUSD(sp.MaxHourlyPrice)
	}
	base := ShapeQuery{Accelerator: sp.Accelerator, Nodes: sp.Nodes, GPUsPerNode: sp.GPUsPerNode, VolumeGB: sp.VolumeGB,
		VolumeID: sp.VolumeID, MaxHourlyPrice: ceiling, Location: sp.Location}
	if len(sp.Offers) == 0 {
		if fe := base.Validate(); len(fe) > 0 {
			return Quote{}, fe
		}
		return x.s.CreateQuote(ctx, x.a.OrgID, x.a.EnvID, base)
	}
	var last error
	for _, id := range sp.Offers {
		o, err := x.s.OfferByID(ctx, id)
		if err != nil {
			last = FieldErrors{"offers": "unknown offer " + id}
			continue
		}
		r := base
		r.OfferID, r.Accelerator = id, o.Accelerator
		if r.GPUsPerNode == 0 {
			r.GPUsPerNode = o.GPUsPerNode
		}
		if fe := r.Validate(); len(fe) > 0 {
			return Quote{}, fe
		}
		q, err := x.s.CreateQuote(ctx, x.a.OrgID, x.a.EnvID, r)
		if err == nil {
			return q, nil
		}
		last = err
		var nc *NoCapacityError
		if !errors.As(err, &nc) {
			return Quote{}, err
		}
	}
	return Quote{}, last
}

// RunForOrg loads a run through its organisation (A3).
func (s *Store) RunForOrg(ctx context.Context, orgID, id string) (Run, error) {
	var r Run
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&r).Error
	return r, notFound(err, "run "+id)
}

// RunsForOrg lists an organisation's runs, newest first, at most limit.
func (s *Store) RunsForOrg(ctx context.Context, orgID string, limit int) ([]Run, error) {
	if limit <= 0 || limit > 200 {
		limit = 200
	}
	var out []Run
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// ActiveRuns lists the runs not ended, for the runs job.
func (s *Store) ActiveRuns(ctx context.Context) ([]Run, error) {
	var out []Run
	err := s.db.WithContext(ctx).Where("status NOT IN ?", []RunStatus{RunFinished, RunFailed}).Order("id").Find(&out).Error
	return out, err
}

// ClustersWithRuns reports which of the clusters carry an active run.
func (s *Store) ClustersWithRuns(ctx context.Context, clusterIDs []string) (map[string]bool, error) {
	var ids []string
	if len(clusterIDs) == 0 {
		return map[string]bool{}, nil
	}
	err := s.db.WithContext(ctx).Model(&Run{}).Where("cluster_id IN ? AND status NOT IN ?", clusterIDs,
		[]RunStatus{RunFinished, RunFailed}).Pluck("cluster_id", &ids).Error
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

func (s *Store) runForCluster(ctx context.Context, clusterID string) (Run, error) {
	var r Run
	err := s.db.WithContext(ctx).Where("cluster_id = ?", clusterID).Take(&r).Error
	return r, notFound(err, "run of "+clusterID)
}

// RunInterruptions lists a run's interruptions, oldest first (A3: through its organisation).
func (s *Store) RunInterruptions(ctx context.Context, orgID, runID string) ([]RunInterruption, error) {
	var out []RunInterruption
	err := s.db.WithContext(ctx).Where("org_id = ? AND run_id = ?", orgID, runID).Order("id").Find(&out).Error
	return out, err
}

// RunRanks is a run's ranks' start states of its current generation.
func (s *Store) RunRanks(ctx context.Context, r Run) ([]NodeStart, error) {
	var out []NodeStart
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND generation = ?", r.ClusterID, r.Generation).Order("rank").Find(&out).Error
	return out, err
}

// runStartOrder is what a run changes in node n's start order: the
// generation and, past the first, the resume command and env. ok is false
// when the cluster carries no run.
func (s *Store) runStartOrder(ctx context.Context, clusterID string) (Run, bool, error) {
	var rs []Run
	if err := s.db.WithContext(ctx).Where("cluster_id = ?", clusterID).Limit(1).Find(&rs).Error; err != nil {
		return Run{}, false, err
	}
	if len(rs) == 0 || rs[0].Status.Terminal() {
		return Run{}, false, nil
	}
	return rs[0], true, nil
}

// ---- the run's transitions, driven by the runs job ----

// runChange moves run r from its status to next, guarded by its status and
// generation (a compare-and-swap), writing the run event on its cluster in
// the same transaction.
func (s *Store) runChange(ctx context.Context, r Run, next RunStatus, typ, msg string, set map[string]any, more func(tx *Store) error) (Run, error) {
	err := s.Tx(ctx, func(tx *Store) error {
		if set == nil {
			set = map[string]any{}
		}
		set["status"], set["updated_at"] = next, tx.Now()
		if msg != "" {
			set["message"] = truncate(msg, 1000)
		}
		res := tx.db.WithContext(ctx).Model(&Run{}).Where("id = ? AND status = ? AND generation = ?", r.ID, r.Status, r.Generation).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("models: run %s changed meanwhile: %w", r.ID, ErrConflict)
		}
		if more != nil {
			if err := more(tx); err != nil {
				return err
			}
		}
		if typ == "" {
			return nil
		}
		c, err := tx.ClusterByID(ctx, r.ClusterID)
		if err != nil {
			return err
		}
		return tx.addTypedEvent(ctx, c, c.Status, typ, "run", "", "run", r.ID+": "+msg)
	})
	if err != nil {
		return r, err
	}
	return s.RunForOrg(ctx, r.OrgID, r.ID)
}

// MarkRunStarted is the ranks' first start: the run runs (run.started).
func (s *Store) MarkRunStarted(ctx context.Context, r Run) (Run, error) {
	now := s.Now()
	return s.runChange(ctx, r, RunRunning, TypeRunStarted,
		fmt.Sprintf("Every rank of %d machines started on a verified cluster.", r.Nodes),
		map[string]any{"ranks_started_at": now, "generation_at": coalesceTime(r.GenerationAt, now)}, nil)
}

func coalesceTime(t *time.Time, def time.Time) time.Time {
	if t != nil {
		return *t
	}
	return def
}

// MarkRunFinished ends the run by its finish rule and asks for its
// cluster's terminate (L7): the machines are released by the terminate job.
func (s *Store) MarkRunFinished(ctx context.Context, r Run, msg string) (Run, error) {
	now := s.Now()
	prod := r.ProductiveSeconds + r.runningSeconds(now)
	return s.runChange(ctx, r, RunFinished, TypeRunFinished, msg,
		map[string]any{"ended_at": now, "productive_seconds": prod}, func(tx *Store) error {
			_, err := tx.RequestTerminate(ctx, r.OrgID, r.ClusterID, "run "+r.ID)
			if errors.Is(err, ErrConflict) {
				return nil // ended already
			}
			return err
		})
}

// MarkRunFailed ends the run, says why and releases its machines; the
// volume and its checkpoints stay (V3).
func (s *Store) MarkRunFailed(ctx context.Context, r Run, msg string) (Run, error) {
	now := s.Now()
	prod := r.ProductiveSeconds
	if r.Status == RunRunning {
		prod += r.runningSeconds(now)
	}
	return s.runChange(ctx, r, RunFailed, TypeRunFailed, msg+" The checkpoints stay on the volume.",
		map[string]any{"ended_at": now, "productive_seconds": prod}, func(tx *Store) error {
			_, err := tx.RequestTerminate(ctx, r.OrgID, r.ClusterID, "run "+r.ID)
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		})
}

// runningSeconds is the current generation's running time by now.
func (r Run) runningSeconds(now time.Time) int64 {
	if r.GenerationAt == nil || r.Status != RunRunning {
		return 0
	}
	return int64(now.Sub(*r.GenerationAt) / time.Second)
}

// Interruption is what the runs job saw stop the ranks.
type Interruption struct {
	Cause    string
	Node     string
	Rank     int
	Message  string
	FailedAt time.Time
	Warned   bool
}

// MarkRunInterrupted records an interruption (run.interrupted): the
// running stretch closes, less the work since the last checkpoint.
func (s *Store) MarkRunInterrupted(ctx context.Context, r Run, in Interruption) (Run, error) {
	now := s.Now()
	ran := int64(0)
	if r.GenerationAt != nil && in.FailedAt.After(*r.GenerationAt) {
		ran = int64(in.FailedAt.Sub(*r.GenerationAt) / time.Second)
	}
	lost := min(ran, int64(r.CheckpointSeconds))
	msg := fmt.Sprintf("%s (%s) stopped the ranks: %s. Detected %s after it failed; about %s of work since the last checkpoint is lost.",
		in.Node, in.Cause, in.Message, now.Sub(in.FailedAt).Round(time.Second), (time.Duration(lost) * time.Second).String())
	return s.runChange(ctx, r, RunRecovering, TypeRunInterrupted, msg,
		map[string]any{"productive_seconds": r.ProductiveSeconds + ran - lost}, func(tx *Store) error {
			return tx.db.WithContext(ctx).Create(&RunInterruption{RunID: r.ID, OrgID: r.OrgID, Cause: in.Cause, Node: in.Node, Rank: in.Rank,
				Message: truncate(in.Message, 1000), FailedAt: in.FailedAt, DetectedAt: now, LostSeconds: lost, Warned: in.Warned}).Error
		})
}

// MarkRunWarned records that the ranks are warned of a planned stop: the
// agents send SIGUSR1 with their next heartbeat (X17).
func (s *Store) MarkRunWarned(ctx context.Context, r Run, why string) (Run, error) {
	return s.runChange(ctx, r, r.Status, "", "", map[string]any{"warned_at": s.Now(), "warn_reason": truncate(why, 255)}, func(tx *Store) error {
		c, err := tx.ClusterByID(ctx, r.ClusterID)
		if err != nil {
			return err
		}
		return tx.addEvent(ctx, c, c.Status, "info", "", "run", r.ID+": every rank is warned (SIGUSR1) of a planned stop: "+why)
	})
}

// BalanceStopAt is when the organisation's clusters are stopped for the
// balance (B6) if nothing is paid: the exhausted balance's grace end; nil
// when no stop is coming.
func (s *Store) BalanceStopAt(ctx context.Context, orgID string, grace time.Duration) (*time.Time, error) {
	var eps []BalanceEpisode
	if err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Limit(1).Find(&eps).Error; err != nil {
		return nil, err
	}
	if len(eps) == 0 || eps[0].ExhaustedAt == nil || eps[0].StoppedAt != nil {
		return nil, nil
	}
	if grace <= 0 {
		grace = DefaultBalanceGrace
	}
	at := eps[0].ExhaustedAt.Add(grace)
	return &at, nil
}

// BudgetStopAt is when the cluster's environment budget stops it (B5, X6):
// the enforcement time of this month's 100 % alert against the current
// budget, once that alert is recorded (the budget's warning window has
// started); nil when no budget stop is coming.
func (s *Store) BudgetStopAt(ctx context.Context, c Cluster) (*time.Time, error) {
	if c.EnvID == "" {
		return nil, nil
	}
	b, ok, err := s.BudgetFor(ctx, c.OrgID, c.EnvID)
	if err != nil || !ok {
		return nil, err
	}
	var as []BudgetAlert
	if err := s.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND month = ? AND percent = 100 AND budget = ?",
		c.OrgID, c.EnvID, MonthOf(s.Now()).Month(), b.Amount).Limit(1).Find(&as).Error; err != nil {
		return nil, err
	}
	if len(as) == 0 || as[0].EnforceAt == nil {
		return nil, nil
	}
	at := *as[0].EnforceAt
	return &at, nil
}

// MarkRunReplacing notes that the interrupted machine is being replaced.
func (s *Store) MarkRunReplacing(ctx context.Context, r Run, rank int) error {
	return s.db.WithContext(ctx).Model(&RunInterruption{}).Where("run_id = ? AND rank = ? AND resumed_at IS NULL", r.ID, rank).
		Update("replaced", true).Error
}

// MarkRunResumed restarts every rank with the resume command: the
// generation grows, the restart budget is used (run.resumed).
func (s *Store) MarkRunResumed(ctx context.Context, r Run) (Run, error) {
	now := s.Now()
	msg := fmt.Sprintf("Every rank restarts with the resume command (restart %d of %d).", r.Restarts+1, r.RestartBudget)
	return s.runChange(ctx, r, RunRunning, TypeRunResumed, msg,
		map[string]any{"generation": r.Generation + 1, "restarts": r.Restarts + 1, "generation_at": now, "warned_at": nil, "warn_reason": ""}, func(tx *Store) error {
			return tx.db.WithContext(ctx).Model(&RunInterruption{}).Where("run_id = ? AND resumed_at IS NULL", r.ID).
				Update("resumed_at", now).Error
		})
}

// RunBill is X17's effective training time: what was paid and what trained.
type RunBill struct {
	PaidMachineMinutes int64
	ProductiveMinutes  int64
	WallMinutes        int64
	// ETTRPermille is productive over wall time since the machines were
	// handed over, in tenths of a percent (integer, like money).
	ETTRPermille  int64
	Interruptions []RunInterruption
	LostMinutes   int64
}

// RunBill computes the run's bill figures at now from its cluster's
// billed time (unbilled swap and replacement gaps excluded, X5, X13).
func (s *Store) RunBill(ctx context.Context, r Run, now time.Time) (RunBill, error) {
	var b RunBill
	c, err := s.ClusterForOrg(ctx, r.OrgID, r.ClusterID)
	if err != nil {
		return b, err
	}
	ints, err := s.RunInterruptions(ctx, r.OrgID, r.ID)
	if err != nil {
		return b, err
	}
	b.Interruptions = ints
	end := now
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	if c.ReadyAt != nil && end.After(*c.ReadyAt) {
		wall := end.Sub(*c.ReadyAt)
		b.WallMinutes = int64(wall / time.Minute)
		var gaps []BillingGap
		if err := s.db.WithContext(ctx).Where("cluster_id = ?", c.ID).Find(&gaps).Error; err != nil {
			return b, err
		}
		paid := time.Duration(c.Nodes) * wall
		for _, g := range gaps {
			from, to := g.StartedAt, end
			if g.EndedAt != nil && g.EndedAt.Before(to) {
				to = *g.EndedAt
			}
			if from.Before(*c.ReadyAt) {
				from = *c.ReadyAt
			}
			if to.After(from) {
				paid -= to.Sub(from)
			}
		}
		b.PaidMachineMinutes = int64(paid / time.Minute)
	}
	prod := r.ProductiveSeconds
	if r.EndedAt == nil {
		prod += r.runningSeconds(now)
	}
	b.ProductiveMinutes = prod / 60
	for _, i := range ints {
		b.LostMinutes += i.LostSeconds / 60
	}
	if c.ReadyAt != nil && end.After(*c.ReadyAt) {
		b.ETTRPermille = prod * 1000 / max(1, int64(end.Sub(*c.ReadyAt)/time.Second))
	}
	return b, nil
}

// FinishHolds reports whether the ranks of the current generation meet the
// run's finish rule, and a failed rank (non-zero exit) if any.
func (r Run) FinishHolds(ranks []NodeStart) (done bool, failed *NodeStart) {
	exited := map[int]NodeStart{}
	for _, st := range ranks {
		if st.Ended() {
			exited[st.Rank] = st
			if st.ExitCode == nil || *st.ExitCode != 0 {
				f := st
				failed = &f
			}
		}
	}
	ok := func(rank int) bool {
		st, found := exited[rank]
		return found && st.ExitCode != nil && *st.ExitCode == 0
	}
	if r.FinishRule == FinishRank0 {
		return ok(0), failed
	}
	for rank := range r.Nodes {
		if !ok(rank) {
			return false, failed
		}
	}
	return true, failed
}

// RunStatuses lists the statuses in the order pages show them.
var RunStatuses = []RunStatus{RunLaunching, RunRunning, RunRecovering, RunFinished, RunFailed}

// ValidRunStatus reports whether s names a run status.
func ValidRunStatus(s string) bool { return slices.Contains(RunStatuses, RunStatus(s)) }
