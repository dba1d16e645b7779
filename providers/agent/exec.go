package agent

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"
)

// Shell is the real machine's Executor: peers are reached over TCP on the
// private network (their SSH port) and steps run with bash.
type Shell struct {
	Port        string        // peer port to dial; "" = 22
	DialTimeout time.Duration // 0 = 3 s
	StepTimeout time.Duration // 0 = 30 min
	RunDir      string        // "" = /run/clusterdeck: the start command's output and exit code
	StopGrace   time.Duration // a run's stop: SIGUSR1, then SIGTERM this much later (X17); 0 = 30 s
}

// Reach dials addr (an IP, or IP:port) on the private network.
func (s Shell) Reach(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		port := s.Port
		if port == "" {
			port = "22"
		}
		addr = net.JoinHostPort(addr, port)
	}
	timeout := s.DialTimeout
	if timeout == 0 {
		timeout = 3 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Run runs the step's script with bash and returns its combined output.
func (s Shell) Run(ctx context.Context, step, script string) (string, error) {
	timeout := s.StepTimeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.WaitDelay = 5 * time.Second // cancelled, a child (a sleep) may hold the output open
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w", step, err)
	}
	return strings.TrimRight(string(out), "\n") + "\n", nil
}
