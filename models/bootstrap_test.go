package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// placedCluster launches a cluster of len(placed) machines and records
// their placement.
func (e *launchEnv) placedCluster(t *testing.T, placed []models.PlacedNode) models.Cluster {
	t.Helper()
	c, _, err := e.launch(e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: len(placed), GPUsPerNode: 8}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.MarkPlaced(context.Background(), c.ID, placed); err != nil {
		t.Fatal(err)
	}
	c, err = e.s.ClusterByID(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// OP1: a machine claims its rank with the cluster's bootstrap token, once,
// bound to the machine id the provider returned, and gets its node token;
// every refusal changes nothing.
func TestClaimRank(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		if err := db.Model(&models.Org{}).Where("id = ?", e.org.ID).Updates(map[string]any{"max_gpus": 512, "max_machines": 64}).Error; err != nil {
			t.Fatal(err)
		}

		early, _, err := e.launch(e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.s.ClaimRank(ctx, models.BootstrapToken(early), models.Claim{MachineID: "i-0"}); !errors.Is(err, models.ErrNotPlaced) {
			t.Errorf("claim before the placement is recorded: %v, want ErrNotPlaced", err)
		}

		// The provider reported node-0's private address, not node-1's.
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0", PrivateIP: "10.0.0.10"}, {Rank: 1, ProviderNodeID: "i-1"}})
		token := models.BootstrapToken(c)
		if !models.IsBootstrapToken(token) || token == models.BootstrapToken(early) {
			t.Fatalf("bootstrap tokens %q and %q", token, models.BootstrapToken(early))
		}
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		tampered := token[:len(token)-1] + "0"
		if strings.HasSuffix(token, "0") {
			tampered = token[:len(token)-1] + "1"
		}
		for _, bad := range []string{tampered, "cdb_" + c.ID + "_", "cdb_nope_abc", models.AgentToken(c, nodes[0]), ""} {
			if _, _, err := e.s.ClaimRank(ctx, bad, models.Claim{MachineID: "i-0"}); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("claim with %q: %v, want ErrNotFound", bad, err)
			}
		}
		if _, _, err := e.s.ClaimRank(ctx, token, models.Claim{MachineID: "i-9", Hostname: "i-0", PrivateIP: "10.0.0.10"}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("a machine id not in the group: %v, want ErrUnknownMachine", err)
		}
		if _, _, err := e.s.ClaimRank(ctx, token, models.Claim{}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("a claim naming no machine: %v, want ErrUnknownMachine", err)
		}

		_, n1, err := e.s.ClaimRank(ctx, token, models.Claim{MachineID: "i-1", Hostname: "gpu-a", PrivateIP: "10.0.0.11"})
		if err != nil || n1.Rank != 1 || n1.ClaimedBy != "i-1" || n1.ClaimedAt == nil {
			t.Fatalf("claim of i-1: %+v, %v", n1, err)
		}
		if n1.PrivateIP != "10.0.0.11" {
			t.Errorf("node-1's address = %q, want the agent's 10.0.0.11 (the provider reported none)", n1.PrivateIP)
		}
		// The node token the claim hands out authenticates node-1, and only it.
		if _, got, err := e.s.NodeForAgentToken(ctx, models.AgentToken(c, n1)); err != nil || got.ID != n1.ID {
			t.Errorf("node token after the claim: %+v, %v", got, err)
		}
		// The same machine again (its agent restarted): the same node.
		if _, again, err := e.s.ClaimRank(ctx, token, models.Claim{MachineID: "i-1", PrivateIP: "10.9.9.9"}); err != nil || again.ID != n1.ID || again.PrivateIP != "10.0.0.11" {
			t.Errorf("repeated claim by i-1: %+v, %v", again, err)
		}

		// A machine that does not know its id is matched by the private
		// address the provider reported; its provider address is kept.
		_, n0, err := e.s.ClaimRank(ctx, token, models.Claim{Hostname: "gpu-b", PrivateIP: "10.0.0.10"})
		if err != nil || n0.Rank != 0 || n0.ClaimedBy != "gpu-b" || n0.PrivateIP != "10.0.0.10" {
			t.Fatalf("claim by address: %+v, %v", n0, err)
		}
		for _, other := range []models.Claim{{Hostname: "gpu-c", PrivateIP: "10.0.0.10"}, {MachineID: "i-0"}} {
			if _, _, err := e.s.ClaimRank(ctx, token, other); !errors.Is(err, models.ErrRankClaimed) {
				t.Errorf("second claim of node-0 by %+v: %v, want ErrRankClaimed", other, err)
			}
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if nodes[0].ClaimedBy != "gpu-b" || nodes[1].ClaimedBy != "i-1" {
			t.Errorf("claims after the refusals: %q, %q", nodes[0].ClaimedBy, nodes[1].ClaimedBy)
		}

		// Another cluster's machine with this cluster's token is not in the group.
		other := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-other"}, {Rank: 1, ProviderNodeID: "i-other-1"}})
		if _, _, err := e.s.ClaimRank(ctx, token, models.Claim{MachineID: "i-other"}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("another cluster's machine with this token: %v, want ErrUnknownMachine", err)
		}
		if _, _, err := e.s.ClaimRank(ctx, models.BootstrapToken(other), models.Claim{MachineID: "i-0"}); !errors.Is(err, models.ErrUnknownMachine) {
			t.Errorf("this cluster's machine with another cluster's token: %v, want ErrUnknownMachine", err)
		}
		if _, got, err := e.s.ClaimRank(ctx, models.BootstrapToken(other), models.Claim{MachineID: "i-other"}); err != nil || got.ClusterID != other.ID {
			t.Errorf("the other cluster's own claim: %+v, %v", got, err)
		}

		evs, _ := e.s.EventsFor(ctx, c.ID)
		var claimed int
		for _, ev := range evs {
			if strings.Contains(ev.Message, "claimed node-") {
				claimed++
			}
		}
		if claimed != 2 {
			t.Errorf("%d claim events, want 2 (one per rank, none for repeats or refusals)", claimed)
		}

		// After the cluster ended (terminate requested) nothing is claimed.
		if _, err := e.s.RequestTerminate(ctx, e.org.ID, c.ID, "t"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.s.ClaimRank(ctx, token, models.Claim{MachineID: "i-1"}); !errors.Is(err, models.ErrAgentRevoked) {
			t.Errorf("claim after terminate: %v, want ErrAgentRevoked", err)
		}
	})
}

// OP1: the address an agent reports at check-in is the node's when the
// provider reported none; a provider's address is never overwritten by it.
func TestAgentReportedAddress(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0", PrivateIP: "10.0.0.10"}, {Rank: 1, ProviderNodeID: "i-1"}})
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		if _, err := e.s.AgentCheckIn(ctx, c, nodes[0], "172.16.0.5", 0, nil); err != nil {
			t.Fatal(err)
		}
		peers, err := e.s.AgentCheckIn(ctx, c, nodes[1], "172.16.0.6", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(peers) != 2 || peers[0].PrivateIP != "10.0.0.10" || peers[1].PrivateIP != "172.16.0.6" {
			t.Fatalf("peers = %+v, want the provider's 10.0.0.10 and the agent's 172.16.0.6", peers)
		}
		// The node env and hostfile are built from the recorded addresses.
		spec := models.ClusterSpec(c, peers, models.Offer{})
		if got := spec.Nodes[1].PrivateIP; got != "172.16.0.6" {
			t.Errorf("spec node-1 address = %q", got)
		}
		if env := spec.EnvBlock(1); !strings.Contains(env, "10.0.0.10") {
			t.Errorf("node-1 env lacks the primary's provider address:\n%s", env)
		}

		// A later provider report replaces the agent's.
		if _, err := e.s.SetNodeAddresses(ctx, peers[1], models.PlacedNode{PrivateIP: "10.0.0.11"}); err != nil {
			t.Fatal(err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if nodes[1].PrivateIP != "10.0.0.11" {
			t.Errorf("after the provider's report: %q", nodes[1].PrivateIP)
		}
	})
}

// OP1: machines racing for one rank: exactly one claim wins, every other
// is refused, on both databases.
func TestClaimRankRace(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0", PrivateIP: "10.0.0.10"}, {Rank: 1, ProviderNodeID: "i-1"}})
		const racers = 8
		errs := make(chan error, racers)
		for i := range racers {
			go func() {
				_, _, err := e.s.ClaimRank(ctx, models.BootstrapToken(c), models.Claim{Hostname: fmt.Sprintf("racer-%d", i), PrivateIP: "10.0.0.10"})
				errs <- err
			}()
		}
		won := 0
		for range racers {
			switch err := <-errs; {
			case err == nil:
				won++
			case !errors.Is(err, models.ErrRankClaimed):
				t.Errorf("a losing claim: %v, want ErrRankClaimed", err)
			}
		}
		if won != 1 {
			t.Errorf("%d claims won node-0, want exactly 1", won)
		}
	})
}

// OP1, X5: a replacement machine is a new machine: when the provider
// reports no address for it, it does not inherit the old machine's (its
// peers would dial a machine that is gone) but takes its agent's.
func TestReplacementTakesItsOwnAddress(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		c := e.placedCluster(t, []models.PlacedNode{{Rank: 0, ProviderNodeID: "i-0", PrivateIP: "10.0.0.10"}, {Rank: 1, ProviderNodeID: "i-1", PrivateIP: "10.0.0.11"}})
		nodes, _ := e.s.NodesFor(ctx, c.ID)
		// node-1 is being replaced: its slot waits for the new machine.
		if err := db.Model(&models.ClusterNode{}).Where("id = ?", nodes[1].ID).Updates(map[string]any{
			"join_kind": models.JoinReplace, "join_seq": 1, "status": models.NodeJoining, "join_placed_at": nil}).Error; err != nil {
			t.Fatal(err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if err := e.s.MarkJoinPlaced(ctx, c, nodes[1], models.PlacedNode{Rank: 1, ProviderNodeID: "i-1b"}); err != nil {
			t.Fatal(err)
		}
		nodes, _ = e.s.NodesFor(ctx, c.ID)
		if nodes[1].PrivateIP != "" || nodes[1].ProviderNodeID != "i-1b" {
			t.Fatalf("the replacement placed without an address has %q (machine %s), want none until its agent reports", nodes[1].PrivateIP, nodes[1].ProviderNodeID)
		}
		peers, err := e.s.AgentCheckIn(ctx, c, nodes[1], "172.16.0.9", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(peers) != 2 || peers[1].PrivateIP != "172.16.0.9" || peers[0].PrivateIP != "10.0.0.10" {
			t.Errorf("peers after the replacement's check-in = %+v, want node-1 at its agent's 172.16.0.9", peers)
		}
	})
}
