package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// verificationTools are the tools of X13: the hand-over report, run it again,
// keep a cluster that failed it.
func (t *tools) verificationTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "get_verification", InputSchema: clusterSchema[ClusterArgs](), Annotations: readOnly("Get a cluster's verification report"),
		Description: "The hand-over report: every machine's GPU, memory-error and stress check, the ring all-reduce against its threshold, every pair's bandwidth, and the machines swapped before hand-over and why."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Cluster(ctx, in.ClusterID, o); return err },
				func() string { return verificationSummary(cl) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "verify_cluster", InputSchema: clusterSchema[VerifyArgs](), Annotations: writes("Run verification again", false, false),
		Description: "Run the hand-over's verification again on a ready cluster: the same checks and report, nothing swapped. " +
			"The checks take every GPU of every machine for minutes, so a job running on the cluster slows down or fails: " +
			"ask the user first, and pass confirm_disruption true only when they accept; without it the call is refused with what it would disrupt. " +
			"Follow it with get_verification."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in VerifyArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) {
				cl, err = t.api.VerifyAgain(ctx, in.ClusterID, in.ConfirmDisruption, o)
				return err
			},
				func() string {
					return fmt.Sprintf("Verification of cluster %s runs again: every machine and the fabric are checked; nothing is swapped. Call get_verification in a few minutes.", cl.ID)
				})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "keep_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Keep a cluster that failed verification", false, true),
		Description: "Keep a cluster that failed verification as it is (degraded → ready); the other choice is terminate_cluster."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.KeepUnverified(ctx, in.ClusterID, o); return err },
				func() string { return fmt.Sprintf("Cluster %s is kept as it is: %s.", cl.ID, cl.Status) })
		})
}

// verificationSummary is the report in a few sentences.
func verificationSummary(cl api.Cluster) string {
	v := cl.Verification
	if v == nil {
		return fmt.Sprintf("Cluster %s was launched with verify false: no report. verify_cluster runs it once the cluster is ready.", cl.ID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster %s verification run %d: %s. %s", cl.ID, v.Run, v.Status, v.Summary)
	for _, m := range v.Machines {
		if m.Status != "passed" {
			fmt.Fprintf(&b, " %s %s: %s.", m.Node, m.Status, strings.Join(m.Errors, "; "))
		}
	}
	for _, s := range v.Swaps {
		fmt.Fprintf(&b, " Swapped %s (%s): %s.", s.Node, s.Outcome, s.Reason)
	}
	if cl.Status == "degraded" && cl.LastError != nil && strings.HasPrefix(*cl.LastError, "verification_failed") {
		b.WriteString(" Choose: keep_cluster keeps it as it is, terminate_cluster ends it.")
	}
	return b.String()
}

// VerifyArgs are verify_cluster's arguments: the cluster and the user's
// consent to disrupt what runs on it (X13).
type VerifyArgs struct {
	ClusterID         string `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	ConfirmDisruption bool   `json:"confirm_disruption,omitempty" jsonschema:"true only when the user accepts that the checks take every GPU for minutes, disrupting jobs running on the cluster"`
}
