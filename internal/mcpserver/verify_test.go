package mcpserver_test

import (
	"strings"
	"testing"
)

// X13 through the tools: verify_cluster on a handed-over cluster is
// refused without confirm_disruption, the error naming the disruption;
// with it the checks run again.
func TestVerifyClusterNeedsConfirmedDisruption(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cs := mustConnect(t, ways[0], d, d.key)
		id := d.readyCluster(cs, "verified")
		refused(t, cs, "verify_cluster", map[string]any{"cluster_id": id}, "confirmation_required",
			"every GPU of all 2 machines", "Confirm the disruption to run it.")
		r := ok(t, cs, "verify_cluster", map[string]any{"cluster_id": id, "confirm_disruption": true})
		if !strings.Contains(r.text, "runs again") {
			t.Errorf("verify_cluster: %s", r.text)
		}
	})
}
