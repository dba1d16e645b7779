package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// R3, R4: every machine a recovery attempt restarts has its own event
// naming it (node-1); the healthy machines have none.
func TestRecoveryRestartEventsNameTheirNode(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.setPolicy(3, 5)
		h.inject(sim.FaultGoesDown, 1)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		if c := h.pass(10 * time.Second); c.RecoveryAttempts != 1 {
			t.Fatalf("attempts %d\n%s", c.RecoveryAttempts, h.events(c.ID))
		}
		evs, err := h.store.EventsFor(context.Background(), h.c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var restarts []models.ClusterEvent
		for _, e := range evs {
			if e.Step == "recovery" && e.Node != "" {
				restarts = append(restarts, e)
			}
		}
		if len(restarts) != 1 || restarts[0].Node != "node-1" || !strings.Contains(restarts[0].Message, "node-1 restarted") {
			t.Fatalf("restart events %+v, want one naming node-1\n%s", restarts, h.events(h.c.ID))
		}
	})
}
