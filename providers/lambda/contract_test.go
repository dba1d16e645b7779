package lambda_test

import (
	"net/http"
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
			Delay: func(d time.Duration) {
				e.fake.Lock()
				defer e.fake.Unlock()
				e.fake.BootDelay, e.fake.RestartDelay, e.fake.TerminateDelay = d, d, d
			},
			Upset: func(t *testing.T, u providerstest.Upset) {
				path := map[providerstest.Op]string{providerstest.OpCreate: "/api/v1/instance-operations/launch",
					providerstest.OpList: "/api/v1/instances", providerstest.OpDelete: "/api/v1/instance-operations/terminate",
					providerstest.OpRestart: "/api/v1/instance-operations/restart"}[u.Op]
				method := http.MethodPost
				if u.Op == providerstest.OpList {
					method = http.MethodGet
				}
				for k := range u.N() {
					f := fake.Fault{Method: method, Path: path}
					if k == 0 {
						f.After = u.After
					}
					switch {
					case u.Lost:
						f.Status, f.Apply = http.StatusBadGateway, true // a proxy's page, after the fact
					case u.RetryAfter > 0:
						f.Status, f.Code, f.Message, f.RetryAfter = http.StatusTooManyRequests, "global/too-many-requests", "Too many requests.", strconv.Itoa(int(u.RetryAfter.Seconds()))
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
