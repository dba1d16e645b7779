package cloudkit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Locks serialises placing, rolling back and terminating one group, so
// that two callers (two overlapping job ticks) never place a rank twice or
// place into a group being terminated. The zero value is ready.
type Locks struct {
	mu     sync.Mutex
	groups map[string]*sync.Mutex
}

// Lock holds group's lock until the returned func is called.
func (l *Locks) Lock(group string) func() {
	l.mu.Lock()
	if l.groups == nil {
		l.groups = map[string]*sync.Mutex{}
	}
	m, ok := l.groups[group]
	if !ok {
		m = &sync.Mutex{}
		l.groups[group] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// MemberName is the name of a group's machine i: "<group>-<i>".
func MemberName(group string, i int) string { return group + "-" + strconv.Itoa(i) }

// Rank reads a machine's rank from its tag (or, failing that, from the
// suffix of its name, see MemberName).
func Rank(tag, name string) (int, bool) {
	if tag == "" {
		if k := strings.LastIndexByte(name, '-'); k >= 0 {
			tag = name[k+1:]
		}
	}
	i, err := strconv.Atoi(tag)
	return i, err == nil && i >= 0
}

// AtLocation puts the placement's location on a neutral error that has none.
func AtLocation(err error, location string) error {
	var pe *providers.Error
	if errors.As(err, &pe) && pe.Location == "" {
		pe.Location = location
	}
	return err
}

// RolledBack returns a placement's failure after terminating whatever
// the group holds, so a failed placement leaves nothing billed behind; a
// rollback that fails too is joined to it. The caller's context may be
// what failed: cleaning up has its own two minutes.
func RolledBack(ctx context.Context, provider, group string, err error, terminate func(context.Context, string) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if rb := terminate(ctx, group); rb != nil {
		return errors.Join(err, fmt.Errorf("%s: roll back group %s: %w", provider, group, rb))
	}
	return err
}

// Undecided reports whether a placement's failure leaves the upstream's
// answer unknown or still to come: the caller's deadline or cancellation,
// a transient failure, a rate limit, or anything that is not the cloud's
// classified refusal. What the placement made is then kept, never rolled
// back: the machines carry the group, and the next call adopts them and
// goes on (L3, L7). Only a refusal (no capacity, validation, quota,
// unsupported, authentication) rolls back.
func Undecided(err error) bool {
	var pe *providers.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, providers.ErrTransient) || errors.Is(err, providers.ErrRateLimited) || !errors.As(err, &pe)
}

// Pending is the ErrTransient answer of a placement that keeps what it
// made so far: why it stops here, and the cause, if any.
func Pending(provider, op, location, message string, cause error) error {
	if cause != nil {
		message += " (" + cause.Error() + ")"
	}
	return &providers.Error{Class: providers.ErrTransient, Provider: provider, Op: op, Location: location, Message: message}
}

// TimeLeft is how long the caller's deadline leaves from now, less room
// for the requests that still follow; ok is false without a deadline.
func TimeLeft(ctx context.Context, now time.Time, room time.Duration) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return dl.Sub(now) - room, true
}

// Fleet is how a cloud's machines of type M read: the group and rank they
// carry, whether they are alive, and the neutral node (its states mapped).
type Fleet[M any] struct {
	Provider string
	Group    func(M) string      // the group the machine carries ("" = none of ours)
	Rank     func(M) (int, bool) // its rank, when it has one
	Alive    func(M) bool        // not on its way out
	Node     func(M, int) providers.Node
	Location func(M) string // where it runs ("" = not said)
}

// ByGroup indexes a cloud's machines by the group they carry.
func (f Fleet[M]) ByGroup(all []M) map[string][]M {
	by := map[string][]M{}
	for _, m := range all {
		if g := f.Group(m); g != "" {
			by[g] = append(by[g], m)
		}
	}
	return by
}

// Describe assembles every named group the index holds (R1): its
// machines by rank, a rank placed again after a rollback showing the live
// machine, located where its first machine says.
func (f Fleet[M]) Describe(names []string, by map[string][]M) map[string]providers.Group {
	out := map[string]providers.Group{}
	for _, name := range names {
		ms := by[name]
		if len(ms) == 0 {
			continue
		}
		g := providers.Group{Provider: f.Provider, Name: name}
		seen := map[int]int{} // rank → position in g.Nodes
		for _, m := range ms {
			if g.Location == "" {
				g.Location = f.Location(m)
			}
			i, ok := f.Rank(m)
			if !ok {
				continue
			}
			n := f.Node(m, i)
			if k, dup := seen[i]; dup {
				// A rank placed again after a rollback: the live machine wins.
				if g.Nodes[k].State == providers.NodeTerminated {
					g.Nodes[k] = n
				}
				continue
			}
			seen[i] = len(g.Nodes)
			g.Nodes = append(g.Nodes, n)
		}
		sort.Slice(g.Nodes, func(a, b int) bool { return g.Nodes[a].Index < g.Nodes[b].Index })
		out[name] = g
	}
	return out
}

// Adopt collects the live ranked machines a group already has, for a
// retried placement of count machines to place only the missing ranks. A
// live machine that fits is false for (another shape, place or a rank
// beyond count) is a group-conflict refusal built by conflict.
func (f Fleet[M]) Adopt(ms []M, count int, fits func(M) bool, conflict func(m M, rank int) error) (map[int]M, error) {
	have := map[int]M{}
	for _, m := range ms {
		i, ok := f.Rank(m)
		if !ok || !f.Alive(m) {
			continue
		}
		if !fits(m) || i >= count {
			return nil, conflict(m, i)
		}
		have[i] = m
	}
	return have, nil
}

// Placed is the group of count machines have holds, by rank.
func (f Fleet[M]) Placed(name, location string, have map[int]M, count int) providers.Group {
	g := providers.Group{Provider: f.Provider, Name: name, Location: location}
	for i := 0; i < count; i++ {
		g.Nodes = append(g.Nodes, f.Node(have[i], i))
	}
	return g
}

// Conflict is the refusal of a placement whose group already holds a
// machine that is not part of it.
func Conflict(provider, op, location, message string) error {
	return &providers.Error{Class: providers.ErrValidation, Provider: provider, Op: op,
		Code: "group-conflict", Location: location, Message: message}
}

// Create sends one create that is not resent blindly: after a transient
// failure it may have been carried out, so find looks for what it would
// have made (by name or rank) before it is sent again, with backoff.
func Create[M any](ctx context.Context, c *Client, create func() (M, error), find func() (M, bool, error)) (M, error) {
	var zero M
	for attempt := 0; ; attempt++ {
		m, err := create()
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, providers.ErrTransient) || attempt >= c.Retries {
			return zero, err
		}
		m, ok, lerr := find()
		if lerr != nil {
			return zero, errors.Join(err, lerr)
		}
		if ok {
			return m, nil // the failed-looking create went through
		}
		if err := c.Sleep(ctx, c.Backoff<<attempt); err != nil {
			return zero, err
		}
	}
}
