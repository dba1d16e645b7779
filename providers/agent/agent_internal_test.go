package agent

import (
	"slices"
	"testing"
)

// What a node reports between CLUSTERDECK markers (a kubeconfig, a join
// command) never reaches its log.
func TestLoggableHidesReportedCredentials(t *testing.T) {
	out := "[init] ok\n\n-----BEGIN CLUSTERDECK KUBECONFIG-----\napiVersion: v1\n    client-key-data: c2VjcmV0\n" +
		"-----END CLUSTERDECK KUBECONFIG-----\nYour Kubernetes control-plane has initialized successfully!\n"
	got := loggable(out)
	want := []string{"[init] ok", "Your Kubernetes control-plane has initialized successfully!"}
	if !slices.Equal(got, want) {
		t.Errorf("loggable = %q, want %q", got, want)
	}
}
