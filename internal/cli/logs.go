package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// logs is `gpu clusters logs ID [--node N] [--follow=false]` (N6).
func (c *gpuCLI) logs(args []string) error {
	fs := c.flagSet("logs", "clusters logs ID [--node N] [--follow=false]")
	node := fs.Int("node", 0, "the node's rank (0 is the primary)")
	follow := fs.Bool("follow", true, "follow new lines until the cluster ends or Ctrl-C; --follow=false prints the stored lines")
	stamps := fs.Bool("timestamps", false, "prefix each line with its time")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	if *node < 0 {
		return usageError("--node is a rank: 0, 1, …")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	if *follow {
		return c.streamLogs(sdk, id, *node, *stamps)
	}
	var raw []byte
	out, err := sdk.Logs(c.ctx, id, *node, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	for _, l := range out.Lines {
		c.printLogLine(l, *stamps)
	}
	return nil
}

func (c *gpuCLI) printLogLine(l api.LogLine, stamps bool) {
	if stamps {
		fmt.Fprintf(c.stdout, "%s %s\n", l.At.Local().Format("2006-01-02 15:04:05"), l.Text)
		return
	}
	fmt.Fprintln(c.stdout, l.Text)
}

// streamLogs follows the log stream until the cluster ends. A dropped
// connection is opened again (lines already printed are skipped by id);
// Ctrl-C ends it quietly.
func (c *gpuCLI) streamLogs(sdk *client.Client, id string, rank int, stamps bool) error {
	var last int64
	failures := 0
	for {
		ended, progressed, err := c.streamOnce(sdk, id, rank, stamps, &last)
		switch {
		case c.ctx.Err() != nil, ended:
			return nil
		case errors.As(err, new(*client.Error)), errors.Is(err, client.ErrNotJSON):
			return err
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > 5 {
			if err == nil {
				err = errors.New("the log stream keeps closing")
			}
			return err
		}
		reason := "the stream closed"
		if err != nil {
			reason = err.Error()
		}
		fmt.Fprintf(c.stderr, "clusterdeck: %s; reconnecting\n", reason)
		select {
		case <-c.ctx.Done():
			return nil
		case <-time.After(time.Duration(failures) * time.Second):
		}
	}
}

// streamOnce prints one connection's lines after *last.
func (c *gpuCLI) streamOnce(sdk *client.Client, id string, rank int, stamps bool, last *int64) (ended, progressed bool, err error) {
	s, err := sdk.FollowLogs(c.ctx, id, rank)
	if err != nil {
		return false, false, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		switch {
		case errors.Is(err, io.EOF):
			return false, progressed, nil
		case err != nil:
			return false, progressed, err
		case ev.End:
			return true, progressed, nil
		case !ev.OK:
			fmt.Fprintln(c.stdout, ev.Data) // not the JSON we know: show it as it came
			progressed = true
			continue
		case ev.Line.ID != 0 && ev.Line.ID <= *last:
			continue // already printed before a reconnect
		}
		if ev.Line.ID != 0 {
			*last = ev.Line.ID
		}
		progressed = true
		if c.json {
			fmt.Fprintln(c.stdout, ev.Data)
		} else {
			c.printLogLine(ev.Line, stamps)
		}
	}
}
