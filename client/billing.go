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

// Budgets is GET /v1/billing/budgets (B5, X6): the environments' monthly
// budgets with their spend and forecast, the balance's run-out and each
// billed cluster's. An API key sees its own environment.
func (c *Client) Budgets(ctx context.Context, opts ...Option) (api.Budgets, error) {
	var out api.Budgets
	err := c.do(ctx, http.MethodGet, "/v1/billing/budgets", nil, nil, &out, nil, opts)
	return out, err
}

// SetBudget is PUT /v1/billing/budgets/{envId} (B5): amount is dollars a
// month, like "500.00".
func (c *Client) SetBudget(ctx context.Context, envID, amount string, opts ...Option) (api.Budget, error) {
	var out api.Budget
	err := c.do(ctx, http.MethodPut, "/v1/billing/budgets/"+url.PathEscape(envID), nil, api.BudgetBody{Amount: amount}, &out, nil, opts)
	return out, err
}

// RemoveBudget is DELETE /v1/billing/budgets/{envId} (B5): the answer is
// the environment with no budget.
func (c *Client) RemoveBudget(ctx context.Context, envID string, opts ...Option) (api.Budget, error) {
	var out api.Budget
	err := c.do(ctx, http.MethodDelete, "/v1/billing/budgets/"+url.PathEscape(envID), nil, nil, &out, nil, opts)
	return out, err
}
