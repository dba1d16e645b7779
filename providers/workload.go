package providers

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Workload is what every machine of a group runs, identical on each (N3):
// the placement hands it to the machines (a real cloud through the image,
// its firewall and the start-up script; the simulated one to its in-process
// agents), and each machine's agent opens the ports and starts the start
// command once per boot when the server says the cluster is ready.
type Workload struct {
	Image        string            `json:"image,omitempty"`
	Env          map[string]string `json:"env,omitempty"` // the user's env; the server adds N2's
	Ports        []int             `json:"ports,omitempty"`
	SSHKeys      []string          `json:"sshKeys,omitempty"`
	StartCommand string            `json:"startCommand,omitempty"`
	Volume       *Volume           `json:"volume,omitempty"` // V4: on the head
}

// Workload is the request's workload, copied.
func (r PlaceRequest) Workload() Workload {
	return Workload{Image: r.Image, Env: maps.Clone(r.Env), Ports: slices.Clone(r.Ports),
		SSHKeys: slices.Clone(r.SSHKeys), StartCommand: r.StartCommand, Volume: cloneVolume(r.Volume)}
}

func cloneVolume(v *Volume) *Volume {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// Command is a long-running command an agent starts on its machine: the
// start command, run by bash as User in Env.
type Command struct {
	Step   string // "start"
	Script string
	User   string // the machine's SSH user
	Env    map[string]string
}

// Exit is how a started command ended.
type Exit struct {
	Code int       // the exit code; -1 when it did not exit by itself (killed, could not start)
	At   time.Time // when it ended
	Err  string    // why it could not run or was killed; "" for a normal exit
}

// Process is a started command. Poll never blocks.
type Process interface {
	// Poll returns the output lines written since the last Poll and, once
	// the command ended and every line was returned, how it ended.
	Poll() (lines []string, exit *Exit)
}

// Stopper is a Process that can be stopped (X17): it warns the command
// with SIGUSR1 so it can checkpoint, then ends it with SIGTERM; the next
// Poll returns how it ended.
type Stopper interface {
	Stop()
}

// Warner is a Process that can be warned of a planned stop (X17): it gets
// SIGUSR1 and goes on running, so it can checkpoint.
type Warner interface {
	Warn()
}

// Starter is an Executor that can start a long-running command and follow
// it (the real shell and the simulated machines both are).
type Starter interface {
	Start(ctx context.Context, cmd Command) (Process, error)
}

// StepStarter is an Executor that starts a step without waiting for it and
// is followed like a started command: the agent runs a long step (the
// mounts, V4) through it beside its loop. The simulated machines are one
// (their steps take no time, so the step has ended by the first Poll);
// with any other Executor the agent runs the step's Run in a goroutine.
// Ending ctx cancels the step.
type StepStarter interface {
	StartStep(ctx context.Context, step, script string) (Process, error)
}

// KeysBegin and KeysEnd delimit the block of a machine's authorized_keys
// that holds its cluster's keys (A3, N3): the agent replaces it whole at
// each start, and a machine of one's own has it removed when released
// (RemoveKeysScript), so the next cluster there never trusts the last
// one's keys.
const (
	KeysBegin = "# BEGIN clusterdeck keys"
	KeysEnd   = "# END clusterdeck keys"
)

// RemoveKeysScript removes the cluster keys' block from every user's
// authorized_keys (sh).
const RemoveKeysScript = `getent passwd | cut -d: -f6 | sort -u | while read -r h; do
  [ -f "$h/.ssh/authorized_keys" ] && sed -i '/^` + KeysBegin + `$/,/^` + KeysEnd + `$/d' "$h/.ssh/authorized_keys"
done
`
