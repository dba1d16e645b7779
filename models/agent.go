package models

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"gorm.io/gorm"
)

// AgentCheckIn is step (b): the node's agent reached the server. A check-in
// also proves the machine runs, so step (a) is recorded too if the provision
// job has not seen it yet. smi is what the node's nvidia-smi printed
// (nodespec.GPUQuery; nil when the agent sent nothing): GPUs that differ
// from the offer's leave step (b) open with the reason on the node, and the
// provision job fails the cluster. It returns every node, for the peer list.
//
// privateIP is the address the agent reported: it is recorded when neither
// the provider nor a claim gave the node one (OP1), and then is what the
// peers, the hostfile and the node env use. meshPort is where the agent
// listens for its peers' reach check (0 = none). A reported address and port
// another node already has is refused with ErrAddressTaken (mesh.go).
func (s *Store) AgentCheckIn(ctx context.Context, c Cluster, n ClusterNode, privateIP string, meshPort int, smi *string) ([]ClusterNode, error) {
	if err := s.recordAgentAddress(ctx, &n, privateIP, meshPort); err != nil {
		return nil, err
	}
	if c.Starting() || n.Status == NodeJoining {
		err := s.Tx(ctx, func(tx *Store) error {
			if _, err := tx.MarkNodeStep(ctx, c.ID, n.Rank, StepRunning, n.Name+" is running (its agent checked in)."); err != nil {
				return err
			}
			if smi != nil {
				if mismatch, err := tx.checkNodeGPUs(ctx, c, n, *smi); mismatch != "" || err != nil {
					return err // step (b) stays open: the provision job fails the cluster
				}
			}
			_, err := tx.MarkNodeStep(ctx, c.ID, n.Rank, StepAgent, n.Name+"'s agent checked in.")
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := s.TouchHeartbeat(ctx, n.ID); err != nil {
		return nil, err
	}
	return s.NodesFor(ctx, c.ID)
}

// ReportPeers is step (c): the node reports which peers it reached on the
// private network. When it reached every other node the step is done;
// otherwise the unreachable peers are kept on the node for the events.
func (s *Store) ReportPeers(ctx context.Context, c Cluster, n ClusterNode, reached []string, unreachable map[string]string) (bool, error) {
	nodes, err := s.NodesFor(ctx, c.ID)
	if err != nil {
		return false, err
	}
	// A peer whose agent listens on a mesh port is reached at exactly that
	// endpoint (agents sharing an address are told apart); one without, at
	// its address on any port.
	got, gotHost := map[string]bool{}, map[string]bool{}
	for _, a := range reached {
		got[a], gotHost[hostOnly(a)] = true, true
	}
	var missing, waiting []string
	for _, peer := range nodes {
		if peer.Rank == n.Rank || n.Status == NodeJoining && (peer.Status == NodeDown || peer.Status == NodeRestarting) {
			continue // a joining machine needs to reach the machines that are up
		}
		ep := peer.MeshEndpoint()
		if ep == "" {
			// Not on the private network yet (still booting): a wait, not
			// an unreachable peer.
			waiting = append(waiting, peer.Name)
			continue
		}
		if !got[ep] && (peer.MeshPort != 0 || !gotHost[ep]) {
			why := unreachable[ep]
			if why == "" && ep != "" {
				why = unreachable[peer.PrivateIP]
			}
			if why == "" {
				why = "not reported"
			}
			missing = append(missing, fmt.Sprintf("%s (%s): %s", peer.Name, ep, truncate(why, 120)))
		}
	}
	if len(missing) > 0 || len(waiting) > 0 {
		sort.Strings(missing)
		sort.Strings(waiting)
		msg := WaitingForPeers + strings.Join(waiting, ", ") + " to join the private network."
		if len(missing) > 0 {
			msg = "cannot reach " + strings.Join(missing, "; ")
			if len(waiting) > 0 {
				msg += "; waiting for " + strings.Join(waiting, ", ") + " to join the private network"
			}
		}
		return false, s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).Update("message", truncate(msg, 1000)).Error
	}
	if n.MeshAt != nil || !c.Starting() && n.Status != NodeJoining {
		return true, nil
	}
	_, err = s.MarkNodeStep(ctx, c.ID, n.Rank, StepMesh, reachedPeers(n.Name, len(nodes)-1))
	if err == nil {
		err = s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).Update("message", "").Error
	}
	return err == nil, err
}

func hostOnly(addr string) string {
	if i := strings.LastIndex(addr, ":"); i > 0 && strings.Count(addr, ":") == 1 {
		return addr[:i]
	}
	return addr
}

// ---- node logs (N6) ----

// MaxLogLinesPerNode bounds stored log lines per node; older lines are dropped.
const MaxLogLinesPerNode = 2000

// NodeLogLine is one line an agent shipped.
type NodeLogLine struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	ClusterID string `gorm:"size:32;index:idx_node_logs,priority:1"`
	OrgID     string `gorm:"size:32"`
	Rank      int    `gorm:"index:idx_node_logs,priority:2"`
	At        time.Time
	Text      string `gorm:"size:4000"`
}

// Frozen copies of the tables as migration 0203 created them (see Migration:
// later model changes never rewrite history).
type (
	nodeLogLineV0203 struct {
		ID        int64  `gorm:"primaryKey;autoIncrement"`
		ClusterID string `gorm:"size:32;index:idx_node_logs,priority:1"`
		OrgID     string `gorm:"size:32"`
		Rank      int    `gorm:"index:idx_node_logs,priority:2"`
		At        time.Time
		Text      string `gorm:"size:4000"`
	}
)

func (nodeLogLineV0203) TableName() string { return "node_log_lines" }

func up0203NodeLogs(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&nodeLogLineV0203{})
}

// LogInput is a line as shipped by an agent.
type LogInput struct {
	At   time.Time
	Text string
}

// AppendNodeLogs stores lines for one node, in order, and trims the node's
// log to MaxLogLinesPerNode.
func (s *Store) AppendNodeLogs(ctx context.Context, c Cluster, rank int, lines []LogInput) error {
	if len(lines) == 0 {
		return nil
	}
	return s.Tx(ctx, func(tx *Store) error {
		rows := make([]NodeLogLine, 0, len(lines))
		for _, l := range lines {
			at := l.At.UTC()
			if at.IsZero() {
				at = tx.Now()
			}
			rows = append(rows, NodeLogLine{ClusterID: c.ID, OrgID: c.OrgID, Rank: rank, At: at, Text: truncate(l.Text, 4000)})
		}
		if err := tx.db.WithContext(ctx).CreateInBatches(rows, 200).Error; err != nil {
			return err
		}
		var cutoff int64
		err := tx.db.WithContext(ctx).Model(&NodeLogLine{}).Where("cluster_id = ? AND rank = ?", c.ID, rank).
			Order("id DESC").Offset(MaxLogLinesPerNode).Limit(1).Pluck("id", &cutoff).Error
		if err != nil || cutoff == 0 {
			return err
		}
		return tx.db.WithContext(ctx).Where("cluster_id = ? AND rank = ? AND id <= ?", c.ID, rank, cutoff).Delete(&NodeLogLine{}).Error
	})
}

// NodeLogs returns a node's lines after afterID (0 = from the oldest kept),
// oldest first, at most limit, through the cluster's organisation (A3).
func (s *Store) NodeLogs(ctx context.Context, orgID, clusterID string, rank int, afterID int64, limit int) ([]NodeLogLine, error) {
	var out []NodeLogLine
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ? AND rank = ? AND id > ?", orgID, clusterID, rank, afterID).
		Order("id").Limit(limit).Find(&out).Error
	return out, err
}

// TailNodeLogs returns the last n lines of a node, oldest first.
func (s *Store) TailNodeLogs(ctx context.Context, orgID, clusterID string, rank, n int) ([]NodeLogLine, error) {
	var out []NodeLogLine
	err := s.db.WithContext(ctx).Where("org_id = ? AND cluster_id = ? AND rank = ?", orgID, clusterID, rank).
		Order("id DESC").Limit(n).Find(&out).Error
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// ---- the heartbeat (N3, V4, S1, X4) ----

// HeartbeatReport is what an agent's heartbeat reports besides being
// alive: its start command's state (StartNone when the machine has none)
// and its mounts step's state, each nil when it reported nothing.
type HeartbeatReport struct {
	Start  *StartReport
	Mounts *MountsReport
	GPU    *GPUReport // its GPU samples and XID lines (X15); nil = none
}

// ReportError refuses a heartbeat whose Field ("start", "mounts") cannot
// be shown; nothing of the heartbeat is kept.
type ReportError struct {
	Field string
	Err   error
}

func (e *ReportError) Error() string { return e.Field + ": " + e.Err.Error() }

// StartOrder is a node's order to run the start command (N3): as whom,
// with which env, whether ports are published, and its part of the mount
// plan (V4; nil when it mounts nothing).
type StartOrder struct {
	User    string
	Env     map[string]string
	Publish bool
	Mounts  *NodeMounts
	// Generation and Script are a run's (X17): past generation 0 the agent
	// stops the ranks' command (SIGUSR1, then SIGTERM) and starts Script,
	// the resume command, in Env.
	Generation int
	Script     string
	Stop       bool // stop the command of Generation and start nothing
	Warn       bool // SIGUSR1 to the command of Generation: a planned stop comes (X17)
}

// HeartbeatOrders is what the node is to do next: at most one task (its
// software's, a join's, or node-0's NCCL check) and the start order.
type HeartbeatOrders struct {
	Task   *SoftwareTask
	NCCL   *NCCLCheck
	Verify *VerifyTask // a verification check (X13)
	Start  *StartOrder
}

// Heartbeat is one heartbeat of node n's agent, in one transaction: it
// records the node alive and the states it reports (the newest report
// wins), and returns the node's orders: its next task, marked sent, and
// once the cluster is ready the start order until the agent reports its
// start command.
func (s *Store) Heartbeat(ctx context.Context, c Cluster, n ClusterNode, r HeartbeatReport) (HeartbeatOrders, error) {
	startReported := r.Start != nil // the start order is sent until the agent reports
	var reportedGen int
	var reportedRunning bool
	if r.Start != nil {
		reportedGen, reportedRunning = r.Start.Generation, r.Start.State == StartRunning
	}
	if r.Start != nil && r.Start.State == StartNone {
		r.Start = nil // no start command: nothing to keep
	}
	if r.Start != nil {
		if err := r.Start.Validate(); err != nil {
			return HeartbeatOrders{}, &ReportError{"start", err}
		}
	}
	if r.Mounts != nil {
		if err := r.Mounts.Validate(); err != nil {
			return HeartbeatOrders{}, &ReportError{"mounts", err}
		}
	}
	if r.GPU != nil {
		if err := r.GPU.Validate(s.Now()); err != nil {
			return HeartbeatOrders{}, &ReportError{"gpu", err}
		}
		if err := s.checkGPUIndexes(ctx, c, n, *r.GPU); err != nil {
			return HeartbeatOrders{}, err
		}
	}
	var o HeartbeatOrders
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.TouchHeartbeat(ctx, n.ID); err != nil {
			return err
		}
		if r.GPU != nil {
			if err := tx.RecordGPUReport(ctx, c, n, *r.GPU); err != nil {
				return err
			}
		}
		if r.Start != nil {
			if err := tx.RecordStart(ctx, c, n, *r.Start); err != nil {
				return err
			}
		}
		if r.Mounts != nil {
			if err := tx.RecordMounts(ctx, c, n, *r.Mounts); err != nil {
				return err
			}
		}
		var err error
		if o.Start, err = tx.startOrder(ctx, c, n, startReported, reportedGen, reportedRunning); err != nil {
			return err
		}
		if o.Task, err = tx.NextSoftwareTask(ctx, c, n); err == nil && o.Task == nil {
			o.Task, err = tx.NextJoinTask(ctx, c, n) // a machine joining after ready (L10, X5)
		}
		if err != nil || o.Task != nil {
			return err
		}
		if o.Verify, err = tx.NextVerifyTask(ctx, c, n); err != nil || o.Verify != nil {
			return err
		}
		o.NCCL, err = tx.NextNCCLTask(ctx, c, n)
		return err
	})
	return o, err
}

// startOrder is node n's start order: nil before the cluster is ready,
// for a machine still joining, and once the agent reported its start
// command.
func (s *Store) startOrder(ctx context.Context, c Cluster, n ClusterNode, reported bool, reportedGen int, running bool) (*StartOrder, error) {
	if n.Status == NodeJoining {
		return nil, nil
	}
	run, hasRun, err := s.runStartOrder(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	if hasRun && run.Status == RunRecovering {
		// X17: the ranks stop while a machine is replaced; an agent still
		// running the command is told to stop it (SIGUSR1, then SIGTERM).
		if running && reportedGen <= run.Generation {
			return &StartOrder{Stop: true, Generation: run.Generation}, nil
		}
		return nil, nil
	}
	if hasRun && run.Status == RunRunning && run.WarnedAt != nil && running && reportedGen == run.Generation {
		return &StartOrder{Warn: true, Generation: run.Generation}, nil // X17: at least two minutes ahead
	}
	if c.Status != StatusReady {
		return nil, nil
	}
	if reported && (!hasRun || reportedGen >= run.Generation) {
		return nil, nil
	}
	nodes, err := s.NodesFor(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	offer, _ := s.OfferByID(ctx, c.OfferID) // a vanished offer only loses CPU/memory lines
	spec := ClusterSpec(c, nodes, offer)
	o := &StartOrder{User: n.SSHUser, Env: map[string]string{}, Publish: c.PortsPublished()}
	if o.User == "" {
		o.User = nodespec.DefaultSSHUser
	}
	for _, e := range spec.Env(n.Rank) {
		o.Env[e.Name] = e.Value
	}
	plan, err := s.MountPlanFor(ctx, c)
	if err != nil {
		return nil, err
	}
	if m, ok := plan.ForNode(nodes, n.Rank, spec.Hostfile()); ok {
		o.Mounts = &m
	}
	if hasRun && run.Generation > 0 {
		o.Generation, o.Script = run.Generation, run.ResumeCommand
		if o.Script == "" {
			o.Script = run.Command
		}
		for k, v := range run.ResumeEnv() {
			o.Env[k] = v
		}
		o.Env[AttemptEnv] = strconv.Itoa(run.Generation)
	}
	return o, nil
}

// reachedPeers is the mesh step's message: "node-0 reached its peer." for a
// two-machine cluster, "node-1 reached both its peers." for three, "node-1
// reached all 3 peers." otherwise.
func reachedPeers(name string, peers int) string {
	switch peers {
	case 1:
		return name + " reached its peer."
	case 2:
		return name + " reached both its peers."
	}
	return fmt.Sprintf("%s reached all %d peers.", name, peers)
}
