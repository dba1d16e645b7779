package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// OP1, L4 (c): agents sharing one address (one host, as in the cloud smoke
// tests) are told apart by their mesh ports; each must reach the other's
// endpoint, not its own.
func TestAgentsSharingAnAddressByMeshPort(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		// The provider reports no private address (Shadeform, RunPod pods).
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0"}, {Rank: 1, ProviderNodeID: "i-1"}})
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		if _, err := e.s.AgentCheckIn(ctx, c, nodes[0], "127.0.0.1", 40001, nil); err != nil {
			t.Fatal(err)
		}
		peers, err := e.s.AgentCheckIn(ctx, c, nodes[1], "127.0.0.1", 40002, nil)
		if err != nil {
			t.Fatalf("a second agent on the same address with its own mesh port: %v", err)
		}
		if got := []string{peers[0].MeshEndpoint(), peers[1].MeshEndpoint()}; got[0] != "127.0.0.1:40001" || got[1] != "127.0.0.1:40002" {
			t.Fatalf("endpoints %v", got)
		}
		// A claim that names no machine id matches both by address: refused.
		if _, _, err := e.s.ClaimRank(ctx, models.BootstrapToken(c), models.Claim{Hostname: "gpu-x", PrivateIP: "127.0.0.1"}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("a claim matching two machines by address: %v, want ErrUnknownMachine", err)
		}
		c, _ = e.s.ClusterByID(ctx, c.ID)
		// Reaching its own endpoint is not reaching the peer.
		if done, err := e.s.ReportPeers(ctx, c, peers[0], []string{"127.0.0.1:40001"}, nil); err != nil || done {
			t.Fatalf("node-0 reached only itself: done %v, %v", done, err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if !strings.Contains(nodes[0].Message, "node-1 (127.0.0.1:40002): not reported") {
			t.Errorf("node-0's message %q", nodes[0].Message)
		}
		if done, err := e.s.ReportPeers(ctx, c, nodes[0], []string{"127.0.0.1:40002"}, nil); err != nil || !done {
			t.Fatalf("node-0 reached node-1's endpoint: done %v, %v", done, err)
		}
		// A restarted agent listens on a new port: its check-in moves it.
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if _, err := e.s.AgentCheckIn(ctx, c, nodes[1], "127.0.0.1", 40003, nil); err != nil {
			t.Fatal(err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if nodes[1].MeshPort != 40003 || nodes[1].PrivateIP != "127.0.0.1" {
			t.Errorf("after the agent's restart: %s", nodes[1].MeshEndpoint())
		}
	})
}

// OP1: two machines of one cluster reporting the same private address
// (and no mesh port to tell them apart) cannot both have it: the second
// check-in is refused with ErrAddressTaken, its node keeps no address and
// says why, and the mesh step cannot pass on a machine reaching itself.
func TestTwoNodesReportingOneAddress(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0"}, {Rank: 1, ProviderNodeID: "i-1"}})
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		if _, err := e.s.AgentCheckIn(ctx, c, nodes[0], "172.17.0.2", 0, nil); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a retried check-in is refused again, with one event
			if _, err := e.s.AgentCheckIn(ctx, c, nodes[1], "172.17.0.2", 0, nil); !errors.Is(err, models.ErrAddressTaken) {
				t.Fatalf("the second node on 172.17.0.2: %v, want ErrAddressTaken", err)
			}
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if nodes[1].PrivateIP != "" || nodes[1].AgentAt != nil || !strings.Contains(nodes[1].Message, "172.17.0.2, which node-0 already has") {
			t.Errorf("node-1: address %q, agent at %v, message %q", nodes[1].PrivateIP, nodes[1].AgentAt, nodes[1].Message)
		}
		evs, _ := e.s.EventsFor(ctx, c.ID)
		n := 0
		for _, ev := range evs {
			if ev.Node == "node-1" && strings.Contains(ev.Message, "which node-0 already has") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d events for the shared address, want 1", n)
		}
		c, _ = e.s.ClusterByID(ctx, c.ID)
		if done, err := e.s.ReportPeers(ctx, c, nodes[0], []string{"172.17.0.2"}, nil); err != nil || done {
			t.Fatalf("node-0 reaching its own address: done %v, %v", done, err)
		}

		// A provider's address is held the same: an agent reporting it for
		// another node is refused.
		c2 := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "j-0", PrivateIP: "10.0.0.10"}, {Rank: 1, ProviderNodeID: "j-1"}})
		nodes, _ = e.s.NodesFor(ctx, c2.ID)
		if _, err := e.s.AgentCheckIn(ctx, c2, nodes[1], "10.0.0.10", 0, nil); !errors.Is(err, models.ErrAddressTaken) {
			t.Errorf("node-1 reporting node-0's provider address: %v", err)
		}
		// Another cluster's machines may have the same address (their own network).
		if _, err := e.s.AgentCheckIn(ctx, c2, nodes[1], "172.17.0.2", 0, nil); err != nil {
			t.Errorf("an address of another cluster: %v", err)
		}
	})
}

// A node whose peer has not joined the private network
// yet (no address reported: still booting) is waiting for it, which its
// message says; an unreachable address is still "cannot reach".
func TestReportPeersWaitsForAPeerNotUpYet(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0"}, {Rank: 1, ProviderNodeID: "i-1"}})
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		peers, err := e.s.AgentCheckIn(ctx, c, nodes[1], "127.0.0.1", 40002, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = e.s.ClusterByID(ctx, c.ID)
		if done, err := e.s.ReportPeers(ctx, c, peers[1], nil, nil); err != nil || done {
			t.Fatalf("done %v, err %v", done, err)
		}
		n, err := e.s.NodesFor(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := "Waiting for node-0 to join the private network."; n[1].Message != want {
			t.Errorf("message %q, want %q", n[1].Message, want)
		}
	})
}
