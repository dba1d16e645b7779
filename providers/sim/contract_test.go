package sim

import (
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/providerstest"
)

// The simulated cloud passes the contract every provider passes (OP1).
func TestContract(t *testing.T) {
	providerstest.Run(t, func(t *testing.T) providerstest.Env {
		clk := newFakeClock()
		c := New(testConfig(), WithClock(clk.Now))
		return providerstest.Env{Provider: c, OfferID: offCounted, Location: locT1, Free: 10,
			Advance: clk.Advance, Boot: 30 * time.Minute, Stops: true, Volumes: true, PlacesNodes: true,
			FailMidway: func(t *testing.T) {
				// The simulator places a group in one call: it refuses it whole.
				if err := c.Inject(Fault{Kind: FaultRefuseCapacity, Count: 1}); err != nil {
					t.Fatal(err)
				}
			}}
	})
}
