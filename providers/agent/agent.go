// Package agent is the cluster agent that runs on every node
// (`clusterdeck agent --server URL --token T`): it checks in with what
// nvidia-smi shows, reports which peers it reaches on the private network,
// sends heartbeats with its GPUs' samples and XID lines, runs the software install and check tasks and the NCCL
// check the server hands it and returns their raw output, opens the
// workload's ports and starts its start command once per boot when the
// cluster is ready, and ships its log lines. The simulated cloud runs the
// same code in-process, against the same /v1/agent/… endpoints.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/providers"
)

// RateLimitedError is a 429 from the server: try again after RetryAfter.
type RateLimitedError struct {
	Path       string
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("agent: %s: rate limited, retry after %s", e.Path, e.RetryAfter)
}

// MaxQueuedLogLines bounds the lines an agent keeps while the server refuses
// them (rate limit, outage); the oldest are dropped first.
const MaxQueuedLogLines = 10000

// Version is sent at check-in.
const Version = "1"

// GPUQuery is the nvidia-smi command run before checking in; the server
// reads its output (models/nodespec.GPUQuery, the same command).
const GPUQuery = "nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv"

// ErrRevoked means the server no longer accepts this node's token (the
// cluster ended): the agent should stop.
var ErrRevoked = errors.New("agent: token revoked")

// Config builds an Agent.
type Config struct {
	Server string // e.g. https://deck.example.com
	// Token is the node's own token (cdn_…), or the cluster's bootstrap
	// token (cdb_…): then the agent first claims its rank with MachineID,
	// Hostname and PrivateIP and uses the node token it gets back.
	Token string
	// MachineID is the provider's id of this machine, for the claim; empty
	// when the machine does not know it (the server then matches Hostname
	// and PrivateIP against what the provider reported).
	MachineID string
	Exec      providers.Executor
	HTTP      *http.Client // nil = a client with a 30 s timeout
	Hostname  string
	PrivateIP string
	// MeshPort is the TCP port this agent listens on (every address, a
	// MeshListener) for its peers' reach check; 0 = none, peers dial the
	// machine's SSH port (the simulated cloud's agents).
	MeshPort int
	Now      func() time.Time // nil = time.Now
	// Workload is what the placement asked this machine to run (N3): the
	// start-up script hands it over (`--workload FILE`), the simulated
	// cloud passes it in.
	Workload providers.Workload
}

// Agent is one node's agent. Step does one round of work; Run loops it.
type Agent struct {
	cfg       Config
	token     string // the node token in use: Config.Token, or the one a claim returned
	mu        sync.Mutex
	checkedIn bool
	meshDone  bool
	self      agentapi.CheckinResponse
	logs      []agentapi.LogLine
	logsAfter time.Time // the server asked to wait until then (429 Retry-After)
	start     starter   // the start command of this boot
	mounts    mounter   // the mounts step of this boot (V4)
	gpu       gpuState  // GPU samples and XID lines not yet taken (X15)
	// life ends when the cluster ends (the server revoked the token), when
	// Run returns, or on Close: it cancels the mounts step.
	life     context.Context
	stopLife context.CancelCauseFunc
}

// errClusterEnded is why the mounts step is cancelled when the server
// revokes the token.
var errClusterEnded = errors.New("the cluster ended")

// New builds an agent.
func New(cfg Config) *Agent {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Server = strings.TrimRight(cfg.Server, "/")
	a := &Agent{cfg: cfg}
	if !strings.HasPrefix(cfg.Token, agentapi.BootstrapTokenPrefix) {
		a.token = cfg.Token
	}
	a.life, a.stopLife = context.WithCancelCause(context.Background())
	return a
}

// Close cancels what the agent runs beside its loop (the mounts step) and
// waits a little for it to end. Run closes the agent when it returns.
func (a *Agent) Close() {
	a.stopLife(errors.New("the agent stopped"))
	a.stopMounts()
}

// Log queues a line for the server (shipped at the end of each Step).
func (a *Agent) Log(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logs = append(a.logs, agentapi.LogLine{At: a.cfg.Now().UTC(), Text: fmt.Sprintf(format, args...)})
}

// Step does one round: check in, report peers until the mesh is complete,
// heartbeat and run a task if one is handed out, then ship logs.
func (a *Agent) Step(ctx context.Context) error {
	err := a.step(ctx)
	if ferr := a.flushLogs(ctx); err == nil {
		err = ferr
	}
	if errors.Is(err, ErrRevoked) {
		a.stopLife(errClusterEnded) // cancels the mounts step
	}
	return err
}

func (a *Agent) step(ctx context.Context) error {
	if a.token == "" {
		if err := a.claim(ctx); err != nil {
			return err
		}
	}
	if !a.checkedIn {
		var resp agentapi.CheckinResponse
		req := agentapi.CheckinRequest{Hostname: a.cfg.Hostname, PrivateIP: a.cfg.PrivateIP, MeshPort: a.cfg.MeshPort,
			Version: Version, NvidiaSMI: a.gpus(ctx)}
		if err := a.post(ctx, "/v1/agent/checkin", req, &resp); err != nil {
			return err
		}
		a.self, a.checkedIn = resp, true
		a.Log("agent %s checked in as %s (rank %d) with %d peers", Version, resp.Node, resp.Rank, len(resp.Peers))
	}
	if !a.meshDone {
		if err := a.reportPeers(ctx); err != nil {
			return err
		}
	}
	if a.followMounts() {
		a.continueWorkload(ctx)
	}
	a.followStart()
	a.sampleGPUs(ctx)
	gpu := a.gpuReport()
	var hb agentapi.HeartbeatResponse
	err := a.post(ctx, "/v1/agent/heartbeat", agentapi.HeartbeatRequest{Start: a.start.report(), Mounts: a.mounts.report(), GPU: gpu}, &hb)
	var se *statusError
	if err != nil && gpu != nil && errors.As(err, &se) && se.code == "bad_request" && strings.HasPrefix(se.msg, "gpu:") {
		a.Log("the server refused the GPU report, dropped: %s", se.msg) // it would refuse it again
		a.gpuSent(gpu)
	}
	if err != nil {
		return err
	}
	a.gpuSent(gpu)
	if hb.Start != nil {
		a.startWorkload(ctx, *hb.Start)
	}
	if hb.Task != nil {
		return a.runTask(ctx, *hb.Task)
	}
	return nil
}

// ErrClaimRefused means another machine holds this machine's rank: the
// bootstrap token will never work for it, so the agent stops.
var ErrClaimRefused = errors.New("agent: rank claimed by another machine")

// claim trades the cluster's bootstrap token for this node's token (OP1).
// The server may not know the machine yet (placement or addresses not
// recorded): that is an error for this step, and the next step claims again.
func (a *Agent) claim(ctx context.Context) error {
	var resp agentapi.ClaimResponse
	req := agentapi.ClaimRequest{MachineID: a.cfg.MachineID, Hostname: a.cfg.Hostname, PrivateIP: a.cfg.PrivateIP}
	err := a.postAs(ctx, a.cfg.Token, "/v1/agent/claim", req, &resp)
	var se *statusError
	if errors.As(err, &se) && se.code == "rank_claimed" {
		return fmt.Errorf("%w: %s", ErrClaimRefused, se.msg)
	}
	if err != nil {
		return err
	}
	if resp.Token == "" {
		return fmt.Errorf("agent: /v1/agent/claim: the answer carries no node token")
	}
	a.token = resp.Token
	who := req.MachineID
	if who == "" {
		who = req.Hostname
	}
	a.Log("agent claimed %s (rank %d) as machine %s", resp.Node, resp.Rank, who)
	return nil
}

// gpus runs GPUQuery; a failure is reported with its output, so the
// server can say why the node has no usable GPUs.
func (a *Agent) gpus(ctx context.Context) *string {
	out, err := a.cfg.Exec.Run(ctx, "gpus", GPUQuery)
	if err != nil {
		out = strings.TrimRight(out, "\n") + "\n" + GPUQuery + ": " + err.Error() + "\n"
	}
	return &out
}

func (a *Agent) reportPeers(ctx context.Context) error {
	req := agentapi.PeersRequest{Reached: []string{}, Unreachable: []agentapi.Unreachable{}}
	for _, p := range a.self.Peers {
		if p.Rank == a.self.Rank {
			continue
		}
		ep := p.Endpoint()
		if ep == "" {
			req.Unreachable = append(req.Unreachable, agentapi.Unreachable{Address: ep, Error: p.Name + "'s address is not known yet"})
			continue
		}
		if err := a.cfg.Exec.Reach(ctx, ep); err != nil {
			req.Unreachable = append(req.Unreachable, agentapi.Unreachable{Address: ep, Error: err.Error()})
			continue
		}
		req.Reached = append(req.Reached, ep)
	}
	var resp agentapi.PeersResponse
	if err := a.post(ctx, "/v1/agent/peers", req, &resp); err != nil {
		return err
	}
	if !resp.MeshComplete && len(resp.Peers) > 0 {
		a.self.Peers = resp.Peers // addresses reported since check-in
	}
	if resp.MeshComplete {
		a.meshDone = true
		a.Log("reached every peer: %d of %d", len(req.Reached), len(a.self.Peers)-1)
	} else if len(req.Unreachable) > 0 {
		a.Log("cannot reach %d peers yet (first: %s: %s)", len(req.Unreachable), req.Unreachable[0].Address, req.Unreachable[0].Error)
	}
	return nil
}

func (a *Agent) runTask(ctx context.Context, t agentapi.Task) error {
	a.Log("%s", TaskLabel(t))
	script := t.Script
	if len(t.Files) > 0 || len(t.Env) > 0 {
		script = prelude(t) + script
	}
	out, err := a.cfg.Exec.Run(ctx, t.Kind+":"+t.Software, script)
	if t.Kind == agentapi.TaskInstall {
		for _, line := range loggable(out) {
			a.Log("%s", line)
		}
	}
	res := agentapi.TaskResult{OK: err == nil, Output: out}
	if err != nil {
		res.Output = strings.TrimRight(out, "\n") + "\n" + err.Error()
		a.Log("%s failed: %v", TaskLabel(t), err)
	}
	res.Output = tail(res.Output, MaxOutput)
	return a.post(ctx, "/v1/agent/tasks/"+t.ID, res, nil)
}

// TaskLabel is a task as its node's log tells it: the step in words,
// never the server's internal task id (U*).
func TaskLabel(t agentapi.Task) string {
	sw := map[string]string{"slurm": "Slurm", "kubernetes": "Kubernetes", "ray": "Ray"}[t.Software]
	if sw == "" {
		sw = t.Software
	}
	switch t.Kind {
	case agentapi.TaskInstall:
		return fmt.Sprintf("Installing %s (%s)", sw, t.Role)
	case agentapi.TaskCheck:
		return fmt.Sprintf("Checking that %s is up (%s)", sw, t.Role)
	case agentapi.TaskNCCL:
		return "Running the NCCL all-reduce check across the machines"
	case agentapi.TaskVerify:
		switch t.Software {
		case "machine":
			return "Verifying this machine: GPU, memory-error and stress check"
		case "ring":
			return "Verifying the fabric: all-reduce across every machine"
		case "pair":
			return "Verifying the fabric between a pair of machines"
		}
		return "Verifying: " + t.Software
	}
	return t.Kind + " " + sw
}

// MaxOutput bounds the output a task result carries, so the request stays
// under the server's 1 MiB body limit once JSON-escaped (the server keeps
// less of an install's). The end is kept: a tool says last why it failed.
const MaxOutput = 512 << 10

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// loggable returns an install's output lines for the node log, without the
// lines between "-----BEGIN CLUSTERDECK …-----" and "-----END CLUSTERDECK
// …-----" markers: what a node reports there (a kubeconfig, a join command)
// is a credential, for the server only.
func loggable(out string) []string {
	var lines []string
	secret := false
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "-----BEGIN CLUSTERDECK "):
			secret = true
		case strings.HasPrefix(line, "-----END CLUSTERDECK "):
			secret = false
		case line != "" && !secret:
			lines = append(lines, line)
		}
	}
	return lines
}

// prelude writes the task's files and exports its env before its script.
func prelude(t agentapi.Task) string {
	var b strings.Builder
	for k, v := range t.Env {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	for path, content := range t.Files {
		fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\"\ncat > %s <<'CLUSTERDECK_EOF'\n%s\nCLUSTERDECK_EOF\n", shellQuote(path), shellQuote(path), content)
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (a *Agent) flushLogs(ctx context.Context) error {
	if !a.checkedIn {
		return nil // the server knows no node to file them under yet
	}
	a.mu.Lock()
	if a.cfg.Now().Before(a.logsAfter) {
		a.mu.Unlock()
		return nil // honour the server's Retry-After: the lines wait
	}
	lines := a.logs
	a.logs = nil
	a.mu.Unlock()
	if len(lines) == 0 {
		return nil
	}
	err := a.post(ctx, "/v1/agent/logs", agentapi.LogsRequest{Lines: lines}, nil)
	if err == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logs = append(lines, a.logs...)
	if n := len(a.logs) - MaxQueuedLogLines; n > 0 {
		a.logs = a.logs[n:]
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		a.logsAfter = a.cfg.Now().Add(rl.RetryAfter)
		return nil
	}
	return err
}

// Run steps every interval until ctx ends or the token is revoked.
func (a *Agent) Run(ctx context.Context, every time.Duration) error {
	defer a.Close()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := a.Step(ctx); errors.Is(err, ErrRevoked) || errors.Is(err, ErrClaimRefused) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// statusError is a refusal from the server with its error code.
type statusError struct {
	path, status, code, msg string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("agent: %s: %s: %s: %s", e.path, e.status, e.code, e.msg)
}

func (a *Agent) post(ctx context.Context, path string, body, out any) error {
	return a.postAs(ctx, a.token, path, body, out)
}

func (a *Agent) postAs(ctx context.Context, token, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.Server+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("agent: %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusGone:
		return ErrRevoked
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 {
			secs = 60
		}
		return &RateLimitedError{Path: path, RetryAfter: time.Duration(secs) * time.Second}
	case resp.StatusCode >= 300:
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
			return &statusError{path: path, status: resp.Status, code: e.Error.Code, msg: e.Error.Message}
		}
		return fmt.Errorf("agent: %s: %s: %s", path, resp.Status, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
