package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

func isReady(status string) bool { return status == "ready" || status == "running" }

// launchDone: a launch is over when the cluster is ready or can no longer become ready by itself.
func launchDone(cl api.Cluster) bool {
	switch cl.Status {
	case "ready", "running", "failed", "degraded", "stopped", "terminated":
		return true
	}
	return false
}

// terminateDone: every machine is released.
func terminateDone(cl api.Cluster) bool { return cl.Status == "terminated" || cl.Status == "failed" }

// progressPrinter prints what changed in a followed cluster: new events,
// nodes whose step changed, and the status.
type progressPrinter struct {
	out       io.Writer
	seen      map[string]bool
	nodeState map[string]string
	status    string
}

func newProgressPrinter(out io.Writer, cl api.Cluster, onlyNew bool) *progressPrinter {
	p := &progressPrinter{out: out, seen: map[string]bool{}, nodeState: map[string]string{}}
	if onlyNew {
		for _, e := range cl.Events {
			p.seen[eventKey(e)] = true
		}
	}
	return p
}

func eventKey(e api.ClusterEvent) string {
	return e.At.Format(time.RFC3339Nano) + "\x00" + e.Kind + "\x00" + e.Node + "\x00" + e.Step + "\x00" + e.Message
}

func (p *progressPrinter) show(cl api.Cluster) {
	for _, e := range cl.Events {
		if k := eventKey(e); !p.seen[k] {
			p.seen[k] = true
			fmt.Fprintln(p.out, eventLine(e))
		}
	}
	var changed []string
	for _, n := range cl.Nodes {
		if st := n.Status + "/" + n.Step; p.nodeState[n.Name] != st {
			p.nodeState[n.Name] = st
			changed = append(changed, nodeProgress(n))
		}
	}
	if len(changed) > 0 {
		fmt.Fprintln(p.out, "  nodes: "+strings.Join(changed, ", "))
	}
	if cl.Status != p.status {
		p.status = cl.Status
		fmt.Fprintf(p.out, "  status: %s\n", statusText(cl))
	}
}

// watchAndPrint follows the cluster until done (watch), then prints its
// last JSON with --json.
func (c *gpuCLI) watchAndPrint(sdk *client.Client, cl api.Cluster, raw []byte, w waitFlags, out io.Writer, onlyNew bool, done func(api.Cluster) bool) (api.Cluster, error) {
	final, finalRaw, err := c.watch(sdk, cl, raw, w, out, onlyNew, done)
	if err == nil && c.json {
		c.printRaw(finalRaw)
	}
	return final, err
}

// watch follows the cluster until done, printing each new event and each
// node's step as it changes (events already in cl are skipped with
// onlyNew). It reads the cluster again whenever the event stream (GET
// /v1/events, X16) brings one of its events; only while the
// stream is unavailable does it look every poll interval. It returns the
// last cluster and its raw JSON. Passing errors (5xx, 429, the network) are
// retried; a refusal ends it.
func (c *gpuCLI) watch(sdk *client.Client, cl api.Cluster, raw []byte, w waitFlags, out io.Writer, onlyNew bool, done func(api.Cluster) bool) (api.Cluster, []byte, error) {
	if w.poll <= 0 {
		w.poll = time.Millisecond
	}
	wake := make(chan struct{}, 1)
	stop := c.wakeOnEvents(sdk, cl.ID, w.poll, wake)
	defer stop()
	var deadline <-chan time.Time
	if w.timeout > 0 {
		t := time.NewTimer(w.timeout)
		defer t.Stop()
		deadline = t.C
	}
	p := newProgressPrinter(out, cl, onlyNew)
	p.show(cl)
	var transient error
	for !done(cl) {
		select {
		case <-c.ctx.Done():
			fmt.Fprintf(c.stderr, "clusterdeck: stopped following %s (%s); the cluster is left as it is (\"clusterdeck gpu clusters get %s\")\n",
				cl.ID, cl.Status, cl.ID)
			return cl, raw, Exit(exitInterrupted)
		case <-deadline:
			return cl, raw, fmt.Errorf("cluster %s is still %s after %s; it is left as it is (follow it with \"clusterdeck gpu clusters get %s\")",
				cl.ID, cl.Status, w.timeout, cl.ID)
		case <-wake:
		}
		var nextRaw []byte
		next, err := sdk.Cluster(c.ctx, cl.ID, client.Raw(&nextRaw))
		var ae *client.Error
		switch {
		case c.ctx.Err() != nil:
			continue // the select above says so
		case errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusTooManyRequests:
			return cl, raw, err
		case err != nil:
			if transient == nil {
				fmt.Fprintf(c.stderr, "clusterdeck: %v (still trying)\n", err)
			}
			transient = err
			continue
		}
		transient = nil
		cl, raw = next, nextRaw
		p.show(cl)
	}
	return cl, raw, nil
}

// wakeOnEvents signals wake (without blocking) for every event of the
// cluster in the event stream, from its first on, and whenever the stream
// breaks; while the stream is unavailable (an older server refuses it) it
// signals every poll instead. stop ends it.
func (c *gpuCLI) wakeOnEvents(sdk *client.Client, id string, poll time.Duration, wake chan<- struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(c.ctx)
	ended := make(chan struct{})
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(ended)
		_ = followEvents(ctx, sdk, client.EventsQuery{Cluster: id}, poll, func(api.Event) { poke() }, func(error) { poke() })
		for ctx.Err() == nil { // refused: look every poll
			poke()
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}()
	return func() { cancel(); <-ended }
}
