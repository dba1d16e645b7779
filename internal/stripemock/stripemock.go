// Package stripemock runs Stripe's own stripe-mock (pinned by go.mod's tool
// directive) for tests, on a free loopback port.
package stripemock

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Start builds the pinned stripe-mock ("go tool -n" prints the binary's
// path, so the process started and stopped is stripe-mock itself), starts
// it and waits until it listens. stop kills it.
func Start() (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	bin, err := exec.Command("go", "tool", "-n", "stripe-mock").Output()
	if err != nil {
		return "", nil, fmt.Errorf("build stripe-mock: %w", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(bin)), "-http-addr", addr)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	// Waiting for a child process to listen, not for the clock.
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("stripe-mock did not listen on %s", addr)
}

// Require ends a test that needs stripe-mock when it could not start: it
// skips loudly, and fails under CI=true, where it must run.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("stripe-mock must run under CI=true: %v", err)
	}
	t.Skipf("SKIPPING stripe-mock test: %v (go tool stripe-mock)", err)
}
