package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
)

// NCCLCheck plans every ready cluster's NCCL check once (X4): node-0's
// agent takes it with its next heartbeat and runs the all-reduce test the
// connections panel shows, across every GPU; the server reads the result
// when the agent posts it (models.RecordNCCLResult).
type NCCLCheck struct {
	Store *models.Store
}

// Name implements Job.
func (j *NCCLCheck) Name() string { return "nccl" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *NCCLCheck) Run(ctx context.Context) error {
	clusters, err := j.Store.ClustersAwaitingNCCL(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range clusters {
		if err := j.plan(ctx, c); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (j *NCCLCheck) plan(ctx context.Context, c models.Cluster) error {
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	offer, err := j.Store.OfferByID(ctx, c.OfferID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return err
	}
	cmd := models.ClusterSpec(c, nodes, offer).Commands().NCCLAllReduce
	return j.Store.PlanNCCLCheck(ctx, c, cmd.Text+"\n")
}
