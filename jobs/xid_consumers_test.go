package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/domain"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// R1, X13: GPU telemetry and health judge a kernel log's Xid by the one
// list (domain.FatalXIDs) the machine check uses: Xid 61, which only the
// machine check used to count, leaves the machine well; Xid 94, on the
// list, makes it down.
func TestXIDsFollowTheOneListInTelemetryAndHealth(t *testing.T) {
	for _, code := range []int{61, 94} {
		_, fatal := domain.FatalXID(code)
		t.Run("xid "+map[bool]string{true: "fatal", false: "not fatal"}[fatal], func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				h := newHealthWorld(t, db)
				h.inject(sim.FaultGPUXID, 1, func(f *sim.Fault) { f.XID = code })
				h.pass(30 * time.Second) // the agent reads the Xid and reports it
				var c models.Cluster
				for range 3 {
					c = h.pass(time.Minute)
				}
				series, err := h.store.GPUSeriesByID(context.Background(), h.c.ID, models.GPUWindowHour)
				if err != nil || len(series.Nodes) != 3 || !slices.ContainsFunc(series.Nodes[1].XIDs, func(x models.XIDLine) bool { return x.Code == code }) {
					t.Fatalf("Xid %d never reached the server: %v %+v", code, err, series.Nodes)
				}
				n := h.node(1)
				if got := n.HWFault != ""; got != fatal {
					t.Errorf("Xid %d: telemetry's fault %q, the one list says fatal %v", code, n.HWFault, fatal)
				}
				if got := n.Status == models.NodeDown; got != fatal {
					t.Errorf("Xid %d: health left node-1 %s (cluster %s), the one list says fatal %v\n%s", code, n.Status, c.Status, fatal, h.events(c.ID))
				}
			})
		})
	}
}
