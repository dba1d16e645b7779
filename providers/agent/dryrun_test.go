package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
)

// --dry-run: the GPU query runs; every step that would change the machine
// is written to the directory, not run; only loopback peers are dialled.
func TestDryRunWritesStepsInsteadOfRunning(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	d := &DryRun{Dir: filepath.Join(dir, "steps")}
	if out, err := d.Run(ctx, "gpus", "echo index, name"); err != nil || out != "index, name\n" {
		t.Errorf("gpus: %q %v", out, err)
	}
	for _, step := range []string{MountsStep, KeysStep, PortsStep, "install:slurm", "check:slurm", "nccl:nccl-tests"} {
		if out, err := d.Run(ctx, step, "touch "+shellQuote(marker)); err != nil || out != "" {
			t.Errorf("%s: %q %v", step, out, err)
		}
	}
	p, err := d.Start(ctx, providers.Command{Step: StartStep, Script: "touch " + shellQuote(marker)})
	if err != nil {
		t.Fatal(err)
	}
	if _, exit := p.Poll(); exit == nil || exit.Code != 0 {
		t.Errorf("start: %+v", exit)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a dry run ran a step")
	}
	paths, _ := d.Scripts()
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if got := strings.Join(names, " "); got != "001-mounts.sh 002-ssh-keys.sh 003-ports.sh 004-install_slurm.sh 005-check_slurm.sh 006-nccl_nccl-tests.sh 007-start.sh" {
		t.Errorf("scripts %s", got)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := d.Reach(ctx, addr); err == nil {
		t.Error("a closed loopback port was reached: loopback peers must be dialled")
	}
	if err := d.Reach(ctx, "10.0.2.100"); err != nil {
		t.Errorf("an address off loopback: %v (it must not be dialled)", err)
	}
}
