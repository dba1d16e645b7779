package ssh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Name is the provider's stable name, stored on offers and clusters.
const Name = "ssh"

// RemoteDir is where a placed machine keeps the cluster's agent: one
// directory per group (cluster), removed on terminate.
const RemoteDir = "/var/lib/clusterdeck/groups"

// Config configures the provider.
type Config struct {
	Machines []Machine // validated (LoadFile or Validate)
	// StatePath is the JSON file that records which machine serves which
	// group and the host keys trusted on first use; "" keeps them in memory.
	StatePath string
	// AgentBinary is the clusterdeck binary copied to the machines
	// (default: this process's executable). It must suit their OS and CPU.
	AgentBinary string
	// DialTimeout bounds each SSH connection (default 15 s).
	DialTimeout time.Duration
	// Source lists the machines added on the admin page (the database),
	// read at every ListOffers and PlaceGroup, so the catalog's next run
	// sells what was added and stops selling what was removed. nil: only
	// Machines. A machine of Source named like one of Machines, or invalid,
	// is skipped (the file wins).
	Source func(ctx context.Context) ([]Machine, error)
	// AgentEvery is how often the machines' agents check in for work
	// (their --every); 0 keeps the agent's default of 10 s.
	AgentEvery time.Duration
}

// Provider is the bring-your-own-machines provider. Safe for concurrent use.
type Provider struct {
	cfg Config
	// machines are the file's and Source's machines by name, as last read;
	// one removed from Source stays known here (to describe and clean the
	// cluster that may still hold it) until the process restarts.
	mmu      sync.RWMutex
	machines map[string]Machine
	// dialBackoff is the first wait before dialling a machine again
	// (doubling each time); zero means 250 ms.
	dialBackoff time.Duration

	mu    sync.Mutex
	state state
}

// state is what the provider remembers between restarts.
type state struct {
	// Groups maps a group name to the names of its machines, by rank.
	Groups map[string]stateGroup `json:"groups"`
	// HostKeys are the host keys trusted on first use, by machine name.
	HostKeys map[string]string `json:"host_keys"`
	// Reserved machines are being placed (not yet in a group).
	reserved map[string]bool
}

type stateGroup struct {
	Location string   `json:"location"`
	Offer    string   `json:"offer"`
	Machines []string `json:"machines"`
}

// New builds the provider; it loads StatePath when it exists.
func New(cfg Config) (*Provider, error) {
	if err := Validate(cfg.Machines); err != nil {
		return nil, err
	}
	if cfg.AgentBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("ssh: the agent binary: %w", err)
		}
		cfg.AgentBinary = exe
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 15 * time.Second
	}
	p := &Provider{cfg: cfg, machines: map[string]Machine{},
		state: state{Groups: map[string]stateGroup{}, HostKeys: map[string]string{}, reserved: map[string]bool{}}}
	for _, m := range cfg.Machines {
		p.machines[m.Name] = m
	}
	if cfg.StatePath != "" {
		data, err := os.ReadFile(cfg.StatePath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("ssh: state: %w", err)
		default:
			if err := json.Unmarshal(data, &p.state); err != nil {
				return nil, fmt.Errorf("ssh: state %s: %w", cfg.StatePath, err)
			}
			p.state.reserved = map[string]bool{}
			if p.state.Groups == nil {
				p.state.Groups = map[string]stateGroup{}
			}
			if p.state.HostKeys == nil {
				p.state.HostKeys = map[string]string{}
			}
		}
	}
	return p, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return Name }

// current is the machines sold now: the file's, then Source's (each
// validated alone; one named like an earlier one is skipped).
func (p *Provider) current(ctx context.Context) ([]Machine, error) {
	if p.cfg.Source == nil {
		return p.cfg.Machines, nil
	}
	extra, err := p.cfg.Source(ctx)
	if err != nil {
		return nil, fmt.Errorf("ssh: machines added on the admin page: %w", err)
	}
	out := slices.Clone(p.cfg.Machines)
	seen := map[string]bool{}
	for _, m := range out {
		seen[m.Name] = true
	}
	for _, m := range extra {
		one := []Machine{m}
		if seen[m.Name] || Validate(one) != nil {
			continue
		}
		seen[m.Name] = true
		out = append(out, one[0])
	}
	p.mmu.Lock()
	for _, m := range out {
		p.machines[m.Name] = m
	}
	p.mmu.Unlock()
	return out, nil
}

// machine is the machine called name as last read.
func (p *Provider) machine(name string) (Machine, bool) {
	p.mmu.RLock()
	defer p.mmu.RUnlock()
	m, ok := p.machines[name]
	return m, ok
}

// offerID is the offer a machine is sold under: machines alike in
// location, shape and price are one offer whose stock counts them.
func offerID(m Machine) string {
	return fmt.Sprintf("%s.%s.%dx.%s.%dc.%dg.%s", m.Location, strings.ToLower(m.Accelerator), m.GPUs,
		m.Kind, m.VCPUs, m.MemoryGB, strconv.FormatInt(m.priceMicros, 10))
}

// busy reports the machines in a group or being placed. Callers hold p.mu.
func (p *Provider) busy() map[string]bool {
	b := map[string]bool{}
	for _, g := range p.state.Groups {
		for _, m := range g.Machines {
			b[m] = true
		}
	}
	for m := range p.state.reserved {
		b[m] = true
	}
	return b
}

// ListOffers implements providers.Provider: one offer per alike machines,
// NodesAvailable counting those free.
func (p *Provider) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	machines, err := p.current(ctx)
	if err != nil {
		return nil, p.fail(providers.ErrTransient, "ListOffers", "%v", err)
	}
	p.mu.Lock()
	busy := p.busy()
	p.mu.Unlock()
	byID := map[string]*providers.Offer{}
	var ids []string
	for _, m := range machines {
		id := offerID(m)
		o := byID[id]
		if o == nil {
			perGPU := m.priceMicros
			if m.GPUs > 0 {
				perGPU = m.priceMicros / int64(m.GPUs)
			}
			zero := 0
			o = &providers.Offer{Provider: Name, OfferID: id, Location: m.Location, LocationName: m.LocationName,
				Interconnect: m.Interconnect, NICs: m.NICs, NICGbps: m.NICGbps, MachineKind: m.Kind, Accelerator: m.Accelerator, GPUsPerNode: m.GPUs,
				VCPUs: m.VCPUs, MemoryGB: m.MemoryGB, RootDiskGB: m.RootDiskGB, PerGPUHourUSD: perGPU,
				NodesAvailable: &zero, BootTime: time.Minute, PublicIPs: true}
			byID[id] = o
			ids = append(ids, id)
		}
		if !busy[m.Name] {
			*o.NodesAvailable++
		}
	}
	sort.Strings(ids)
	out := make([]providers.Offer, 0, len(ids))
	for _, id := range ids {
		o := *byID[id]
		o.Available = *o.NodesAvailable > 0
		out = append(out, o)
	}
	return out, nil
}

var groupRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (p *Provider) fail(class error, op, format string, args ...any) error {
	return &providers.Error{Class: class, Provider: Name, Op: op, Message: fmt.Sprintf(format, args...)}
}

// PlaceGroup implements providers.Provider: it takes req.Count free
// machines of the offer, installs and starts the agent on each over SSH,
// and when any fails, cleans those it reached and frees them all.
func (p *Provider) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	const op = "PlaceGroup"
	if !groupRe.MatchString(req.GroupName) {
		return providers.Group{}, p.fail(providers.ErrValidation, op, "group name %q is not [A-Za-z0-9_-]", req.GroupName)
	}
	if req.Count < 1 || len(req.Agent.Tokens) != req.Count || req.Agent.ServerURL == "" {
		return providers.Group{}, p.fail(providers.ErrValidation, op, "need count ≥ 1, one agent token per machine and a server URL")
	}
	if req.Volume != nil { // V4: nothing attaches a volume to machines of one's own
		return providers.Group{}, &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: op, Code: "unsupported",
			Location: req.Location, Message: "machines over SSH take no persistent volume; launch without a volume"}
	}
	machines, err := p.current(ctx)
	if err != nil {
		return providers.Group{}, p.fail(providers.ErrTransient, op, "%v", err)
	}
	p.mu.Lock()
	if g, ok := p.state.Groups[req.GroupName]; ok {
		p.mu.Unlock()
		return p.describe(ctx, req.GroupName, g), nil
	}
	busy := p.busy()
	for _, a := range req.Avoid {
		busy[a] = true // quarantined by the product as a lemon (X2)
	}
	var picked []Machine
	for _, m := range machines {
		if len(picked) < req.Count && !busy[m.Name] && offerID(m) == req.OfferID && m.Location == req.Location {
			picked = append(picked, m)
		}
	}
	if len(picked) > 0 && req.AboveCeiling(picked[0].priceMicros) {
		p.mu.Unlock()
		return providers.Group{}, providers.AboveCeiling(Name, op, req.Location, "offer "+req.OfferID, picked[0].priceMicros, req.MaxMachineHourUSD)
	}
	if len(picked) < req.Count {
		p.mu.Unlock()
		return providers.Group{}, &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: op, Location: req.Location,
			Message: fmt.Sprintf("%d free machines of offer %s, %d asked", len(picked), req.OfferID, req.Count)}
	}
	for _, m := range picked {
		p.state.reserved[m.Name] = true
	}
	p.mu.Unlock()

	errs := make([]error, len(picked))
	var wg sync.WaitGroup
	for i, m := range picked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.startAgent(ctx, m, req.GroupName, req.Agent.ServerURL, req.Agent.Tokens[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// All or nothing: clean every machine (those that failed half way too).
		for _, m := range picked {
			_ = p.clean(context.WithoutCancel(ctx), m, req.GroupName)
		}
		p.mu.Lock()
		for _, m := range picked {
			delete(p.state.reserved, m.Name)
		}
		p.mu.Unlock()
		class := providers.ErrTransient
		if errors.Is(err, errHostKey) {
			class = providers.ErrValidation
		}
		return providers.Group{}, &providers.Error{Class: class, Provider: Name, Op: op, Location: req.Location,
			Message: "placement rolled back: " + err.Error()}
	}
	g := stateGroup{Location: req.Location, Offer: req.OfferID}
	for _, m := range picked {
		g.Machines = append(g.Machines, m.Name)
	}
	p.mu.Lock()
	for _, m := range picked {
		delete(p.state.reserved, m.Name)
	}
	p.state.Groups[req.GroupName] = g
	err = p.saveLocked()
	p.mu.Unlock()
	if err != nil {
		return providers.Group{}, p.fail(providers.ErrTransient, op, "%v", err)
	}
	return p.group(req.GroupName, g, func(Machine) (providers.NodeState, string) { return providers.NodeRunning, "" }), nil
}

// group builds a Group, asking state for each machine's state.
func (p *Provider) group(name string, g stateGroup, state func(Machine) (providers.NodeState, string)) providers.Group {
	out := providers.Group{Provider: Name, Name: name, Location: g.Location}
	for i, mn := range g.Machines {
		m, ok := p.machine(mn)
		n := providers.Node{ID: mn, Index: i, State: providers.NodeTerminated,
			Message: "the machine is no longer in the machines file"}
		if ok {
			st, msg := state(m)
			n = providers.Node{ID: mn, Index: i, State: st, Message: msg, PublicHost: m.Host, SSHPort: m.Port,
				SSHUser: m.User, PrivateIP: m.PrivateIP, Host: mn}
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// describe checks each machine's liveness over SSH and keeps its agent
// running: it starts the agent when none runs (the first describe after
// placement, or after the agent died).
func (p *Provider) describe(ctx context.Context, name string, g stateGroup) providers.Group {
	return p.group(name, g, func(m Machine) (providers.NodeState, string) {
		script := "d=" + RemoteDir + "/" + name + "\n" +
			`if [ -s "$d/agent.pid" ] && kill -0 "$(cat "$d/agent.pid")" 2>/dev/null; then exit 0; fi` + "\n" + restartAgentScript
		if _, err := p.run(ctx, m, script, nil); err != nil {
			return providers.NodeFailed, "unreachable over SSH: " + err.Error()
		}
		return providers.NodeRunning, ""
	})
}

// DescribeGroup implements providers.Provider.
func (p *Provider) DescribeGroup(ctx context.Context, groupName string) (providers.Group, error) {
	p.mu.Lock()
	g, ok := p.state.Groups[groupName]
	p.mu.Unlock()
	if !ok {
		return providers.Group{}, p.fail(providers.ErrNotFound, "DescribeGroup", "no group %q", groupName)
	}
	return p.describe(ctx, groupName, g), nil
}

// DescribeGroups implements providers.Provider.
func (p *Provider) DescribeGroups(ctx context.Context, groupNames []string) (map[string]providers.Group, error) {
	out := map[string]providers.Group{}
	for _, name := range groupNames {
		if g, err := p.DescribeGroup(ctx, name); err == nil {
			out[name] = g
		}
	}
	return out, nil
}

// RestartNode implements providers.Provider: an owned machine is not
// rebooted; its agent is started again (the agent resumes its work).
func (p *Provider) RestartNode(ctx context.Context, groupName, nodeID string) error {
	const op = "RestartNode"
	p.mu.Lock()
	g, ok := p.state.Groups[groupName]
	p.mu.Unlock()
	m, known := p.machine(nodeID)
	if !ok || !known || !contains(g.Machines, nodeID) {
		return p.fail(providers.ErrNotFound, op, "no machine %q in group %q", nodeID, groupName)
	}
	if _, err := p.run(ctx, m, "d="+RemoteDir+"/"+groupName+"\n"+restartAgentScript, nil); err != nil {
		return p.fail(providers.ErrTransient, op, "%s: %v", m.Name, err)
	}
	return nil
}

// StopNode implements providers.Provider: owned machines are not stopped
// (they are the operator's; a stopped machine would not be billed either).
// The refusal is ErrUnsupported, so a stop by the balance, a budget or
// idleness (B6) releases them with their cluster instead.
func (p *Provider) StopNode(ctx context.Context, groupName, nodeID string) error {
	return p.fail(providers.ErrUnsupported, "StopNode", "machines of the ssh provider cannot be stopped; terminate the cluster to free them")
}

// PlaceNode implements providers.Provider: the operator's machines are
// listed in the machines file and placed with their cluster, so none is
// added to a placed group or put in a gone one's place (L10, X5). The
// refusal is ErrUnsupported; the join fails and the cluster stays as it
// was.
func (p *Provider) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (providers.Node, error) {
	return providers.Node{}, p.fail(providers.ErrUnsupported, "PlaceNode",
		"machines of the ssh provider are placed with their cluster; none can be added or replaced alone")
}

// ReleaseNode implements providers.Provider: a machine the group does not
// hold is success; one it holds is freed with its cluster only (a group's
// machines keep their ranks), so that is ErrUnsupported. PlaceNode never
// places one alone, so the join job never releases one.
func (p *Provider) ReleaseNode(ctx context.Context, groupName, nodeID string) error {
	p.mu.Lock()
	g, ok := p.state.Groups[groupName]
	p.mu.Unlock()
	if !ok || !contains(g.Machines, nodeID) {
		return nil
	}
	return p.fail(providers.ErrUnsupported, "ReleaseNode", "machine %q is freed when its cluster is terminated", nodeID)
}

// TerminateGroup implements providers.Provider: on every machine it stops
// the agent and what it started and removes the cluster's files, then
// frees the machines. An unreachable machine keeps the group (and the
// error, ErrTransient) so that the terminate is retried.
func (p *Provider) TerminateGroup(ctx context.Context, groupName string) error {
	p.mu.Lock()
	g, ok := p.state.Groups[groupName]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	var errs []error
	for _, mn := range g.Machines {
		if m, ok := p.machine(mn); ok {
			if err := p.clean(ctx, m, groupName); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", mn, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return p.fail(providers.ErrTransient, "TerminateGroup", "%v", err)
	}
	p.mu.Lock()
	delete(p.state.Groups, groupName)
	err := p.saveLocked()
	p.mu.Unlock()
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// saveLocked writes the state file atomically. Callers hold p.mu.
func (p *Provider) saveLocked() error {
	if p.cfg.StatePath == "" {
		return nil
	}
	data, err := json.MarshalIndent(p.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.cfg.StatePath + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("ssh: state: %w", err)
	}
	return os.Rename(tmp, p.cfg.StatePath)
}

// restartAgentScript (re)starts the agent of the group in $d; agent.env
// holds its arguments. The agent starts with a clean environment: one
// inherited from the SSH session (SSH_CLIENT) makes Debian's bash read
// /etc/bash.bashrc in every step, which fails under `set -u`.
const restartAgentScript = `set -eu
if [ -s "$d/agent.pid" ]; then kill -TERM -- "-$(cat "$d/agent.pid")" 2>/dev/null || kill "$(cat "$d/agent.pid")" 2>/dev/null || true; fi
. "$d/agent.env"
cd "$d"
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" LANG=C.UTF-8 \
  setsid "$d/clusterdeck" agent --server "$SERVER" --token "$TOKEN" --private-ip "$PRIVATE_IP" ${EVERY:+--every "$EVERY"} >>"$d/agent.log" 2>&1 </dev/null &
echo $! > "$d/agent.pid"
`

// cleanScript stops the agent of the group in $d and what it started
// (the software's daemons), waits for them to end (bounded: 10 s, then
// SIGKILL), removes the cluster's files and the cluster's SSH keys (the
// next cluster on the machine, another customer's maybe, must not trust
// them: A3).
const cleanScript = `set +e
pids=""
if [ -s "$d/agent.pid" ]; then a=$(cat "$d/agent.pid"); kill -TERM -- "-$a" 2>/dev/null || kill "$a" 2>/dev/null; pids="$a"; fi
if [ -d /run/systemd/system ]; then systemctl disable --now slurmd slurmctld munge >/dev/null 2>&1; fi
for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do [ -s "$f" ] && { p=$(cat "$f"); kill "$p" 2>/dev/null; pids="$pids $p"; }; rm -f "$f"; done
i=0
while [ $i -lt 50 ]; do
  alive=""
  for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  [ -z "$alive" ] && break
  sleep 0.2; i=$((i+1))
done
for p in $alive; do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
command -v ray >/dev/null 2>&1 && ray stop --force >/dev/null 2>&1
command -v kubeadm >/dev/null 2>&1 && kubeadm reset -f >/dev/null 2>&1
rm -rf "$d" /etc/clusterdeck /etc/profile.d/clusterdeck.sh /etc/default/slurmd /etc/munge/munge.key \
  /etc/slurm/slurm.conf /etc/slurm/gres.conf /etc/slurm/plugins.conf /etc/slurm/cgroup.conf \
  /var/spool/slurmctld/* /var/spool/slurmd/*
[ -f /etc/bash.bashrc ] && sed -i '\#^\. /etc/clusterdeck/env$#d' /etc/bash.bashrc
[ -f /etc/hosts ] && sed -i '/^# BEGIN clusterdeck$/,/^# END clusterdeck$/d' /etc/hosts
` + providers.RemoveKeysScript + `exit 0
`

// startAgent copies the agent binary (checking its SHA-256 on the
// machine) and writes its arguments. The agent itself starts at the first
// DescribeGroup: once PlaceGroup has returned, the server knows every
// machine's address, which the agent learns at check-in.
func (p *Provider) startAgent(ctx context.Context, m Machine, group, server, token string) error {
	bin, err := os.Open(p.cfg.AgentBinary)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	defer bin.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bin); err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := bin.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d := RemoteDir + "/" + group
	out, err := p.run(ctx, m, "set -eu\nd="+d+"\nmkdir -p \"$d\"\nchmod 700 \"$d\"\ncat > \"$d/clusterdeck.new\"\nsha256sum \"$d/clusterdeck.new\"", bin)
	if err != nil {
		return fmt.Errorf("copy the agent: %w", err)
	}
	if got, _, _ := strings.Cut(strings.TrimSpace(out), " "); got != sum {
		return fmt.Errorf("the copied agent does not have SHA-256 %.12s…: %q", sum, clip(out))
	}
	env := fmt.Sprintf("SERVER=%s\nTOKEN=%s\nPRIVATE_IP=%s\n", shellQuote(server), shellQuote(token), shellQuote(m.PrivateIP))
	if p.cfg.AgentEvery > 0 {
		env += "EVERY=" + shellQuote(p.cfg.AgentEvery.String()) + "\n"
	}
	script := "set -eu\nd=" + d + "\nchmod 755 \"$d/clusterdeck.new\"\nmv \"$d/clusterdeck.new\" \"$d/clusterdeck\"\n" +
		"umask 077\ncat > \"$d/agent.env\"\n"
	if _, err := p.run(ctx, m, script, strings.NewReader(env)); err != nil {
		return fmt.Errorf("write the agent's settings: %w", err)
	}
	return nil
}

// clean runs cleanScript for group on m.
func (p *Provider) clean(ctx context.Context, m Machine, group string) error {
	_, err := p.run(ctx, m, "d="+RemoteDir+"/"+group+"\n"+cleanScript, nil)
	return err
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var errHostKey = errors.New("host key mismatch")

// run runs script with sh on m (through sudo when the user is not root),
// feeding stdin, and returns its combined output.
func (p *Provider) run(ctx context.Context, m Machine, script string, stdin io.Reader) (string, error) {
	client, err := p.dial(ctx, m)
	if err != nil {
		return "", err
	}
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	// The session copies stdout and stderr in two goroutines: one buffer
	// behind a lock.
	var out lockedBuffer
	sess.Stdout, sess.Stderr = &out, &out
	if stdin != nil {
		sess.Stdin = stdin
	}
	cmd := "sh -c " + shellQuote(script)
	if m.User != "root" {
		cmd = "sudo -n " + cmd
	}
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		client.Close()
		return out.String(), ctx.Err()
	}
	if err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, clip(out.String()))
	}
	return out.String(), nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[len(s)-300:]
	}
	return s
}

// dial connects to m, retrying a connection that fails before the SSH
// handshake completes (refused, reset, or closed by sshd while it is
// starting or shedding load under MaxStartups) a few times with a short
// backoff. A host key mismatch or a refused key is final at once.
func (p *Provider) dial(ctx context.Context, m Machine) (*gossh.Client, error) {
	var err error
	wait := p.dialBackoff
	if wait == 0 {
		wait = 250 * time.Millisecond
	}
	for attempt := 0; ; attempt, wait = attempt+1, wait*2 {
		var c *gossh.Client
		if c, err = p.dialOnce(ctx, m); err == nil || attempt == 3 || !retryableDial(err) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// retryableDial reports a failure of the connection itself, not of trust.
func retryableDial(err error) bool {
	if errors.Is(err, errHostKey) || strings.Contains(err.Error(), "unable to authenticate") {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "connection closed") ||
		strings.Contains(err.Error(), "handshake failed")
}

// dialOnce connects to m once, verifying its host key: against the machines
// file, else against the key recorded at first use (recording it then).
func (p *Provider) dialOnce(ctx context.Context, m Machine) (*gossh.Client, error) {
	key := m.PrivateKey
	if len(key) == 0 {
		var err error
		if key, err = os.ReadFile(m.KeyPath); err != nil {
			return nil, fmt.Errorf("read the key of %s: %w", m.Name, err)
		}
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("parse the key of %s: %v", m.Name, errors.Unwrap(err))
	}
	cfg := &gossh.ClientConfig{
		User:    m.User,
		Auth:    []gossh.AuthMethod{gossh.PublicKeys(signer)},
		Timeout: p.cfg.DialTimeout,
		HostKeyCallback: func(_ string, _ net.Addr, got gossh.PublicKey) error {
			return p.checkHostKey(m, got)
		},
	}
	addr := net.JoinHostPort(m.Host, strconv.Itoa(m.Port))
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c, chans, reqs, err := gossh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return gossh.NewClient(c, chans, reqs), nil
}

func (p *Provider) checkHostKey(m Machine, got gossh.PublicKey) error {
	gotLine := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(got)))
	want := m.HostKey
	if want == "" {
		p.mu.Lock()
		defer p.mu.Unlock()
		want = p.state.HostKeys[m.Name]
		if want == "" { // trust on first use, recorded
			p.state.HostKeys[m.Name] = gotLine
			return p.saveLocked()
		}
	}
	wantKey, _, _, _, err := parseAuthorizedKey(want)
	if err != nil {
		return err
	}
	if !bytes.Equal(wantKey.Marshal(), got.Marshal()) {
		return fmt.Errorf("%w: %s presented %s %s, expected %s", errHostKey, m.Name, got.Type(),
			gossh.FingerprintSHA256(got), gossh.FingerprintSHA256(wantKey))
	}
	return nil
}

func parseAuthorizedKey(line string) (gossh.PublicKey, string, []string, []byte, error) {
	return gossh.ParseAuthorizedKey([]byte(line))
}

// KeyFingerprint is the SHA-256 fingerprint of an authorized_keys line.
func KeyFingerprint(line string) string {
	k, _, _, _, err := parseAuthorizedKey(line)
	if err != nil {
		return ""
	}
	return gossh.FingerprintSHA256(k)
}

var _ providers.Provider = (*Provider)(nil)

// StatePathFor is the default state file beside a machines file.
func StatePathFor(machinesFile string) string {
	return filepath.Join(filepath.Dir(machinesFile), strings.TrimSuffix(filepath.Base(machinesFile), filepath.Ext(machinesFile))+".state.json")
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// StopRefusal implements providers.StopRefuser: the customer's Stop is
// refused ahead with this sentence (StopNode is always ErrUnsupported).
func (p *Provider) StopRefusal() string {
	return "The operator's own machines cannot be stopped: terminate the cluster to free them and end its billing."
}
