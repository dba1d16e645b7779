package agent

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/providers"
)

// The mounts step (V4) runs beside the agent's loop: a worker may wait
// minutes for node-0's NFS export, and meanwhile the agent keeps
// heartbeating, reporting the step as mounting, and seeing its cluster end
// (which cancels the step). The rest of the start order (keys, ports, the
// start command) is carried out once the step ended; the start command is
// not started when it failed, since the workload expects /shared and the
// volume there (N3).

// mounter is this boot's mounts step.
type mounter struct {
	proc   providers.Process // nil before the step began and once it ended
	cancel context.CancelFunc
	state  *agentapi.MountsState
	last   string // the step's last output line, for a failure's reason
}

// report is the state to send with the next heartbeat (nil before the step).
func (m *mounter) report() *agentapi.MountsState {
	if m.state == nil {
		return nil
	}
	st := *m.state
	return &st
}

// ended reports whether the step is over (or was never begun).
func (m *mounter) ended() bool { return m.proc == nil }

// startMounts begins the mounts step, beside the loop.
func (a *Agent) startMounts(m agentapi.Mounts) {
	ctx, cancel := context.WithCancel(a.life)
	a.mounts.cancel = cancel
	a.mounts.state = &agentapi.MountsState{State: agentapi.MountsMounting, StartedAt: a.cfg.Now().UTC()}
	script := MountsScript(a.self.Rank, m)
	a.Log("mounting %s", mountsWhat(m, a.self.Rank))
	var proc providers.Process
	var err error
	if ss, ok := a.cfg.Exec.(providers.StepStarter); ok {
		proc, err = ss.StartStep(ctx, MountsStep, script)
	} else {
		proc = runInBackground(ctx, a.cfg.Exec, MountsStep, script, a.cfg.Now)
	}
	if err != nil {
		cancel()
		a.mountsEnded(-1, err.Error())
		return
	}
	a.mounts.proc = proc
}

// mountsWhat says what node rank mounts, for its log.
func mountsWhat(m agentapi.Mounts, rank int) string {
	var what []string
	switch {
	case m.Shared && rank == 0:
		what = append(what, "/shared (exported to the other nodes)")
	case m.Shared:
		what = append(what, "/shared from node-0 ("+m.Head+")")
	}
	if m.Volume != nil && rank == 0 {
		what = append(what, "volume "+m.Volume.Name+" at "+m.Volume.Path)
	}
	if len(what) == 0 {
		return "nothing"
	}
	return strings.Join(what, " and ")
}

// followMounts moves the step's new output into the log and records its
// end; it reports whether the step ended in this call.
func (a *Agent) followMounts() bool {
	if a.mounts.proc == nil {
		return false
	}
	lines, exit := a.mounts.proc.Poll()
	for _, l := range loggable(strings.Join(lines, "\n")) {
		a.Log("%s", l)
		a.mounts.last = l
	}
	if exit == nil {
		return false
	}
	a.mounts.proc = nil
	a.mounts.cancel()
	switch {
	case exit.Err != "":
		a.mountsEnded(exit.Code, exit.Err)
	case exit.Code != 0:
		why := fmt.Sprintf("the mounts step exited with code %d", exit.Code)
		if a.mounts.last != "" {
			why += ": " + a.mounts.last
		}
		a.mountsEnded(exit.Code, why)
	default:
		a.mountsEnded(0, "")
	}
	return true
}

// mountsEnded records the step's end: mounted, or failed with why.
func (a *Agent) mountsEnded(code int, why string) {
	now := a.cfg.Now().UTC()
	s := a.mounts.state
	s.EndedAt = &now
	if code == 0 && why == "" {
		s.State = agentapi.MountsMounted
		a.Log("mounted")
		return
	}
	s.State, s.Error = agentapi.MountsFailed, why
	a.Log("could not mount the shared folder or the volume: %s", why)
}

// stopMounts cancels the mounts step, if it runs, and waits a little for
// it to end (a killed shell's children may hold its output open).
func (a *Agent) stopMounts() {
	if a.mounts.cancel != nil {
		a.mounts.cancel()
	}
	if bg, ok := a.mounts.proc.(*background); ok {
		select {
		case <-bg.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// background is a step run with the executor's Run in a goroutine,
// followed like a started command.
type background struct {
	mu    sync.Mutex
	lines []string
	exit  *providers.Exit
	taken bool
	done  chan struct{}
}

// runInBackground runs step with ex.Run beside the caller; ending ctx
// cancels it.
func runInBackground(ctx context.Context, ex providers.Executor, step, script string, now func() time.Time) *background {
	b := &background{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		out, err := ex.Run(ctx, step, script)
		exit := &providers.Exit{At: now()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case ctx.Err() != nil:
			exit.Code, exit.Err = -1, "cancelled: "+context.Cause(ctx).Error()
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			exit.Code = ee.ExitCode()
		default:
			exit.Code, exit.Err = -1, err.Error()
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = strings.Split(strings.TrimRight(out, "\n"), "\n")
		b.exit = exit
	}()
	return b
}

// Poll returns the step's output and how it ended, once it ended.
func (b *background) Poll() ([]string, *providers.Exit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exit == nil || b.taken {
		return nil, nil
	}
	b.taken = true
	return b.lines, b.exit
}
