package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"gorm.io/gorm"
)

// RunPod's request budget (its rate-limit windows) goes to creates and
// terminates, not to reading the same account once per cluster (R1, L7):
// a provision tick with N Instant Clusters waiting for their members, then
// with N placed clusters booting, lists the account's clusters and pods
// once each, whatever N, and reads no cluster on its own.
func TestProvisionRunPodOneListingPerTick(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		const n = 5
		clk := fakekit.NewClockAt(cloudStart)
		c, f := runpodCloud(t, clk, 2*n, true)
		w := newCloudWorld(t, db, clk, c)
		var cs []models.Cluster
		for range n {
			cs = append(cs, w.launch(2))
		}
		w.tick() // creates the n clusters; RunPod lists their members 40 s later
		if got := len(f.ClusterCreates()); got != n {
			t.Fatalf("%d cluster creates for %d clusters", got, n)
		}
		reads := func() map[string]int {
			out := map[string]int{"GET /v2/pods": f.Requests("GET /v2/pods"), "GET /v2/clusters": f.Requests("GET /v2/clusters")}
			for _, id := range f.ClusterCreatesIDs() {
				out["GET /v2/clusters/{id}/pods"] += f.Requests("GET /v2/clusters/" + id + "/pods")
				out["GET /v2/clusters/{id}"] += f.Requests("GET /v2/clusters/" + id)
			}
			return out
		}
		tickReads := func(what string) {
			t.Helper()
			before := reads()
			w.tick()
			after := reads()
			want := map[string]int{"GET /v2/pods": 1, "GET /v2/clusters": 1, "GET /v2/clusters/{id}/pods": 0, "GET /v2/clusters/{id}": 0}
			if what == "placed" {
				want["GET /v2/clusters"] = 0 // placed clusters are described from the pods alone
			}
			for k, max := range want {
				if d := after[k] - before[k]; d > max {
					t.Errorf("%s: one tick sent %s %d times for %d clusters (at most %d)", what, k, d, n, max)
				}
			}
		}
		tickReads("waiting for members") // members still unlisted: every cluster pending
		clk.Advance(time.Minute)         // ranks and addresses assigned, a new rate-limit window
		tickReads("members listed")      // every cluster adopted and placed from one listing
		for _, c := range cs {
			now, err := w.store.ClusterByID(context.Background(), c.ID)
			if err != nil || now.PlacedAt == nil {
				t.Fatalf("cluster %s not placed from the tick's listing: %+v %v", c.ID, now.Status, err)
			}
		}
		tickReads("placed") // booting: one describe listing for every cluster
		if got := len(f.ClusterCreates()); got != n {
			t.Errorf("%d cluster creates for %d clusters", got, n)
		}
		w.terminate(cs...)
	})
}
