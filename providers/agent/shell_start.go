package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

var _ providers.Starter = Shell{}

// runDir is where the real shell keeps the start command's output and exit
// code: /run is emptied at every boot, so the files mark "started in this boot".
func (s Shell) runDir() string {
	if s.RunDir != "" {
		return s.RunDir
	}
	return "/run/clusterdeck"
}

// Start runs cmd with bash, detached from the agent, as cmd.User (through
// runuser when the agent runs as someone else) in cmd.Env, once per boot:
// its output goes to <step>.log and its exit code to <step>.exit in the run
// directory. When the log is already there (the agent restarted in the same
// boot) it follows that run instead of starting another.
func (s Shell) Start(ctx context.Context, cmd providers.Command) (providers.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := s.runDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, cmd.Step+".log")
	exitPath := filepath.Join(dir, cmd.Step+".exit")
	p := &shellProcess{log: logPath, exit: exitPath, grace: s.StopGrace}
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return p, nil // started earlier in this boot: follow it
	}
	if err != nil {
		return nil, err
	}
	defer out.Close()
	inner := "bash -c " + shellQuote(cmd.Script)
	if me, err := user.Current(); cmd.User != "" && (err != nil || me.Username != cmd.User) {
		inner = "runuser -u " + shellQuote(cmd.User) + " -- " + inner
	}
	c := exec.Command("bash", "-c", inner+"\necho $? > "+shellQuote(exitPath+".tmp")+" && mv "+shellQuote(exitPath+".tmp")+" "+shellQuote(exitPath))
	c.Stdout, c.Stderr = out, out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: a run's stop signals every process of it (X17)
	c.Env = os.Environ()
	for k, v := range cmd.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	if err := c.Start(); err != nil {
		_ = os.Remove(logPath)
		return nil, err
	}
	p.pgid = c.Process.Pid
	go func() { _ = c.Wait() }() // reap it; the exit file says how it ended
	return p, nil
}

// shellProcess follows a start command through its files.
type shellProcess struct {
	log, exit string
	offset    int64
	partial   string
	done      bool
	pgid      int           // its process group; 0 when followed from an earlier agent
	grace     time.Duration // between SIGUSR1 and SIGTERM; 0 = none
}

// Warn is X17's warning of a planned stop: SIGUSR1 to the command's
// process group; it goes on running.
func (p *shellProcess) Warn() {
	if p.pgid > 0 && !p.done {
		_ = syscall.Kill(-p.pgid, syscall.SIGUSR1)
	}
}

// Stop is X17's warned stop: SIGUSR1 to the command's process group (the
// command checkpoints), then after the grace SIGTERM.
func (p *shellProcess) Stop() {
	if p.pgid <= 0 || p.done {
		return
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGUSR1)
	grace, pgid := p.grace, p.pgid
	if grace <= 0 {
		grace = 30 * time.Second
	}
	time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGTERM) }) // the agent's loop goes on meanwhile
}

// Poll reads the log's new complete lines and, once the exit file is
// there and the log is read to its end, the exit code.
func (p *shellProcess) Poll() ([]string, *providers.Exit) {
	if p.done {
		return nil, nil
	}
	data := p.readNew()
	text := p.partial + string(data)
	lines := strings.Split(text, "\n")
	p.partial = lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	raw, err := os.ReadFile(p.exit)
	if err != nil {
		return lines, nil
	}
	if rest := p.readNew(); len(rest) > 0 { // written just before it ended
		more := strings.Split(p.partial+string(rest), "\n")
		p.partial, lines = more[len(more)-1], append(lines, more[:len(more)-1]...)
	}
	if p.partial != "" {
		lines, p.partial = append(lines, p.partial), ""
	}
	p.done = true
	code, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	at := time.Now()
	if fi, err := os.Stat(p.exit); err == nil {
		at = fi.ModTime()
	}
	if err != nil {
		return lines, &providers.Exit{Code: -1, At: at, Err: "unreadable exit code " + strconv.Quote(string(raw))}
	}
	return lines, &providers.Exit{Code: code, At: at}
}

func (p *shellProcess) readNew() []byte {
	f, err := os.Open(p.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(p.offset, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	p.offset += int64(len(data))
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}
