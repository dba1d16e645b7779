package jobs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// X15, R1, R3: an XID that means a broken GPU makes the
// machine down like a silent agent, with the error in the event and the
// cluster's last error; the restart policy restarts it, the reboot clears
// the fault, and the cluster is ready again.
func TestXIDMakesMachineDownAndRestartBringsItBack(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHealthWorld(t, db)
		h.setPolicy(3, 5)
		h.inject(sim.FaultGPUXID, 1)
		h.pass(30 * time.Second) // the agent reads the XID and reports it
		if f := h.node(1).HWFault; !strings.HasPrefix(f, "XID 79 (GPU has fallen off the bus): [") {
			t.Fatalf("node-1 fault %q", f)
		}
		c := h.pass(time.Minute)
		if c.Status != models.StatusDegraded || !strings.Contains(c.LastError, "node-1: GPU hardware error: XID 79") {
			t.Fatalf("status %s lastError %q\n%s", c.Status, c.LastError, h.events(c.ID))
		}
		if !strings.Contains(h.events(c.ID), "node-1: GPU hardware error: XID 79 (GPU has fallen off the bus)") {
			t.Errorf("the event does not carry the error:\n%s", h.events(c.ID))
		}
		if n := h.node(1); n.Status != models.NodeDown {
			t.Fatalf("node-1 %s", n.Status)
		}
		c = h.pass(10 * time.Second)
		if r := c.Recovery(); r.AttemptsUsed != 1 || len(r.Outcomes) != 1 || r.Outcomes[0].Outcome != models.OutcomeRestarted {
			t.Fatalf("attempt: %+v", r)
		}
		for range 4 {
			c = h.pass(30 * time.Second)
		}
		if c.Status != models.StatusReady || c.LastError != "" || h.node(1).HWFault != "" {
			t.Fatalf("after the restart: %s %q fault %q\n%s", c.Status, c.LastError, h.node(1).HWFault, h.events(c.ID))
		}
	})
}

// X15, R1: a new uncorrectable ECC error and a GPU vanishing
// from nvidia-smi make the machine down the same way.
func TestECCAndVanishedGPUMakeMachineDown(t *testing.T) {
	for kind, want := range map[sim.FaultKind]string{
		sim.FaultGPUECC:   "node-0: GPU hardware error: GPU 3: 2 new uncorrectable ECC errors",
		sim.FaultGPUDrops: "node-0: GPU hardware error: GPU 3 (GPU-",
	} {
		t.Run(string(kind), func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				h := newHealthWorld(t, db)
				h.inject(kind, 0, func(f *sim.Fault) { f.GPU = 3 })
				h.pass(30 * time.Second)
				c := h.pass(time.Minute)
				if c.Status != models.StatusDegraded || !strings.Contains(c.LastError, want) {
					t.Fatalf("status %s lastError %q, want %q\n%s", c.Status, c.LastError, want, h.events(c.ID))
				}
			})
		})
	}
}
