package agent

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/providers"
)

// The workload (N3): when the server says the cluster is ready, the agent
// mounts /shared and the volume (V4, beside its loop: see mounter), then
// adds the SSH keys for the SSH user, opens the ports to its peers (and publishes them where the machine kind
// allows), then starts the start command the machine got at placement —
// once per boot: a later order in the same agent changes nothing, and the
// real shell keeps a marker in /run, which every boot empties. The
// command's output goes into the node's log; its state rides on every
// heartbeat.

// KeysStep, PortsStep and StartStep name the workload's steps on the executor.
const (
	KeysStep   = "ssh-keys"
	PortsStep  = "ports"
	StartStep  = "start"
	MountsStep = "mounts" // V4: /shared and the volume, before anything else
)

// starter is the start command of this boot.
type starter struct {
	ordered bool                // the start order came
	order   agentapi.StartOrder // the order, kept while the mounts step runs
	done    bool                // the order was carried out
	proc    providers.Process
	state   *agentapi.StartState
	warned  int // the generation (+1) a planned stop's SIGUSR1 went to; 0 = none
}

// report is the state to send with the next heartbeat (nil before the start).
func (s *starter) report() *agentapi.StartState {
	if s.state == nil {
		return nil
	}
	st := *s.state
	return &st
}

// startWorkload takes the start order, once: the mounts step (V4) begins
// beside the loop, and the rest waits for its end (continueWorkload).
func (a *Agent) startWorkload(ctx context.Context, o agentapi.StartOrder) {
	if a.start.ordered {
		a.runOrder(ctx, o) // X17: a run's stop or restart
		return
	}
	if o.Stop {
		return // nothing runs yet in this boot: nothing to stop
	}
	a.start.ordered, a.start.order = true, o
	if o.Mounts != nil {
		a.startMounts(*o.Mounts)
		a.followMounts() // a step that takes no time has ended already
	}
	a.continueWorkload(ctx)
}

// continueWorkload carries out the start order once the mounts step ended:
// the SSH keys, the ports, then the start command — not started when the
// mounts failed, since the workload expects /shared and the volume (N3).
func (a *Agent) continueWorkload(ctx context.Context) {
	if !a.start.ordered || a.start.done || !a.mounts.ended() {
		return
	}
	a.start.done = true
	o, w := a.start.order, a.cfg.Workload
	if len(w.SSHKeys) > 0 {
		a.runStep(ctx, KeysStep, KeysScript(o.User, w.SSHKeys), "could not install the SSH keys")
	}
	var peers []string
	for _, p := range a.self.Peers {
		if p.Rank != a.self.Rank {
			peers = append(peers, p.Address)
		}
	}
	if len(peers) > 0 || len(w.Ports) > 0 {
		a.runStep(ctx, PortsStep, PortsScript(peers, w.Ports, o.Publish), "could not open the ports")
	}
	if strings.TrimSpace(w.StartCommand) == "" {
		a.start.state = &agentapi.StartState{State: agentapi.StartNone, StartedAt: a.cfg.Now().UTC()}
		return
	}
	now := a.cfg.Now().UTC()
	a.start.state = &agentapi.StartState{State: agentapi.StartRunning, StartedAt: now, Generation: o.Generation}
	if m := a.mounts.state; m != nil && m.State == agentapi.MountsFailed {
		a.startFailed("not started: the mounts failed (" + m.Error + ")")
		return
	}
	a.launch(ctx, o)
}

// launch starts the start command of order o (the resume command of a
// run's later generation, X17) and follows it.
func (a *Agent) launch(ctx context.Context, o agentapi.StartOrder) {
	w := a.cfg.Workload
	env := maps.Clone(w.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, o.Env) // N2's variables win; the user's cannot have their names
	st, ok := a.cfg.Exec.(providers.Starter)
	if !ok {
		a.startFailed("this machine cannot start long-running commands")
		return
	}
	script, step := w.StartCommand, StartStep
	if o.Generation > 0 {
		script, step = o.Script, StartStep+"-"+strconv.Itoa(o.Generation)
	}
	proc, err := st.Start(ctx, providers.Command{Step: step, Script: script, User: o.User, Env: env})
	if err != nil {
		a.startFailed(err.Error())
		return
	}
	a.start.proc = proc
	a.Log("start command started as %s", o.User)
	a.followStart()
}

// runOrder carries out a run's order after the first start (X17): Stop
// stops the running command; a later generation stops it and starts the
// resume command. Every stop warns first: SIGUSR1, then SIGTERM
// (providers.Stopper); a machine that cannot signal only loses the
// process. An order for the generation running already changes nothing.
func (a *Agent) runOrder(ctx context.Context, o agentapi.StartOrder) {
	if !a.start.done {
		return
	}
	cur := 0
	if a.start.state != nil {
		cur = a.start.state.Generation
	}
	switch {
	case o.Warn && o.Generation == cur:
		if a.start.warned != cur+1 && a.start.proc != nil {
			a.start.warned = cur + 1
			if wp, ok := a.start.proc.(providers.Warner); ok {
				a.Log("a planned stop comes: SIGUSR1 to the start command so it checkpoints")
				wp.Warn()
			}
		}
	case o.Stop && o.Generation >= cur:
		a.stopCommand("the run stops its ranks while a machine is replaced")
	case !o.Stop && o.Generation > cur:
		a.stopCommand("the run restarts its ranks with the resume command")
		a.start.order = o
		now := a.cfg.Now().UTC()
		a.start.state = &agentapi.StartState{State: agentapi.StartRunning, StartedAt: now, Generation: o.Generation}
		a.launch(ctx, o)
	}
}

// stopCommand stops the running start command, if any, and records its end.
func (a *Agent) stopCommand(why string) {
	if a.start.proc == nil {
		return
	}
	if sp, ok := a.start.proc.(providers.Stopper); ok {
		a.Log("%s: SIGUSR1, then SIGTERM to the start command", why)
		sp.Stop()
	}
	a.followStart()
	if a.start.proc != nil { // it did not end: forget it
		a.start.proc = nil
		code, now := -1, a.cfg.Now().UTC()
		s := a.start.state
		s.State, s.ExitCode, s.EndedAt, s.Error = agentapi.StartFailed, &code, &now, "stopped: "+why
	}
}

// runStep runs one workload step; its output and failure go to the log.
func (a *Agent) runStep(ctx context.Context, step, script, failure string) {
	out, err := a.cfg.Exec.Run(ctx, step, script)
	for _, line := range loggable(out) {
		a.Log("%s", line)
	}
	if err != nil {
		a.Log("%s: %v", failure, err)
	}
}

// KeysScript makes the workload's public keys exactly the cluster keys of
// user's authorized_keys: the block between providers.KeysBegin and KeysEnd is
// replaced by them (a key already trusted outside the block, the
// operator's, is left where it is). The provider installs them at
// placement where it can; this keeps every node's set the same (N3).
func KeysScript(user string, keys []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user=%s\n", shellQuote(user))
	b.WriteString(`home=$(getent passwd "$user" | cut -d: -f6)
[ -n "$home" ] || { echo "no user $user on this machine" >&2; exit 1; }
install -d -m 700 -o "$user" "$home/.ssh"
f="$home/.ssh/authorized_keys"
touch "$f"
sed -i '/^` + providers.KeysBegin + `$/,/^` + providers.KeysEnd + `$/d' "$f"
t="$f.clusterdeck"
printf '%s\n' '` + providers.KeysBegin + `' > "$t"
add_key() { grep -qxF "$1" "$f" "$t" || printf '%s\n' "$1" >> "$t"; }
`)
	for _, k := range keys {
		fmt.Fprintf(&b, "add_key %s\n", shellQuote(strings.TrimSpace(k)))
	}
	b.WriteString(`printf '%s\n' '` + providers.KeysEnd + `' >> "$t"
cat "$t" >> "$f" && rm -f "$t"
chown "$user" "$f" && chmod 600 "$f"
`)
	return b.String()
}

func (a *Agent) startFailed(why string) {
	code, now := -1, a.cfg.Now().UTC()
	a.start.state.State, a.start.state.ExitCode, a.start.state.EndedAt, a.start.state.Error = agentapi.StartFailed, &code, &now, why
	a.Log("start command could not start: %s", why)
}

// followStart moves the start command's new output into the log and
// records its end.
func (a *Agent) followStart() {
	if a.start.proc == nil {
		return
	}
	lines, exit := a.start.proc.Poll()
	for _, l := range lines {
		a.Log("%s", l)
	}
	if exit == nil {
		return
	}
	a.start.proc = nil
	code, at := exit.Code, exit.At.UTC()
	s := a.start.state
	s.ExitCode, s.EndedAt, s.State = &code, &at, agentapi.StartExited
	if exit.Err != "" {
		s.State, s.Error = agentapi.StartFailed, exit.Err
		a.Log("start command ended: %s", exit.Err)
		return
	}
	a.Log("start command exited with code %d", code)
}

// PortsScript opens every port to the peers (N2: every port open between
// nodes) and, when publish, the workload's ports to everyone: with ufw when
// it is active, else with iptables, skipping rules already there.
func PortsScript(peers []string, ports []int, publish bool) string {
	var b strings.Builder
	b.WriteString(`ufw_on() { command -v ufw >/dev/null 2>&1 && ufw status 2>/dev/null | grep -q 'Status: active'; }
allow_peer() {
  if ufw_on; then ufw allow from "$1"; return; fi
  command -v iptables >/dev/null 2>&1 || return 0
  iptables -C INPUT -s "$1" -j ACCEPT 2>/dev/null || iptables -I INPUT -s "$1" -j ACCEPT
}
publish_port() {
  if ufw_on; then ufw allow "$1/tcp"; return; fi
  command -v iptables >/dev/null 2>&1 || return 0
  iptables -C INPUT -p tcp --dport "$1" -j ACCEPT 2>/dev/null || iptables -I INPUT -p tcp --dport "$1" -j ACCEPT
}
`)
	for _, p := range peers {
		fmt.Fprintf(&b, "allow_peer %s\n", shellQuote(p))
	}
	if publish {
		for _, p := range ports {
			fmt.Fprintf(&b, "publish_port %s\n", strconv.Itoa(p))
		}
	}
	return b.String()
}
