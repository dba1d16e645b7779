package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The event feed for agents (X16): list_events pages GET
// /v1/events; wait_for_cluster blocks on it until the cluster reaches a
// status, so an agent launches and waits without a polling loop of its own.

// ListEventsArgs page the event feed.
type ListEventsArgs struct {
	After     string `json:"after,omitempty" jsonschema:"the cursor: the events after this event id (evt_…); empty or 0 (the default) from the first, else the previous answer's next"`
	ClusterID string `json:"cluster_id,omitempty" jsonschema:"only this cluster's events (cl_…)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"the most events, 1 to 500; 100 by default"`
}

func (t *tools) listEvents(s *mcp.Server) {
	schema := inputSchema[ListEventsArgs](nil)
	schema.Properties["limit"].Minimum, schema.Properties["limit"].Maximum = new(1.0), new(500.0)
	mcp.AddTool(s, &mcp.Tool{Name: "list_events", InputSchema: schema, Annotations: readOnly("List events"),
		Description: "The environment's cluster events after a cursor, oldest first, each with its type (cluster.ready, node.down, …); call again with after = next."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ListEventsArgs) (*mcp.CallToolResult, any, error) {
			var page api.EventList
			return call(ctx, func(o client.Option) (err error) {
				page, err = t.api.Events(ctx, client.EventsQuery{After: in.After, Cluster: in.ClusterID, Limit: in.Limit}, o)
				return err
			}, func() string { return eventsSummary(page) })
		})
}

func eventsSummary(page api.EventList) string {
	counts := map[string]int{}
	for _, e := range page.Events {
		if e.Type != "" {
			counts[e.Type]++
		}
	}
	var parts []string
	for typ, n := range counts {
		parts = append(parts, fmt.Sprintf("%s ×%d", typ, n))
	}
	slices.Sort(parts)
	s := fmt.Sprintf("%d events", len(page.Events))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	s += ". Next cursor: " + page.Next
	if page.HasMore {
		return s + " — more are waiting: call list_events again with after = next."
	}
	return s + " — that is all for now; later, call again with after = next."
}

// WaitArgs name a cluster, the statuses to wait for and how long.
type WaitArgs struct {
	ClusterID      string   `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	Statuses       []string `json:"statuses,omitempty" jsonschema:"return once the cluster is in one of these; by default ready, degraded, stopped, failed and terminated (where a launch ends)"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty" jsonschema:"give up after this many seconds, 1 to 900; 300 by default"`
}

// clusterStatuses are the statuses wait_for_cluster knows (L8).
var clusterStatuses = []any{"provisioning", "installing", "verifying", "ready", "degraded", "stopped", "failed", "terminated"}

// launchEnds are where a launch stops by itself.
var launchEnds = []string{"ready", "degraded", "stopped", "failed", "terminated"}

// MaxWait is the longest wait_for_cluster blocks.
const MaxWait = 900 * time.Second

// eventsWait is how long one request to the feed is held (a long poll).
const eventsWait = 25 * time.Second

func (t *tools) waitForCluster(s *mcp.Server) {
	schema := clusterSchema[WaitArgs]()
	schema.Properties["statuses"].Items.Enum = clusterStatuses
	schema.Properties["timeout_seconds"].Minimum, schema.Properties["timeout_seconds"].Maximum = new(1.0), new(MaxWait.Seconds())
	mcp.AddTool(s, &mcp.Tool{Name: "wait_for_cluster", InputSchema: schema, Annotations: readOnly("Wait for a cluster"),
		Description: "Block until the cluster reaches one of the statuses (by default where a launch ends: ready, degraded, stopped, failed, terminated) or the timeout; each event meanwhile is a progress notification when the call has a progressToken."},
		func(ctx context.Context, req *mcp.CallToolRequest, in WaitArgs) (*mcp.CallToolResult, any, error) {
			want := in.Statuses
			if len(want) == 0 {
				want = launchEnds
			}
			timeout := time.Duration(in.TimeoutSeconds) * time.Second
			if timeout <= 0 {
				timeout = 300 * time.Second
			}
			deadline := time.Now().Add(timeout)
			// The cursor first, then the cluster: nothing that happens after
			// the read is missed.
			var cursor string
			for {
				page, err := t.api.Events(ctx, client.EventsQuery{After: cursor, Cluster: in.ClusterID, Limit: 500})
				if err != nil {
					return failure(err)
				}
				cursor = page.Next
				if !page.HasMore {
					break
				}
			}
			var raw []byte
			cl, err := t.api.Cluster(ctx, in.ClusterID, client.Raw(&raw))
			if err != nil {
				return failure(err)
			}
			status, steps := cl.Status, 0
			if !slices.Contains(want, status) {
				notifyProgress(ctx, req, 0, fmt.Sprintf("%s is %s; waiting up to %s for %s.", cl.ID, status, timeout, strings.Join(want, ", ")))
			}
			for !slices.Contains(want, status) && time.Now().Before(deadline) {
				page, err := t.api.Events(ctx, client.EventsQuery{After: cursor, Cluster: in.ClusterID, Limit: 500,
					Wait: min(eventsWait, time.Until(deadline)).Truncate(time.Second)})
				if err != nil {
					return failure(err)
				}
				cursor = page.Next
				for _, e := range page.Events {
					steps++
					status = e.Status
					notifyProgress(ctx, req, steps, eventText(e))
				}
				if len(page.Events) == 0 && time.Until(deadline) < time.Second {
					break
				}
			}
			if cl, err = t.api.Cluster(ctx, in.ClusterID, client.Raw(&raw)); err != nil {
				return failure(err)
			}
			if !slices.Contains(want, cl.Status) {
				return answer(fmt.Sprintf("Cluster %s %q is still %s after %s (waiting for %s); call wait_for_cluster again to go on waiting.",
					cl.ID, cl.Name, cl.Status, timeout, strings.Join(want, ", ")), raw)
			}
			return answer(clusterSummary(cl), raw)
		})
}

// eventText is one event for a progress notification.
func eventText(e api.Event) string {
	msg := e.Message
	if e.Node != "" || e.Step != "" {
		msg = strings.TrimSpace(e.Node+" "+e.Step) + ": " + msg
	}
	if e.Type != "" {
		msg = e.Type + " — " + msg
	}
	return fmt.Sprintf("%s is %s: %s", e.Cluster, e.Status, msg)
}

// notifyProgress tells the client how the wait goes, when it asked for
// progress (MCP progress notifications): step 0 when the wait starts, then
// one per event.
func notifyProgress(ctx context.Context, req *mcp.CallToolRequest, step int, msg string) {
	if req == nil || req.Params == nil || req.Session == nil {
		return
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(step), Message: msg})
	}
}
