package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/clusterdeck/clusterdeck/api"
)

// RequestQuote is POST /v1/quote-requests (RQ1): ask the team for reserved
// capacity, a larger cluster or a fast fabric.
func (c *Client) RequestQuote(ctx context.Context, body api.QuoteRequestBody, opts ...Option) (api.QuoteRequest, error) {
	var out api.QuoteRequest
	err := c.do(ctx, http.MethodPost, "/v1/quote-requests", nil, body, &out, nil, opts)
	return out, err
}

// QuoteRequest is GET /v1/quote-requests/{id} (RQ2): where a request stands.
func (c *Client) QuoteRequest(ctx context.Context, id string, opts ...Option) (api.QuoteRequest, error) {
	var out api.QuoteRequest
	err := c.do(ctx, http.MethodGet, "/v1/quote-requests/"+url.PathEscape(id), nil, nil, &out, nil, opts)
	return out, err
}
