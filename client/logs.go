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

	"github.com/clusterdeck/clusterdeck/api"
)

// LogStream follows a node's log: the server-sent events of GET
// /v1/gpu/clusters/{id}/logs. Close it when done.
type LogStream struct {
	body  io.ReadCloser
	sc    *bufio.Scanner
	ended bool
}

// LogEvent is one event of a LogStream: a line, or the end of the cluster.
type LogEvent struct {
	End  bool        // the cluster ended and every line was sent
	Data string      // the event's data as it came
	Line api.LogLine // Data decoded, when OK
	OK   bool        // Data is a LogLine
}

// FollowLogs opens the log stream of the node of that rank: its last lines,
// then new ones until the cluster ends (N6). The stream has no timeout; end
// it with ctx or Close.
func (c *Client) FollowLogs(ctx context.Context, id string, rank int) (*LogStream, error) {
	q := url.Values{"node": {strconv.Itoa(rank)}}
	req, err := c.newRequest(ctx, http.MethodGet, clusterPath(id)+"/logs", q, nil)
	if err != nil {
		return nil, err
	}
	body, sc, err := c.openStream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &LogStream{body: body, sc: sc}, nil
}

// openStream sends req asking for Server-Sent Events and returns the body
// with a scanner over its lines; an error answer is decoded as the API's,
// and an answer that is not an event stream is ErrNotJSON.
func (c *Client) openStream(ctx context.Context, req *http.Request) (io.ReadCloser, *bufio.Scanner, error) {
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, nil, c.transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, nil, decodeError(resp, raw, req.URL.Redacted())
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("%s did not answer with an event stream (%s): %w", req.URL.Redacted(), contentType(resp), ErrNotJSON)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return resp.Body, sc, nil
}

// Next is the next event; io.EOF when the stream closed without an end
// event (open it again to go on), or after the end event.
func (s *LogStream) Next() (LogEvent, error) {
	if s.ended {
		return LogEvent{}, io.EOF
	}
	var event string
	var data []string
	for s.sc.Scan() {
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		switch {
		case line == "":
			if ev, ok := s.dispatch(event, data); ok {
				return ev, nil
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			}
		}
	}
	if ev, ok := s.dispatch(event, data); ok {
		return ev, nil
	}
	if err := s.sc.Err(); err != nil {
		return LogEvent{}, err
	}
	return LogEvent{}, io.EOF
}

func (s *LogStream) dispatch(event string, data []string) (LogEvent, bool) {
	switch {
	case event == "end":
		s.ended = true
		return LogEvent{End: true, Data: strings.Join(data, "\n")}, true
	case (event == "line" || event == "") && len(data) > 0:
		ev := LogEvent{Data: strings.Join(data, "\n")}
		ev.OK = json.Unmarshal([]byte(ev.Data), &ev.Line) == nil
		return ev, true
	}
	return LogEvent{}, false
}

// Close ends the stream.
func (s *LogStream) Close() error { return s.body.Close() }
