package models_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// L2: launches of one organisation racing on parallel connections are
// serialised (a row lock on the organisation on PostgreSQL, immediate
// transactions on SQLite), so exactly the quota is admitted and every other
// launch is refused with quota_exceeded.
func TestConcurrentLaunchesAdmitExactlyTheQuota(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro) // quota: 8 machines
		quotes := make([]models.Quote, 12)
		for i := range quotes {
			quotes[i] = e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
		}
		var (
			wg             sync.WaitGroup
			mu             sync.Mutex
			admitted, over int
			others         []error
		)
		ready := make(chan struct{})
		for _, q := range quotes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				_, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
					Actor: "t", Workload: models.Workload{Name: "train", Software: "none"}})
				var qe *models.QuotaError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case errors.As(err, &qe):
					over++
				default:
					others = append(others, err)
				}
			}()
		}
		close(ready)
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("launches failed otherwise: %v", others)
		}
		machines, _, err := e.s.UsageInUse(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if admitted != 4 || over != 8 || machines != 8 {
			t.Errorf("admitted %d, refused %d, %d machines in use; want exactly the quota: 4 launches, 8 machines", admitted, over, machines)
		}
	})
}
