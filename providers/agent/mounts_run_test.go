package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/providers"
)

// mountsExec blocks its mounts step until the test releases it (or the
// step's context ends), and records the order of the other steps.
type mountsExec struct {
	startExec
	entered   chan struct{} // the mounts step began
	release   chan mountsResult
	cancelled chan error // the mounts step's context ended, with its cause
	mu        sync.Mutex
	steps     []string
}

type mountsResult struct {
	out string
	err error
}

func newMountsExec() *mountsExec {
	return &mountsExec{entered: make(chan struct{}, 1), release: make(chan mountsResult, 1), cancelled: make(chan error, 1)}
}

func (e *mountsExec) Run(ctx context.Context, step, script string) (string, error) {
	e.mu.Lock()
	e.steps = append(e.steps, step)
	e.mu.Unlock()
	if step != MountsStep {
		return e.startExec.Run(ctx, step, script)
	}
	e.entered <- struct{}{}
	select {
	case r := <-e.release:
		return r.out, r.err
	case <-ctx.Done():
		e.cancelled <- context.Cause(ctx)
		return "", ctx.Err()
	}
}

func (e *mountsExec) Start(ctx context.Context, cmd providers.Command) (providers.Process, error) {
	e.mu.Lock()
	e.steps = append(e.steps, cmd.Step)
	e.mu.Unlock()
	return e.startExec.Start(ctx, cmd)
}

// mountsServer orders the start with /shared from node-0 to node-1 and
// records what each heartbeat reported; once gone, it answers 410.
type mountsServer struct {
	mu     sync.Mutex
	gone   bool
	starts []*agentapi.StartState
	mounts []*agentapi.MountsState
	logs   []string
}

func (s *mountsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		w.WriteHeader(http.StatusGone)
		return
	}
	switch r.URL.Path {
	case "/v1/agent/checkin":
		json.NewEncoder(w).Encode(agentapi.CheckinResponse{Cluster: "cl_x", Node: "node-1", Rank: 1,
			Peers: []agentapi.Peer{{Name: "node-0", Rank: 0, Address: "10.77.0.1"}, {Name: "node-1", Rank: 1, Address: "10.77.0.2"}}})
	case "/v1/agent/peers":
		json.NewEncoder(w).Encode(agentapi.PeersResponse{MeshComplete: true})
	case "/v1/agent/heartbeat":
		var req agentapi.HeartbeatRequest
		json.NewDecoder(r.Body).Decode(&req)
		s.starts, s.mounts = append(s.starts, req.Start), append(s.mounts, req.Mounts)
		var order *agentapi.StartOrder
		if req.Start == nil {
			order = &agentapi.StartOrder{User: "ubuntu", Env: map[string]string{"NODE_RANK": "1"},
				Mounts: &agentapi.Mounts{Shared: true, Head: "10.77.0.1", Clients: []string{"10.77.0.2"}, Hostfile: "10.77.0.1\n10.77.0.2\n"}}
		}
		json.NewEncoder(w).Encode(agentapi.HeartbeatResponse{Start: order})
	case "/v1/agent/logs":
		var req agentapi.LogsRequest
		json.NewDecoder(r.Body).Decode(&req)
		for _, l := range req.Lines {
			s.logs = append(s.logs, l.Text)
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *mountsServer) last() (*agentapi.StartState, *agentapi.MountsState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts[len(s.starts)-1], s.mounts[len(s.mounts)-1]
}

// waitDone waits for the mounts step running beside the loop to end.
func waitDone(t *testing.T, a *Agent) {
	t.Helper()
	bg, ok := a.mounts.proc.(*background)
	if !ok {
		t.Fatalf("the mounts step does not run beside the loop: %T", a.mounts.proc)
	}
	select {
	case <-bg.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the mounts step did not end")
	}
}

// V4, N3: the mounts step runs beside the agent's loop: while a worker
// waits for node-0's export the agent keeps heartbeating and reports
// "mounting"; once mounted, it opens the ports and starts the start
// command — never before.
func TestMountsRunBesideTheLoop(t *testing.T) {
	s := &mountsServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ex := newMountsExec()
	a := New(Config{Server: srv.URL, Token: "cdn_x_y", Exec: ex, Now: func() time.Time { return now },
		Workload: providers.Workload{StartCommand: "python train.py"}})
	defer a.Close()
	ctx := context.Background()
	if err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	<-ex.entered
	for range 3 { // the step waits; the loop goes on
		now = now.Add(10 * time.Second)
		if err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, m := s.last()
	if st != nil || m == nil || m.State != agentapi.MountsMounting || m.EndedAt != nil {
		t.Fatalf("while mounting: start %+v, mounts %+v", st, m)
	}
	if len(ex.starts) != 0 || len(ex.ports) != 0 {
		t.Fatalf("started %d, ports %d before the mounts ended", len(ex.starts), len(ex.ports))
	}
	ex.release <- mountsResult{out: "10.77.0.1:/shared on /shared type nfs4 (rw)\n"}
	waitDone(t, a)
	now = now.Add(10 * time.Second)
	if err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	st, m = s.last()
	if m == nil || m.State != agentapi.MountsMounted || m.EndedAt == nil || !m.EndedAt.Equal(now) || m.Error != "" {
		t.Errorf("after the mounts: %+v", m)
	}
	if st == nil || st.State != agentapi.StartRunning || len(ex.starts) != 1 {
		t.Errorf("after the mounts: start %+v, %d starts", st, len(ex.starts))
	}
	var workload []string // the GPU samples and XID reads run beside (X15)
	for _, st := range ex.steps {
		if st != GPUSampleStep && st != XIDStep {
			workload = append(workload, st)
		}
	}
	if got := strings.Join(workload, ","); got != "gpus,mounts,ports,start" {
		t.Errorf("steps in order %s, want gpus,mounts,ports,start", got)
	}
	s.mu.Lock()
	logs := strings.Join(s.logs, "\n")
	s.mu.Unlock()
	for _, want := range []string{"mounting /shared from node-0 (10.77.0.1)", "10.77.0.1:/shared on /shared type nfs4 (rw)", "mounted"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// V4: a mounts step that fails is reported failed with its reason; the
// ports still open, but the start command is not started (N3: it expects
// /shared), and says why.
func TestMountsFailedStartNotStarted(t *testing.T) {
	s := &mountsServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ex := newMountsExec()
	a := New(Config{Server: srv.URL, Token: "cdn_x_y", Exec: ex, Workload: providers.Workload{StartCommand: "python train.py"}})
	defer a.Close()
	ctx := context.Background()
	if err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	<-ex.entered
	exit32 := exec.Command("sh", "-c", "exit 32").Run()
	ex.release <- mountsResult{out: "mount.nfs: Connection timed out\n", err: exit32}
	waitDone(t, a)
	if err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	st, m := s.last()
	if m == nil || m.State != agentapi.MountsFailed || !strings.Contains(m.Error, "exited with code 32: mount.nfs: Connection timed out") {
		t.Errorf("mounts %+v", m)
	}
	if st == nil || st.State != agentapi.StartFailed || !strings.Contains(st.Error, "not started: the mounts failed") || len(ex.starts) != 0 {
		t.Errorf("start %+v, %d starts", st, len(ex.starts))
	}
	if len(ex.ports) != 1 {
		t.Errorf("%d ports steps, want 1", len(ex.ports))
	}
}

// V4: the cluster's end (the server revokes the token) cancels a mounts
// step still waiting, and Run returns at once — the agent is never stuck
// behind it.
func TestMountsCancelledWhenClusterEnds(t *testing.T) {
	s := &mountsServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ex := newMountsExec()
	a := New(Config{Server: srv.URL, Token: "cdn_x_y", Exec: ex})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Millisecond) }()
	<-ex.entered
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRevoked) {
			t.Errorf("Run = %v, want ErrRevoked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the cluster ended")
	}
	select {
	case cause := <-ex.cancelled:
		if !errors.Is(cause, errClusterEnded) {
			t.Errorf("the mounts step was cancelled by %v, want the cluster's end", cause)
		}
	default:
		t.Fatal("the mounts step was not cancelled")
	}
	if m := a.mounts.report(); m == nil || m.State != agentapi.MountsMounting {
		t.Errorf("mounts %+v", m)
	}
}

// The real shell ends a cancelled step at once, even when a child of the
// script still holds its output open.
func TestShellRunCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "began")
	if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
		t.Skipf("mkfifo: %v %s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Shell{}.Run(ctx, MountsStep, "echo began > "+shellQuote(fifo)+"\nsleep 20 & sleep 20")
		done <- err
	}()
	if _, err := os.ReadFile(fifo); err != nil { // returns once the script wrote it
		t.Fatal(err)
	}
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled step succeeded")
		}
		if d := time.Since(began); d > 15*time.Second {
			t.Errorf("the cancelled step ended after %s", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled step did not end")
	}
}

// The head's mounts script works on a machine that has exportfs but no
// /etc/exports yet (an image with nfs-kernel-server's binaries but not its
// conffile): it runs on a scratch copy of the script with /etc/exports
// pointed into a temporary directory that has no such file.
func TestMountsScriptWithoutExportsFile(t *testing.T) {
	bash, err := exec.LookPath("bash") // the agent's scripts run under bash on every machine
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"exportfs", "systemctl", "service", "chmod"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := MountsScript(0, agentapi.Mounts{Shared: true, Clients: []string{"10.0.0.2"}, Hostfile: "node-0\n"})
	script = strings.ReplaceAll(script, "/etc/exports", filepath.Join(dir, "exports"))
	script = strings.ReplaceAll(script, sharedDir, filepath.Join(dir, "shared"))
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("head's mounts script without /etc/exports: %v\n%s\n%s", err, out, script)
	}
	got, err := os.ReadFile(filepath.Join(dir, "exports"))
	if err != nil || !strings.Contains(string(got), "10.0.0.2(rw") {
		t.Errorf("exports after the script: %q, %v", got, err)
	}
}
