package runpod_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/providerstest"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

// The adapter against the fake RunPod passes the contract every provider
// passes (OP1), stop and start included: RunPod stops pods and starts them
// again on the same host.
func TestContract(t *testing.T) {
	providerstest.Run(t, func(t *testing.T) providerstest.Env {
		e := newEnv(t)
		e.fake.Stock[fake.Cap{GPU: h100, DC: "US-TX-3"}] = 3 * 8
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
			}, Boot: 5 * time.Minute, Stops: true,
			FailMidway: func(t *testing.T) {
				// The catalog says yes; the second create finds the host taken.
				e.fake.Inject(fake.Fault{Method: "POST", Path: "/v2/pods", After: 1, Status: 400,
					Detail: "There are no longer any instances available with the requested specifications. Please refresh and try again."})
				t.Cleanup(func() {
					if c := e.fake.Creates(); len(c) != 1 || len(e.fake.Live()) != 0 {
						t.Errorf("%d creates, %d live: the first pod should have been created, then deleted", len(c), len(e.fake.Live()))
					}
				})
			}}
	})
}
