package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// PortsStep is the step an agent runs to open the workload's ports between
// the nodes (and publish them where the machine kind allows); KeysStep adds
// the workload's SSH keys to the SSH user's authorized_keys.
const (
	PortsStep = "ports"
	KeysStep  = "ssh-keys"
)

// Ran is one workload step a simulated machine's agent ran: the ports step
// (Run) or the start command (Start), with the user and env it ran with.
type Ran struct {
	At     time.Time         `json:"at"`
	Step   string            `json:"step"`
	Script string            `json:"script"`
	User   string            `json:"user,omitempty"` // "" for the ports step (root)
	Env    map[string]string `json:"env,omitempty"`
}

// Ran lists the workload steps machine index of a group ran, oldest first
// (a restarted machine keeps the steps of its earlier boots).
func (c *Cloud) Ran(groupName string, index int) (ran []Ran) {
	var err error
	if err = c.open(context.Background()); err != nil {
		c.log.Error("sim: ran", "error", err)
		return nil
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || index < 0 || index >= len(g.nodes) {
		return nil
	}
	return append([]Ran(nil), g.nodes[index].ran...)
}

// keys plays adding the SSH keys (it prints nothing, like the script).
func (e *executor) keys(ctx context.Context, script string) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return "", err
	}
	e.n.ran = append(e.n.ran, Ran{At: now, Step: KeysStep, Script: script})
	return "", nil
}

// ports plays opening the ports: what ufw prints for each rule.
func (e *executor) ports(ctx context.Context, script string) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return "", err
	}
	e.n.ran = append(e.n.ran, Ran{At: now, Step: PortsStep, Script: script})
	var b strings.Builder
	for range e.n.g.nodes {
		b.WriteString("Rule added\n")
	}
	for range e.n.g.workload.Ports {
		b.WriteString("Rule added\nRule added (v6)\n")
	}
	return b.String(), nil
}

var _ providers.Starter = (*executor)(nil)

// Start plays the start command on the machine's clock. The simulated shell
// knows `echo WORDS` (a line of output), `sleep SECONDS` (time passes),
// `exit N` and `false` (the command ends with that code); commands are
// separated by newlines, ";" or "&&". Anything else is a program that runs
// until the machine stops, like a server. The end of the script is exit 0.
func (e *executor) Start(ctx context.Context, cmd providers.Command) (_ providers.Process, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := e.c
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return nil, err
	}
	e.n.ran = append(e.n.ran, Ran{At: now, Step: cmd.Step, Script: cmd.Script, User: cmd.User, Env: maps.Clone(cmd.Env)})
	p := &process{e: e, epoch: e.n.agentEpoch, env: cmd.Env}
	p.play(cmd.Script, now)
	return p, nil
}

// process is a start command playing on a simulated machine.
type process struct {
	e     *executor
	epoch int
	env   map[string]string
	train *training // the training builtin's state; nil for other scripts
	lines []timedLine
	end   *providers.Exit // nil: runs until the machine stops
	done  bool
}

type timedLine struct {
	at   time.Time
	text string
}

// play lays the script out on the clock from t.
func (p *process) play(script string, t time.Time) {
	for _, part := range strings.FieldsFunc(strings.ReplaceAll(script, "&&", ";"), func(r rune) bool { return r == '\n' || r == ';' }) {
		word, rest, _ := strings.Cut(strings.TrimSpace(part), " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "", "true", ":", "set", "cd", "export", "#":
		case "echo":
			p.lines = append(p.lines, timedLine{t, strings.Trim(rest, `"'`)})
		case "sleep":
			if secs, err := strconv.Atoi(rest); err == nil && secs > 0 {
				t = t.Add(time.Duration(secs) * time.Second)
			}
		case TrainProgram:
			p.startTraining(rest, t)
			return
		case "exit", "false":
			code := 1
			if word == "exit" {
				code, _ = strconv.Atoi(rest)
			}
			p.end = &providers.Exit{Code: code, At: t}
			return
		default:
			if strings.HasPrefix(word, "#") {
				continue
			}
			return // a program that keeps running
		}
	}
	p.end = &providers.Exit{Code: 0, At: t}
}

// Poll returns the lines due by now and the exit once it is due. A machine
// that stopped or rebooted ends the command.
func (p *process) Poll() ([]string, *providers.Exit) {
	c := p.e.c
	var err error
	if err = p.e.enter(context.Background()); errors.Is(err, errNoMachine) {
		if p.done {
			return nil, nil
		}
		p.done = true
		return nil, &providers.Exit{Code: -1, At: c.now(), Err: "the machine no longer exists"}
	} else if err != nil {
		c.log.Warn("sim: poll start command", "error", err)
		return nil, nil // asked again on the next poll
	}
	defer c.close(&err)
	if p.done {
		return nil, nil
	}
	now := c.now()
	if st, _ := p.e.n.state(now); st == providers.NodeRunning && p.e.n.agentEpoch == p.epoch {
		p.checkpoint(now) // the machine lives: its rank 0 wrote every step finished by now
	}
	var out []string
	for len(p.lines) > 0 && !p.lines[0].at.After(now) {
		out = append(out, p.lines[0].text)
		p.lines = p.lines[1:]
	}
	if st, _ := p.e.n.state(now); st != providers.NodeRunning || p.e.n.agentEpoch != p.epoch {
		p.done = true
		return out, &providers.Exit{Code: -1, At: now, Err: fmt.Sprintf("the machine is %s", st)}
	}
	if p.end != nil && len(p.lines) == 0 && !p.end.At.After(now) {
		p.done = true
		return out, p.end
	}
	return out, nil
}

var _ providers.Stopper = (*process)(nil)

// Stop plays a run's warned stop (X17): the command gets SIGUSR1 and then
// SIGTERM at once on the machine's clock; it ends with 143 and prints
// nothing more.
func (p *process) Stop() {
	c := p.e.c
	var err error
	if err = p.e.enter(context.Background()); err != nil {
		return // the machine is gone: the next Poll ends the command
	}
	defer c.close(&err)
	if p.done {
		return
	}
	now := c.now()
	p.checkpoint(now) // SIGUSR1: the last finished step is checkpointed; the step under way is lost
	p.lines = nil
	p.end = &providers.Exit{Code: 143, At: now, Err: "stopped (SIGUSR1, then SIGTERM)"}
}

// TrainProgram is the simulated shell's training program (X17):
// `clusterdeck-sim-train STEPS STEP_SECONDS [--resume]` runs STEPS steps of
// STEP_SECONDS each on the machine's clock. Rank 0 (NODE_RANK=0) writes its
// step to the checkpoint directory ($CLUSTERDECK_CHECKPOINT_DIR on the
// group's volume; kept by the cloud across machines) after every step.
// With --resume it starts after the checkpointed step; without it, it
// refuses to repeat a checkpointed step (exit 3). It ends 0 after STEPS.
const TrainProgram = "clusterdeck-sim-train"

// training is a running training program.
type training struct {
	key   string // the checkpoint's place: volume (or group) and directory
	rank0 bool
	first int // the first step this start runs
	steps int
	step  time.Duration
	t0    time.Time
}

func (p *process) startTraining(args string, t time.Time) {
	f := strings.Fields(args)
	steps, secs := 0, 0
	if len(f) >= 2 {
		steps, _ = strconv.Atoi(f[0])
		secs, _ = strconv.Atoi(f[1])
	}
	if steps <= 0 || secs <= 0 {
		p.lines = append(p.lines, timedLine{t, "usage: " + TrainProgram + " STEPS STEP_SECONDS [--resume]"})
		p.end = &providers.Exit{Code: 2, At: t}
		return
	}
	if p.e == nil {
		return // replayed for the GPU samples: it trains until it ends or is stopped
	}
	c := p.e.c
	if c.ckpt == nil {
		c.ckpt = map[string]int{}
	}
	where := p.e.n.g.name
	if v := p.e.n.g.workload.Volume; v != nil && v.ID != "" {
		where = v.ID
	}
	dir := p.env["CLUSTERDECK_CHECKPOINT_DIR"]
	tr := &training{key: where + ":" + dir, rank0: p.env["NODE_RANK"] == "0", steps: steps, step: time.Duration(secs) * time.Second, t0: t, first: 1}
	done := c.ckpt[tr.key]
	resume := strings.Contains(args, "--resume")
	switch {
	case dir == "":
		p.lines = append(p.lines, timedLine{t, "CLUSTERDECK_CHECKPOINT_DIR is not set"})
		p.end = &providers.Exit{Code: 2, At: t}
		return
	case !resume && done > 0:
		p.lines = append(p.lines, timedLine{t, fmt.Sprintf("refusing to repeat step 1: %s holds step %d (start with --resume)", dir, done)})
		p.end = &providers.Exit{Code: 3, At: t}
		return
	case resume:
		tr.first = done + 1
		p.lines = append(p.lines, timedLine{t, fmt.Sprintf("resuming from %s at step %d", dir, tr.first)})
	}
	p.train = tr
	end := t.Add(time.Duration(steps-tr.first+1) * tr.step)
	p.lines = append(p.lines, timedLine{end, fmt.Sprintf("step %d done; training finished", steps)})
	p.end = &providers.Exit{Code: 0, At: end}
}

// checkpoint records rank 0's steps finished by now (the checkpoint write
// after each step).
func (p *process) checkpoint(now time.Time) {
	tr := p.train
	if tr == nil || !tr.rank0 || p.done {
		return
	}
	d := tr.first - 1 + int(now.Sub(tr.t0)/tr.step)
	d = min(d, tr.steps)
	if d > p.e.c.ckpt[tr.key] {
		p.e.c.ckpt[tr.key] = d
	}
}

// Checkpoint is the step the training program's checkpoint at dir on the
// group's volume (or in the group, without one) holds (X17).
func (c *Cloud) Checkpoint(groupOrVolume, dir string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ckpt[groupOrVolume+":"+dir]
}

var _ providers.Warner = (*process)(nil)

// Warn plays SIGUSR1 before a planned stop (X17): the training program
// checkpoints the last finished step now and goes on.
func (p *process) Warn() {
	c := p.e.c
	var err error
	if err = p.e.enter(context.Background()); err != nil {
		return
	}
	defer c.close(&err)
	p.checkpoint(c.now())
}
