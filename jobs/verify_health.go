package jobs

import (
	"context"
	"fmt"
	"slices"

	"github.com/clusterdeck/clusterdeck/models"
)

// MachinesDown is the health job's finding on a verifying cluster (X13):
// a machine that left running at its provider, or whose agent went
// silent, during verification. Verification does not wait for its window
// to end on a machine that is gone: the first one (by rank) is swapped
// through verification's own path while MaySwapNow (and health damping)
// allow it, else the verification ends failed naming it.
func (j *Verify) MachinesDown(ctx context.Context, c models.Cluster, downs []models.DownMachine) error {
	if len(downs) == 0 {
		return nil
	}
	c, err := j.Store.ClusterByID(ctx, c.ID) // a health pass reads a few columns only
	if err != nil || !c.Lifecycle().Verifying() {
		return err
	}
	v, err := j.load(ctx, c)
	if err != nil || v == nil {
		return err
	}
	slices.SortFunc(downs, func(a, b models.DownMachine) int { return a.Rank - b.Rank })
	d := downs[0]
	v.machines() // the report's machine lines as they stand
	machine := ""
	for _, n := range v.all {
		if n.Rank == d.Rank {
			if n.JoinKind != "" {
				return nil // its replacement is joining: the join job follows it
			}
			machine = n.ProviderNodeID
		}
	}
	why := fmt.Sprintf("%s went down during verification: %s", d.Name, d.Seen)
	v.events = append(v.events, models.VerifyEvent{Kind: "error", Type: models.TypeNodeVerificationFailed, Node: d.Name,
		Message: fmt.Sprintf("%s (machine %s) went down during verification: %s.", d.Name, orUnknown(machine), d.Seen)})
	return j.swapOrFail(ctx, v, d.Rank, why)
}
