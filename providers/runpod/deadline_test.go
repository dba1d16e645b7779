package runpod_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

// A placement runs inside a job tick with a deadline (30 s kicked, 2
// minutes scheduled). RunPod assigns an Instant Cluster's ranks after
// longer than that: a placement whose caller's time runs out while it
// waits for them answers ErrTransient and keeps the cluster, never rolls
// it back; the next call adopts it (L3, L4, L7). Four clusters waiting in
// one scheduled tick share its two minutes: none is deleted, none created
// twice.
func TestInstantClusterCallerDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clusters int
		tick     time.Duration
	}{
		{"kicked tick", 1, 30 * time.Second},
		{"four in one scheduled tick", 4, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
			e.fake.Stock[cp], e.fake.ClusterCaps[cp] = tc.clusters*2*8, true
			e.fake.RankDelay = 45 * time.Second // longer than a kicked tick
			e.fake.PerMinute = 0                // the windows are TestRateLimitWindow's
			tick := func() (done int) {
				ctx, cancel := e.clk.WithTimeout(context.Background(), tc.tick)
				defer cancel()
				for k := range tc.clusters {
					req := request(fmt.Sprintf("cl_dl%d", k), "US-TX-3", 2)
					req.Agent.Token = "cdb_dl_mac"
					g, err := e.cloud.PlaceGroup(ctx, req)
					switch {
					case err == nil && len(g.Nodes) == 2:
						done++
					case err != nil && refused(err):
						t.Fatalf("cluster %d: want a transient answer at the deadline, got %v", k, err)
					}
				}
				return done
			}
			done := tick()
			for i := 0; done < tc.clusters && i < 5; i++ {
				e.clk.Advance(5 * time.Second) // the next tick
				done = tick()
			}
			if done != tc.clusters {
				t.Fatalf("%d of %d clusters placed after six ticks", done, tc.clusters)
			}
			if n := e.fake.Requests("POST /v2/clusters"); n != tc.clusters {
				t.Errorf("%d cluster creates for %d clusters", n, tc.clusters)
			}
			for _, id := range e.fake.ClusterCreatesIDs() {
				if e.fake.Requests("DELETE /v2/clusters/"+id) != 0 {
					t.Errorf("cluster %s was deleted while wanted", id)
				}
			}
			if len(e.fake.Clusters()) != tc.clusters || len(e.fake.Live()) != 2*tc.clusters {
				t.Errorf("%d clusters, %d pods live", len(e.fake.Clusters()), len(e.fake.Live()))
			}
		})
	}
}

// RunPod may list a new cluster whose members are not listed yet. The
// adapter finds its own cluster by name before anything else: the next
// call neither reads the emptied catalog as "no capacity" (and deletes the
// cluster) nor creates two pods beside it; it waits for the members.
func TestInstantClusterMembersListedLate(t *testing.T) {
	for name, stock := range map[string]int{"stock gone with the cluster": 2 * 8, "stock left for pods": 4 * 8} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cp := fake.Cap{GPU: h100, DC: "US-TX-3"}
			e.fake.Stock[cp], e.fake.ClusterCaps[cp] = stock, true
			e.fake.RankDelay, e.fake.ListDelay = 0, 90*time.Second
			req := request("cl_late", "US-TX-3", 2)
			req.Agent.Token = "cdb_late_mac"
			place := func(d time.Duration) (providers.Group, error) {
				ctx, cancel := e.clk.WithTimeout(context.Background(), d)
				defer cancel()
				return e.cloud.PlaceGroup(ctx, req)
			}
			if _, err := place(30 * time.Second); err == nil || refused(err) {
				t.Fatalf("first call: want a transient wait, got %v", err)
			}
			e.clk.Advance(5 * time.Second)
			if _, err := place(2 * time.Minute); err == nil || refused(err) {
				t.Fatalf("a call while the members are unlisted: want a transient wait, got %v", err)
			}
			id := e.fake.ClusterCreatesIDs()[0]
			if d, p := e.fake.Requests("DELETE /v2/clusters/"+id), e.fake.Requests("POST /v2/pods"); d != 0 || p != 0 {
				t.Fatalf("%d deletes of the cluster, %d pods created beside it", d, p)
			}
			e.clk.Advance(time.Minute)
			g, err := place(2 * time.Minute)
			if err != nil || len(g.Nodes) != 2 || e.fake.Requests("POST /v2/clusters") != 1 || len(e.fake.Live()) != 2 {
				t.Fatalf("once listed: %+v %v (%d creates, %d live)", g, err, e.fake.Requests("POST /v2/clusters"), len(e.fake.Live()))
			}
		})
	}
}

// refused: the provision job fails the cluster on this answer (a refusal),
// rather than trying again on its next tick.
func refused(err error) bool {
	for _, c := range []error{providers.ErrNoCapacity, providers.ErrValidation, providers.ErrQuota, providers.ErrUnsupported} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}
