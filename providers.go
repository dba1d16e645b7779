package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	sshprov "github.com/clusterdeck/clusterdeck/providers/ssh"
)

// cloud is the set of enabled GPU providers and what runs beside them.
type cloud struct {
	Registry   providers.Registry
	SimControl *simControl // nil when the simulated cloud is off
	// BeforeRound runs before each round of the simulated machines' agents.
	BeforeRound func(context.Context) error
	sim         *sim.Cloud
	simEvery    time.Duration // how often the simulated machines' agents run a round (SIM_AGENT_EVERY)
	done        chan struct{} // closed when the agents stopped
	// SSHFile is the ssh provider's machines file, as loaded (nil when the
	// provider is off or has no file): the admin's machines page lists it.
	SSHFile []sshprov.Machine
}

// instanceName names this process among the instances on one database.
func instanceName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), models.NewID("ins"))
}

// buildProviders enables the providers named in PROVIDERS (OP1).
// The simulated cloud keeps its state in db, like a real cloud it outlives
// this process and is shared by every instance (OP4).
func buildProviders(cfg config, clock models.Clock, db *gorm.DB, instance string) (*cloud, error) {
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
			c.sim = sim.New(simCfg, sim.WithClock(clock.Now), sim.WithSeed(cfg.SimSeed), sim.WithDB(db, instance),
				sim.WithAgents(func(m sim.Machine) sim.MachineAgent {
					// The simulated machines run the real agent against our own /v1/agent endpoints.
					return agent.New(agent.Config{Server: m.ServerURL, Token: m.Token, MachineID: m.NodeID, Exec: m.Exec,
						Hostname: m.Name, PrivateIP: m.PrivateIP, Now: clock.Now, Workload: m.Workload})
				}))
			c.Registry[c.sim.Name()] = c.sim
			c.simEvery = cfg.SimAgentEvery
			c.SimControl = &simControl{c.sim}
		case lambda.Name:
			l := cfg.Lambda
			ai, err := agentInstall(cfg, "LAMBDA", l.AgentURL, l.AgentSHA256)
			if err != nil {
				return nil, err
			}
			p, err := lambda.New(lambda.Config{APIKey: l.APIKey, BaseURL: l.APIURL, Regions: l.Regions,
				SSHKeyName: l.SSHKeyName, ImageFamily: l.ImageFamily, RequestInterval: l.RequestInterval, LaunchInterval: l.LaunchInterval,
				Agent: ai})
			if err != nil {
				return nil, fmt.Errorf("LAMBDA_*: %w", err)
			}
			c.Registry[p.Name()] = p
		case runpod.Name:
			r := cfg.RunPod
			ai, err := agentInstall(cfg, "RUNPOD", r.AgentURL, r.AgentSHA256)
			if err != nil {
				return nil, err
			}
			p, err := runpod.New(runpod.Config{APIKey: r.APIKey, BaseURL: r.APIURL, DataCenters: r.Locations, Image: r.Image, Agent: ai,
				OperatorKey: r.SSHKey})
			if err != nil {
				return nil, fmt.Errorf("RUNPOD_*: %w", err)
			}
			c.Registry[p.Name()] = p
		case shadeform.Name:
			s := cfg.Shadeform
			ai, err := agentInstall(cfg, "SHADEFORM", s.AgentURL, s.AgentSHA256)
			if err != nil {
				return nil, err
			}
			p, err := shadeform.New(shadeform.Config{APIKey: s.APIKey, BaseURL: s.APIURL, Regions: s.Locations, Clouds: s.Clouds, Agent: ai,
				SSHKeyID: s.SSHKey})
			if err != nil {
				return nil, fmt.Errorf("SHADEFORM_*: %w", err)
			}
			c.Registry[p.Name()] = p
		case sshprov.Name:
			var machines []sshprov.Machine
			state := cfg.SSHStateFile
			if cfg.SSHMachinesFile != "" {
				var err error
				if machines, err = sshprov.LoadFile(cfg.SSHMachinesFile); err != nil {
					return nil, fmt.Errorf("SSH_MACHINES_FILE: %w", err)
				}
				if state == "" {
					state = sshprov.StatePathFor(cfg.SSHMachinesFile)
				}
			}
			if state == "" {
				state = filepath.Join(cfg.DataDir, "ssh-machines.state.json")
			}
			sc := sshprov.Config{Machines: machines, StatePath: state}
			if db != nil {
				store := models.NewStoreWith(db, clock, models.Settings{MachineKeySecret: machineKeySecret(cfg.SessionEncKey)})
				sc.Source = sshMachineSource(store)
			}
			p, err := sshprov.New(sc)
			if err != nil {
				return nil, err
			}
			c.Registry[p.Name()] = p
			c.SSHFile = machines
		default:
			return nil, fmt.Errorf("PROVIDERS: unknown provider %q (available: sim, lambda, runpod, shadeform, ssh)", name)
		}
	}
	if len(c.Registry) == 0 {
		return nil, fmt.Errorf("PROVIDERS: enable at least one provider")
	}
	return c, nil
}

// machineKeySecret is the key that seals the private keys pasted on the
// admin's machines page: derived from the session encryption key, so it
// is never stored beside what it seals (with PostgreSQL in development the
// generated session keys live in the database, like the keys they seal).
func machineKeySecret(sessionEncKey []byte) []byte {
	if len(sessionEncKey) == 0 {
		return nil
	}
	mac := hmac.New(sha256.New, sessionEncKey)
	mac.Write([]byte("clusterdeck: ssh machine keys"))
	return mac.Sum(nil)
}

// sshMachineSource lists the machines added on the admin page for the ssh
// provider, with their pasted keys opened. One whose key no longer opens
// (the session encryption key changed) is left out; the page says so.
func sshMachineSource(store *models.Store) func(context.Context) ([]sshprov.Machine, error) {
	return func(ctx context.Context) ([]sshprov.Machine, error) {
		rows, err := store.SSHMachines(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]sshprov.Machine, 0, len(rows))
		for _, r := range rows {
			key, err := store.SSHMachineKey(r)
			if err != nil {
				continue
			}
			out = append(out, sshMachineOf(r, key))
		}
		return out, nil
	}
}

// sshMachineOf is a stored machine as the ssh provider sells it.
func sshMachineOf(r models.SSHMachine, key []byte) sshprov.Machine {
	return sshprov.Machine{Name: r.Name, Host: r.Host, Port: r.Port, User: r.User, KeyPath: r.KeyPath, PrivateKey: key,
		HostKey: r.HostKey, GPUs: r.GPUs, Accelerator: r.Accelerator, VCPUs: r.VCPUs, MemoryGB: r.MemoryGB,
		RootDiskGB: r.RootDiskGB, Location: r.Location, LocationName: r.LocationName, PricePerHour: models.DecimalUSD(r.PricePerHour)}
}

// fileMachineRows are the machines file's machines as the admin's machines
// page lists them (their key paths, never a key).
func fileMachineRows(ms []sshprov.Machine) []models.SSHMachine {
	out := make([]models.SSHMachine, 0, len(ms))
	for _, m := range ms {
		price, _ := models.ParseUSD(m.PricePerHour)
		out = append(out, models.SSHMachine{Name: m.Name, Host: m.Host, Port: m.Port, User: m.User, KeyPath: m.KeyPath,
			HostKey: m.HostKey, GPUs: m.GPUs, Accelerator: m.Accelerator, VCPUs: m.VCPUs, MemoryGB: m.MemoryGB,
			RootDiskGB: m.RootDiskGB, Location: m.Location, LocationName: m.LocationName, PricePerHour: price})
	}
	return out
}

// Start runs the simulated machines' agents until ctx ends; Wait waits
// for their last round.
func (c *cloud) Start(ctx context.Context) {
	c.done = make(chan struct{})
	if c.sim == nil {
		close(c.done)
		return
	}
	go func() {
		defer close(c.done)
		_ = c.sim.Run(ctx, c.simEvery, c.BeforeRound)
	}()
}

// Wait waits until the agents started by Start stopped, or ctx ends.
func (c *cloud) Wait(ctx context.Context) error {
	if c.done == nil {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agents: stop: %w", ctx.Err())
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

// agentInstall is where a cloud's machines download the clusterdeck binary
// (OP1): <P>_AGENT_URL with its <P>_AGENT_SHA256 when set, else this
// server's own binary at BASE_URL/agent/<version>/clusterdeck-linux-amd64
// with its digest, so every machine runs the agent of the server that
// placed it and checks it first.
func agentInstall(cfg config, prefix, url, sha string) (bootstrap.AgentInstall, error) {
	if url != "" {
		return bootstrap.AgentInstall{URL: url, SHA256: sha}, nil
	}
	if cfg.AgentBinary == nil {
		return bootstrap.AgentInstall{}, fmt.Errorf("%s_AGENT_URL is unset and this server serves no agent binary", prefix)
	}
	bin, err := cfg.AgentBinary()
	if err != nil {
		return bootstrap.AgentInstall{}, fmt.Errorf("%s_AGENT_URL is unset and this server cannot serve its own binary: %w", prefix, err)
	}
	return bootstrap.AgentInstall{URL: bin.URL(cfg.BaseURL), SHA256: bin.SHA256}, nil
}
