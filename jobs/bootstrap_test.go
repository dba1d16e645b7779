package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"gorm.io/gorm"
)

// recordingProvider keeps every placement request the job made.
type recordingProvider struct {
	providers.Provider
	mu   sync.Mutex
	reqs []providers.PlaceRequest
}

func (r *recordingProvider) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Provider.PlaceGroup(ctx, req)
}

// OP1: the placement request carries everything a machine needs — image,
// workload, SSH keys, ports, the cluster's bootstrap token and the price
// ceiling the quote locked — and the machines come up on it.
func TestPlacementCarriesEverything(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		rec := &recordingProvider{Provider: w.cloud}
		w.job.Providers = providers.Registry{"sim": rec}
		c := w.launchWorkload("L40S", 2, 2, models.Workload{Name: "serve", Software: "none", Image: "ubuntu-22.04-cuda",
			Ports: []int{8000}, StartCommand: "python serve.py", Env: map[string]string{"MODEL": "llama"}})
		w.tick()
		if len(rec.reqs) != 1 {
			t.Fatalf("%d placements, want 1", len(rec.reqs))
		}
		req := rec.reqs[0]
		if req.Agent.Token != models.BootstrapToken(c) || req.Agent.ServerURL != w.srv.URL {
			t.Errorf("agent bootstrap %+v", req.Agent)
		}
		if req.MaxMachineHourUSD != int64(c.MachineHour) || req.MaxMachineHourUSD <= 0 {
			t.Errorf("price ceiling %d, want the locked machine-hour %d", req.MaxMachineHourUSD, c.MachineHour)
		}
		if req.Image != "ubuntu-22.04-cuda" || req.StartCommand != "python serve.py" || req.Env["MODEL"] != "llama" ||
			len(req.Ports) != 1 || req.Ports[0] != 8000 || len(req.SSHKeys) != 1 || req.SSHKeys[0] != testKey ||
			req.Count != 2 || req.Location != c.Location {
			t.Errorf("placement request %+v", req)
		}
		w.run(8*time.Minute, time.Minute)
		if got := w.cluster(c.ID); got.Status != models.StatusReady {
			t.Fatalf("status %s lastError %q\n%s", got.Status, got.LastError, w.events(c.ID))
		}
	})
}

// OP1: an adapter refuses to place above the price the quote locked; the
// simulated cloud does, the cluster fails whole with nothing placed.
func TestPriceCeilingRefused(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		before := w.stock("h100.8x.vm")
		c := w.launch("H100_80GB", 2, 8)
		// The upstream's price is now above what the quote locked.
		if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Update("machine_hour", c.MachineHour-1).Error; err != nil {
			t.Fatal(err)
		}
		w.tick()
		got := w.cluster(c.ID)
		if got.Status != models.StatusFailed || got.LastError != "provider_rejected:validation" {
			t.Fatalf("status %s lastError %q\n%s", got.Status, got.LastError, w.events(c.ID))
		}
		if ev := w.events(c.ID); !strings.Contains(ev, "above the ceiling") {
			t.Errorf("events do not say why:\n%s", ev)
		}
		if after := w.stock("h100.8x.vm"); after != before {
			t.Errorf("stock %d → %d: a refused placement must take nothing", before, after)
		}
		if w.billed() != 0 {
			t.Errorf("a refused placement was billed")
		}
	})
}

// OP1: the real agent against the real server: a machine not in the group
// is told so and keeps trying (the provider may not have reported it yet),
// a machine whose rank another machine holds stops, and every agent stops
// once the cluster ended.
func TestAgentClaimRefusals(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.launch("H100_80GB", 2, 8)
		newAgent := func(machineID, host, ip string) *agent.Agent {
			return agent.New(agent.Config{Server: w.srv.URL, Token: models.BootstrapToken(c), MachineID: machineID,
				Hostname: host, PrivateIP: ip, Exec: w.execs["none"], HTTP: w.srv.Client(), Now: w.clock.Now})
		}
		early := newAgent("sim-unknown", "h", "")
		if err := early.Step(ctx); err == nil || !strings.Contains(err.Error(), "not_placed") {
			t.Errorf("claim before the placement: %v", err)
		}
		w.run(6*time.Minute, time.Minute)
		if got := w.cluster(c.ID); got.Status != models.StatusReady {
			t.Fatalf("status %s\n%s", got.Status, w.events(c.ID))
		}
		nodes, _ := w.store.NodesFor(ctx, c.ID)

		stranger := newAgent("sim-stranger", "stranger", "")
		err := stranger.Step(ctx)
		if err == nil || !strings.Contains(err.Error(), "unknown_machine") || errors.Is(err, agent.ErrRevoked) || errors.Is(err, agent.ErrClaimRefused) {
			t.Errorf("a machine not in the group: %v (want unknown_machine, retried)", err)
		}
		// Another machine reporting node-1's address: node-1 is bound to its own machine.
		impostor := newAgent("", "impostor", nodes[1].PrivateIP)
		if err := impostor.Step(ctx); !errors.Is(err, agent.ErrClaimRefused) {
			t.Errorf("a second machine claiming node-1: %v, want ErrClaimRefused", err)
		}
		ctxRun, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := impostor.Run(ctxRun, time.Millisecond); !errors.Is(err, agent.ErrClaimRefused) {
			t.Errorf("Run of a refused claim: %v, want it to stop with ErrClaimRefused", err)
		}
		if got, _ := w.store.NodesFor(ctx, c.ID); got[1].ClaimedBy != nodes[1].ProviderNodeID {
			t.Errorf("node-1 claimed by %q after the refusals, want %q", got[1].ClaimedBy, nodes[1].ProviderNodeID)
		}

		if _, err := w.store.RequestTerminate(ctx, w.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if err := newAgent(nodes[0].ProviderNodeID, "h", "").Step(ctx); !errors.Is(err, agent.ErrRevoked) {
			t.Errorf("claim after terminate: %v, want ErrRevoked", err)
		}
	})
}

// addressless is a cloud that reports no private addresses (some clouds
// only know them inside the machine).
type addressless struct{ providers.Provider }

func strip(g providers.Group) providers.Group {
	nodes := make([]providers.Node, len(g.Nodes))
	for i, n := range g.Nodes {
		n.PrivateIP = ""
		nodes[i] = n
	}
	g.Nodes = nodes
	return g
}

func (a addressless) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	g, err := a.Provider.PlaceGroup(ctx, req)
	return strip(g), err
}

func (a addressless) DescribeGroup(ctx context.Context, name string) (providers.Group, error) {
	g, err := a.Provider.DescribeGroup(ctx, name)
	return strip(g), err
}

// OP1, N1: with a cloud that reports no private addresses, each node's
// address is the one its agent reported at the claim; the agents learn
// their peers' addresses as they arrive, the mesh completes on them, and
// the node env carries them.
func TestAddressesFromTheAgents(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		w.job.Providers = providers.Registry{"sim": addressless{w.cloud}}
		c := w.launch("H100_80GB", 3, 8)
		w.tick()
		nodes, _ := w.store.NodesFor(ctx, c.ID)
		for _, n := range nodes {
			if n.PrivateIP != "" {
				t.Fatalf("%s has address %q before its agent reported one", n.Name, n.PrivateIP)
			}
		}
		w.run(8*time.Minute, time.Minute)
		if got := w.cluster(c.ID); got.Status != models.StatusReady {
			t.Fatalf("status %s lastError %q\n%s", got.Status, got.LastError, w.events(c.ID))
		}
		nodes, _ = w.store.NodesFor(ctx, c.ID)
		for _, n := range nodes {
			if want := fmt.Sprintf("10.77.0.%d", n.Rank+1); n.PrivateIP != want || n.ClaimedBy != n.ProviderNodeID {
				t.Errorf("%s: address %q claimed by %q, want the agent's %s", n.Name, n.PrivateIP, n.ClaimedBy, want)
			}
		}
		if env := models.ClusterSpec(c, nodes, models.Offer{}).EnvBlock(2); !strings.Contains(env, "10.77.0.1") {
			t.Errorf("node-2's env lacks the primary's reported address:\n%s", env)
		}
	})
}

// Q2, L10: an added machine is placed at the machine-hour the quote locked;
// when the provider's price rose above it the worker is refused, takes no
// stock and the cluster keeps its machines.
func TestPriceCeilingRefusesAWorker(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newJoinWorld(t, db, 2, "none")
		ctx := context.Background()
		before := h.stock("h100.8x.vm")
		c := h.cluster(h.c.ID)
		if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Update("machine_hour", c.MachineHour-1).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.store.As(h.actor).AddWorker(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		h.untilJoined(10)
		if got := h.cluster(c.ID); got.Status != models.StatusReady || got.Nodes != 2 || len(h.nodes()) != 2 {
			t.Fatalf("after the refused worker: %s with %d machines, %d rows\n%s", got.Status, got.Nodes, len(h.nodes()), h.events(c.ID))
		}
		if ev := h.events(c.ID); !strings.Contains(ev, "above the ceiling") {
			t.Errorf("events do not say why:\n%s", ev)
		}
		if after := h.stock("h100.8x.vm"); after != before {
			t.Errorf("stock %d → %d: a refused placement must take nothing", before, after)
		}
	})
}
