package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GPUMetricsArgs are cluster_gpu_metrics's arguments.
type GPUMetricsArgs struct {
	ClusterID string `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	Window    string `json:"window,omitempty" jsonschema:"1h (default), 24h or 30d"`
}

func (t *tools) clusterGPUMetrics(s *mcp.Server) {
	schema := clusterSchema[GPUMetricsArgs]()
	schema.Properties["window"].Enum = []any{"1h", "24h", "30d"}
	mcp.AddTool(s, &mcp.Tool{Name: "cluster_gpu_metrics", InputSchema: schema, Annotations: readOnly("What the GPUs are doing"),
		Description: "What a cluster's GPUs are doing (X15): utilization, memory, temperature, power and hardware errors per machine now, the cluster's utilization over 1h, 24h or 30d, and any open stall."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in GPUMetricsArgs) (*mcp.CallToolResult, any, error) {
			var m api.GPUMetrics
			var w api.GPUWatch
			return call(ctx, func(o client.Option) (err error) {
				if m, err = t.api.GPUMetrics(ctx, in.ClusterID, in.Window, o); err != nil {
					return err
				}
				w, err = t.api.GPUWatch(ctx, in.ClusterID, o)
				return err
			}, func() string { return gpuText(m, w) })
		})
}

// gpuText is the summary, one line per machine, the open stall and the idle rule.
func gpuText(m api.GPUMetrics, w api.GPUWatch) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster %s: %s", m.Cluster, m.Summary)
	for _, n := range m.Nodes {
		var util, used, total, hottest, watts, count int
		for _, g := range n.GPUs {
			if v := g.Now; v != nil && v.UtilPct != nil {
				util, count = util+*v.UtilPct, count+1
				if v.MemUsedMiB != nil && v.MemTotalMiB != nil {
					used, total = used+*v.MemUsedMiB, total+*v.MemTotalMiB
				}
				if v.TempC != nil && *v.TempC > hottest {
					hottest = *v.TempC
				}
				if v.PowerW != nil {
					watts += *v.PowerW
				}
			}
		}
		switch {
		case count == 0:
			fmt.Fprintf(&b, "\n%s: no GPU sample in the last 3 minutes", n.Name)
		default:
			fmt.Fprintf(&b, "\n%s: %d GPUs at %d %%, memory %d/%d GiB, hottest %d °C, %d W", n.Name, len(n.GPUs), util/count, used/1024, total/1024, hottest, watts)
		}
		if n.Fault != "" {
			b.WriteString("; hardware error: " + n.Fault)
		}
	}
	if w.Stall.Current != nil {
		b.WriteString("\nStalled: " + *w.Stall.Current)
	}
	b.WriteString("\n" + w.Summary)
	return b.String()
}

// GPUWatchArgs are set_gpu_watch's arguments; what is left out keeps its value.
type GPUWatchArgs struct {
	ClusterID        string  `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	StallAlerts      *bool   `json:"stall_alerts,omitempty" jsonschema:"mail and log an event when some machines' GPUs idle while others stay busy (on by default)"`
	StallMinutes     *int    `json:"stall_minutes,omitempty" jsonschema:"how long a stall must last before the alert, 2 to 60 (default 10)"`
	IdleRule         *bool   `json:"idle_rule,omitempty" jsonschema:"act when every GPU has been idle (off by default)"`
	IdleThresholdPct *int    `json:"idle_threshold_pct,omitempty" jsonschema:"a GPU below this utilization is idle, 1 to 50 (default 5)"`
	IdleHours        *int    `json:"idle_hours,omitempty" jsonschema:"idle this many hours: mail the owners, 1 to 24 (default 2)"`
	IdleAction       *string `json:"idle_action,omitempty" jsonschema:"after the mail: mail (nothing more), stop or terminate the cluster after the grace"`
	IdleGraceMinutes *int    `json:"idle_grace_minutes,omitempty" jsonschema:"minutes from the warning mail to the stop or terminate, 10 to 1440 (default 60)"`
}

func (a GPUWatchArgs) body() api.GPUWatchBody {
	var b api.GPUWatchBody
	if a.StallAlerts != nil || a.StallMinutes != nil {
		b.Stall = &api.StallWatchBody{Enabled: a.StallAlerts, Minutes: a.StallMinutes}
	}
	if a.IdleRule != nil || a.IdleThresholdPct != nil || a.IdleHours != nil || a.IdleAction != nil || a.IdleGraceMinutes != nil {
		b.Idle = &api.IdleWatchBody{Enabled: a.IdleRule, ThresholdPct: a.IdleThresholdPct, Hours: a.IdleHours, Action: a.IdleAction, GraceMinutes: a.IdleGraceMinutes}
	}
	return b
}

func (t *tools) setGPUWatch(s *mcp.Server) {
	schema := clusterSchema[GPUWatchArgs]()
	schema.Properties["idle_action"].Enum = []any{"mail", "stop", "terminate"}
	// Idempotent (the same settings twice are the same settings); not
	// destructive in itself (a stop or terminate needs the idle time and
	// the grace to pass, with a warning mail first).
	mcp.AddTool(s, &mcp.Tool{Name: "set_gpu_watch", InputSchema: schema, Annotations: writes("Set stall alerts and the idle rule", false, true),
		Description: "Set a cluster's stall alert (on by default) and opt-in idle rule (mail, then optionally stop or terminate after a grace); arguments left out keep their value."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in GPUWatchArgs) (*mcp.CallToolResult, any, error) {
			var w api.GPUWatch
			return call(ctx, func(o client.Option) (err error) {
				w, err = t.api.SetGPUWatch(ctx, in.ClusterID, in.body(), o)
				return err
			},
				func() string { return fmt.Sprintf("Cluster %s: %s", in.ClusterID, w.Summary) })
		})
}
