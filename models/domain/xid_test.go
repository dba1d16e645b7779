package domain

import (
	"maps"
	"slices"
	"testing"
)

// The one list of fatal Xids (NVIDIA's Xid catalogue): pinned code by
// code, so a change to it is a change to this test; application Xids are
// never on it.
func TestFatalXIDsPinned(t *testing.T) {
	want := []int{48, 63, 64, 74, 79, 92, 94, 95, 119, 120}
	if got := slices.Sorted(maps.Keys(FatalXIDs)); !slices.Equal(got, want) {
		t.Fatalf("fatal Xids %v, want %v", got, want)
	}
	for code := range 200 {
		why, fatal := FatalXID(code)
		if fatal != slices.Contains(want, code) || fatal && why == "" {
			t.Errorf("Xid %d: fatal %v %q", code, fatal, why)
		}
	}
	for _, app := range []int{13, 31, 43, 45} {
		if _, fatal := FatalXID(app); fatal {
			t.Errorf("application Xid %d is on the list", app)
		}
	}
}
