package sim

import (
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// The simulator's kernel-log words and the one list of fatal Xids
// (domain.FatalXIDs) are two tables of the same codes: every Xid the
// simulator prints for a gpu_xid fault is one the list calls a broken GPU
// or fabric, and says the same thing, so a simulated fault is one that
// health and verification act on (X13, X15). The words follow NVIDIA's Xid
// catalogue: 48 a double-bit ECC error, 74 an NVLink error, 79 the GPU
// fallen off the bus, 94 and 95 a contained and an uncontained ECC error,
// 119 a GSP RPC timeout.
func TestSimulatedXIDsAreOnTheFatalList(t *testing.T) {
	same := map[int]string{48: "double bit", 74: "nvlink", 79: "fallen off the bus", 94: "contained", 95: "uncontained", 119: "rpc"}
	if len(xidMessages) == 0 {
		t.Fatal("the simulator prints no Xid: the table is not being read")
	}
	for code, words := range xidMessages {
		why, fatal := domain.FatalXID(code)
		if !fatal {
			t.Errorf("the simulator prints Xid %d (%q), which is not on the fatal list", code, words)
			continue
		}
		key, ok := same[code]
		if !ok {
			t.Errorf("Xid %d: no shared meaning pinned for it here; add what NVIDIA's catalogue calls it", code)
			continue
		}
		if !strings.Contains(strings.ToLower(words), key) || !strings.Contains(strings.ToLower(why), strings.ReplaceAll(key, "double bit", "double-bit")) {
			t.Errorf("Xid %d: the simulator says %q and the list %q; both must say %q", code, words, why, key)
		}
	}
}
