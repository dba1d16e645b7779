package models_test

import (
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// L4, X5: the window a verification swap needs is the replacement's join
// deadline for the machine kind (its boot steps, and the software's
// install when the cluster runs one) plus the checks run again (machine,
// ring, and two pair waves — three for an odd count — from three machines).
func TestSwapWindow(t *testing.T) {
	for _, tc := range []struct {
		boot     time.Duration
		nodes    int
		software string
		join     time.Duration
		checks   time.Duration
	}{
		{time.Minute, 2, "none", 8 * time.Minute, 3 * time.Minute},            // container: 3 + 3 + 2
		{4 * time.Minute, 2, "none", 13 * time.Minute, 3 * time.Minute},       // VM: 8 + 3 + 2
		{12 * time.Minute, 2, "none", 29 * time.Minute, 3 * time.Minute},      // bare metal: clamped to its cap, 2·12 + 5
		{12 * time.Minute, 3, "none", 29 * time.Minute, 6 * time.Minute},      // three pair waves
		{12 * time.Minute, 8, "none", 29 * time.Minute, 5 * time.Minute},      // two pair waves
		{12 * time.Minute, 64, "slurm", 44 * time.Minute, 5 * time.Minute},    // the install's 15 minutes after the mesh
		{4 * time.Minute, 4, "kubernetes", 33 * time.Minute, 5 * time.Minute}, // 13 + 20
	} {
		c := models.Cluster{BootSeconds: int(tc.boot / time.Second), Nodes: tc.nodes, Software: tc.software}
		if got := c.SwapJoinDeadline(); got != tc.join {
			t.Errorf("boot %s %s: join deadline %s, want %s", tc.boot, tc.software, got, tc.join)
		}
		if got := models.VerifyChecksDuration(tc.nodes); got != tc.checks {
			t.Errorf("%d machines: checks %s, want %s", tc.nodes, got, tc.checks)
		}
		if got := c.SwapWindow(); got != tc.join+tc.checks {
			t.Errorf("boot %s on %d: window %s, want %s", tc.boot, tc.nodes, got, tc.join+tc.checks)
		}
	}
}
