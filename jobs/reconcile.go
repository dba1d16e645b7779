package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Reconcile is X10: it proves that every machine of every failed or
// terminated cluster is gone at its provider. A machine still there is
// listed as a leak with when it was found, released, and marked released;
// a cluster is proven only on a pass that finds nothing left. No ledger
// entry is ever made for a leaked machine.
type Reconcile struct {
	Store     *models.Store
	Providers providers.Registry
	Batch     int // clusters per batch; 0 = 1000
}

// Name implements Job.
func (j *Reconcile) Name() string { return "reconcile" }

// Run implements Job.
func (j *Reconcile) Run(ctx context.Context) error {
	return eachBatch(ctx, orDefault(j.Batch, healthBatch), j.Store.ClustersToReconcile, j.pass)
}

func (j *Reconcile) pass(ctx context.Context, cs []models.Cluster) error {
	byProv := map[string][]models.Cluster{}
	for _, c := range cs {
		byProv[c.Provider] = append(byProv[c.Provider], c)
	}
	var errs []error
	var gone []string
	for prov, list := range byProv {
		p, err := j.Providers.Get(prov)
		if err != nil {
			continue // a disabled provider cannot be asked: prove nothing
		}
		names := make([]string, len(list))
		for i, c := range list {
			names[i] = c.GroupName()
		}
		groups, err := p.DescribeGroups(ctx, names)
		if err != nil {
			errs = append(errs, fmt.Errorf("describe %s: %w", prov, err))
			continue
		}
		for _, c := range list {
			leaks := stillThere(c, groups[c.GroupName()])
			if len(leaks) == 0 {
				gone = append(gone, c.ID)
				continue
			}
			if err := j.release(ctx, p, c, leaks); err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
			}
		}
	}
	return errors.Join(append(errs, j.Store.MarkReconciled(ctx, gone))...)
}

// stillThere lists the machines of g that are not gone.
func stillThere(c models.Cluster, g providers.Group) []models.ProviderLeak {
	var out []models.ProviderLeak
	for _, n := range g.Nodes {
		if n.State != providers.NodeTerminated {
			out = append(out, models.ProviderLeak{ClusterID: c.ID, OrgID: c.OrgID, Provider: c.Provider,
				GroupName: g.Name, NodeID: n.ID, State: string(n.State)})
		}
	}
	return out
}

func (j *Reconcile) release(ctx context.Context, p providers.Provider, c models.Cluster, leaks []models.ProviderLeak) error {
	if err := j.Store.RecordLeaks(ctx, leaks); err != nil {
		return err
	}
	if err := p.TerminateGroup(ctx, c.GroupName()); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return j.Store.MarkLeaksReleased(ctx, c.ID)
}
