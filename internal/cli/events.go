package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// events is `gpu events [--after ID] [--cluster ID] [--follow] [--json]`
// (X16): the key's environment's events after the cursor, one
// line each (one JSON object per line with --json); with --follow it stays
// and prints each new event as it is written, until interrupted.
func (c *gpuCLI) events(args []string) error {
	fs := c.flagSet("events", "events [--after ID] [--cluster ID] [--follow]")
	var q client.EventsQuery
	var follow bool
	fs.StringVar(&q.After, "after", "", "only events after this event `id` (evt_…, the cursor)")
	fs.StringVar(&q.Cluster, "cluster", "", "only this cluster's events (`cl_…`)")
	fs.BoolVar(&follow, "follow", false, "stay and print each new event as it is written (Ctrl-C ends)")
	if err := noArgs(fs, args, ""); err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	if !follow {
		for {
			page, err := sdk.Events(c.ctx, q)
			if err != nil {
				return err
			}
			for _, e := range page.Events {
				c.printEvent(e)
			}
			q.After = page.Next
			if !page.HasMore {
				if !c.json {
					fmt.Fprintf(c.stderr, "Next: clusterdeck gpu events --after %s\n", page.Next)
				}
				return nil
			}
		}
	}
	err = followEvents(c.ctx, sdk, q, time.Second, c.printEvent, func(err error) {
		fmt.Fprintf(c.stderr, "clusterdeck: the event stream broke (%v); reconnecting\n", err)
	})
	if c.ctx.Err() != nil {
		return Exit(exitInterrupted)
	}
	return err
}

// printEvent prints one event: a line for people, or its JSON.
func (c *gpuCLI) printEvent(e api.Event) {
	if c.json {
		raw, _ := json.Marshal(e)
		c.stdout.Write(withNewline(raw))
		return
	}
	typ := e.Type
	if typ == "" {
		typ = "-"
	}
	fmt.Fprintf(c.stdout, "%s  %s  %s  %s\n", e.ID, e.Cluster, typ,
		strings.TrimSpace(eventLine(api.ClusterEvent{At: e.At, Node: e.Node, Step: e.Step, Message: e.Message})))
}

// followEvents reads the event stream after q.After and hands every event
// to got until ctx ends. When the stream breaks it opens it again after
// the last event received (after retry), so nothing is lost or repeated; a
// refusal (4xx other than 429) ends it.
func followEvents(ctx context.Context, sdk *client.Client, q client.EventsQuery, retry time.Duration, got func(api.Event), broke func(error)) error {
	for ctx.Err() == nil {
		s, err := sdk.FollowEvents(ctx, q)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status < 500 && ae.Status != 429 {
			return err
		}
		if err == nil {
			for {
				var e api.Event
				if e, err = s.Next(); err != nil {
					break
				}
				got(e)
			}
			q.After = s.Last
			s.Close()
		}
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			err = io.EOF
		}
		if broke != nil {
			broke(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
	return ctx.Err()
}
