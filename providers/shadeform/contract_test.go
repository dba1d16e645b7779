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
			Delay: func(d time.Duration) {
				e.fake.Lock()
				defer e.fake.Unlock()
				e.fake.BootDelay, e.fake.DeleteDelay = d, d
			},
			Upset: func(t *testing.T, u providerstest.Upset) {
				method, path := "POST", map[providerstest.Op]string{providerstest.OpCreate: "/instances/create",
					providerstest.OpList: "/instances", providerstest.OpDelete: "/instances/*/delete",
					providerstest.OpRestart: "/instances/*/restart"}[u.Op]
				if u.Op == providerstest.OpList {
					method = "GET"
				}
				for k := range u.N() {
					f := fake.Fault{Method: method, Path: path}
					if k == 0 {
						f.After = u.After
					}
					switch {
					case u.Lost:
						f.Status, f.Apply = 502, true // a proxy's page, after the fact
					case u.RetryAfter > 0:
						f.Status, f.ErrorCode, f.Error, f.RetryAfter = 429, "RATE_LIMITED", "too many requests", strconv.Itoa(int(u.RetryAfter.Seconds()))
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
