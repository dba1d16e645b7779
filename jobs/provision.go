package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Provision drives every starting cluster from the database (L3–L5):
// it reserves every machine at once, follows each node through its steps
// against their deadlines, fails the whole cluster at the first late step or
// lost machine (releasing everything, billing nothing) and marks it joined
// when every node reached every other. It and the terminate job are the only
// code that places or releases machines.
type Provision struct {
	Store     *models.Store
	Providers providers.Registry
	ServerURL string                // where agents reach /v1/agent/…
	Mail      *models.ClusterNotify // E1–E2 mails on ready/failed, queued with the change; nil = none
}

// Name implements Job.
func (j *Provision) Name() string { return "provision" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Provision) Run(ctx context.Context) error {
	var errs []error
	collect := func(c models.Cluster, err error) {
		if err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	// Releases first: when a cloud's request budget is short, machines
	// that bill for nothing go before placements (L7).
	failed, err := j.Store.ClustersToRelease(ctx)
	if err != nil {
		return err
	}
	for _, c := range failed {
		collect(c, j.release(ctx, c))
	}
	starting, err := j.Store.ClustersInStatus(ctx, models.StatusProvisioning)
	if err != nil {
		return err
	}
	// Every cluster of the tick shares one listing per cloud account (R1).
	tick := providers.WithMemo(ctx)
	for _, c := range starting {
		if !c.Lifecycle().TerminateAsked() {
			collect(c, j.advance(tick, c))
		}
	}
	return errors.Join(errs...)
}

// advance moves one provisioning cluster as far as it can go this tick.
func (j *Provision) advance(ctx context.Context, c models.Cluster) error {
	p, err := j.Providers.Get(c.Provider)
	if err != nil {
		return j.fail(ctx, c, models.ProviderRejected(models.RejectedValidation), "", models.StepReserved, "The provider of this offer is no longer enabled.")
	}
	if c.PlacedAt == nil {
		return j.place(ctx, p, c)
	}
	g, err := p.DescribeGroup(ctx, c.GroupName())
	switch {
	case errors.Is(err, providers.ErrNotFound):
		nodes, err := j.Store.NodesFor(ctx, c.ID)
		if err != nil {
			return err
		}
		if confirmed, err := j.unknownTo(ctx, nodes); !confirmed || err != nil {
			return err
		}
		return j.fail(ctx, c, models.NodeLostAt(models.StepRunning), "", models.StepRunning, "The provider no longer knows these machines.")
	case err != nil:
		_, derr := j.checkDeadlines(ctx, c) // a transient describe failure must not stall the deadlines
		return errors.Join(fmt.Errorf("describe: %w", err), derr)
	}
	if err := j.checkPrice(ctx, c, g); err != nil {
		return err
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	byIndex := map[int]providers.Node{}
	for _, n := range g.Nodes {
		byIndex[n.Index] = n
	}
	var seenAgain []string
	for _, n := range nodes {
		pn, ok := byIndex[n.Rank]
		if !ok {
			if confirmed, err := j.unknownTo(ctx, []models.ClusterNode{n}); !confirmed || err != nil {
				return err
			}
		} else {
			if n.DownPasses > 0 {
				seenAgain = append(seenAgain, n.ID)
			}
			// Addresses a cloud assigns at boot (Lambda) arrive with the describe.
			if _, err := j.Store.SetNodeAddresses(ctx, n, models.PlacedNode{PrivateIP: pn.PrivateIP,
				PublicHost: pn.PublicHost, SSHPort: pn.SSHPort, User: pn.SSHUser}); err != nil {
				return err
			}
		}
		switch {
		case !ok || pn.State == providers.NodeTerminated || pn.State == providers.NodeFailed || pn.State == providers.NodeStopped:
			msg := fmt.Sprintf("%s stopped or vanished at the provider while waiting for step %q.", n.Name, n.Step)
			if pn.Message != "" {
				msg += " Provider: " + pn.Message
			}
			_ = j.Store.MarkNodeLost(ctx, c.ID, n.Rank, msg)
			return j.fail(ctx, c, models.NodeLostAt(n.Step), n.Name, n.Step, msg)
		case pn.State == providers.NodeRunning && n.RunningAt == nil:
			if _, err := j.Store.MarkNodeStep(ctx, c.ID, n.Rank, models.StepRunning, n.Name+" is running."); err != nil {
				return err
			}
		}
	}
	if len(seenAgain) > 0 {
		if err := j.Store.MarkHealth(ctx, models.HealthMarks{Well: seenAgain}); err != nil {
			return err
		}
	}
	if bad, err := j.Store.GPUMismatch(ctx, c.ID); err != nil || bad != nil {
		if err != nil {
			return err
		}
		return j.fail(ctx, c, models.GPUMismatch(bad.Node), bad.Node, models.StepAgent, bad.Mismatch)
	}
	if failed, err := j.checkDeadlines(ctx, c); failed || err != nil {
		return err
	}
	return j.maybeJoined(ctx, c)
}

// unknownTo reports whether the provider's "not found" for these machines
// is confirmed: a previous pass saw it too. The first answer is only noted
// on the machines (another instance may have just placed them, or the
// provider's listing may lag), so nothing is failed on one answer.
func (j *Provision) unknownTo(ctx context.Context, nodes []models.ClusterNode) (bool, error) {
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.DownPasses > 0 {
			return true, nil
		}
		ids = append(ids, n.ID)
	}
	return false, j.Store.MarkHealth(ctx, models.HealthMarks{Unwell: ids})
}

// checkDeadlines fails the cluster when any node is late for its step (L4)
// and reports whether it did.
func (j *Provision) checkDeadlines(ctx context.Context, c models.Cluster) (bool, error) {
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return false, err
	}
	now := j.Store.Now()
	for _, n := range nodes {
		if n.Step == "done" {
			continue
		}
		if deadline := c.StepDeadline(n.Step); now.After(deadline) {
			msg := fmt.Sprintf("%s missed the %s step's deadline (%s after placement).", n.Name, n.Step,
				deadline.Sub(*c.PlacedAt).Round(1e9))
			if n.Message != "" {
				msg += " " + n.Message
			}
			return true, j.fail(ctx, c, models.StepTimeout(n.Step), n.Name, n.Step, msg)
		}
	}
	return false, nil
}

// maybeJoined is L5: when every node reached every other, readyAt is set once.
func (j *Provision) maybeJoined(ctx context.Context, c models.Cluster) error {
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.MeshAt == nil {
			return nil
		}
	}
	_, err = j.Store.MarkJoined(ctx, c.ID, j.Mail)
	return err
}

// place reserves every machine at once (L3).
func (j *Provision) place(ctx context.Context, p providers.Provider, c models.Cluster) error {
	if j.Store.Now().After(c.CreatedAt.Add(c.Cap())) {
		return j.fail(ctx, c, models.StepTimeout(models.StepReserved), "", models.StepReserved, "The provider did not accept the placement in time.")
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	tokens := make([]string, len(nodes))
	for i, n := range nodes {
		tokens[i] = models.AgentToken(c, n)
	}
	vol, err := j.Store.VolumeOfCluster(ctx, c)
	if err != nil {
		return err
	}
	req := providers.PlaceRequest{
		GroupName: c.GroupName(), OfferID: strings.TrimPrefix(c.OfferID, c.Provider+":"), Location: c.Location,
		Count: c.Nodes, Image: c.Image, Env: c.Env(), SSHKeys: c.SSHKeys(), Ports: c.Ports(), StartCommand: c.StartCommand,
		MaxMachineHourUSD: int64(c.MachineHour), // the price the quote locked (Q2)
		Agent:             providers.AgentBootstrap{ServerURL: j.ServerURL, Token: models.BootstrapToken(c), Tokens: tokens},
	}
	if vol != nil { // V2: the volume goes to the head with the machines
		req.Volume = &providers.Volume{ID: vol.ID, Name: vol.Name, SizeGB: vol.SizeGB}
	}
	if req.Avoid, err = j.Store.QuarantinedMachines(ctx, c.Provider); err != nil {
		return err // lemons are never placed again (X2)
	}
	g, err := p.PlaceGroup(ctx, req)
	switch {
	case errors.Is(err, providers.ErrNoCapacity):
		return j.fail(ctx, c, models.ProviderRejected(models.RejectedNoCapacity), "", models.StepReserved,
			"The provider could not place every machine together: "+providerMessage(err))
	case errors.Is(err, providers.ErrValidation), errors.Is(err, providers.ErrQuota), errors.Is(err, providers.ErrUnsupported):
		return j.fail(ctx, c, models.ProviderRejected(models.RejectedValidation), "", models.StepReserved,
			"The provider refused the request: "+providerMessage(err))
	case err != nil:
		return err // transient: the next tick tries again, until the cap
	}
	placed := make([]models.PlacedNode, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		placed = append(placed, models.PlacedNode{Rank: n.Index, ProviderNodeID: n.ID, PrivateIP: n.PrivateIP,
			PublicHost: n.PublicHost, User: n.SSHUser, SSHPort: n.SSHPort, Host: n.Host})
	}
	if err := j.Store.MarkPlaced(ctx, c.ID, placed); err != nil && !errors.Is(err, models.ErrConflict) {
		return err
	}
	if err := j.checkPrice(ctx, c, g); err != nil {
		return err
	}
	// A terminate asked for while the provider was placing may have been
	// carried out before these machines existed (the terminate job released
	// nothing and marked the cluster terminated): they are released here,
	// or they would run on, unbilled and unseen (L7). Asked for after this
	// read, the terminate job finds them placed.
	now, err := j.Store.ClusterByID(ctx, c.ID)
	if err != nil {
		return err
	}
	if now.Ending() {
		if err := p.TerminateGroup(ctx, c.GroupName()); err != nil {
			return fmt.Errorf("release the machines a terminate overtook: %w", err)
		}
	}
	return nil
}

// checkPrice records what the cloud says it bills for the cluster's
// machines, where its API says it (OP1, Q2): above the cost the cluster was
// launched at, the cluster is marked and the operators are mailed
// (billed_price.go). The customer pays the locked price regardless.
func (j *Provision) checkPrice(ctx context.Context, c models.Cluster, g providers.Group) error {
	billed := models.Money(g.MachineHourUSD())
	if billed <= c.BilledMachineHour {
		return nil
	}
	_, err := j.Store.RecordBilledPrice(ctx, c, billed)
	return err
}

func providerMessage(err error) string {
	var pe *providers.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return err.Error()
}

// fail is L4: the cluster fails whole, every reserved machine is released,
// nothing is billed, nothing is retried.
func (j *Provision) fail(ctx context.Context, c models.Cluster, lastError models.LastError, node, step, msg string) error {
	failed, err := j.Store.FailCluster(ctx, c.ID, lastError, node, step, msg, j.Mail)
	if err != nil {
		return err
	}
	return j.release(ctx, failed)
}

// release gives every machine of a failed cluster back (retried each tick until confirmed).
func (j *Provision) release(ctx context.Context, c models.Cluster) error {
	if p, err := j.Providers.Get(c.Provider); err == nil {
		if err := p.TerminateGroup(ctx, c.GroupName()); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	return j.Store.MarkReleased(ctx, c.ID)
}
