package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Join drives every machine joining a cluster after it was ready (L10, X5;
// see models/join.go): it places the machine alone, follows it through the
// node steps against deadlines counted from its own placement, then has
// every node install the cluster's software again with the new node list
// and node-0 run the software's check until it lists the new machine. Then
// the machine has joined and bills from that moment. Any failure releases
// that machine only, and the cluster is left as it was. Like the provision
// job, it is the only code that places or releases these machines.
type Join struct {
	Store     *models.Store
	Providers providers.Registry
	ServerURL string // where agents reach /v1/agent/…
}

// Name implements Job.
func (j *Join) Name() string { return "join" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Join) Run(ctx context.Context) error {
	work, err := j.Store.JoiningNodes(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, w := range work {
		if err := j.advance(ctx, w.Cluster, w.Node); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s %s: %w", w.Cluster.ID, w.Node.Name, err))
		}
	}
	return errors.Join(errs...)
}

// advance moves one joining machine as far as it can go this tick.
func (j *Join) advance(ctx context.Context, c models.Cluster, n models.ClusterNode) error {
	p, err := j.Providers.Get(c.Provider)
	if err != nil {
		return j.fail(ctx, nil, c, n, "reserved", "The provider of this offer is no longer enabled.")
	}
	if c.Lifecycle().StopAsked() { // B6: the stop waits for this machine to be released, then stops the others
		return j.fail(ctx, p, c, n, n.Step, fmt.Sprintf("The cluster is being stopped (%s): %s is released without joining; add or replace it again once the cluster runs.",
			stopReason(c), n.Name))
	}
	if n.JoinPlacedAt == nil {
		return j.place(ctx, p, c, n)
	}
	g, err := p.DescribeGroup(ctx, c.GroupName())
	if err != nil && !errors.Is(err, providers.ErrNotFound) {
		_, lerr := j.late(ctx, p, c, n) // a transient describe failure must not stall the deadlines
		return errors.Join(fmt.Errorf("describe: %w", err), lerr)
	}
	var pn *providers.Node
	for i := range g.Nodes {
		if g.Nodes[i].Index == n.Rank && g.Nodes[i].ID == n.ProviderNodeID {
			pn = &g.Nodes[i]
		}
	}
	switch {
	case pn == nil || pn.State == providers.NodeTerminated || pn.State == providers.NodeFailed || pn.State == providers.NodeStopped:
		msg := fmt.Sprintf("The machine stopped or vanished at the provider while waiting for step %q.", n.Step)
		if pn != nil && pn.Message != "" {
			msg += " Provider: " + pn.Message + "."
		}
		return j.fail(ctx, p, c, n, n.Step, msg)
	case pn.State == providers.NodeRunning && n.RunningAt == nil:
		if _, err := j.Store.MarkNodeStep(ctx, c.ID, n.Rank, models.StepRunning, n.Name+" is running."); err != nil {
			return err
		}
	}
	if bad, err := j.Store.GPUMismatch(ctx, c.ID); err != nil {
		return err
	} else if bad != nil && bad.Rank == n.Rank && n.AgentAt == nil {
		return j.fail(ctx, p, c, n, models.StepAgent, bad.Mismatch) // L4: not the GPUs the offer promised
	}
	if failed, err := j.late(ctx, p, c, n); failed || err != nil {
		return err
	}
	if n, err = j.node(ctx, n); err != nil || n.MeshAt == nil {
		return err
	}
	sw := software.Lookup(c.Software)
	if c.Software == "" || c.Software == "none" {
		return j.joined(ctx, c, n, n.Name+" is up and reached every other machine.")
	}
	if sw == nil {
		return j.fail(ctx, p, c, n, models.StepSoftware, fmt.Sprintf("The cluster runs software %q, which Clusterdeck cannot install.", c.Software))
	}
	return j.install(ctx, p, c, n, sw)
}

// node reloads the joining node.
func (j *Join) node(ctx context.Context, n models.ClusterNode) (models.ClusterNode, error) {
	nodes, err := j.Store.NodesFor(ctx, n.ClusterID)
	if err != nil {
		return n, err
	}
	for _, m := range nodes {
		if m.ID == n.ID {
			return m, nil
		}
	}
	return n, fmt.Errorf("jobs: %s is gone: %w", n.Name, models.ErrConflict)
}

// place reserves the machine (L10: the next rank; X5: the same rank).
func (j *Join) place(ctx context.Context, p providers.Provider, c models.Cluster, n models.ClusterNode) error {
	if c.JoinPlacementLate(n, j.Store.Now()) {
		return j.fail(ctx, nil, c, n, "reserved", "The provider did not accept the placement in time.")
	}
	vol, err := j.Store.VolumeOfCluster(ctx, c)
	if err != nil {
		return err
	}
	req := providers.PlaceRequest{
		GroupName: c.GroupName(), OfferID: strings.TrimPrefix(c.OfferID, c.Provider+":"), Location: c.Location,
		Count: 1, Image: c.Image, Env: c.Env(), SSHKeys: c.SSHKeys(), Ports: c.Ports(), StartCommand: c.StartCommand,
		MaxMachineHourUSD: int64(c.MachineHour), // the same machine price as the cluster's (Q2, L10, X5)
		Agent:             providers.AgentBootstrap{ServerURL: j.ServerURL, Token: models.BootstrapToken(c), Tokens: []string{models.AgentToken(c, n)}},
	}
	if vol != nil { // V4: the same workload as the group's (a new node-0 gets the volume attached)
		req.Volume = &providers.Volume{ID: vol.ID, Name: vol.Name, SizeGB: vol.SizeGB}
	}
	if req.Avoid, err = j.Store.QuarantinedMachines(ctx, c.Provider); err != nil {
		return err // lemons are never placed again (X2)
	}
	if c.Lifecycle().Verifying() && n.JoinKind == models.JoinReplace && n.ProviderNodeID != "" {
		// A swap before hand-over (X13): the machine that failed
		// verification still runs; it is released first, never billed.
		if err := p.ReleaseNode(ctx, c.GroupName(), n.ProviderNodeID); err != nil && !errors.Is(err, providers.ErrNotFound) {
			return fmt.Errorf("release %s before its swap: %w", n.Name, err)
		}
		if host := n.MachineKey(); host != "" {
			req.Avoid = append(req.Avoid, host) // never back on the machine that failed (X5)
		}
	}
	pn, err := p.PlaceNode(ctx, c.GroupName(), n.Rank, req)
	switch {
	case errors.Is(err, providers.ErrNoCapacity):
		return j.fail(ctx, nil, c, n, "reserved", "The provider has no machine of this offer free in "+c.Location+": "+providerMessage(err))
	case errors.Is(err, providers.ErrValidation), errors.Is(err, providers.ErrQuota), errors.Is(err, providers.ErrNotFound),
		errors.Is(err, providers.ErrUnsupported): // Lambda cannot add or replace one machine
		return j.fail(ctx, nil, c, n, "reserved", "The provider refused the machine: "+providerMessage(err))
	case err != nil:
		return err // transient: the next tick tries again, until the cap
	}
	return j.Store.MarkJoinPlaced(ctx, c, n, models.PlacedNode{Rank: n.Rank, ProviderNodeID: pn.ID, PrivateIP: pn.PrivateIP,
		PublicHost: pn.PublicHost, User: pn.SSHUser, SSHPort: pn.SSHPort, Host: pn.Host})
}

// late fails the join when the machine missed its current step's deadline
// (L4's derivation, counted from its own placement) and reports whether it did.
func (j *Join) late(ctx context.Context, p providers.Provider, c models.Cluster, n models.ClusterNode) (bool, error) {
	step := models.StepSoftware
	switch {
	case n.RunningAt == nil:
		step = models.StepRunning
	case n.AgentAt == nil:
		step = models.StepAgent
	case n.MeshAt == nil:
		step = models.StepMesh
	}
	deadline := c.JoinDeadline(n, step)
	if deadline.IsZero() || !j.Store.Now().After(deadline) {
		return false, nil
	}
	msg := fmt.Sprintf("It missed the %s step's deadline (%s after its placement).", step, deadline.Sub(*n.JoinPlacedAt).Round(1e9))
	if n.Message != "" {
		msg += " " + n.Message
	}
	return true, j.fail(ctx, p, c, n, step, msg)
}

// install has every node that is up install the software again with the
// new node list (node-0 first), then node-0 run the software's check until
// it lists every node.
func (j *Join) install(ctx context.Context, p providers.Provider, c models.Cluster, n models.ClusterNode, sw *software.Software) error {
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	offer, err := j.Store.OfferByID(ctx, c.OfferID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return err
	}
	tasks, err := j.Store.JoinTasks(ctx, c.ID, n.JoinSeq)
	if err != nil {
		return err
	}
	spec := models.JoinSpec(c, nodes, offer)
	installs := map[int]models.SoftwareTask{}
	var check *models.SoftwareTask
	for i, t := range tasks {
		switch t.Kind {
		case models.TaskInstall:
			installs[t.Rank] = t
		case models.TaskCheck:
			check = &tasks[i]
		}
	}
	var todo []models.NewSoftwareTask
	done := true
	for _, m := range nodes {
		if m.Status.Unwell() {
			continue // not up: it installs again when it comes back
		}
		t, planned := installs[m.Rank]
		switch {
		case planned && t.Status == models.TaskFailed:
			return j.fail(ctx, p, c, n, models.StepSoftware, fmt.Sprintf("Installing %s on %s failed. Output:\n%s",
				sw.Label, m.Name, tailString(t.Output, 1200)))
		case !planned:
			join := ""
			if m.Rank != 0 {
				join = j.joinCommand(ctx, c, nodes)
			}
			todo = append(todo, installTask(spec, c, m.Rank, join))
		}
		done = done && planned && t.Status == models.TaskOK
	}
	switch {
	case len(todo) > 0:
		return j.Store.AddJoinTasks(ctx, c, n, todo)
	case !done:
		return nil
	case check == nil:
		return j.Store.AddJoinTasks(ctx, c, n, []models.NewSoftwareTask{checkTask(spec, sw, 1)})
	case check.Finished() && check.Summary == "":
		rep, err := sw.Judge(check.Output, spec)
		summary := rep.Summary
		if err != nil {
			summary = fmt.Sprintf("check failed: %v: %s", err, brief(check.Output))
		}
		if err := j.Store.RecordCheckVerdict(ctx, c, *check, summary); err != nil {
			return err
		}
		if err == nil && rep.Ready && check.Status == models.TaskOK {
			return j.joined(ctx, c, n, fmt.Sprintf("%s lists %s (%s).", sw.Label, n.Name, summary))
		}
		return j.Store.AddJoinTasks(ctx, c, n, []models.NewSoftwareTask{checkTask(spec, sw, check.Seq+1)})
	case check.Status == models.TaskSent && check.SentAt != nil && j.Store.Now().Sub(*check.SentAt) > checkStale:
		return j.Store.AddJoinTasks(ctx, c, n, []models.NewSoftwareTask{checkTask(spec, sw, check.Seq+1)})
	}
	return nil
}

// joinCommand is what Kubernetes workers run to join: the one node-0
// reported, else the derived one.
func (j *Join) joinCommand(ctx context.Context, c models.Cluster, nodes []models.ClusterNode) string {
	if run, err := j.Store.SoftwareRunFor(ctx, c); err == nil && run.JoinCommand != "" {
		return run.JoinCommand
	}
	if len(nodes) == 0 {
		return ""
	}
	return models.DerivedJoinCommand(c, nodes[0])
}

// joined ends the join: the machine is part of the cluster and bills from now.
func (j *Join) joined(ctx context.Context, c models.Cluster, n models.ClusterNode, why string) error {
	what := "joined the cluster"
	if n.JoinKind == models.JoinReplace {
		what = "replaced the machine that was down (same name and address)"
		if c.Lifecycle().Verifying() {
			what = "replaced the machine that failed verification (same name and address)"
		}
	}
	msg := fmt.Sprintf("%s %s: %s Billing for it starts now at $%s/h.", n.Name, what, why, models.DecimalUSD(c.MachineHour))
	_, err := j.Store.MarkNodeJoined(ctx, c, n, msg)
	return err
}

// stopReason names why a cluster is being stopped, for people.
func stopReason(c models.Cluster) string {
	switch models.StopReason(c.StopReason) {
	case models.StopByBalance:
		return "the balance ran out"
	case models.StopByBudget:
		return "the environment's budget was reached"
	case models.StopByIdle:
		return "every GPU sat idle past the cluster's idle rule"
	case models.StopByCustomer:
		return "a stop was asked for"
	}
	return "stop requested"
}

// fail releases the joining machine when one was placed (retried each tick
// until the provider confirms), then ends the join with its event.
func (j *Join) fail(ctx context.Context, p providers.Provider, c models.Cluster, n models.ClusterNode, step, why string) error {
	if p != nil && n.JoinPlacedAt != nil && n.ProviderNodeID != "" {
		if err := p.ReleaseNode(ctx, c.GroupName(), n.ProviderNodeID); err != nil {
			return fmt.Errorf("release %s: %w", n.Name, err)
		}
	}
	_, err := j.Store.FailJoin(ctx, c, n, step, why)
	return err
}
