package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
)

// EventsQuery selects events of GET /v1/events.
type EventsQuery struct {
	After   string        // the cursor: the events after this event id ("" or "0" = from the first)
	Cluster string        // only this cluster's ("" = every cluster of the key's environment)
	Limit   int           // the most in a page (0 = the server's default, 100)
	Wait    time.Duration // Events only: hold an empty page up to this long (whole seconds, at most 60 s)
}

func (q EventsQuery) values() url.Values {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Cluster != "" {
		v.Set("cluster", q.Cluster)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if s := int(q.Wait / time.Second); s > 0 {
		v.Set("wait", strconv.Itoa(s))
	}
	return v
}

// Events is one page of GET /v1/events: the key's environment's events
// after q.After, oldest first. Ask again with After = the answer's Next.
func (c *Client) Events(ctx context.Context, q EventsQuery, opts ...Option) (api.EventList, error) {
	var out api.EventList
	cc := c
	if q.Wait > 0 && c.Timeout > 0 {
		copy := *c
		copy.Timeout += q.Wait // the server holds the answer up to Wait
		cc = &copy
	}
	err := cc.do(ctx, http.MethodGet, "/v1/events", q.values(), nil, &out, nil, opts)
	return out, err
}

// EventStream is GET /v1/events as server-sent events. Close it when done.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
	Last string // the id of the last event Next returned: resume after it
}

// FollowEvents opens the event stream: the events after q.After, then each
// new one as it is written. It has no timeout; end it with ctx or Close.
// When it breaks, open it again with After = Last.
func (c *Client) FollowEvents(ctx context.Context, q EventsQuery) (*EventStream, error) {
	q.Wait, q.Limit = 0, 0
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/events", q.values(), nil)
	if err != nil {
		return nil, err
	}
	body, sc, err := c.openStream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &EventStream{body: body, sc: sc, Last: q.After}, nil
}

// Next is the next event (keep-alive comments are skipped); io.EOF when
// the stream closed.
func (s *EventStream) Next() (api.Event, error) {
	var data []string
	for s.sc.Scan() {
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		switch {
		case line == "":
			if len(data) > 0 {
				var ev api.Event
				if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil {
					return api.Event{}, fmt.Errorf("an event of the stream is not an Event: %w", err)
				}
				s.Last = ev.ID
				return ev, nil
			}
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		default:
			if field, value, _ := strings.Cut(line, ":"); field == "data" {
				data = append(data, strings.TrimPrefix(value, " "))
			}
		}
	}
	if err := s.sc.Err(); err != nil {
		return api.Event{}, err
	}
	return api.Event{}, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
