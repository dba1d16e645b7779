package domain

import (
	"testing"
	"time"
)

// every lifecycle the decisions may meet: each status with and without
// each request mark, handed over or not, at and below the node cap.
func everyLifecycle() []Lifecycle {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var out []Lifecycle
	for _, st := range ClusterStatuses {
		for mask := range 1 << 5 {
			c := Lifecycle{Status: st, Nodes: 4}
			set := func(bit int) *time.Time {
				if mask&(1<<bit) != 0 {
					return &at
				}
				return nil
			}
			c.ReadyAt, c.TerminateRequestedAt, c.StopRequestedAt, c.ResumeRequestedAt = set(0), set(1), set(2), set(3)
			if mask&(1<<4) != 0 {
				c.Nodes = MaxNodes
			}
			out = append(out, c)
		}
	}
	return out
}

// The page offers Add worker and Replace only where the use case accepts
// them (L10, X5): whatever the page says yes to, the store's guards
// (Joinable, then AcceptsWorker or AcceptsReplacement, and the node cap)
// say yes to as well, and a ready cluster handed over with nothing
// pending is offered both.
func TestJoinOffersAgreeWithTheUseCase(t *testing.T) {
	offered := 0
	for _, c := range everyLifecycle() {
		if c.CanAddWorker() {
			offered++
			if !c.Joinable() || !c.AcceptsWorker() || c.Nodes+1 > MaxNodes {
				t.Errorf("%+v: Add worker offered, the use case refuses it", c)
			}
		}
		for _, n := range []NodeStatus{NodeReady, NodeDown, NodeRestarting, NodeJoining, NodeLost} {
			if c.CanReplace(n) && (!c.Joinable() || !c.AcceptsReplacement() || !n.Replaceable()) {
				t.Errorf("%+v: Replace offered on a %s machine, the use case refuses it", c, n)
			}
		}
		if c.JoinsOffered() && (c.Status == StatusStopped || c.ReadyAt == nil || c.Ending() || c.StopRequestedAt != nil) {
			t.Errorf("%+v: the join panel shows on a cluster that takes no machine", c)
		}
	}
	if offered == 0 {
		t.Fatal("no lifecycle was offered Add worker: the table is not being read")
	}
	at := time.Now()
	ready := Lifecycle{Status: StatusReady, Nodes: 4, ReadyAt: &at}
	if !ready.CanAddWorker() || !ready.CanReplace(NodeDown) || ready.CanReplace(NodeReady) {
		t.Errorf("a ready cluster: add %v, replace down %v, replace ready %v", ready.CanAddWorker(), ready.CanReplace(NodeDown), ready.CanReplace(NodeReady))
	}
	degraded := Lifecycle{Status: StatusDegraded, Nodes: 4, ReadyAt: &at}
	if degraded.CanAddWorker() || !degraded.CanReplace(NodeDown) {
		t.Errorf("a degraded cluster: add %v (want false), replace down %v (want true)", degraded.CanAddWorker(), degraded.CanReplace(NodeDown))
	}
	full := Lifecycle{Status: StatusReady, Nodes: MaxNodes, ReadyAt: &at}
	if full.CanAddWorker() {
		t.Errorf("a cluster of %d machines is offered one more", MaxNodes)
	}
	// A down machine of a cluster still installing was offered Replace by
	// the page while the use case refused it: now neither does.
	installing := Lifecycle{Status: StatusInstalling, Nodes: 4, ReadyAt: &at}
	if installing.CanReplace(NodeDown) {
		t.Error("Replace offered on an installing cluster, which the use case refuses")
	}
}

// The GPU-watch panel shows on a cluster handed over and not ending
// (X15); verify again only on a ready cluster with no run going (X13).
func TestWatchAndVerifyAgainDecisions(t *testing.T) {
	for _, c := range everyLifecycle() {
		want := c.ReadyAt != nil && !c.Status.Terminal() && c.TerminateRequestedAt == nil
		if c.Watchable() != want {
			t.Errorf("%+v: Watchable %v, want %v", c, c.Watchable(), want)
		}
		for _, run := range []string{"", VerifyRunning, VerifyPassed, VerifyFailed} {
			want := c.Status == StatusReady && c.TerminateRequestedAt == nil && c.StopRequestedAt == nil && run != VerifyRunning
			if got := c.VerifyAgainOffered(run); got != want {
				t.Errorf("%+v, last run %q: verify again %v, want %v", c, run, got, want)
			}
			if c.VerifyAgainOffered(run) && !c.CanVerifyAgain() {
				t.Errorf("%+v: offered where the use case refuses", c)
			}
		}
	}
}

// What a status is shown as never contradicts the cluster (L8): every
// status ShownNodeStatus returns is one NodeStatusesShown allows.
func TestShownNodeStatusStaysInItsTable(t *testing.T) {
	stored := []NodeStatus{NodeProvisioning, NodeReady, NodeFailed, NodeTerminated, NodeLost, NodeInstalling,
		NodeDown, NodeRestarting, NodeJoining, NodeStopped}
	for _, c := range everyLifecycle() {
		for _, n := range stored {
			for _, step := range []string{StepRunning, StepSoftware, "done"} {
				for _, le := range []string{"", InstallFailed("node-1").String()} {
					c.LastError = le
					got := ShownNodeStatus(c, NodeStep{Status: n, Step: step})
					allowed := false
					for _, a := range NodeStatusesShown[c.Status] {
						allowed = allowed || a == got
					}
					if !allowed {
						t.Errorf("%s cluster (terminate %v), %s node at %s: shown %s, not in %v", c.Status, c.TerminateRequestedAt != nil, n, step, got, NodeStatusesShown[c.Status])
					}
				}
			}
		}
	}
}

// One rule for "this machine" and for a public URL host (OP5, X8).
func TestLoopbackAndPublicHost(t *testing.T) {
	for host, loop := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.8.9.1:80": true, "[::1]:443": true, "::1": true,
		"example.com": false, "10.0.0.1": false, "[2001:db8::1]:80": false, "8.8.8.8": false,
	} {
		if LoopbackHost(host) != loop {
			t.Errorf("LoopbackHost(%q) = %v", host, !loop)
		}
	}
	for host, public := range map[string]bool{
		"example.com": true, "8.8.8.8": true, "2606:4700:4700::1111": true, "[2606:4700:4700::1111]": true,
		"localhost": false, "127.0.0.1": false, "10.1.2.3": false, "192.168.1.1": false, "169.254.169.254": false,
		"::1": false, "fd00::1": false, "::ffff:10.0.0.1": false, "64:ff9b::a00:1": false,
	} {
		if PublicHost(host) != public {
			t.Errorf("PublicHost(%q) = %v, want %v", host, !public, public)
		}
	}
}
