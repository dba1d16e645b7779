package mcpserver

import (
	"context"
	"fmt"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RecoveryArgs are set_recovery's arguments: the automatic recovery policy (R3).
type RecoveryArgs struct {
	ClusterID       string `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	Mode            string `json:"mode" jsonschema:"restart: restart machines that go down, within the limits below; off: only report them"`
	MaxAttempts     int    `json:"max_attempts" jsonschema:"recovery attempts per unhealthy episode, 1 to 10"`
	CooldownMinutes int    `json:"cooldown_minutes" jsonschema:"minutes between two attempts, 1 to 120"`
}

func (t *tools) setRecovery(s *mcp.Server) {
	schema := clusterSchema[RecoveryArgs]()
	schema.Properties["mode"].Enum = []any{"restart", "off"}
	schema.Properties["max_attempts"].Minimum, schema.Properties["max_attempts"].Maximum = new(1.0), new(10.0)
	schema.Properties["cooldown_minutes"].Minimum, schema.Properties["cooldown_minutes"].Maximum = new(1.0), new(120.0)
	// Idempotent (the same policy twice is the same policy); not
	// destructive (nothing is released; off only stops future restarts).
	mcp.AddTool(s, &mcp.Tool{Name: "set_recovery", InputSchema: schema, Annotations: writes("Set recovery policy", false, true),
		Description: "Set a cluster's automatic recovery: restart machines that go down (up to max_attempts per episode, cooldown_minutes apart), or off."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in RecoveryArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			policy := client.RecoveryPolicyOf(in.Mode, in.MaxAttempts, in.CooldownMinutes)
			return call(ctx, func(o client.Option) (err error) {
				cl, err = t.api.SetRecovery(ctx, in.ClusterID, policy, o)
				return err
			},
				func() string {
					r := cl.Recovery
					if r.Mode != "restart" {
						return fmt.Sprintf("Cluster %s: automatic recovery is off; machines that go down are reported (get_cluster), and recover_cluster tries once.", cl.ID)
					}
					return fmt.Sprintf("Cluster %s: machines that go down are restarted automatically, up to %d attempts per episode, %d minutes apart.",
						cl.ID, r.MaxAttempts, r.CooldownMinutes)
				})
		})
}

func (t *tools) recoverCluster(s *mcp.Server) {
	// Neither read-only nor idempotent (each call asks for one more
	// attempt); not destructive (it restarts machines that are down).
	mcp.AddTool(s, &mcp.Tool{Name: "recover_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Recover a cluster now", false, false),
		Description: "Make one recovery attempt now on a degraded cluster: its machines that are down are restarted; refused with nothing_to_recover when none is."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Recover(ctx, in.ClusterID, o); return err },
				func() string {
					return fmt.Sprintf("Recovery of cluster %s (status %s) requested: one attempt starts now; call get_cluster to follow it (recovery.outcomes per machine).",
						cl.ID, cl.Status)
				})
		})
}

func (t *tools) addWorker(s *mcp.Server) {
	// Neither read-only nor idempotent (each call asks for one more
	// machine); not destructive (it releases nothing).
	mcp.AddTool(s, &mcp.Tool{Name: "add_worker", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Add a worker", false, false),
		Description: "Add one more machine of the same offer to a ready cluster (L10): admitted like a launch, it joins the mesh and the software and bills from when it has joined."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.AddWorker(ctx, in.ClusterID, o); return err },
				func() string {
					node := ""
					for _, n := range cl.Nodes {
						if n.Status == "joining" {
							node = n.Name
						}
					}
					return fmt.Sprintf("Worker %s admitted for cluster %s at $%s/h (now %d machines, $%s/h): it is placed and joins now, billed from when it has joined; call get_cluster to follow it (its status reads joining, then ready).",
						node, cl.ID, cl.USDPerMachineHour, cl.NodeCount, cl.USDPerHour)
				})
		})
}

func (t *tools) resumeCluster(s *mcp.Server) {
	// Idempotent (asking again while the resume is under way changes
	// nothing); not destructive (it starts machines).
	mcp.AddTool(s, &mcp.Tool{Name: "resume_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Resume a stopped cluster", false, true),
		Description: "Start a cluster stopped by the balance or a budget again (B6): every machine, all or nothing; billing restarts when all have joined. " +
			"Refused with insufficient_balance (shortfall is the amount to add) like a launch, or not_stopped."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Resume(ctx, in.ClusterID, o); return err },
				func() string {
					return fmt.Sprintf("Resume of cluster %s requested: every machine starts again; call get_cluster until status is \"ready\" "+
						"(a failed resume leaves it \"stopped\" with lastError).", cl.ID)
				})
		})
}

func (t *tools) stopCluster(s *mcp.Server) {
	// Idempotent (asking again while the stop is under way changes
	// nothing); not destructive (disks and the volume are kept; resume
	// starts the machines again).
	mcp.AddTool(s, &mcp.Tool{Name: "stop_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Stop a ready cluster", false, true),
		Description: "Stop every machine of a ready or degraded cluster (B6): running processes end, the machines' disks and the volume are kept; " +
			"compute billing ends once every machine is stopped, an attached volume keeps billing. resume_cluster starts it again. " +
			"Refused with stop_unsupported where the provider cannot stop machines (terminate ends billing there), or not_running."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Stop(ctx, in.ClusterID, o); return err },
				func() string {
					return fmt.Sprintf("Stop of cluster %s requested: every machine is being stopped; call get_cluster until status is \"stopped\" "+
						"(compute billing ends then). resume_cluster starts it again.", cl.ID)
				})
		})
}
