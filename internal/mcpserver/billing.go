package mcpserver

import (
	"context"
	"fmt"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (t *tools) getBalance(s *mcp.Server) {
	// Read-only, so idempotent and not destructive (B1). A member's key is
	// refused with the API's forbidden.
	a := readOnly("Get the balance")
	a.IdempotentHint, a.DestructiveHint = true, new(false)
	mcp.AddTool(s, &mcp.Tool{Name: "get_balance", InputSchema: inputSchema[NoArgs](nil), Annotations: a,
		Description: "How much money the organisation has and how long it lasts at the current burn: balance, burn rate per hour of everything running, hours remaining and spend this month (owners' and admins' keys)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
			var b api.BillingBalance
			return call(ctx, func(o client.Option) (err error) { b, err = t.api.Balance(ctx, o); return err },
				func() string { return balanceSummary(b) })
		})
}

func balanceSummary(b api.BillingBalance) string {
	lasts := "nothing is running, so it is not being spent"
	if b.HoursRemaining != nil {
		lasts = fmt.Sprintf("at $%s/h it lasts about %.1f hours", b.BurnRate, *b.HoursRemaining)
	}
	return fmt.Sprintf("Balance $%s; %s. Spent $%s in %s (UTC).", b.Balance, lasts, b.SpendThisMonth, b.Month)
}

// UsageArgs are billing_usage's arguments.
type UsageArgs struct {
	Month string `json:"month,omitempty" jsonschema:"the month, YYYY-MM (UTC); the current month when empty"`
}

func (t *tools) billingUsage(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "billing_usage", InputSchema: inputSchema[UsageArgs](nil), Annotations: readOnly("Get a month's usage"),
		Description: "What each cluster cost in a month (YYYY-MM, UTC; this month when empty), a row per machine with its minutes and amount (owners' and admins' keys)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in UsageArgs) (*mcp.CallToolResult, any, error) {
			var u api.BillingUsage
			return call(ctx, func(o client.Option) (err error) { u, err = t.api.Usage(ctx, in.Month, o); return err },
				func() string {
					return fmt.Sprintf("%s: $%s over %d clusters; each cluster's machines are in clusters[].machines.", u.Month, u.Total, len(u.Clusters))
				})
		})
}
