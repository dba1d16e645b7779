package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/agent"
)

// runAgent is `clusterdeck agent --server URL --token T`: the cluster agent
// a machine's start-up script runs on every node.
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs, f := agentFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // the flag package printed the usage
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("agent: unexpected argument %q (run clusterdeck agent --help)", fs.Arg(0))
	}
	server, token, every, privateIP := f.server, f.token, f.every, f.privateIP
	if *server == "" || *token == "" {
		return errors.New("agent: --server and --token are required")
	}
	var workload providers.Workload
	if *f.workload != "" {
		data, err := os.ReadFile(*f.workload)
		if err != nil {
			return fmt.Errorf("agent: --workload: %w", err)
		}
		if err := json.Unmarshal(data, &workload); err != nil {
			return fmt.Errorf("agent: --workload %s: %w", *f.workload, err)
		}
	}
	host, _ := os.Hostname()
	if *privateIP == "" {
		// Reported at check-in: used when the provider reports none (OP1).
		*privateIP = agent.Address(ctx, *server, net.InterfaceAddrs)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var exec providers.Executor = agent.Shell{}
	if *f.dryRun != "" {
		exec = &agent.DryRun{Dir: *f.dryRun}
		log.Info("dry run: steps are written, not run", "dir", *f.dryRun)
	}
	// The peers' reach check dials this agent (step c) at whichever of the
	// machine's addresses the provider or the agent reported: it listens on
	// every address.
	mesh, err := agent.ListenMesh("", *f.meshPort)
	if err != nil {
		return fmt.Errorf("agent: --mesh-port %d: %w", *f.meshPort, err)
	}
	defer mesh.Close()
	a := agent.New(agent.Config{Server: *server, Token: *token, MachineID: *f.machineID, Exec: exec, Hostname: host, PrivateIP: *privateIP,
		MeshPort: mesh.Port(), Workload: workload})
	log.Info("agent starting", "server", *server, "every", every.String(), "address", *privateIP, "mesh_port", mesh.Port())
	err = a.Run(ctx, *every)
	if errors.Is(err, agent.ErrRevoked) {
		fmt.Fprintln(stderr, "agent: the cluster has ended; stopping")
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
