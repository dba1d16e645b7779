package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// nodeStatus reads node rank's status on s ("" when there is no such node).
func (s *server) nodeStatus(t *testing.T, id string, rank int) string {
	t.Helper()
	var c struct {
		Nodes []struct {
			Rank   int
			Status string
		}
	}
	s.api(t, http.MethodGet, "/v1/gpu/clusters/"+id, nil, &c)
	for _, n := range c.Nodes {
		if n.Rank == rank {
			return n.Status
		}
	}
	return ""
}

// untilNode runs ticks of jobs on the servers in turn (a minute of the
// shared clock each round) until node rank of cluster id reads want.
func untilNode(t *testing.T, id string, rank int, want string, jobs []string, servers ...*server) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; ; i++ {
		s := servers[i%len(servers)]
		got := s.nodeStatus(t, id, rank)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-%d of %s is %q, want %s; events:\n%s\nlog:\n%s", rank, id, got, want, eventsOf(t, s, id), s.out)
		}
		s.advance(t, 1)
		for _, j := range jobs {
			s.devRun(t, j)
		}
		agentRound(t, s) // the clock moved: heartbeats keep up with it
	}
}

// L10, X5 with real `clusterdeck serve` processes on one PostgreSQL: a
// worker asked for on one instance is placed and joined by the join job of
// either, and a machine that cannot come back, replaced through the other,
// comes back with its name and address and the cluster is ready again.
func TestServeAddWorkerAndReplaceNode(t *testing.T) {
	t.Parallel() // two servers of its own on a schema of its own
	databaseURL := modelstest.PostgresSchemaURL(t)
	a := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")
	b := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")

	id := a.launch(t, "grow")
	placeOn(t, a, id)
	b.advance(t, 2)
	until(t, id, "ready", 0, []string{"provision", "install"}, a, b)

	var cl struct {
		NodeCount int
		Nodes     []struct{ Name, Status string }
	}
	if code := a.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/workers", nil, &cl); code != http.StatusAccepted || cl.NodeCount != 3 {
		t.Fatalf("add worker: %d %+v", code, cl)
	}
	untilNode(t, id, 2, "ready", []string{"join"}, b, a)
	if evs := eventsOf(t, a, id); strings.Count(evs, "The added machine of node-2 reserved") != 1 || !strings.Contains(evs, "node-2 joined the cluster") {
		t.Errorf("worker events:\n%s", evs)
	}

	if code := b.api(t, http.MethodPost, "/dev/sim/faults", []map[string]any{{"kind": "unrecoverable", "group": id, "node": 1}}, nil); code != http.StatusOK {
		t.Fatalf("inject unrecoverable: %d", code)
	}
	until(t, id, "degraded", 1, []string{"health"}, a, b)
	var preview struct{ USDPerMachineHour string }
	if code := b.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/nodes/1/replace", map[string]any{}, &preview); code != http.StatusOK || preview.USDPerMachineHour == "" {
		t.Fatalf("replace preview: %d %+v", code, preview)
	}
	if code := b.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/nodes/1/replace", map[string]any{"confirm": true}, nil); code != http.StatusAccepted {
		t.Fatalf("replace: %d", code)
	}
	untilNode(t, id, 1, "ready", []string{"join"}, a, b)
	until(t, id, "ready", 1, []string{"health"}, b, a)
	evs := eventsOf(t, a, id)
	if n := strings.Count(evs, "The replacement machine (the old one is released) of node-1 reserved"); n != 1 || !strings.Contains(evs, "node-1 replaced the machine that was down") {
		t.Errorf("replacement placed %d times, want once:\n%s", n, evs)
	}

	if code := a.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/terminate", nil, nil); code >= 300 {
		t.Fatalf("terminate: %d", code)
	}
	until(t, id, "terminated", 0, []string{"terminate"}, b)
	noLeaks(t, a)
	a.stop(t)
	b.stop(t)
}
