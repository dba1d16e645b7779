package models

import "testing"

// The mesh step's message counts its peers in words people write
// ("all 1 peers", "all 2 peers").
func TestReachedPeers(t *testing.T) {
	for peers, want := range map[int]string{1: "node-0 reached its peer.", 2: "node-0 reached both its peers.", 3: "node-0 reached all 3 peers."} {
		if got := reachedPeers("node-0", peers); got != want {
			t.Errorf("%d peers: %q, want %q", peers, got, want)
		}
	}
}
