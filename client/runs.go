package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/clusterdeck/clusterdeck/api"
)

// SubmitRun is POST /v1/runs (X17) with idempotencyKey: created is false
// when the key already submitted this run.
func (c *Client) SubmitRun(ctx context.Context, body api.RunBody, idempotencyKey string, opts ...Option) (r api.Run, created bool, err error) {
	var header http.Header
	if idempotencyKey != "" {
		header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	var status int
	opts = append(opts, func(c *call) { c.status = &status })
	err = c.do(ctx, http.MethodPost, "/v1/runs", nil, body, &r, header, opts)
	return r, status == http.StatusCreated, err
}

// Run is GET /v1/runs/{id}: the run, its bill and its interruptions.
func (c *Client) Run(ctx context.Context, id string, opts ...Option) (api.Run, error) {
	var out api.Run
	err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, nil, &out, nil, opts)
	return out, err
}

// Runs is GET /v1/runs: the organisation's runs, newest first.
func (c *Client) Runs(ctx context.Context, opts ...Option) ([]api.Run, error) {
	var out api.RunList
	err := c.do(ctx, http.MethodGet, "/v1/runs", nil, nil, &out, nil, opts)
	return out.Runs, err
}
