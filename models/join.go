package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// One machine joining a cluster after it was ready: an added worker (L10)
// or a replacement for a machine that cannot come back (X5). The machine is
// placed alone (providers.Provider.PlaceNode), takes the node steps a
// launch's machines take (running, agent, mesh) against its own deadlines
// counted from its own placement, then installs the cluster's software as
// one more node (every other node's install runs again with the new node
// list: hostfile, env, Slurm's node list) until the software's own check
// on node-0 lists it. Then it joins: billing for it starts at that moment.
// A failure releases only that machine: an added worker leaves the cluster
// as it was; a replacement leaves its slot down. One join at a time per
// cluster.
//
// Billing: a machine is billed from the cluster's readyAt except during its
// unbilled gaps (node_billing_gaps): an added worker from readyAt until it
// joined, a replacement from its placement until it joined. The same node
// row (same id, rank, name, address) keeps the replacement on the same
// billing line.

// Join kinds.
const (
	JoinWorker  = "worker"
	JoinReplace = "replace"
)

// Join refusals the API maps onto 409s.
var (
	ErrJoinInProgress = fmt.Errorf("a machine is already joining this cluster; wait until it joined or failed: %w", ErrConflict)
	ErrNotReplaceable = fmt.Errorf("only a machine that is down can be replaced: %w", ErrConflict)
	ErrNotJoinable    = fmt.Errorf("a worker is added to a ready cluster only: %w", ErrConflict)
	ErrJoinStopping   = fmt.Errorf("the cluster is being stopped (balance or budget); add or replace machines once it runs again: %w", ErrConflict)
)

// BillingGap is a stretch of time a machine is not billed (see above).
type BillingGap struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	ClusterID string `gorm:"size:32;index"`
	NodeID    string `gorm:"size:32;index"`
	StartedAt time.Time
	EndedAt   *time.Time // nil: still open
}

// TableName keeps the table name explicit.
func (BillingGap) TableName() string { return "node_billing_gaps" }

func up0740NodeJoin(tx *gorm.DB) error {
	ts, serial := "datetime", "INTEGER PRIMARY KEY AUTOINCREMENT"
	if tx.Dialector.Name() == "postgres" {
		ts, serial = "timestamptz", "BIGSERIAL PRIMARY KEY"
	}
	for _, q := range []string{
		"ALTER TABLE cluster_nodes ADD COLUMN join_kind varchar(16) NOT NULL DEFAULT ''",
		"ALTER TABLE cluster_nodes ADD COLUMN join_seq integer NOT NULL DEFAULT 0",
		"ALTER TABLE cluster_nodes ADD COLUMN join_requested_at " + ts,
		"ALTER TABLE cluster_nodes ADD COLUMN join_placed_at " + ts,
		"ALTER TABLE cluster_nodes ADD COLUMN token_gen integer NOT NULL DEFAULT 0",
		"ALTER TABLE clusters ADD COLUMN joins integer NOT NULL DEFAULT 0",
		"CREATE TABLE node_billing_gaps (id " + serial + ", cluster_id varchar(32) NOT NULL, node_id varchar(32) NOT NULL, " +
			"started_at " + ts + " NOT NULL, ended_at " + ts + ")",
		"CREATE INDEX idx_node_billing_gaps_cluster ON node_billing_gaps (cluster_id)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// JoinPrice is what one more machine of the cluster costs: its share of
// the locked rate (Q2), shown before the customer confirms.
func (c Cluster) JoinPrice() Money { return c.MachineHour }

// JoinPlacementLate reports whether joining machine n waited longer than
// the cluster's cap for the provider to accept its placement (L4, L10, X5).
func (c Cluster) JoinPlacementLate(n ClusterNode, now time.Time) bool {
	return n.JoinRequestedAt != nil && now.After(n.JoinRequestedAt.Add(c.Cap()))
}

// joining reports the cluster's node that is joining now, if any.
func (s *Store) joining(ctx context.Context, clusterID string) (*ClusterNode, error) {
	var n ClusterNode
	err := s.db.WithContext(ctx).Where("cluster_id = ? AND join_kind <> ''", clusterID).Take(&n).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &n, err
}

// lockedJoinable loads the actor's cluster for a join inside the
// organisation's lock and refuses one that ended or is being terminated.
func (x Actions) lockedJoinable(ctx context.Context, tx *Store, clusterID string) (Cluster, error) {
	if err := tx.lockOrg(ctx, x.a.OrgID); err != nil {
		return Cluster{}, err
	}
	c, err := tx.lockedClusterForOrg(ctx, x.a.OrgID, clusterID)
	if err != nil {
		return c, err
	}
	if c.Ending() {
		return c, fmt.Errorf("models: cluster %s has ended: %w", c.ID, ErrConflict)
	}
	if c.Lifecycle().StopAsked() {
		return c, ErrJoinStopping // B6: a stop under way is not undone by a new machine
	}
	if j, err := tx.joining(ctx, c.ID); err != nil || j != nil {
		if err == nil {
			err = ErrJoinInProgress
		}
		return c, err
	}
	return c, nil
}

// AddWorker is L10: one more machine of the cluster's offer in its
// location, at the next rank, running the same workload. It is admitted
// like a launch inside the organisation's lock (quotas, the offer's
// counted stock, the balance against one more machine-hour); the cluster
// then counts it (nodes, committed hour) while it joins. The join job
// places it. Event and audit entry commit with it.
func (x Actions) AddWorker(ctx context.Context, clusterID string) (Cluster, ClusterNode, error) {
	var c Cluster
	var n ClusterNode
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = x.lockedJoinable(ctx, tx, clusterID); err != nil {
			return nil, err
		}
		if !c.Lifecycle().AcceptsWorker() {
			return nil, ErrNotJoinable
		}
		if c.Nodes+1 > MaxNodes {
			return nil, &QuotaError{Resource: "machines per cluster", Limit: MaxNodes, InUse: c.Nodes, Requested: 1}
		}
		if err := tx.admitWorker(ctx, c); err != nil {
			return nil, err
		}
		now := tx.Now()
		n = ClusterNode{ID: NewID("nd"), ClusterID: c.ID, OrgID: c.OrgID, Rank: c.Nodes, Name: fmt.Sprintf("node-%d", c.Nodes),
			Status: NodeJoining, Step: StepRunning, // its address comes from the provider or its agent (OP1)
			JoinKind: JoinWorker, JoinSeq: c.Joins + 1, JoinRequestedAt: &now}
		msg := fmt.Sprintf("Worker %s requested by %s: one more %d × %s machine in %s at $%s/h; it bills from when it has joined.",
			n.Name, x.a.Name, c.GPUsPerNode, c.Accelerator, c.Location, DecimalUSD(c.MachineHour))
		c, err = tx.transition(ctx, c.ID, change{event: EventWorkerRequested, kind: "request", node: n.Name, step: "join", msg: msg,
			guard: "nodes = ? AND joins = ?", args: []any{c.Nodes, c.Joins},
			set: map[string]any{"nodes": c.Nodes + 1, "usd_per_hour": c.USDPerHour + c.MachineHour, "joins": c.Joins + 1},
			nodes: func(tx *Store) error {
				if err := tx.db.WithContext(ctx).Create(&n).Error; err != nil {
					return err
				}
				start := now
				if c.ReadyAt != nil {
					start = *c.ReadyAt
				}
				return tx.db.WithContext(ctx).Create(&BillingGap{ClusterID: c.ID, NodeID: n.ID, StartedAt: start}).Error
			}})
		if err != nil {
			return nil, err
		}
		return x.audit("cluster.add_worker", c.ID, fmt.Sprintf("%s at $%s/h", n.Name, DecimalUSD(c.MachineHour))), nil
	})
	return c, n, err
}

// admitWorker is L2 for one more machine of c: the quotas, the offer's
// counted stock, the environment's budget (B5) and the balance, inside the
// organisation's lock.
func (s *Store) admitWorker(ctx context.Context, c Cluster) error {
	if err := s.budgetReachedFor(ctx, c); err != nil {
		return err // B5: the budgets job would stop the cluster it grows
	}
	org, err := s.orgQuota(ctx, c.OrgID)
	if err != nil {
		return err
	}
	machines, gpus, err := s.UsageInUse(ctx, c.OrgID)
	if err != nil {
		return err
	}
	if machines+1 > org.MaxMachines {
		return &QuotaError{Resource: "machines", Limit: org.MaxMachines, InUse: machines, Requested: 1}
	}
	if gpus+c.GPUsPerNode > org.MaxGPUs {
		return &QuotaError{Resource: "gpus", Limit: org.MaxGPUs, InUse: gpus, Requested: c.GPUsPerNode}
	}
	q := Quote{OfferID: c.OfferID, Provider: c.Provider, Location: c.Location, Accelerator: c.Accelerator,
		GPUsPerNode: c.GPUsPerNode, Nodes: 1, Interconnect: c.Interconnect, MachineKind: c.MachineKind}
	if _, err := s.reserveStock(ctx, q); err != nil {
		return err
	}
	a, err := s.AdmissionFor(ctx, c.OrgID, c.MachineHour)
	if err != nil {
		return err
	}
	if a.Shortfall() > 0 {
		return &InsufficientBalanceError{a}
	}
	return nil
}

// ReplaceNode is X5: a new machine of the cluster's offer in its location
// in the place of machine rank, which is down (it left running and could
// not be brought back). It keeps the rank, name and interconnect address
// and the same billing line; the rate does not change. The old machine's
// agent token stops working. The join job places the new machine (the
// provider releases the old one then).
func (x Actions) ReplaceNode(ctx context.Context, clusterID string, rank int) (Cluster, ClusterNode, error) {
	var c Cluster
	var n ClusterNode
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = x.lockedJoinable(ctx, tx, clusterID); err != nil {
			return nil, err
		}
		if !c.Lifecycle().AcceptsReplacement() {
			return nil, ErrNotReplaceable
		}
		err = tx.db.WithContext(ctx).Where("cluster_id = ? AND rank = ?", c.ID, rank).Take(&n).Error
		if err != nil {
			return nil, notFound(err, fmt.Sprintf("node-%d", rank))
		}
		if !n.Status.Replaceable() {
			return nil, ErrNotReplaceable
		}
		now := tx.Now()
		msg := fmt.Sprintf("Replacement of %s (%s) requested by %s: a new machine of the same offer in %s with the same name and address at $%s/h on the same billing line; %s is not billed until it has joined.",
			n.Name, n.PrivateIP, x.a.Name, c.Location, DecimalUSD(c.MachineHour), n.Name)
		c, err = tx.transition(ctx, c.ID, change{event: EventReplaceRequested, kind: "request", node: n.Name, step: "join", msg: msg,
			guard: "joins = ?", args: []any{c.Joins}, set: map[string]any{"joins": c.Joins + 1},
			nodes: func(tx *Store) error {
				if err := tx.nodeRows(ctx, c.ID, map[string]any{"status": NodeJoining, "join_kind": JoinReplace,
					"join_seq": c.Joins + 1, "join_requested_at": now, "join_placed_at": nil, "token_gen": n.TokenGen + 1,
					"claimed_by": "", "claimed_at": nil, // the replacement claims the rank afresh (OP1)
					"message": "Waiting for a replacement machine."}, "id = ? AND status = ?", n.ID, NodeDown); err != nil {
					return err
				}
				return tx.forgetMachine(ctx, n)
			}})
		if err != nil {
			return nil, err
		}
		id := n.ID
		n = ClusterNode{} // a fresh row: scanning into the old one keeps fields the update cleared
		if err := tx.db.WithContext(ctx).Where("id = ?", id).Take(&n).Error; err != nil {
			return nil, err
		}
		return x.audit("cluster.replace_node", c.ID, fmt.Sprintf("%s at $%s/h", n.Name, DecimalUSD(c.MachineHour))), nil
	})
	return c, n, err
}

// forgetMachine is what node n forgets when a new machine takes its place
// (X5: Replace and a verification swap alike): the old machine's GPU
// fault, and its GPUs as last seen, ECC baseline and XID lines. Else the
// health job would judge the new machine by the old one's GPUs ("GPU 0
// vanished") and its fault, and blame the new machine for it.
func (s *Store) forgetMachine(ctx context.Context, n ClusterNode) error {
	if err := s.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).
		Updates(map[string]any{"hw_fault": "", "hw_fault_at": nil}).Error; err != nil {
		return err
	}
	return s.forgetGPUMachine(ctx, n.ClusterID, n.Rank)
}

// JoinWork is one joining machine and its cluster, for the join job.
type JoinWork struct {
	Cluster Cluster
	Node    ClusterNode
}

// JoiningNodes lists every machine joining a live cluster whose terminate
// was not requested (a terminate releases it with the others).
func (s *Store) JoiningNodes(ctx context.Context) ([]JoinWork, error) {
	var nodes []ClusterNode
	err := s.db.WithContext(ctx).Where("join_kind <> '' AND cluster_id IN (?)",
		s.db.Model(&Cluster{}).Select("id").Where("status IN ? AND terminate_requested_at IS NULL", []ClusterStatus{StatusReady, StatusDegraded, StatusVerifying})).
		Order("join_requested_at, id").Find(&nodes).Error
	if err != nil {
		return nil, err
	}
	out := make([]JoinWork, 0, len(nodes))
	for _, n := range nodes {
		c, err := s.ClusterByID(ctx, n.ClusterID)
		if err != nil {
			return nil, err
		}
		out = append(out, JoinWork{Cluster: c, Node: n})
	}
	return out, nil
}

// JoinDeadline is when the joining node must be done with step, counted
// from its own placement (L4's derivation); zero before it was placed.
// The software step adds the software's install window.
func (c Cluster) JoinDeadline(n ClusterNode, step string) time.Time {
	if n.JoinPlacedAt == nil {
		return time.Time{}
	}
	if step == StepSoftware {
		return c.stepDeadlineFrom(*n.JoinPlacedAt, StepMesh).Add(InstallWindow(c.Software))
	}
	return c.stepDeadlineFrom(*n.JoinPlacedAt, step)
}

// MarkJoinPlaced records the joining machine's placement: its provider id
// and addresses, and the start of its steps. A replacement's slot stops
// billing from here until it joined (the old machine is released).
func (s *Store) MarkJoinPlaced(ctx context.Context, c Cluster, n ClusterNode, p PlacedNode) error {
	return s.Tx(ctx, func(tx *Store) error {
		now := tx.Now()
		up := map[string]any{"provider_node_id": p.ProviderNodeID, "machine_host": p.Host, "public_host": p.PublicHost, "ssh_port": p.SSHPort,
			"ssh_user": p.User, "join_placed_at": now, "status": NodeJoining, "step": StepRunning, "running_at": nil, "agent_at": nil,
			"software_at": nil, "heartbeat_at": nil, "down_since": nil, "down_passes": 0, "seen": "", "message": "",
			"claimed_by": "", "claimed_at": nil} // the placed machine claims the rank with the bootstrap token (OP1)
		// The placed machine is a new one: its address is the provider's,
		// else its agent's at check-in, never the machine's it replaces
		// (peers would dial a machine that is gone) (OP1, X5).
		up["mesh_at"], up["mesh_port"], up["private_ip"] = nil, 0, p.PrivateIP
		res := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ? AND join_kind = ? AND join_placed_at IS NULL", n.ID, n.JoinKind).Updates(up)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if n.JoinKind == JoinReplace {
			var open int64 // a swap before hand-over opened its gap already (X13)
			if err := tx.db.WithContext(ctx).Model(&BillingGap{}).Where("node_id = ? AND ended_at IS NULL", n.ID).Count(&open).Error; err != nil {
				return err
			}
			if open == 0 {
				if err := tx.db.WithContext(ctx).Create(&BillingGap{ClusterID: c.ID, NodeID: n.ID, StartedAt: now}).Error; err != nil {
					return err
				}
			}
			if err := tx.nodeInterval(ctx, c, n.ID, ""); err != nil { // the old machine is released
				return err
			}
		}
		what := "The added machine"
		if n.JoinKind == JoinReplace {
			what = "The replacement machine (the old one is released)"
		}
		return tx.addEvent(ctx, c, c.Status, "step", n.Name, "reserved", fmt.Sprintf("%s of %s reserved at %s.", what, n.Name, c.Location))
	})
}

// MarkNodeJoined is the join's end (L10, X5): the machine is part of the
// cluster and billed from now; its unbilled gap closes. ErrConflict when
// it is no longer joining.
func (s *Store) MarkNodeJoined(ctx context.Context, c Cluster, n ClusterNode, msg string) (Cluster, error) {
	return s.txCluster(ctx, func(tx *Store) (Cluster, error) {
		now := tx.Now()
		typ := TypeNodeJoined
		if n.JoinKind == JoinReplace {
			typ = TypeNodeReplaced
		}
		out, err := tx.transition(ctx, c.ID, change{event: EventNodeJoined, node: n.Name, step: "join", msg: msg, kind: "step", typ: typ,
			nodes: func(tx *Store) error {
				res := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ? AND join_kind = ?", n.ID, n.JoinKind).
					Updates(map[string]any{"status": NodeReady, "step": "done", "software_at": now, "join_kind": "",
						"mesh_at": gorm.Expr("COALESCE(mesh_at, ?)", now), "message": "", "down_since": nil, "down_passes": 0, "seen": ""})
				if res.Error != nil {
					return res.Error
				}
				if res.RowsAffected == 0 {
					return fmt.Errorf("models: %s is no longer joining: %w", n.Name, ErrConflict)
				}
				if err := tx.db.WithContext(ctx).Model(&BillingGap{}).Where("node_id = ? AND ended_at IS NULL", n.ID).Update("ended_at", now).Error; err != nil {
					return err
				}
				if n.JoinKind == JoinReplace {
					if err := tx.recordRepair(ctx, c.ID, n.Name); err != nil {
						return err // time to repair (track.go)
					}
				}
				cur, err := tx.ClusterByID(ctx, c.ID)
				if err != nil {
					return err
				}
				return tx.nodeInterval(ctx, cur, n.ID, machineState(cur.Status))
			}})
		return out, err
	})
}

// FailJoin ends a join that failed (L10, X5), after the join job released
// the machine: an added worker leaves the cluster as it was (its node row,
// machine count and committed hour go); a replacement's slot reads down
// again, unbilled. The join's tasks still waiting are cancelled. One error
// event names the node, the step and why.
func (s *Store) FailJoin(ctx context.Context, c Cluster, n ClusterNode, step, why string) (Cluster, error) {
	return s.txCluster(ctx, func(tx *Store) (Cluster, error) {
		cur, err := tx.ClusterByID(ctx, c.ID)
		if err != nil {
			return cur, err
		}
		ch := change{event: EventNodeJoinFailed, kind: "error", node: n.Name, step: step}
		if n.JoinKind == JoinWorker {
			ch.msg = fmt.Sprintf("Adding %s failed at step %s: %s The machine was released; the cluster is as it was and nothing was billed for it.", n.Name, step, why)
			ch.guard, ch.args = "nodes = ?", []any{cur.Nodes}
			ch.set = map[string]any{"nodes": cur.Nodes - 1, "usd_per_hour": cur.USDPerHour - cur.MachineHour}
		} else {
			ch.msg = fmt.Sprintf("Replacing %s failed at step %s: %s The new machine was released; %s stays down and is not billed.", n.Name, step, why, n.Name)
		}
		ch.nodes = func(tx *Store) error {
			db := tx.db.WithContext(ctx)
			if err := db.Model(&SoftwareTask{}).Where("cluster_id = ? AND attempt = ? AND status IN ?", c.ID, -n.JoinSeq, []string{TaskPending, TaskSent}).
				Updates(map[string]any{"status": TaskFailed, "output": "cancelled: the join failed", "finished_at": tx.Now()}).Error; err != nil {
				return err
			}
			if n.JoinKind == JoinWorker {
				res := db.Where("id = ? AND join_kind = ?", n.ID, JoinWorker).Delete(&ClusterNode{})
				if res.Error != nil || res.RowsAffected == 0 {
					return errors.Join(res.Error, fmt.Errorf("models: %s is no longer joining: %w", n.Name, ErrConflict))
				}
				return db.Where("node_id = ?", n.ID).Delete(&BillingGap{}).Error
			}
			res := db.Model(&ClusterNode{}).Where("id = ? AND join_kind = ?", n.ID, JoinReplace).Updates(map[string]any{
				"status": NodeDown, "join_kind": "", "mesh_at": gorm.Expr("COALESCE(mesh_at, ?)", tx.Now()),
				"seen": truncate("replacement failed: "+why, 255), "message": truncate(why, 1000)})
			if res.Error != nil || res.RowsAffected == 0 {
				return errors.Join(res.Error, fmt.Errorf("models: %s is no longer joining: %w", n.Name, ErrConflict))
			}
			return nil
		}
		return tx.transition(ctx, c.ID, ch)
	})
}

// txCluster is Tx for a function that returns a cluster.
func (s *Store) txCluster(ctx context.Context, fn func(tx *Store) (Cluster, error)) (Cluster, error) {
	var out Cluster
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// ---- the join's software tasks ----

// JoinTasks lists the tasks of a node's join (attempt -JoinSeq) by kind,
// rank and seq.
func (s *Store) JoinTasks(ctx context.Context, clusterID string, seq int) ([]SoftwareTask, error) {
	return s.SoftwareTasks(ctx, clusterID, -seq)
}

// AddJoinTasks plans tasks of the node's join; a slot planned already is
// left alone. ErrConflict once the node is no longer joining.
func (s *Store) AddJoinTasks(ctx context.Context, c Cluster, n ClusterNode, tasks []NewSoftwareTask) error {
	return s.Tx(ctx, func(tx *Store) error {
		var cur ClusterNode
		err := tx.db.WithContext(ctx).Where("id = ? AND join_kind = ? AND join_seq = ?", n.ID, n.JoinKind, n.JoinSeq).Take(&cur).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("models: %s is no longer joining: %w", n.Name, ErrConflict)
		} else if err != nil {
			return err
		}
		now := tx.Now()
		for _, nt := range tasks {
			t := SoftwareTask{ID: NewID("tk"), ClusterID: c.ID, OrgID: c.OrgID, Attempt: -n.JoinSeq, Kind: nt.Kind,
				Rank: nt.Rank, Seq: max(nt.Seq, 1), Software: c.Software, Role: nt.Role, Status: TaskPending,
				Payload: JSONOf(nt.Payload), CreatedAt: now}
			if err := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&t).Error; err != nil {
				return fmt.Errorf("models: plan join %s task for node-%d: %w", nt.Kind, nt.Rank, err)
			}
		}
		return tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ? AND step = ?", n.ID, "done").Update("step", StepSoftware).Error
	})
}

// NextJoinTask hands node n the next task of a join in progress on its
// cluster (its own install as the new node, another node's install again
// with the new node list, or node-0's check) and marks it sent; an install
// handed out more than InstallTaskLease ago and never answered is handed
// out again. nil when there is none.
func (s *Store) NextJoinTask(ctx context.Context, c Cluster, n ClusterNode) (*SoftwareTask, error) {
	j, err := s.joining(ctx, c.ID)
	if err != nil || j == nil {
		return nil, err
	}
	now := s.Now()
	due := s.db.Where("status = ?", TaskPending).
		Or("status = ? AND kind = ? AND sent_at < ?", TaskSent, TaskInstall, now.Add(-InstallTaskLease))
	var t SoftwareTask
	err = s.db.WithContext(ctx).Where("cluster_id = ? AND rank = ? AND attempt = ?", c.ID, n.Rank, -j.JoinSeq).
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
		return nil, res.Error
	}
	t.Status, t.SentAt = TaskSent, &now
	return &t, nil
}

// attemptLabel names an install attempt, or the join a task belongs to.
func attemptLabel(attempt int) string {
	if attempt < 0 {
		return fmt.Sprintf("join %d", -attempt)
	}
	return fmt.Sprintf("attempt %d", attempt)
}

// joinedOnly leaves out an added worker until it joined: the cluster's
// hostfile, env and commands list the machines that are part of it.
func joinedOnly(nodes []ClusterNode) []ClusterNode {
	out := nodes[:0:0]
	for _, n := range nodes {
		if n.JoinKind != JoinWorker {
			out = append(out, n)
		}
	}
	return out
}
