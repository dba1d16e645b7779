package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
)

// N3: `clusters get` shows each node's start command state, and
// `clusters connections` the ports.
func TestPrintStartCommandAndPorts(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	code := 3
	cl := api.Cluster{ID: "cl_x", Name: "w", Status: "ready", Nodes: []api.ClusterNode{
		{Name: "node-0", Rank: 0, Status: "ready", Step: "done", StartCommand: &api.NodeStartCommand{State: "running", StartedAt: &at}},
		{Name: "node-1", Rank: 1, Status: "ready", Step: "done", StartCommand: &api.NodeStartCommand{State: "exited", StartedAt: &at, ExitCode: &code, EndedAt: &at}},
	}}
	var b bytes.Buffer
	printCluster(&b, cl)
	for _, want := range []string{"START COMMAND", "running since", "exited 3 at"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("get lacks %q:\n%s", want, b.String())
		}
	}
	cl.Nodes[0].StartCommand, cl.Nodes[1].StartCommand = nil, nil
	b.Reset()
	printCluster(&b, cl)
	if strings.Contains(b.String(), "START COMMAND") {
		t.Errorf("a cluster without a start command shows the column:\n%s", b.String())
	}
	b.Reset()
	printConnections(&b, api.Connections{Cluster: "cl_x", Status: "ready", Ports: []api.Port{{Port: 8888, Published: true,
		Addresses: []string{"n0.example.net:8888"}, Tunnel: "ssh -N -L 8888:localhost:8888 -p 22 ubuntu@n0.example.net", Note: "Open between the nodes."}}})
	for _, want := range []string{"Ports:", "8888  Open between the nodes.", "n0.example.net:8888", "ssh -N -L 8888:localhost:8888"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("connections lack %q:\n%s", want, b.String())
		}
	}
}
