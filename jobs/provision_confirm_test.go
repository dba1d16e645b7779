package jobs_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// amnesiac answers "not found" for every group, as a cloud whose listing
// lags (or, when the simulator lived in each instance's memory, another instance's) does.
type amnesiac struct{ *sim.Cloud }

func (amnesiac) DescribeGroup(context.Context, string) (providers.Group, error) {
	return providers.Group{}, &providers.Error{Class: providers.ErrNotFound, Provider: "sim", Op: "DescribeGroup", Message: "group not found"}
}

// R1: a provider's "not found" for machines we placed is confirmed on
// the next pass before a provisioning cluster is failed for it; an answer
// that finds them again clears the doubt.
func TestProvisionConfirmsNotFoundOnNextPass(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launch("H100_80GB", 2, 8)
		w.runJobs() // places
		real := w.job.Providers
		forgetting := providers.Registry{"sim": amnesiac{w.cloud}}

		w.job.Providers = forgetting
		w.clock.Advance(time.Minute)
		w.runJobs()
		if got := w.cluster(c.ID); got.Status != models.StatusProvisioning {
			t.Fatalf("failed on one 'not found' answer: %s %s", got.Status, got.LastError)
		}
		w.job.Providers = real // found again: the doubt is cleared
		w.runJobs()
		w.job.Providers = forgetting
		w.runJobs()
		if got := w.cluster(c.ID); got.Status != models.StatusProvisioning {
			t.Fatalf("a 'not found' after the machines were found again counted the older one: %s", got.Status)
		}
		w.runJobs()
		if got := w.cluster(c.ID); got.Status != models.StatusFailed || got.LastError != "node_lost:running" {
			t.Fatalf("confirmed 'not found': status %s lastError %q, want failed node_lost:running", got.Status, got.LastError)
		}
	})
}
