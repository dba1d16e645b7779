package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/domain"
)

// X13, R1: the machine check fails a machine for exactly the Xids of the
// one list (domain.FatalXIDs) that GPU telemetry and health use: Xid 61
// or 8 — which the machine check alone used to fail — passes as it does
// there, and every listed one fails.
func TestMachineCheckXidsFollowTheOneList(t *testing.T) {
	v := &verification{c: models.Cluster{GPUsPerNode: 0}, th: models.DefaultVerifyThresholds}
	n := models.ClusterNode{Name: "node-1", Rank: 1}
	for code := range 200 {
		out := fmt.Sprintf("===== nvidia-smi -q =====\n===== kernel log: NVRM Xid =====\n[ 12.5] NVRM: Xid (PCI:0000:18:00): %d, pid=0, test.\n", code)
		mv := v.judgeMachine(n, models.VerifyTask{Status: models.TaskOK, Output: out})
		failed := slices.ContainsFunc(mv.Errors, func(e string) bool { return strings.HasPrefix(e, "kernel log:") })
		if _, fatal := domain.FatalXID(code); failed != fatal {
			t.Errorf("Xid %d: the machine check fails it %v, the one list says fatal %v (%v)", code, failed, fatal, mv.Errors)
		}
	}
}
