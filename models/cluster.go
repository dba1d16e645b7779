package models

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Cluster is 2–64 identical machines launched, billed and terminated as one.
type Cluster struct {
	ID           string        `gorm:"primaryKey;size:32"`
	OrgID        string        `gorm:"size:32;index"`
	EnvID        string        `gorm:"size:32;index"`
	Name         string        `gorm:"size:63"`
	Status       ClusterStatus `gorm:"size:16;index"`
	Provider     string        `gorm:"size:64"`
	OfferID      string        `gorm:"size:191"`
	QuoteID      string        `gorm:"size:32"`
	Location     string        `gorm:"size:128"`
	LocationName string        `gorm:"size:191"`
	Accelerator  string        `gorm:"size:64"`
	MachineKind  string        `gorm:"size:32"`
	Interconnect string        `gorm:"size:32"`
	// NICs and NICGbps are the offer's fabric cards as they were at launch
	// (like the price, a later catalog change does not change them): the
	// fabric checks are judged by them (X4, X13). Added by 0991_cluster_nics.
	NICs        int `gorm:"column:nics;not null;default:0"`
	NICGbps     int `gorm:"column:nic_gbps;not null;default:0"`
	Nodes       int
	GPUsPerNode int    `gorm:"column:gpus_per_node"`
	VolumeGB    int    `gorm:"column:volume_gb"`
	VolumeID    string `gorm:"size:32"`             // the volume attached at launch (V1, V2); added by 0760_volumes
	USDPerHour  Money  `gorm:"column:usd_per_hour"` // locked by the quote (Q2)
	MachineHour Money  // one machine's share of the locked rate
	// UpstreamMachineHour is what one machine cost at the provider when the
	// cluster was launched (its offer, before markup); BilledMachineHour
	// the highest the provider says it bills since (0 = not said), and
	// PriceAboveAt when that went above the launch cost (billed_price.go).
	// Added by 1010_cluster_billed_price.
	UpstreamMachineHour Money `gorm:"column:upstream_machine_hour;not null;default:0"`
	BilledMachineHour   Money `gorm:"column:billed_machine_hour;not null;default:0"`
	PriceAboveAt        *time.Time
	BootSeconds         int
	PublicIPs           bool   `gorm:"column:public_ips"`
	Verify              bool   // verification before hand-over (X13); added by 0960_verification
	Gateway             string `gorm:"size:255"`

	Software     string                  `gorm:"size:16"`
	Image        string                  `gorm:"size:255"`
	StartCommand string                  `gorm:"size:4000"`
	EnvJSON      JSON[map[string]string] `gorm:"column:env_json;type:text"`      // the user's env, identical on every node (N3)
	PortsJSON    JSON[[]int]             `gorm:"column:ports_json;size:1000"`    // open ports
	SSHKeysJSON  JSON[[]string]          `gorm:"column:ssh_keys_json;type:text"` // public keys installed on every node

	IdemKey     *string `gorm:"size:191"` // unique per org and environment, with the request hash (L1)
	RequestHash string  `gorm:"size:64"`
	AgentSecret string  `gorm:"size:64"` // derives each node's agent token
	CreatedBy   string  `gorm:"size:191"`

	LastError            string `gorm:"size:255"`
	PlacedAt             *time.Time
	ReadyAt              *time.Time // billing starts here for every machine at once (L5)
	TerminateRequestedAt *time.Time
	EndedAt              *time.Time // failed or terminated
	ReleasedAt           *time.Time // every machine confirmed released at the provider
	ReconciledAt         *time.Time // every machine proven gone at the provider (X10)

	// Health and recovery (R1–R5): the opt-in policy and the current
	// unhealthy episode (see health.go).
	RecoveryMode            string `gorm:"size:16"` // RecoveryRestart or "" (off)
	RecoveryMaxAttempts     int
	RecoveryCooldownMinutes int
	DegradedFrom            string     `gorm:"size:16"` // the status a machine loss degraded it from; "" = not by health
	Episodes                int        // unhealthy episodes so far
	EpisodeStartedAt        *time.Time // the open episode; nil = healthy
	RecoveryAttempts        int        // attempts used in the open episode
	RecoveryLastAt          *time.Time
	RecoveryNextAt          *time.Time             // cooldown: no automatic attempt before
	RecoveryOutcome         JSON[[]MachineOutcome] `gorm:"type:text"` // the last attempt's outcomes
	RecoverRequestedAt      *time.Time             // "recover now" waiting for the recovery job
	Joins                   int                    // machines that joined or tried to join after ready (join.go)
	DampedAt                *time.Time             // automatic repair paused: too many machines unhealthy at once (damping.go); added by 0965

	// Stop and resume (B5, B6; see stop.go).
	StopRequestedAt   *time.Time // a stop to carry out (or machines to stop again after a failed resume)
	StopReason        string     `gorm:"size:16"`  // StopReason of the last stop
	StopDetail        string     `gorm:"size:255"` // why, for people
	StoppedFrom       string     `gorm:"size:16"`  // the status the stop left
	StoppedAt         *time.Time // compute billing ended here; nil while it runs
	BillFrom          *time.Time // the current billed run started here after a resume or a hand-over; nil = readyAt
	UnbilledAt        *time.Time // billing held from here by verification until hand-over (X13; billing_hold.go)
	ResumeRequestedAt *time.Time // a resume under way
	ResumeStartedAt   *time.Time // the last resume's start: its step deadlines count from here
	Resumes           int        // resumes completed
	// HandedOverAt is when the cluster last became ready or degraded from
	// a starting or stopped status: its start command (or the customer's
	// SSH) could work from here, so the GPU watch's idle and stall clocks
	// count from here (X15); added by 1030.
	HandedOverAt *time.Time
	// ReservationID is the booking the cluster delivers (X18); added by
	// 1200_reservations.
	ReservationID string `gorm:"size:32;not null;default:''"`

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Env decodes the user's environment.
func (c Cluster) Env() map[string]string {
	if c.EnvJSON.V == nil {
		return map[string]string{}
	}
	return c.EnvJSON.V
}

// Ports decodes the open ports.
func (c Cluster) Ports() []int { return c.PortsJSON.V }

// SSHKeys decodes the public keys.
func (c Cluster) SSHKeys() []string { return c.SSHKeysJSON.V }

// BootTime is the machine kind's typical boot time.
func (c Cluster) BootTime() time.Duration { return time.Duration(c.BootSeconds) * time.Second }

// Cap is the latest moment a starting cluster may still come up (L4).
func (c Cluster) Cap() time.Duration { return max(ProvisionCap, 2*c.BootTime()+5*time.Minute) }

// StepDeadline is when step must be done on every node, counted from
// placement and derived from the machine kind's boot time (L4). Every
// deadline is clamped to the cap.
func (c Cluster) StepDeadline(step string) time.Time {
	if c.PlacedAt == nil {
		return time.Time{}
	}
	start := *c.PlacedAt
	if c.ResumeStartedAt != nil && c.ResumeStartedAt.After(start) {
		start = *c.ResumeStartedAt // a resume takes the launch's steps again (B6)
	}
	return c.stepDeadlineFrom(start, step)
}

// stepDeadlineFrom is StepDeadline counted from start: the placement, a
// resume's start or a joining machine's own placement (L4, B6, L10).
func (c Cluster) stepDeadlineFrom(start time.Time, step string) time.Time {
	boot := c.BootTime()
	running := max(2*boot, 3*time.Minute)
	var d time.Duration
	switch step {
	case StepRunning:
		d = running
	case StepAgent:
		d = running + max(boot/2, 3*time.Minute)
	case StepMesh:
		d = running + max(boot/2, 3*time.Minute) + 2*time.Minute
	default:
		d = c.Cap()
	}
	return start.Add(min(d, c.Cap()))
}

// GroupName is the provider-side idempotency key for the cluster's machines.
func (c Cluster) GroupName() string { return c.ID }

// ClusterNode is one machine of a cluster. Names are node-0…node-N-1; node 0 is the head (N1).
type ClusterNode struct {
	ID             string `gorm:"primaryKey;size:32"`
	ClusterID      string `gorm:"size:32;index"`
	OrgID          string `gorm:"size:32;index"`
	Rank           int
	Name           string     `gorm:"size:32"`
	Status         NodeStatus `gorm:"size:16"`
	Step           string     `gorm:"size:16"` // the step the node is waiting for: running, agent, mesh, software, done
	ProviderNodeID string     `gorm:"size:128"`
	PrivateIP      string     `gorm:"column:private_ip;size:64"`
	PublicHost     string     `gorm:"size:255"`
	SSHPort        int        `gorm:"column:ssh_port"`
	SSHUser        string     `gorm:"column:ssh_user;size:64"`
	RunningAt      *time.Time
	AgentAt        *time.Time
	MeshAt         *time.Time
	SoftwareAt     *time.Time
	HeartbeatAt    *time.Time
	Message        string     `gorm:"size:1000"`
	DownSince      *time.Time // a health pass first saw it unwell (R1); nil = well
	DownPasses     int        // consecutive passes that saw it unwell
	Seen           string     `gorm:"size:255"` // what the last pass saw when unwell
	// HWFault is the hardware error its GPU reports revealed (a new
	// uncorrectable ECC error, a fatal XID, a vanished GPU; gpu_telemetry.go):
	// the health pass counts the machine unwell while it is set (R1). A
	// restart or replacement clears it. Added by 0980_gpu_telemetry.
	HWFault   string     `gorm:"column:hw_fault;size:1000;not null;default:''"`
	HWFaultAt *time.Time `gorm:"column:hw_fault_at"`

	// The machine that claimed this rank with the cluster's bootstrap token
	// (bootstrap.go): its provider machine id, or its host name when it
	// reported none. Empty until claimed; a node whose machine got a
	// per-node token at placement is never claimed.
	ClaimedBy string `gorm:"size:128;not null;default:''"`
	ClaimedAt *time.Time

	// MeshPort is the TCP port the node's agent listens on at PrivateIP for
	// its peers' reach check (mesh.go); 0 = none: peers dial port 22.
	MeshPort int `gorm:"not null;default:0"`

	// A machine joining a cluster after it was ready (see join.go): an
	// added worker (L10) or a replacement (X5), with its own placement and
	// step deadlines; TokenGen moves on with every replacement, so the old
	// machine's agent token stops working.
	JoinKind        string `gorm:"size:16;not null;default:''"` // JoinWorker, JoinReplace, or "" when none
	JoinSeq         int    // the cluster's join it belongs to (its tasks' attempt is -JoinSeq)
	JoinRequestedAt *time.Time
	JoinPlacedAt    *time.Time
	TokenGen        int

	// MachineHost is the physical machine where the provider names one
	// (providers.Node.Host), so faults follow it across clusters (track.go);
	// added by 0966.
	MachineHost string `gorm:"size:191;not null;default:''"`
}

// ClusterEvent is one entry of a cluster's history: every transition and
// every node step (L8).
type ClusterEvent struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	ClusterID string `gorm:"size:32;index"`
	OrgID     string `gorm:"size:32"`
	At        time.Time
	Kind      string `gorm:"size:32"` // status, step, request, error, info
	Status    string `gorm:"size:16"` // the cluster status after the event
	Node      string `gorm:"size:32"`
	Step      string `gorm:"size:16"`
	Message   string `gorm:"size:2000"`
	Type      string `gorm:"size:40;not null;default:''"` // the public event type (public_events.go), "" = not public; added by 0950_webhooks
}

// Frozen copies of the tables as migration 0202 created them (see Migration:
// later model changes never rewrite history).
type (
	clusterV0202 struct {
		ID           string `gorm:"primaryKey;size:32"`
		OrgID        string `gorm:"size:32;index"`
		EnvID        string `gorm:"size:32;index"`
		Name         string `gorm:"size:63"`
		Status       string `gorm:"size:16;index"`
		Provider     string `gorm:"size:64"`
		OfferID      string `gorm:"size:191"`
		QuoteID      string `gorm:"size:32"`
		Location     string `gorm:"size:128"`
		LocationName string `gorm:"size:191"`
		Accelerator  string `gorm:"size:64"`
		MachineKind  string `gorm:"size:32"`
		Interconnect string `gorm:"size:32"`
		Nodes        int
		GPUsPerNode  int   `gorm:"column:gpus_per_node"`
		VolumeGB     int   `gorm:"column:volume_gb"`
		USDPerHour   int64 `gorm:"column:usd_per_hour"`
		MachineHour  int64
		BootSeconds  int
		PublicIPs    bool   `gorm:"column:public_ips"`
		Gateway      string `gorm:"size:255"`

		Software     string `gorm:"size:16"`
		Image        string `gorm:"size:255"`
		StartCommand string `gorm:"size:4000"`
		EnvJSON      string `gorm:"column:env_json;type:text"`
		PortsJSON    string `gorm:"column:ports_json;size:1000"`
		SSHKeysJSON  string `gorm:"column:ssh_keys_json;type:text"`

		IdemKey     *string `gorm:"size:191"`
		RequestHash string  `gorm:"size:64"`
		AgentSecret string  `gorm:"size:64"`
		CreatedBy   string  `gorm:"size:191"`

		LastError            string `gorm:"size:255"`
		PlacedAt             *time.Time
		ReadyAt              *time.Time
		TerminateRequestedAt *time.Time
		EndedAt              *time.Time
		ReleasedAt           *time.Time
		CreatedAt            time.Time
		UpdatedAt            time.Time
	}
	clusterNodeV0202 struct {
		ID             string `gorm:"primaryKey;size:32"`
		ClusterID      string `gorm:"size:32;index"`
		OrgID          string `gorm:"size:32;index"`
		Rank           int
		Name           string `gorm:"size:32"`
		Status         string `gorm:"size:16"`
		Step           string `gorm:"size:16"`
		ProviderNodeID string `gorm:"size:128"`
		PrivateIP      string `gorm:"column:private_ip;size:64"`
		PublicHost     string `gorm:"size:255"`
		SSHPort        int    `gorm:"column:ssh_port"`
		SSHUser        string `gorm:"column:ssh_user;size:64"`
		RunningAt      *time.Time
		AgentAt        *time.Time
		MeshAt         *time.Time
		SoftwareAt     *time.Time
		HeartbeatAt    *time.Time
		Message        string `gorm:"size:1000"`
	}
	clusterEventV0202 struct {
		ID        int64  `gorm:"primaryKey;autoIncrement"`
		ClusterID string `gorm:"size:32;index"`
		OrgID     string `gorm:"size:32"`
		At        time.Time
		Kind      string `gorm:"size:32"`
		Status    string `gorm:"size:16"`
		Node      string `gorm:"size:32"`
		Step      string `gorm:"size:16"`
		Message   string `gorm:"size:2000"`
	}
)

func (clusterV0202) TableName() string      { return "clusters" }
func (clusterNodeV0202) TableName() string  { return "cluster_nodes" }
func (clusterEventV0202) TableName() string { return "cluster_events" }

func up0202Clusters(tx *gorm.DB) error {
	if err := tx.Migrator().CreateTable(&clusterV0202{}, &clusterNodeV0202{}, &clusterEventV0202{}); err != nil {
		return err
	}
	return tx.Exec("CREATE UNIQUE INDEX idx_clusters_org_idem ON clusters (org_id, idem_key)").Error
}

// ClusterForOrg loads a cluster through its organisation (A3).
func (s *Store) ClusterForOrg(ctx context.Context, orgID, id string) (Cluster, error) {
	var c Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND id = ?", orgID, id).Take(&c).Error
	return c, notFound(err, "cluster "+id)
}

// ClusterByID loads a cluster for jobs (no organisation scope: jobs act for the system).
func (s *Store) ClusterByID(ctx context.Context, id string) (Cluster, error) {
	var c Cluster
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&c).Error
	return c, notFound(err, "cluster "+id)
}

// ClustersForOrg lists an organisation's clusters, newest first.
func (s *Store) ClustersForOrg(ctx context.Context, orgID string) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id DESC").Limit(500).Find(&out).Error
	return out, err
}

// ClustersInStatus lists clusters in any of the statuses, oldest first (jobs).
func (s *Store) ClustersInStatus(ctx context.Context, statuses ...ClusterStatus) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("status IN ?", statuses).Order("created_at, id").Find(&out).Error
	return out, err
}

// ClustersToTerminate lists clusters whose terminate was requested and not
// yet done. Failed clusters are not among them: their machines are released
// when they fail (ClustersToRelease retries that).
func (s *Store) ClustersToTerminate(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("terminate_requested_at IS NOT NULL AND status NOT IN ?",
		[]ClusterStatus{StatusTerminated, StatusFailed}).
		Order("terminate_requested_at, id").Find(&out).Error
	return out, err
}

// NodesFor lists a cluster's nodes by rank.
func (s *Store) NodesFor(ctx context.Context, clusterID string) ([]ClusterNode, error) {
	var out []ClusterNode
	err := s.db.WithContext(ctx).Where("cluster_id = ?", clusterID).Order("rank").Find(&out).Error
	return out, err
}

// NodesForClusters loads the nodes of several clusters in one query.
func (s *Store) NodesForClusters(ctx context.Context, ids []string) (map[string][]ClusterNode, error) {
	out := map[string][]ClusterNode{}
	if len(ids) == 0 {
		return out, nil
	}
	var nodes []ClusterNode
	if err := s.db.WithContext(ctx).Where("cluster_id IN ?", ids).Order("cluster_id, rank").Find(&nodes).Error; err != nil {
		return nil, err
	}
	for _, n := range nodes {
		out[n.ClusterID] = append(out[n.ClusterID], n)
	}
	return out, nil
}

// EventsFor lists a cluster's events, oldest first.
func (s *Store) EventsFor(ctx context.Context, clusterID string) ([]ClusterEvent, error) {
	var out []ClusterEvent
	err := s.db.WithContext(ctx).Where("cluster_id = ?", clusterID).Order("at, id").Find(&out).Error
	return out, err
}

// addEvent writes one event that is not public.
func (s *Store) addEvent(ctx context.Context, c Cluster, status ClusterStatus, kind, node, step, msg string) error {
	return s.addTypedEvent(ctx, c, status, "", kind, node, step, msg)
}

// addTypedEvent writes one event; a public one (typ set) is queued in the
// same transaction for every webhook endpoint of the cluster's environment
// that wants it (X8).
func (s *Store) addTypedEvent(ctx context.Context, c Cluster, status ClusterStatus, typ, kind, node, step, msg string) error {
	e := ClusterEvent{
		ClusterID: c.ID, OrgID: c.OrgID, At: s.Now(), Kind: kind, Status: string(status),
		Node: node, Step: step, Message: truncate(msg, 2000), Type: typ,
	}
	if err := s.db.WithContext(ctx).Create(&e).Error; err != nil {
		return err
	}
	if typ == "" {
		return nil
	}
	if typ == TypeNodeVerificationFailed {
		if err := s.recordVerificationFailure(ctx, c, node, msg); err != nil {
			return err // the track record and lemons count it (track.go)
		}
	}
	return s.queueClusterWebhooks(ctx, c, e)
}

// change is one cluster transition as its caller names it: the event, the
// extra cluster columns, an extra guard on the row, the event entry, and
// what else commits with it (node rows, mail).
type change struct {
	event  Event
	set    map[string]any // extra cluster columns
	guard  string         // extra SQL condition on the cluster row (a constant), e.g. "placed_at IS NULL"
	args   []any          // the guard's parameters
	kind   string         // the event entry's kind; "" = status
	node   string
	step   string
	msg    string
	nodes  func(tx *Store) error // node rows, in the same transaction
	notify *ClusterNotify        // outcome mail (E1); nil = none
	always bool                  // mail even though the status stays (recovery exhausted)
	topic  string                // the mail when the status alone does not say it ("healthy"); "" = by status
	try    int                   // the install attempt the mail belongs to
	typ    string                // the public event type when the event alone does not say it; "" = by event (public_events.go)
}

// transition is the one compare-and-swap every cluster change goes
// through: it moves the cluster along ch.event when ClusterTransitions
// allows that event in its current status, and in the same transaction
// writes the event entry, the node rows and the outcome mail. ErrConflict
// means the event is not legal in the cluster's status (someone else moved
// it first, or the caller was wrong); nothing is written then.
func (s *Store) transition(ctx context.Context, id string, ch change) (Cluster, error) {
	from, to, err := eventMove(ch.event)
	if err != nil {
		return Cluster{}, err
	}
	var out Cluster
	err = s.Tx(ctx, func(tx *Store) error {
		set := map[string]any{"updated_at": tx.Now()}
		if to != "" {
			set["status"] = to
		}
		if to == StatusReady || to == StatusDegraded {
			// Handed over (again) from a starting or stopped status: the
			// GPU watch's clocks count from here; ready ⇄ degraded keeps
			// the moment (X15). SET reads the row as it was.
			set["handed_over_at"] = gorm.Expr("CASE WHEN status IN (?, ?) THEN handed_over_at ELSE ? END",
				StatusReady, StatusDegraded, tx.Now())
		}
		for k, v := range ch.set {
			set[k] = v
		}
		q := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ? AND status IN ?", id, from)
		if ch.guard != "" {
			q = q.Where(ch.guard, ch.args...)
		}
		res := q.Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("models: cluster %s: event %s refused (legal from %v): %w", id, ch.event, from, ErrConflict)
		}
		if to == StatusReady {
			if err := tx.endBillingHold(ctx, id); err != nil {
				return err // X13: billing starts at hand-over
			}
		}
		if ch.nodes != nil {
			if err := ch.nodes(tx); err != nil {
				return err
			}
		}
		c, err := tx.ClusterByID(ctx, id)
		if err != nil {
			return err
		}
		out = c
		kind := ch.kind
		if kind == "" {
			kind = "status"
		}
		if err := tx.addTypedEvent(ctx, c, c.Status, transitionType(ch), kind, ch.node, ch.step, ch.msg); err != nil {
			return err
		}
		if err := tx.trackTransition(ctx, c, ch.event); err != nil {
			return err // the offer's track record (track.go)
		}
		if to == "" && !ch.always {
			return nil // the status stays: nothing to mail
		}
		if to != "" {
			if err := tx.RecordMachineStates(ctx, id, to); err != nil {
				return err // X7: the machines' state intervals move with the status
			}
		}
		return tx.queueClusterMail(ctx, ch.notify, c, ch.try, ch.topic)
	})
	return out, err
}

// nodeRows updates every node of a cluster (or those matching where).
func (s *Store) nodeRows(ctx context.Context, clusterID string, set map[string]any, where ...any) error {
	q := s.db.WithContext(ctx).Model(&ClusterNode{}).Where("cluster_id = ?", clusterID)
	if len(where) > 0 {
		q = q.Where(where[0], where[1:]...)
	}
	return q.Updates(set).Error
}

// ---- launch ----

// LaunchParams is a launch from a quote (L1) with its workload settings,
// which never change the price (Q5).
type LaunchParams struct {
	OrgID, EnvID string
	QuoteID      string
	IdemKey      string // "" = none
	RequestHash  string // hash of the request body, for L1's same-key-different-body check
	Workload
	SSHKeys []string // OpenSSH public keys
	Actor   string
	// SharedQuote: a quote already used by another cluster launches as a
	// copy at its locked price (see LaunchInput.SharedQuote).
	SharedQuote bool
	// Verify: the cluster is verified before hand-over (X13). Every
	// launch surface turns it on unless asked `verify: false`.
	Verify bool
}

// Launch refusals the API maps onto its error codes (API2).
var (
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	ErrQuoteUsed           = errors.New("quote already launched")
)

// PriceChangedError is Q5: an expired quote or a priced field repeated with
// another value. New is a fresh quote for the requested shape when one fits.
type PriceChangedError struct {
	Reason string // "expired" or "field:<name>"
	Old    Quote
	New    *Quote
}

func (e *PriceChangedError) Error() string { return "price changed: " + e.Reason }

// QuotaError is L2's 403 quota_exceeded.
type QuotaError struct {
	Resource     string // machines or gpus
	Limit, InUse int
	Requested    int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %d %s in use + %d requested > limit %d", e.InUse, e.Resource, e.Requested, e.Limit)
}

// UsageInUse counts the machines and GPUs an organisation has in live clusters
// and in stopped clusters being resumed.
func (s *Store) UsageInUse(ctx context.Context, orgID string) (machines, gpus int, err error) {
	var row struct {
		Machines int
		GPUs     int `gorm:"column:gpus"`
	}
	err = s.db.WithContext(ctx).Model(&Cluster{}).
		Select("COALESCE(SUM(nodes), 0) AS machines, COALESCE(SUM(nodes * gpus_per_node), 0) AS gpus").
		Where("org_id = ? AND (status IN ? OR (status = ? AND resume_requested_at IS NOT NULL))", orgID, LiveStatuses, StatusStopped).
		Scan(&row).Error
	return row.Machines, row.GPUs, err
}

// LaunchCluster creates a cluster in provisioning from a quote, with every
// check of L1, L2 and Q5 and the offer's stock (admit), in one transaction
// serialised per organisation.
// created is false when an earlier launch with the same key is returned.
func (s *Store) LaunchCluster(ctx context.Context, p LaunchParams) (c Cluster, created bool, err error) {
	err = s.Tx(ctx, func(tx *Store) error {
		if err := tx.lockOrg(ctx, p.OrgID); err != nil {
			return err
		}
		if p.IdemKey != "" {
			var prev Cluster
			// The key is the environment's (A3): another
			// environment's launch under it is not this one's.
			e := tx.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND idem_key = ?", p.OrgID, p.EnvID, p.IdemKey).Take(&prev).Error
			if e == nil {
				if prev.RequestHash != p.RequestHash {
					return ErrIdempotencyMismatch
				}
				c = prev
				return nil
			}
			if !errors.Is(e, gorm.ErrRecordNotFound) {
				return e
			}
		}
		q, err := tx.QuoteForOrg(ctx, p.OrgID, p.QuoteID)
		if err != nil {
			return err
		}
		if err := tx.quoteInEnv(ctx, q, p.EnvID); err != nil {
			return err
		}
		if q.UsedByCluster != "" {
			if !p.SharedQuote {
				return ErrQuoteUsed
			}
			// The same form sent again from another tab is the launch it
			// already made; another workload is another cluster.
			first, err := tx.ClusterForOrg(ctx, p.OrgID, q.UsedByCluster)
			if err != nil || first.RequestHash == p.RequestHash {
				return ErrQuoteUsed
			}
			if q, err = tx.copyQuote(ctx, q); err != nil {
				return err
			}
		}
		if fe := p.Workload.Validate(q.MachineKind); len(fe) > 0 {
			return fe
		}
		if q.Expired(tx.Now()) {
			return &PriceChangedError{Reason: "expired", Old: q}
		}
		// B5: an environment whose budget for the month is reached takes no
		// new cluster (it would only be stopped on the next budgets pass).
		if err := tx.budgetReachedFor(ctx, Cluster{OrgID: p.OrgID, EnvID: p.EnvID}); err != nil {
			return err
		}
		offer, err := tx.admit(ctx, p.OrgID, q)
		if err != nil {
			return err
		}
		c, err = tx.insertCluster(ctx, p, q, offer)
		if err != nil {
			return err
		}
		if c.VolumeID, err = tx.attachVolume(ctx, c, q, p.Actor); err != nil {
			return err
		}
		if c.VolumeID != "" {
			if err := tx.db.WithContext(ctx).Model(&Cluster{}).Where("id = ?", c.ID).Update("volume_id", c.VolumeID).Error; err != nil {
				return err
			}
		}
		created = true
		return tx.db.WithContext(ctx).Model(&Quote{}).Where("id = ?", q.ID).Update("used_by_cluster", c.ID).Error
	})
	return c, created, err
}

func (s *Store) insertCluster(ctx context.Context, p LaunchParams, q Quote, o Offer) (Cluster, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Cluster{}, err
	}
	now := s.Now()
	c := Cluster{
		ID: NewID("cl"), OrgID: p.OrgID, EnvID: p.EnvID, Name: p.Name, Status: StatusProvisioning,
		Provider: q.Provider, OfferID: q.OfferID, QuoteID: q.ID, Location: q.Location, LocationName: q.LocationName,
		Accelerator: q.Accelerator, MachineKind: q.MachineKind, Interconnect: q.Interconnect, NICs: o.NICs, NICGbps: o.NICGbps,
		Nodes: q.Nodes, GPUsPerNode: q.GPUsPerNode, VolumeGB: q.VolumeGB, USDPerHour: q.USDPerHour,
		MachineHour: q.MachineHour(), UpstreamMachineHour: o.MachineHour(), BootSeconds: o.BootSeconds, PublicIPs: o.PublicIPs, Gateway: o.Gateway,
		Software: p.Software, Image: p.Image, StartCommand: p.StartCommand,
		EnvJSON: JSONOf(p.Env), PortsJSON: JSONOf(p.Ports), SSHKeysJSON: JSONOf(p.SSHKeys),
		Verify: p.Verify, RequestHash: p.RequestHash, AgentSecret: hex.EncodeToString(secret), CreatedBy: p.Actor,
		CreatedAt: now, UpdatedAt: now,
	}
	if p.IdemKey != "" {
		c.IdemKey = &p.IdemKey
	}
	if err := s.db.WithContext(ctx).Create(&c).Error; err != nil {
		return Cluster{}, fmt.Errorf("models: create cluster: %w", err)
	}
	nodes := make([]ClusterNode, c.Nodes)
	for i := range nodes {
		nodes[i] = ClusterNode{ID: NewID("nd"), ClusterID: c.ID, OrgID: c.OrgID, Rank: i, Name: fmt.Sprintf("node-%d", i),
			Status: NodeProvisioning, Step: StepRunning} // addresses come from the provider or the agent (OP1)
	}
	if err := s.db.WithContext(ctx).Create(&nodes).Error; err != nil {
		return Cluster{}, fmt.Errorf("models: create nodes: %w", err)
	}
	if err := s.recordLaunch(ctx, c, o); err != nil {
		return Cluster{}, fmt.Errorf("models: launch record: %w", err) // every accepted launch has one (X2, track.go)
	}
	// The price exactly as the quote and the offers page show it (O7).
	msg := fmt.Sprintf("Launch requested by %s: %s in %s at %s/h, software: %s.",
		p.Actor, c.ShapeLabel(), c.PlaceLabel(), PriceUSD(c.USDPerHour), c.SoftwareLabel())
	return c, s.addTypedEvent(ctx, c, StatusProvisioning, TypeClusterProvisioning, "request", "", "", msg)
}

// lockOrg serialises launches per organisation: a row lock on PostgreSQL;
// SQLite's immediate transactions already serialise writers.
func (s *Store) lockOrg(ctx context.Context, orgID string) error {
	if !s.IsPostgres() {
		return nil
	}
	return s.db.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", orgID).Take(&Org{}).Error
}

func (s *Store) orgQuota(ctx context.Context, orgID string) (Org, error) {
	var o Org
	err := s.db.WithContext(ctx).Where("id = ?", orgID).Take(&o).Error
	if err != nil {
		return o, notFound(err, "org "+orgID)
	}
	if o.MaxMachines == 0 {
		o.MaxMachines = DefaultMaxMachines
	}
	if o.MaxGPUs == 0 {
		o.MaxGPUs = DefaultMaxGPUs
	}
	return o, nil
}

// ---- provisioning (driven by the provision job) ----

// PlacedNode is what the provider reported for one machine at placement.
type PlacedNode struct {
	Rank                        int
	ProviderNodeID              string
	PrivateIP, PublicHost, User string
	SSHPort                     int
	Host                        string // providers.Node.Host: the physical machine, where the provider names one
}

// MarkPlaced records that every machine was reserved at once (L3).
func (s *Store) MarkPlaced(ctx context.Context, id string, nodes []PlacedNode) error {
	c, err := s.ClusterByID(ctx, id)
	if err != nil {
		return err
	}
	_, err = s.transition(ctx, id, change{event: EventPlaced, guard: "placed_at IS NULL",
		set: map[string]any{"placed_at": s.Now()}, kind: "step", step: "reserved",
		msg: fmt.Sprintf("All %d machines reserved in %s.", len(nodes), c.PlaceLabel()),
		nodes: func(tx *Store) error {
			for _, n := range nodes {
				up := map[string]any{"provider_node_id": n.ProviderNodeID, "public_host": n.PublicHost, "ssh_port": n.SSHPort, "ssh_user": n.User,
					"machine_host": n.Host}
				if n.PrivateIP != "" {
					up["private_ip"] = n.PrivateIP
				}
				if err := tx.nodeRows(ctx, id, up, "rank = ?", n.Rank); err != nil {
					return err
				}
			}
			return nil
		}})
	return err
}

// SetNodeAddresses records addresses the provider reported for a machine
// after its placement: clouds that assign them at boot (Lambda) report none
// when the machine is placed. Empty values keep what is recorded; the
// private address replaces the placement-time default. It reports whether
// anything changed.
func (s *Store) SetNodeAddresses(ctx context.Context, n ClusterNode, reported PlacedNode) (bool, error) {
	up := map[string]any{}
	if reported.PrivateIP != "" && reported.PrivateIP != n.PrivateIP {
		up["private_ip"] = reported.PrivateIP
	}
	if reported.PublicHost != "" && reported.PublicHost != n.PublicHost {
		up["public_host"] = reported.PublicHost
	}
	if reported.SSHPort != 0 && reported.SSHPort != n.SSHPort {
		up["ssh_port"] = reported.SSHPort
	}
	if reported.User != "" && reported.User != n.SSHUser {
		up["ssh_user"] = reported.User
	}
	if len(up) == 0 {
		return false, nil
	}
	return true, s.nodeRows(ctx, n.ClusterID, up, "id = ?", n.ID)
}

// MarkNodeStep records that a node finished step at now and moves it on to
// the next step. It is idempotent: a step already recorded changes nothing.
func (s *Store) MarkNodeStep(ctx context.Context, clusterID string, rank int, step, msg string) (bool, error) {
	col, next := stepColumn(step)
	if col == "" {
		return false, fmt.Errorf("models: unknown step %q", step)
	}
	var changed bool
	err := s.Tx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&ClusterNode{}).
			Where("cluster_id = ? AND rank = ? AND "+col+" IS NULL AND status IN ?", clusterID, rank, LiveNodeStatuses).
			Updates(map[string]any{col: tx.Now(), "step": next})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		changed = true
		c, err := tx.ClusterByID(ctx, clusterID)
		if err != nil {
			return err
		}
		return tx.addEvent(ctx, c, c.Status, "step", fmt.Sprintf("node-%d", rank), step, msg)
	})
	return changed, err
}

func stepColumn(step string) (col, next string) {
	switch step {
	case StepRunning:
		return "running_at", StepAgent
	case StepAgent:
		return "agent_at", StepMesh
	case StepMesh:
		return "mesh_at", "done"
	case StepSoftware:
		return "software_at", "done"
	}
	return "", ""
}

// FailCluster ends a starting cluster (L4): status failed with lastError, an
// event naming the node and the step, that node failed and every other one
// terminated (released with it; a lost one stays lost), nothing billed (readyAt stays unset) and the failure mail, in one
// transaction. The provision job releases the machines.
func (s *Store) FailCluster(ctx context.Context, id string, lastError LastError, node, step, msg string, n *ClusterNotify) (Cluster, error) {
	return s.transition(ctx, id, change{event: EventFail, notify: n, node: node, step: step, msg: msg,
		set: map[string]any{"last_error": truncate(lastError.String(), 255), "ended_at": s.Now()},
		nodes: func(tx *Store) error {
			// Only the node that failed reads failed; the others are released
			// with the cluster, and a lost one stays lost.
			if err := tx.nodeRows(ctx, id, map[string]any{"status": NodeTerminated}, "status <> ? AND name <> ?", NodeLost, node); err != nil {
				return err
			}
			if err := tx.nodeRows(ctx, id, map[string]any{"status": NodeFailed}, "status <> ? AND name = ?", NodeLost, node); err != nil {
				return err
			}
			return tx.dropLaunchVolume(ctx, id)
		}})
}

// MarkNodeLost flags a node that vanished or failed while it was still
// taking steps (before the cluster fails); a node that ended with its
// cluster stays as it ended.
func (s *Store) MarkNodeLost(ctx context.Context, clusterID string, rank int, msg string) error {
	return s.nodeRows(ctx, clusterID, map[string]any{"status": NodeLost, "message": truncate(msg, 1000)},
		"rank = ? AND status IN ?", rank, LiveNodeStatuses)
}

// MarkJoined is L5: every machine is up and reached every other. readyAt is
// set once for all (billing starts there); software none is ready at once
// (every node ready, the ready mail queued), otherwise the cluster is
// installing and every node waits for its software.
func (s *Store) MarkJoined(ctx context.Context, id string, n *ClusterNotify) (Cluster, error) {
	c, err := s.ClusterByID(ctx, id)
	if err != nil {
		return c, err
	}
	ch := change{event: EventJoined, notify: n, set: map[string]any{"ready_at": s.Now()},
		msg: "Every machine is up and reached every other; billing starts now for all of them.",
		nodes: func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeReady, "step": "done"})
		}}
	if c.Verify && (c.Software == "" || c.Software == "none") {
		ch.event, ch.notify = EventJoinedVerify, nil // the ready mail waits for the hand-over
		ch.msg = "Every machine is up and reached every other. Verifying every machine and the fabric before hand-over; verification is not billed, billing starts at hand-over."
		ch.set["unbilled_at"] = s.Now() // X13: held from the start, so nothing is billed before hand-over
		ch.nodes = func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeReady, "step": StepVerify})
		}
	}
	if c.Software != "" && c.Software != "none" {
		ch.event = EventJoinedInstall
		ch.msg = "Every machine is up and reached every other; billing starts now. Installing " + c.SoftwareLabel() + "."
		ch.nodes = func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeInstalling, "step": StepSoftware})
		}
	}
	return s.transition(ctx, id, ch)
}

// RequestTerminate records the user's intent (L7); the terminate job carries
// it out. Accepted in every state but failed and terminated; repeating it,
// or asking once the cluster ended, is harmless and changes nothing.
func (s *Store) RequestTerminate(ctx context.Context, orgID, id, actor string) (Cluster, error) {
	var c Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if c, err = tx.ClusterForOrg(ctx, orgID, id); err != nil {
			return err
		}
		if !c.CanTerminate() {
			return nil // already requested, or ended: every machine is released already
		}
		moved, err := tx.transition(ctx, id, change{event: EventTerminateRequested, guard: "terminate_requested_at IS NULL",
			set: map[string]any{"terminate_requested_at": tx.Now()}, kind: "request", msg: "Terminate requested by " + actor + "."})
		if errors.Is(err, ErrConflict) {
			c, err = tx.ClusterForOrg(ctx, orgID, id) // requested or ended meanwhile
			return err
		}
		c = moved
		return err
	})
	return c, err
}

// ClustersToRelease lists failed clusters whose machines are not yet
// confirmed released (a release that failed is retried every tick).
func (s *Store) ClustersToRelease(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	err := s.db.WithContext(ctx).Where("status = ? AND released_at IS NULL", StatusFailed).Order("created_at, id").Find(&out).Error
	return out, err
}

// MarkReleased records that the provider confirmed every machine of a
// failed cluster released. ErrConflict once recorded, or for a cluster that
// did not fail.
func (s *Store) MarkReleased(ctx context.Context, id string) error {
	_, err := s.transition(ctx, id, change{event: EventReleased, guard: "released_at IS NULL",
		set: map[string]any{"released_at": s.Now()}, kind: "info", msg: "Every machine released at the provider."})
	return err
}

// MarkTerminated ends the cluster after every machine was released (L7);
// billing ends at this moment, and every node is terminated with it.
func (s *Store) MarkTerminated(ctx context.Context, id string) (Cluster, error) {
	now := s.Now()
	return s.transition(ctx, id, change{event: EventTerminated, msg: "Every machine released; billing ended.",
		set: map[string]any{"ended_at": now, "released_at": now},
		nodes: func(tx *Store) error {
			return tx.nodeRows(ctx, id, map[string]any{"status": NodeTerminated})
		}})
}

// ---- agent tokens ----

// AgentToken is node n's credential for the agent protocol: it names the node
// and carries an HMAC under the cluster's secret, so it is derivable again
// after a crash and works for its own node only.
func AgentToken(c Cluster, n ClusterNode) string {
	return "cdn_" + n.ID + "_" + agentMAC(c.AgentSecret, n)
}

// agentMAC signs the node id, and after a replacement (X5) its token
// generation, so the replaced machine's token no longer authenticates.
func agentMAC(secret string, n ClusterNode) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(n.ID))
	if n.TokenGen > 0 {
		fmt.Fprintf(m, "/%d", n.TokenGen)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// ErrAgentRevoked is a valid token whose cluster has ended.
var ErrAgentRevoked = errors.New("agent token revoked: the cluster has ended")

// NodeForAgentToken authenticates an agent: the node and its cluster, or
// ErrNotFound for a bad token and ErrAgentRevoked once the cluster ended or
// its terminate was requested.
func (s *Store) NodeForAgentToken(ctx context.Context, token string) (Cluster, ClusterNode, error) {
	rest, ok := strings.CutPrefix(token, "cdn_")
	i := strings.LastIndex(rest, "_")
	if !ok || i <= 0 {
		return Cluster{}, ClusterNode{}, fmt.Errorf("models: agent token: %w", ErrNotFound)
	}
	nodeID, mac := rest[:i], rest[i+1:]
	var n ClusterNode
	if err := s.db.WithContext(ctx).Where("id = ?", nodeID).Take(&n).Error; err != nil {
		return Cluster{}, ClusterNode{}, notFound(err, "agent node")
	}
	c, err := s.ClusterByID(ctx, n.ClusterID)
	if err != nil {
		return Cluster{}, ClusterNode{}, err
	}
	if !hmac.Equal([]byte(mac), []byte(agentMAC(c.AgentSecret, n))) {
		return Cluster{}, ClusterNode{}, fmt.Errorf("models: agent token: %w", ErrNotFound)
	}
	if c.Status.Terminal() || c.TerminateRequestedAt != nil {
		return c, n, ErrAgentRevoked
	}
	return c, n, nil
}

// TouchHeartbeat records an agent heartbeat.
func (s *Store) TouchHeartbeat(ctx context.Context, nodeID string) error {
	return s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", nodeID).Update("heartbeat_at", s.Now()).Error
}

// copyQuote is a new, unused quote with q's locked prices and expiry: the
// same price promise, shown once, launched twice (LaunchParams.SharedQuote).
func (s *Store) copyQuote(ctx context.Context, q Quote) (Quote, error) {
	q.ID, q.UsedByCluster, q.CreatedAt = NewID("qt"), "", s.Now()
	if err := s.db.WithContext(ctx).Create(&q).Error; err != nil {
		return Quote{}, fmt.Errorf("models: copy quote: %w", err)
	}
	return q, nil
}
