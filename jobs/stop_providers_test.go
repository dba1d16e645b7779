package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/providers/ssh"
	"gorm.io/gorm"
)

// stopAnswer is the simulated cloud with another provider's answer to
// StopNode: the SSH provider's own (its machines need SSH servers to be
// placed and described), or the answer it gave before (ErrValidation, a
// machine "not running" that runs).
type stopAnswer struct {
	*sim.Cloud
	stop func(ctx context.Context, group, id string) error
}

func (s stopAnswer) StopNode(ctx context.Context, group, id string) error {
	return s.stop(ctx, group, id)
}

// Budget, balance and idle enforcement each end a ready cluster on every
// provider (B6, L7): where machines stop, the cluster is stopped with every
// machine stopped; where the provider cannot stop them (Lambda, RunPod's
// Instant Clusters, the SSH provider), it is terminated with every machine
// released; a provider that answers "not running" for a running machine is
// terminated too, never waited on for ever. Each enforcement's request
// (RequestStop with its reason) runs through the stop and terminate jobs
// with their real deadlines, on the test's clock.
func TestStopEnforcementEveryProvider(t *testing.T) {
	simCloud := func(clk *fakekit.Clock) *sim.Cloud {
		cfg, err := sim.ParseConfig([]byte(testCloud), "json")
		if err != nil {
			t.Fatal(err)
		}
		return sim.New(cfg, sim.WithClock(clk.Now))
	}
	sshp, err := ssh.New(ssh.Config{AgentBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cloud func(t *testing.T, clk *fakekit.Clock) cloud
		stops bool // the machines stop (else the cluster is terminated)
	}{
		{"simulated", func(t *testing.T, clk *fakekit.Clock) cloud { return simWorldCloud(simCloud(clk)) }, true},
		{"ssh's answer", func(t *testing.T, clk *fakekit.Clock) cloud {
			return simWorldCloud(stopAnswer{simCloud(clk), sshp.StopNode})
		}, false},
		{"validation for a running machine", func(t *testing.T, clk *fakekit.Clock) cloud {
			return simWorldCloud(stopAnswer{simCloud(clk), func(context.Context, string, string) error {
				return &providers.Error{Class: providers.ErrValidation, Provider: "sim", Op: "StopNode", Message: "cannot be stopped"}
			}})
		}, false},
		{"runpod pods", func(t *testing.T, clk *fakekit.Clock) cloud { c, _ := runpodCloud(t, clk, 6, false); return c }, true},
		{"runpod instant clusters", func(t *testing.T, clk *fakekit.Clock) cloud { c, _ := runpodCloud(t, clk, 6, true); return c }, false},
		{"lambda", func(t *testing.T, clk *fakekit.Clock) cloud { c, _ := lambdaCloud(t, clk, 6); return c }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				ctx := context.Background()
				clk := fakekit.NewClockAt(cloudStart)
				w := newCloudWorld(t, db, clk, tc.cloud(t, clk))
				reasons := []models.StopReason{models.StopByBalance, models.StopByBudget, models.StopByIdle}
				var cs []models.Cluster
				for range reasons {
					cs = append(cs, w.launch(2))
				}
				w.kick()
				w.untilRunning(15*time.Minute, cs...)
				for k, c := range cs {
					if _, err := w.store.MarkJoined(ctx, c.ID, nil); err != nil {
						t.Fatal(err)
					}
					if _, err := w.store.RequestStop(ctx, w.org.ID, c.ID, reasons[k], "enforced by the test"); err != nil {
						t.Fatal(err)
					}
				}
				for k, c := range cs {
					for tick := 0; ; tick++ {
						now, err := w.store.ClusterByID(ctx, c.ID)
						if err != nil {
							t.Fatal(err)
						}
						want := models.StatusTerminated
						if tc.stops {
							want = models.StatusStopped
						}
						if now.Status == want && (want != models.StatusTerminated || now.ReleasedAt != nil) {
							break
						}
						if tick > 40 {
							t.Fatalf("%s stop: cluster %s still %s after %d ticks, want %s", reasons[k], c.ID, now.Status, tick, want)
						}
						w.tick()
					}
					g, err := w.cloud.provider.DescribeGroup(ctx, c.GroupName())
					if err != nil && !errors.Is(err, providers.ErrNotFound) {
						t.Fatal(err)
					}
					for _, n := range g.Nodes {
						if n.State == providers.NodeRunning || n.State == providers.NodeRestarting || n.State == providers.NodePending {
							t.Errorf("%s stop: machine %d of %s still %s at the provider", reasons[k], n.Index, c.ID, n.State)
						}
					}
				}
			})
		})
	}
}

// simWorldCloud is the simulated cloud (or one with another StopNode) as
// the harness reads a cloud.
func simWorldCloud(p providers.Provider) cloud {
	return cloud{name: "sim", provider: p, accel: "H100_80GB", gpus: 8,
		created: func() map[string]map[int]int { return nil },
		live:    func() map[string]int { return nil }}
}
