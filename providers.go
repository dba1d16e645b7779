package main

import (
	"context"
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// cloud is the set of enabled GPU providers and what runs beside them.
type cloud struct {
	Registry   providers.Registry
	SimControl *simControl // nil when the simulated cloud is off
	sim        *sim.Cloud
}

// buildProviders enables the providers named in PROVIDERS (OP1).
func buildProviders(cfg config, clock models.Clock) (*cloud, error) {
	c := &cloud{Registry: providers.Registry{}}
	for _, name := range cfg.Providers {
		switch name {
		case "sim":
			simCfg := sim.DefaultConfig()
			if cfg.SimConfig != "" {
				var err error
				if simCfg, err = sim.LoadConfig(cfg.SimConfig); err != nil {
					return nil, fmt.Errorf("SIM_CONFIG: %w", err)
				}
			}
			c.sim = sim.New(simCfg, sim.WithClock(clock.Now), sim.WithSeed(cfg.SimSeed),
				sim.WithAgents(func(m sim.Machine) sim.MachineAgent {
					// The simulated machines run the real agent against our own /v1/agent endpoints.
					return agent.New(agent.Config{Server: m.ServerURL, Token: m.Token, Exec: m.Exec,
						Hostname: m.Name, PrivateIP: m.PrivateIP, Now: clock.Now, Workload: m.Workload})
				}))
			c.Registry[c.sim.Name()] = c.sim
			c.SimControl = &simControl{c.sim}
		default:
			return nil, fmt.Errorf("PROVIDERS: unknown provider %q (available: sim)", name)
		}
	}
	if len(c.Registry) == 0 {
		return nil, fmt.Errorf("PROVIDERS: enable at least one provider")
	}
	return c, nil
}

// Start runs the simulated machines' agents until ctx ends.
func (c *cloud) Start(ctx context.Context) {
	if c.sim != nil {
		go func() { _ = c.sim.Run(ctx, 2*time.Second) }()
	}
}

// simControl lets development routes script the simulated cloud's faults.
type simControl struct{ c *sim.Cloud }

func (s *simControl) InjectFaultsJSON(data []byte) (int, error) {
	faults, err := sim.ParseFaults(data)
	if err != nil {
		return 0, err
	}
	if err := s.c.Inject(faults...); err != nil {
		return 0, err
	}
	return len(faults), nil
}
