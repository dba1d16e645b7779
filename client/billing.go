package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/clusterdeck/clusterdeck/api"
)

// Balance is GET /v1/billing/balance (B1): the organisation's balance, its
// burn rate, the hours it lasts and the spend this month. Owners' and
// admins' keys only; a member's key gets a 403.
func (c *Client) Balance(ctx context.Context, opts ...Option) (api.BillingBalance, error) {
	var out api.BillingBalance
	err := c.do(ctx, http.MethodGet, "/v1/billing/balance", nil, nil, &out, nil, opts)
	return out, err
}

// Usage is GET /v1/billing/usage (B3): a month's usage, a row per machine.
// month is YYYY-MM (UTC); empty is the current month.
func (c *Client) Usage(ctx context.Context, month string, opts ...Option) (api.BillingUsage, error) {
	var q url.Values
	if month != "" {
		q = url.Values{"month": {month}}
	}
	var out api.BillingUsage
	err := c.do(ctx, http.MethodGet, "/v1/billing/usage", q, nil, &out, nil, opts)
	return out, err
}
