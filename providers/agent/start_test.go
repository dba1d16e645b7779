package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/providers"
)

// startExec records the ports steps and starts, and plays one command that
// prints a line per Poll until it is told to end.
type startExec struct {
	mu     sync.Mutex
	ports  []string
	starts []providers.Command
	proc   *fakeProc
}

type fakeProc struct {
	lines []string
	exit  *providers.Exit
}

func (p *fakeProc) Poll() ([]string, *providers.Exit) {
	lines := p.lines
	p.lines = nil
	exit := p.exit
	if exit != nil {
		p.exit = nil
	}
	return lines, exit
}

func (e *startExec) Reach(context.Context, string) error { return nil }

func (e *startExec) Run(_ context.Context, step, script string) (string, error) {
	if step == PortsStep {
		e.ports = append(e.ports, script)
	}
	return "", nil
}

func (e *startExec) Start(_ context.Context, cmd providers.Command) (providers.Process, error) {
	e.starts = append(e.starts, cmd)
	e.proc = &fakeProc{lines: []string{"started"}}
	return e.proc, nil
}

// N3: the agent starts the start command once per boot, even when the
// server keeps handing it the start order; its output goes to the log and
// its state rides on every heartbeat.
func TestStartCommandOncePerBoot(t *testing.T) {
	var mu sync.Mutex
	var states []*agentapi.StartState
	var logs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/agent/checkin":
			json.NewEncoder(w).Encode(agentapi.CheckinResponse{Cluster: "cl_x", Node: "node-1", Rank: 1,
				Peers: []agentapi.Peer{{Name: "node-0", Rank: 0, Address: "10.77.0.1"}, {Name: "node-1", Rank: 1, Address: "10.77.0.2"}}})
		case "/v1/agent/peers":
			json.NewEncoder(w).Encode(agentapi.PeersResponse{MeshComplete: true})
		case "/v1/agent/heartbeat":
			var req agentapi.HeartbeatRequest
			json.NewDecoder(r.Body).Decode(&req)
			states = append(states, req.Start)
			// A server that always orders the start: the agent still starts once.
			json.NewEncoder(w).Encode(agentapi.HeartbeatResponse{Start: &agentapi.StartOrder{User: "ubuntu",
				Env: map[string]string{"NODE_RANK": "1", "MASTER_ADDR": "10.77.0.1"}, Publish: true}})
		case "/v1/agent/logs":
			var req agentapi.LogsRequest
			json.NewDecoder(r.Body).Decode(&req)
			for _, l := range req.Lines {
				logs = append(logs, l.Text)
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ex := &startExec{}
	a := New(Config{Server: srv.URL, Token: "cdn_x_y", Exec: ex, Now: func() time.Time { return now },
		Workload: providers.Workload{StartCommand: "python train.py", Ports: []int{8888}, Env: map[string]string{"HF_HOME": "/data"}}})
	ctx := context.Background()
	for range 4 {
		if err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(10 * time.Second)
	}
	if len(ex.starts) != 1 || len(ex.ports) != 1 {
		t.Fatalf("%d starts, %d ports steps in one boot; want 1 each", len(ex.starts), len(ex.ports))
	}
	cmd := ex.starts[0]
	if cmd.Script != "python train.py" || cmd.User != "ubuntu" || cmd.Env["HF_HOME"] != "/data" || cmd.Env["NODE_RANK"] != "1" {
		t.Errorf("started %+v", cmd)
	}
	if p := ex.ports[0]; !strings.Contains(p, "allow_peer '10.77.0.1'") || strings.Contains(p, "10.77.0.2") || !strings.Contains(p, "publish_port 8888") {
		t.Errorf("ports script:\n%s", p)
	}
	ex.proc.lines, ex.proc.exit = []string{"epoch 1 loss 0.5"}, &providers.Exit{Code: 0, At: now}
	if err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if states[0] != nil || states[1] == nil || states[1].State != agentapi.StartRunning {
		t.Errorf("states before/after the start: %+v, %+v", states[0], states[1])
	}
	last := states[len(states)-1]
	if last.State != agentapi.StartExited || last.ExitCode == nil || *last.ExitCode != 0 || last.EndedAt == nil {
		t.Errorf("state after the exit: %+v", last)
	}
	for _, want := range []string{"started", "epoch 1 loss 0.5", "start command exited with code 0"} {
		if !slices.Contains(logs, want) {
			t.Errorf("log lacks %q: %q", want, logs)
		}
	}
}

// An executor that cannot start commands reports the start failed, once.
func TestStartCommandWithoutStarter(t *testing.T) {
	a := New(Config{Server: "http://unused", Token: "t", Exec: &gpuExec{}, Workload: providers.Workload{StartCommand: "sleep 1"}})
	a.startWorkload(context.Background(), agentapi.StartOrder{User: "ubuntu"})
	st := a.start.report()
	if st == nil || st.State != agentapi.StartFailed || st.ExitCode == nil || *st.ExitCode != -1 || st.Error == "" {
		t.Errorf("state %+v", st)
	}
}

// The real shell starts the command detached, once per boot (a marker in
// its run directory), as the user, in the env, and follows its output and
// exit code through files; a second Start in the same boot follows the
// first run instead of starting another.
func TestShellStartOncePerBoot(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	sh := Shell{RunDir: dir}
	count := filepath.Join(dir, "count")
	script := "echo run >> " + shellQuote(count) + "; echo \"hello $WHO\"; printf 'no newline'; exit 4"
	cmd := providers.Command{Step: StartStep, Script: script, User: me.Username, Env: map[string]string{"WHO": "node-1"}}
	p, err := sh.Start(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	lines, exit := waitExit(t, p)
	if !slices.Equal(lines, []string{"hello node-1", "no newline"}) || exit.Code != 4 || exit.Err != "" {
		t.Errorf("lines %q, exit %+v", lines, exit)
	}
	again, err := sh.Start(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	lines, exit = waitExit(t, again)
	if len(lines) != 2 || exit.Code != 4 {
		t.Errorf("second start followed %q %+v", lines, exit)
	}
	if runs, _ := os.ReadFile(count); string(runs) != "run\n" {
		t.Errorf("the command ran %q times in one boot", runs)
	}
}

// waitExit polls a real process until it ends (bounded).
func waitExit(t *testing.T, p providers.Process) ([]string, providers.Exit) {
	t.Helper()
	var all []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lines, exit := p.Poll()
		all = append(all, lines...)
		if exit != nil {
			return all, *exit
		}
		time.Sleep(5 * time.Millisecond) // a real OS process: nothing to inject
	}
	t.Fatal(errors.New("the process did not end in 10 s"))
	return nil, providers.Exit{}
}

// The workload's scripts are valid bash, whatever the keys and addresses hold.
func TestWorkloadScriptsParse(t *testing.T) {
	for name, script := range map[string]string{
		"ports": PortsScript([]string{"10.77.0.1", "10.77.0.3"}, []int{8888, 6006}, true),
		"keys":  KeysScript("ubuntu", []string{"ssh-ed25519 AAAA it's $(me) `x`", "ssh-rsa BBBB"}),
		"mounts head": MountsScript(0, agentapi.Mounts{Shared: true, Head: "10.77.0.1", Clients: []string{"10.77.0.2"}, Hostfile: "node-0 slots=8\nnode-1 slots=8\n",
			Volume: &agentapi.VolumeMount{ID: "vol_x", Name: "it's", SizeGB: 10, Path: "/shared/volume"}}),
		"mounts worker":    MountsScript(1, agentapi.Mounts{Shared: true, Head: "10.77.0.1", Clients: []string{"10.77.0.2"}}),
		"mounts container": MountsScript(0, agentapi.Mounts{Volume: &agentapi.VolumeMount{ID: "vol_x", Name: "v", SizeGB: 10, Path: "/volume"}}),
	} {
		if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s script does not parse: %v\n%s\n%s", name, err, out, script)
		}
	}
}

// A machine of one's own serves one cluster after another, maybe of two
// customers (A3, X19): the keys step leaves exactly the current cluster's keys
// in the block it owns (the operator's line outside it untouched), and the
// release removes the block, so the next cluster never trusts the last
// one's keys.
func TestKeysScriptTrustsOnlyTheCurrentCluster(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	f := filepath.Join(home, ".ssh", "authorized_keys")
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		t.Fatal(err)
	}
	const op, a, b = "ssh-ed25519 AAAAoperator op@desk", "ssh-ed25519 AAAAkeya alice@orga", "ssh-ed25519 AAAAkeyb bob@orgb"
	if err := os.WriteFile(f, []byte(op+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// getent answers for the test's own user with the temporary home.
	getent := "getent() { printf '%s:x:0:0::%s:/bin/sh\\n' " + shellQuote(me.Username) + " " + shellQuote(home) + "; }\n"
	run := func(script string) []string {
		t.Helper()
		if out, err := exec.Command("bash", "-c", getent+script).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				keys = append(keys, l)
			}
		}
		return keys
	}
	if got := run(KeysScript(me.Username, []string{a, op, a})); !slices.Equal(got, []string{op, a}) {
		t.Errorf("customer A's cluster: %q", got)
	}
	if got := run(KeysScript(me.Username, []string{a})); !slices.Equal(got, []string{op, a}) {
		t.Errorf("a restart of A's agent: %q", got)
	}
	if got := run(KeysScript(me.Username, []string{b})); !slices.Equal(got, []string{op, b}) {
		t.Errorf("customer B's cluster on the same machine trusts %q, want only the operator's and B's", got)
	}
	if got := run(providers.RemoveKeysScript); !slices.Equal(got, []string{op}) {
		t.Errorf("released: %q, want the operator's alone", got)
	}
}
