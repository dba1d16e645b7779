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
// when the agent posts it (models.RecordNCCLResult). No test touches a
// customer's running job (X13): a cluster verified before hand-over keeps
// its verification's ring reading instead, and a cluster with a start
// command — which runs on the same GPUs from hand-over on — is not
// measured, the check saying why.
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
	run, err := j.Store.VerificationFor(ctx, c.OrgID, c.ID)
	if err != nil {
		return err
	}
	if run != nil && run.Status == models.VerifyRunning {
		return nil // its checks hold the GPUs now; the reading follows
	}
	if run != nil {
		if ring := run.ReportOf().Ring; ring != nil && ring.BusBW > 0 {
			return j.Store.RecordNCCLFromVerification(ctx, c, *run, *ring)
		}
	}
	if c.StartCommand != "" {
		why := "the cluster's start command runs on every GPU from hand-over, and an all-reduce across them would slow it down or fail it."
		if c.Verify {
			why = "the verification before hand-over has no ring reading, and " + why
		} else {
			why += " Launch with verification to have the fabric measured before hand-over."
		}
		return j.Store.SkipNCCLCheck(ctx, c, why)
	}
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
