package shadeform_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/providerstest"
	"github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

// The adapter against the fake Shadeform passes the contract every
// provider passes (OP1); Shadeform cannot stop machines, so StopNode is
// refused.
func TestContract(t *testing.T) {
	providerstest.Run(t, func(t *testing.T) providerstest.Env {
		e := newEnv(t)
		e.fake.Capacity[fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}] = 3
		return providerstest.Env{Provider: e.cloud, OfferID: "lambdalabs/" + h100 + "/us-east-1", Location: "us-east-1", Free: 3,
			Advance: e.clk.Advance,
			RateLimited: func(t *testing.T, d time.Duration) {
				e.fake.Inject(fake.Fault{Path: "/instances", Status: 429, ErrorCode: "RATE_LIMITED", Error: "too many requests", RetryAfter: strconv.Itoa(int(d.Seconds()))})
			},
			Waited: func() time.Duration {
				var sum time.Duration
				for _, d := range e.clk.Slept() {
					sum += d
				}
				return sum
			}, Boot: 10 * time.Minute,
			FailMidway: func(t *testing.T) {
				// The catalog says yes; the second create finds none left.
				e.fake.Inject(fake.Fault{Path: "/instances/create", After: 1, Status: 409, ErrorCode: "OUT_OF_CAPACITY",
					Error: "The selected instance is out of capacity"})
				t.Cleanup(func() {
					if c := e.fake.Creates(); len(c) != 1 || len(e.fake.Live()) != 0 {
						t.Errorf("%d creates, %d live: the first machine should have been created, then deleted", len(c), len(e.fake.Live()))
					}
				})
			}}
	})
}
