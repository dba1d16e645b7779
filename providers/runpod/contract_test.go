package runpod_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/providerstest"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

const capacityDetail = "There are no longer any instances available with the requested specifications. Please refresh and try again."

// The adapter against the fake RunPod passes the contract every provider
// passes (OP1), in both placement modes: pod by pod (the data center sells
// no Instant Clusters), and one POST /v2/clusters per group where it does.
// Stop and start are included: RunPod stops single pods and starts them
// again on the same host; a cluster's pods are released only together.
func TestContract(t *testing.T) {
	for _, mode := range []string{"pods", "clusters"} {
		t.Run(mode, func(t *testing.T) {
			clusters := mode == "clusters"
			providerstest.Run(t, func(t *testing.T) providerstest.Env {
				e := newEnv(t)
				e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 3 * 8
				if clusters {
					e.fake.ClusterCaps[fake.Cap{GPU: h100, DC: "US-TX-3"}] = true
				}
				return providerstest.Env{Provider: e.cloud, OfferID: "US-TX-3/8x/" + h100, Location: "US-TX-3", Free: 3,
					Advance: e.clk.Advance,
					Delay: func(d time.Duration) {
						e.fake.Lock()
						defer e.fake.Unlock()
						e.fake.BootDelay, e.fake.StartDelay, e.fake.RankDelay = d, d, d
					},
					Upset: func(t *testing.T, u providerstest.Upset) {
						calls := map[providerstest.Op][2]string{
							providerstest.OpCreate: {"POST", "/v2/pods"}, providerstest.OpList: {"GET", "/v2/pods"},
							providerstest.OpDelete: {"DELETE", "/v2/pods/"}, providerstest.OpRestart: {"POST", "/v2/pods/*/action"}}
						if clusters {
							// One create and one delete per cluster; its members
							// are read from the cluster and from the pods list.
							calls[providerstest.OpCreate] = [2]string{"POST", "/v2/clusters"}
							calls[providerstest.OpList] = [2]string{"GET", "/v2/"}
							calls[providerstest.OpDelete] = [2]string{"DELETE", "/v2/clusters/"}
						}
						method, path := calls[u.Op][0], calls[u.Op][1]
						for k := range u.N() {
							f := fake.Fault{Method: method, Path: path}
							if k == 0 {
								f.After = u.After
							}
							switch {
							case u.Lost:
								f.Status, f.Apply = 502, true // a proxy's page, after the fact
							case u.RetryAfter > 0:
								f.Status, f.Detail, f.RetryAfter = 429, "rate limit exceeded for the minute window", strconv.Itoa(int(u.RetryAfter.Seconds()))
							case u.Slow > 0:
								f.Slow = func() { e.clk.Advance(u.Slow) }
							}
							e.fake.Inject(f)
						}
					},
					Waited: func() time.Duration {
						var sum time.Duration
						for _, d := range e.clk.Slept() {
							sum += d
						}
						return sum
					}, Boot: 5 * time.Minute, Stops: true, GroupBound: clusters,
					FailMidway: func(t *testing.T) {
						if clusters {
							// The catalog says yes; the one create finds the
							// data center full and places nothing.
							e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/clusters", Status: 400, Detail: capacityDetail})
							t.Cleanup(func() {
								if c := e.fake.ClusterCreates(); len(c) != 0 || len(e.fake.Live()) != 0 || e.fake.Requests("POST /v2/pods") != 0 {
									t.Errorf("%d cluster creates, %d live pods, %d pod creates: the refused cluster must leave nothing and not fall back",
										len(c), len(e.fake.Live()), e.fake.Requests("POST /v2/pods"))
								}
							})
							return
						}
						// The catalog says yes; the second create finds the host taken.
						e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/pods", After: 1, Status: 400, Detail: capacityDetail})
						t.Cleanup(func() {
							if c := e.fake.Creates(); len(c) != 1 || len(e.fake.Live()) != 0 {
								t.Errorf("%d creates, %d live: the first pod should have been created, then deleted", len(c), len(e.fake.Live()))
							}
						})
					}}
			})
		})
	}
}
