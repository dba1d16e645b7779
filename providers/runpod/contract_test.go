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
					RateLimited: func(t *testing.T, d time.Duration) {
						e.fake.Inject(fake.Fault{Method: "GET", Path: "/v2/pods", Status: 429, Detail: "rate limit exceeded for the minute window", RetryAfter: strconv.Itoa(int(d.Seconds()))})
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
