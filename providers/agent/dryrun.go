package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// DryRun is the executor of `clusterdeck agent --dry-run DIR`, for running
// the real agent on a host that is not one of the cluster's machines (the
// smoke tests): nothing it does can change that host. The GPU query runs
// (it only reads; a test puts its own nvidia-smi first on PATH); every other
// step — the mounts (/etc/fstab, /etc/exports, /shared, packages), the SSH
// keys, the ports, the software's install and check, the NCCL check and the
// start command — is written to Dir as NNN-<step>.sh and not run, and
// succeeds with no output. Peers are dialled only on loopback; any other
// address counts as reached without a packet sent.
type DryRun struct {
	Shell Shell  // runs the GPU query and dials loopback peers
	Dir   string // where the scripts go; created if missing

	mu sync.Mutex
	n  int
}

var (
	_ providers.Executor = (*DryRun)(nil)
	_ providers.Starter  = (*DryRun)(nil)
)

// Reach dials addr when it is on loopback; any other address is taken as
// reached.
func (d *DryRun) Reach(ctx context.Context, addr string) error {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return d.Shell.Reach(ctx, addr)
	}
	return nil
}

// Run runs the GPU query and writes any other step's script to Dir.
func (d *DryRun) Run(ctx context.Context, step, script string) (string, error) {
	if step == "gpus" {
		return d.Shell.Run(ctx, step, script)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if _, err := d.write(step, script); err != nil {
		return "", fmt.Errorf("%s: %w", step, err)
	}
	return "", nil
}

// Start writes the command to Dir and returns it as ended with code 0.
func (d *DryRun) Start(ctx context.Context, cmd providers.Command) (providers.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := d.write(cmd.Step, cmd.Script); err != nil {
		return nil, err
	}
	return &dryProcess{exit: &providers.Exit{Code: 0, At: time.Now()}}, nil
}

// Scripts lists the scripts written so far, in order.
func (d *DryRun) Scripts() ([]string, error) {
	return filepath.Glob(filepath.Join(d.Dir, "*.sh"))
}

func (d *DryRun) write(step, script string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return "", err
	}
	d.n++
	name := strings.NewReplacer("/", "_", ":", "_").Replace(step)
	path := filepath.Join(d.Dir, fmt.Sprintf("%03d-%s.sh", d.n, name))
	return path, os.WriteFile(path, []byte(script), 0o600)
}

// dryProcess is a start command that was not run.
type dryProcess struct{ exit *providers.Exit }

func (p *dryProcess) Poll() ([]string, *providers.Exit) {
	exit := p.exit
	p.exit = nil
	return nil, exit
}
