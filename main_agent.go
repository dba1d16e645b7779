package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/agent"
)

// runAgent is `clusterdeck agent --server URL --token T`: the cluster agent
// a machine's start-up script runs on every node.
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "Clusterdeck's URL, e.g. https://deck.example.com")
	token := fs.String("token", "", "this node's agent token (cdn_…)")
	every := fs.Duration("every", 10*time.Second, "how often to check in for work")
	privateIP := fs.String("private-ip", "", "this node's address on the private network")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *server == "" || *token == "" {
		return errors.New("agent: --server and --token are required")
	}
	host, _ := os.Hostname()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	a := agent.New(agent.Config{Server: *server, Token: *token, Exec: agent.Shell{}, Hostname: host, PrivateIP: *privateIP})
	log.Info("agent starting", "server", *server, "every", every.String())
	err := a.Run(ctx, *every)
	if errors.Is(err, agent.ErrRevoked) {
		fmt.Fprintln(stderr, "agent: the cluster has ended; stopping")
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
