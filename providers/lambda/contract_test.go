package lambda_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
	"github.com/clusterdeck/clusterdeck/providers/providerstest"
)

// The adapter against the fake Lambda passes the contract every provider
// passes (OP1): capacity and validation refusals, a partial placement
// rolled back, idempotent placement, terminate of a missing group,
// describe after terminate, restart.
func TestContract(t *testing.T) {
	providerstest.Run(t, func(t *testing.T) providerstest.Env {
		e := newEnv(t)
		e.fake.SetCapacity(h100, "us-west-1", 3)
		return providerstest.Env{Provider: e.cloud, OfferID: "gpu_8x_h100_sxm5gdr.us-west-1", Location: "us-west-1", Free: 3,
			Advance: e.clk.Advance,
			RateLimited: func(t *testing.T, d time.Duration) {
				e.fake.Inject(fake.Fault{Path: "/api/v1/instances", Status: 429, Code: "global/rate-limited", Message: "Too many requests", RetryAfter: strconv.Itoa(int(d.Seconds()))})
			},
			Waited: func() time.Duration {
				var sum time.Duration
				for _, d := range e.clk.Slept() {
					sum += d
				}
				return sum
			}, Boot: 5 * time.Minute,
			FailMidway: func(t *testing.T) {
				// The catalog says yes; the second launch finds no capacity.
				e.fake.Inject(fake.Fault{Path: "/api/v1/instance-operations/launch", After: 1, Status: 400,
					Code: "instance-operations/launch/insufficient-capacity", Message: "Not enough capacity to fulfill launch request."})
				t.Cleanup(func() {
					l := e.fake.Launches() // the scripted refusal is not among them
					if len(l) != 1 || l[0].Status != 200 || len(e.fake.Live()) != 0 {
						t.Errorf("launches %+v, %d live: the first machine should have been placed, then rolled back", l, len(e.fake.Live()))
					}
				})
			}}
	})
}
