package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// The event feed (X16; L8, API1, API5): the caller's
// environment's cluster events after a cursor, as pages of JSON or as
// server-sent events. New events are found by reading the table after the
// cursor every LogPoll, so any instance of a deployment serves any stream.

// maxEventsWait is the longest a JSON request waits for a first event.
const maxEventsWait = 60

// eventsQuery reads after, cluster, limit and wait, and checks that the
// cluster is the caller's (404 otherwise, like every read).
func (h *handler) eventsQuery(c echo.Context) (models.EventsQuery, int, error) {
	p := principal(c)
	q := models.EventsQuery{OrgID: p.Org.ID, EnvID: p.Env.ID}
	fe := models.FieldErrors{}
	after, field := c.QueryParam("after"), "after"
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		after, field = id, "Last-Event-ID" // a reconnecting event stream resumes after the last event it got
	}
	if after != "" && after != "0" {
		n, err := h.Store.ParseEventID(p.Org.ID, after)
		switch {
		case err == nil:
			q.After = n
		case isDigits(after):
			fe[field] = "Event ids are opaque now (evt_…): start again from 0, or from the id of an event you received since."
		default:
			fe[field] = "An event id this feed gave you (evt_…), or 0 for the first."
		}
	}
	var wait int
	for name, dst := range map[string]*int{"limit": &q.Limit, "wait": &wait} {
		v := c.QueryParam(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		switch {
		case err != nil, name == "limit" && (n < 1 || n > models.MaxEventsPage):
			fe[name] = fmt.Sprintf("a number from 1 to %d", models.MaxEventsPage)
		case name == "wait" && (n < 0 || n > maxEventsWait):
			fe[name] = fmt.Sprintf("seconds from 0 to %d", maxEventsWait)
		}
		*dst = n
	}
	if len(fe) > 0 {
		return q, 0, invalid(fe)
	}
	if id := c.QueryParam("cluster"); id != "" {
		cl, err := h.Store.ClusterForOrg(c.Request().Context(), p.Org.ID, id)
		if err != nil {
			return q, 0, err
		}
		if cl.EnvID != p.Env.ID {
			return q, 0, fmt.Errorf("web: %s is in another environment: %w", id, models.ErrNotFound)
		}
		q.ClusterID = cl.ID
	}
	return q, wait, nil
}

// isDigits says s is a number: a cursor of before ids were opaque.
func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// publicCursor is the public form of a feed position: "0" before the first
// event, else the opaque id (X19: ids never show the platform's count).
func (h *handler) publicCursor(orgID string, id int64) string {
	if id <= 0 {
		return "0"
	}
	return h.Store.PublicEventID(orgID, id)
}

func (h *handler) toEventJSON(e models.ClusterEvent) api.Event {
	return api.Event{ID: h.Store.ClusterEventID(e), Type: models.PublicEventType(e), Cluster: e.ClusterID, At: e.At, Kind: e.Kind,
		Status: e.Status, Node: e.Node, Step: e.Step, Message: e.Message}
}

// apiEvents is GET /v1/events: a page of events after the cursor (with
// wait=N, held up to N seconds until there is one), or with Accept:
// text/event-stream the stream of them.
func (h *handler) apiEvents(c echo.Context) error {
	q, wait, err := h.eventsQuery(c)
	if err != nil {
		return err
	}
	stream := strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream")
	if stream || wait > 0 {
		untimed(c) // lasts as long as the client or the wait
		release, err := h.streams.acquire(c, principal(c))
		if err != nil {
			return err
		}
		defer release()
	}
	if stream {
		named := false
		if v := c.QueryParam("named"); v != "" {
			if named, err = strconv.ParseBool(v); err != nil {
				return invalid(models.FieldErrors{"named": "true or false"})
			}
		}
		return h.streamEvents(c, q, named)
	}
	ctx := c.Request().Context()
	// next is the caller's own position: the last event it gets, else the
	// cursor it asked with. The page's Next (the settled end of the whole
	// feed) moves on every organisation's events, so it stays inside.
	next := q.After
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	holdOpen(c, time.Duration(wait)*time.Second+streamWriteWindow) // the wait may outlive the server's timeouts
	for {
		page, err := h.Store.EventsAfter(ctx, q)
		if err != nil {
			return err
		}
		if len(page.Events) > 0 || !time.Now().Before(deadline) {
			out := api.EventList{Events: make([]api.Event, 0, len(page.Events)), HasMore: page.More}
			for _, e := range page.Events {
				out.Events = append(out.Events, h.toEventJSON(e))
				next = e.ID
			}
			out.Next = h.publicCursor(q.OrgID, next)
			return c.JSON(http.StatusOK, out)
		}
		q.After = page.Next
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(h.logPoll(), time.Until(deadline))):
		}
	}
}

// keepAlive is how often a quiet event stream sends a comment.
func (h *handler) keepAlive() time.Duration {
	if h.KeepAlive > 0 {
		return h.KeepAlive
	}
	return 15 * time.Second
}

// streamRetry is the reconnection delay a stream asks of its client.
const streamRetry = 5 * time.Second

// streamEvents writes the events after q.After as server-sent events (id:
// the event's opaque id, data: the Event as JSON, whose "type" is its public
// type), then the new ones as they are written, with a comment every
// keepAlive, until the client goes. Events are unnamed (the default
// "message"), so a plain EventSource onmessage gets every one (X16); with
// named (?named=true) each event with a public type is sent under that name
// (event: cluster.ready) for addEventListener clients instead. The stream
// opens with retry: so clients reconnect after streamRetry. Each write moves
// the write deadline on (holdOpen), so the server's timeouts never cut a
// stream.
func (h *handler) streamEvents(c echo.Context, q models.EventsQuery, named bool) error {
	ctx := c.Request().Context()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	holdOpen(c, streamWriteWindow) // a stream outlives the server's timeouts
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", streamRetry.Milliseconds()); err != nil {
		return nil
	}
	w.Flush()
	heartbeat := time.NewTicker(h.keepAlive())
	defer heartbeat.Stop()
	poll := time.NewTicker(h.logPoll())
	defer poll.Stop()
	for {
		page, err := h.Store.EventsAfter(ctx, q)
		if err != nil {
			return nil // the status is sent; the client reconnects with Last-Event-ID
		}
		for _, e := range page.Events {
			ev := h.toEventJSON(e)
			data, err := json.Marshal(ev)
			if err != nil {
				return nil
			}
			name := ""
			if t := models.PublicEventType(e); named && t != "" {
				name = "event: " + t + "\n"
			}
			holdOpen(c, streamWriteWindow) // each write gets its own window
			if _, err := fmt.Fprintf(w, "id: %s\n%sdata: %s\n\n", ev.ID, name, data); err != nil {
				return nil
			}
		}
		if len(page.Events) > 0 {
			w.Flush()
		}
		q.After = page.Next
		if page.More {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			holdOpen(c, streamWriteWindow)
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-poll.C:
		}
	}
}
