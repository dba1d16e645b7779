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

// RunArgs are submit_run's arguments (X17).
type RunArgs struct {
	Name           string            `json:"name,omitempty" jsonschema:"lower-case letters, digits and dashes"`
	Accelerator    string            `json:"accelerator,omitempty" jsonschema:"e.g. H100_80GB (or give offers)"`
	Nodes          int               `json:"nodes" jsonschema:"machines, 2 to 64"`
	GPUsPerNode    int               `json:"gpus_per_node,omitempty" jsonschema:"GPUs per machine, 1 to 8"`
	Offers         []string          `json:"offers,omitempty" jsonschema:"acceptable offer ids, tried in order (needs max_hourly_price)"`
	MaxHourlyPrice string            `json:"max_hourly_price,omitempty" jsonschema:"the whole cluster's ceiling per hour, decimal dollars"`
	VolumeGB       int               `json:"volume_gb,omitempty" jsonschema:"a new volume of this size for the checkpoints (or volume_id)"`
	VolumeID       string            `json:"volume_id,omitempty"`
	Image          string            `json:"image,omitempty"`
	Command        string            `json:"command" jsonschema:"what every rank runs"`
	Env            map[string]string `json:"env,omitempty"`
	CheckpointDir  string            `json:"checkpoint_dir" jsonschema:"a directory on the volume; ranks get it as CLUSTERDECK_CHECKPOINT_DIR"`
	ResumeCommand  string            `json:"resume_command,omitempty" jsonschema:"what every rank runs after a restart, e.g. the command with --resume latest"`
	RestartBudget  int               `json:"restart_budget,omitempty" jsonschema:"restarts allowed, 0 to 100 (3 by default)"`
	FinishRule     string            `json:"finish_rule,omitempty" jsonschema:"all (every rank exits 0, the default) or rank0"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"the same key returns the same run"`
}

// RunIDArgs name one run.
type RunIDArgs struct {
	RunID string `json:"run_id" jsonschema:"the run's id (run_…)"`
}

// WaitRunArgs name a run and how long to wait for it to end.
type WaitRunArgs struct {
	RunID          string `json:"run_id" jsonschema:"the run's id (run_…)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"give up after this many seconds, 1 to 900; 300 by default"`
}

func runSummary(r api.Run) string {
	return fmt.Sprintf("Run %s %q is %s on %s at $%s/h: %s Restarts %d of %d; ETTR %s %% (%d productive of %d paid machine-minutes), %d interruptions.",
		r.ID, r.Name, r.Status, r.ClusterID, r.USDPerHour, r.Message, r.Restarts, r.RestartBudget, r.Bill.ETTRPercent,
		r.Bill.ProductiveMinutes, r.Bill.PaidMachineMinutes, len(r.Interruptions))
}

func (t *tools) runTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "submit_run", InputSchema: inputSchema[RunArgs](nil), Annotations: writes("Submit a run", false, false),
		Description: "Submit a training run that heals itself: Clusterdeck quotes and locks the price, launches the cluster verified, starts every rank with CLUSTERDECK_CHECKPOINT_DIR, replaces a machine that dies, hangs or errs and restarts every rank with resume_command (at most restart_budget times), and releases the machines when the command exits 0. It spends money from the balance."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in RunArgs) (*mcp.CallToolResult, any, error) {
			var raw []byte
			r, _, err := t.api.SubmitRun(ctx, api.RunBody{Name: in.Name, Accelerator: in.Accelerator, Nodes: in.Nodes, GPUsPerNode: in.GPUsPerNode,
				Offers: in.Offers, MaxHourlyPrice: in.MaxHourlyPrice, VolumeGB: in.VolumeGB, VolumeID: in.VolumeID, Image: in.Image,
				Command: in.Command, Env: in.Env, CheckpointDir: in.CheckpointDir, ResumeCommand: in.ResumeCommand,
				RestartBudget: in.RestartBudget, FinishRule: in.FinishRule}, in.IdempotencyKey, client.Raw(&raw))
			if err != nil {
				return failure(err)
			}
			return answer(runSummary(r)+" Follow it with wait_for_run.", raw)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_run", InputSchema: inputSchema[RunIDArgs](nil), Annotations: readOnly("Get a run"),
		Description: "A run: its status, its cluster, its restarts, its bill (paid machine-minutes, productive minutes, ETTR) and each interruption with its cause, detection time, time to resume and lost work."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in RunIDArgs) (*mcp.CallToolResult, any, error) {
			var r api.Run
			return call(ctx, func(o client.Option) (err error) { r, err = t.api.Run(ctx, in.RunID, o); return err },
				func() string { return runSummary(r) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait_for_run", InputSchema: inputSchema[WaitRunArgs](nil), Annotations: readOnly("Wait for a run"),
		Description: "Block until the run finished or failed, or the timeout; each event of its cluster meanwhile (run.interrupted, run.resumed …) is a progress notification when the call has a progressToken."},
		func(ctx context.Context, req *mcp.CallToolRequest, in WaitRunArgs) (*mcp.CallToolResult, any, error) {
			timeout := min(time.Duration(in.TimeoutSeconds)*time.Second, MaxWait)
			if timeout <= 0 {
				timeout = 300 * time.Second
			}
			deadline := time.Now().Add(timeout)
			ends := []string{"finished", "failed"}
			var raw []byte
			r, err := t.api.Run(ctx, in.RunID, client.Raw(&raw))
			if err != nil {
				return failure(err)
			}
			var cursor string
			for {
				page, err := t.api.Events(ctx, client.EventsQuery{After: cursor, Cluster: r.ClusterID, Limit: 500})
				if err != nil {
					return failure(err)
				}
				cursor = page.Next
				if !page.HasMore {
					break
				}
			}
			steps := 0
			for !slices.Contains(ends, r.Status) && time.Now().Before(deadline) {
				page, err := t.api.Events(ctx, client.EventsQuery{After: cursor, Cluster: r.ClusterID, Limit: 500,
					Wait: min(eventsWait, time.Until(deadline)).Truncate(time.Second)})
				if err != nil {
					return failure(err)
				}
				cursor = page.Next
				for _, e := range page.Events {
					steps++
					notifyProgress(ctx, req, steps, eventText(e))
				}
				if r, err = t.api.Run(ctx, in.RunID, client.Raw(&raw)); err != nil {
					return failure(err)
				}
				if len(page.Events) == 0 && time.Until(deadline) < time.Second {
					break
				}
			}
			if !slices.Contains(ends, r.Status) {
				return answer(fmt.Sprintf("%s Still %s after %s (waiting for %s); call wait_for_run again to go on waiting.",
					runSummary(r), r.Status, timeout, strings.Join(ends, " or ")), raw)
			}
			return answer(runSummary(r), raw)
		})
}
