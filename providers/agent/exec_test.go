package agent

import (
	"context"
	"net"
	"strings"
	"testing"
)

func TestShellExecutor(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sh := Shell{}
	if err := sh.Reach(ctx, ln.Addr().String()); err != nil {
		t.Errorf("reach a listening peer: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := sh.Reach(ctx, addr); err == nil {
		t.Error("reached a closed port")
	}
	out, err := sh.Run(ctx, "check:none", "echo node-0 idle; echo $((1+1))")
	if err != nil || out != "node-0 idle\n2\n" {
		t.Errorf("run: %q %v", out, err)
	}
	out, err = sh.Run(ctx, "install:slurm", "echo before; false; echo never")
	if err == nil || !strings.Contains(err.Error(), "install:slurm") || strings.Contains(out, "never") {
		t.Errorf("a failing script: %q %v", out, err)
	}
}
