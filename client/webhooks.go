package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/clusterdeck/clusterdeck/api"
)

// Webhooks is GET /v1/webhooks (X8): the key's environment's endpoints and
// every event type they may subscribe to.
func (c *Client) Webhooks(ctx context.Context, opts ...Option) (api.WebhookList, error) {
	var out api.WebhookList
	err := c.do(ctx, http.MethodGet, "/v1/webhooks", nil, nil, &out, nil, opts)
	return out, err
}

// CreateWebhook is POST /v1/webhooks: the answer carries the signing
// secret, shown once.
func (c *Client) CreateWebhook(ctx context.Context, body api.WebhookBody, opts ...Option) (api.Webhook, error) {
	var out api.Webhook
	err := c.do(ctx, http.MethodPost, "/v1/webhooks", nil, body, &out, nil, opts)
	return out, err
}

// Webhook is GET /v1/webhooks/{id}.
func (c *Client) Webhook(ctx context.Context, id string, opts ...Option) (api.Webhook, error) {
	var out api.Webhook
	err := c.do(ctx, http.MethodGet, "/v1/webhooks/"+url.PathEscape(id), nil, nil, &out, nil, opts)
	return out, err
}

// UpdateWebhook is PATCH /v1/webhooks/{id}: nil fields stay.
func (c *Client) UpdateWebhook(ctx context.Context, id string, body api.WebhookBody, opts ...Option) (api.Webhook, error) {
	var out api.Webhook
	err := c.do(ctx, http.MethodPatch, "/v1/webhooks/"+url.PathEscape(id), nil, body, &out, nil, opts)
	return out, err
}

// DeleteWebhook is DELETE /v1/webhooks/{id}.
func (c *Client) DeleteWebhook(ctx context.Context, id string, opts ...Option) error {
	return c.do(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(id), nil, nil, nil, nil, opts)
}

// RotateWebhookSecret is POST /v1/webhooks/{id}/rotate-secret; nil
// overlap = the server's default (24 h).
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, overlapHours *int, opts ...Option) (api.Webhook, error) {
	var out api.Webhook
	err := c.do(ctx, http.MethodPost, "/v1/webhooks/"+url.PathEscape(id)+"/rotate-secret", nil,
		api.WebhookRotateBody{OverlapHours: overlapHours}, &out, nil, opts)
	return out, err
}

// TestWebhook is POST /v1/webhooks/{id}/test: a webhook.test event queued.
func (c *Client) TestWebhook(ctx context.Context, id string, opts ...Option) (api.WebhookDelivery, error) {
	var out api.WebhookDelivery
	err := c.do(ctx, http.MethodPost, "/v1/webhooks/"+url.PathEscape(id)+"/test", nil, nil, &out, nil, opts)
	return out, err
}

// WebhookDeliveries is GET /v1/webhooks/{id}/deliveries: the log.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, opts ...Option) (api.WebhookAttempts, error) {
	var out api.WebhookAttempts
	err := c.do(ctx, http.MethodGet, "/v1/webhooks/"+url.PathEscape(id)+"/deliveries", nil, nil, &out, nil, opts)
	return out, err
}

// RedeliverWebhook is POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver.
func (c *Client) RedeliverWebhook(ctx context.Context, id string, delivery int64, opts ...Option) (api.WebhookDelivery, error) {
	var out api.WebhookDelivery
	err := c.do(ctx, http.MethodPost, "/v1/webhooks/"+url.PathEscape(id)+"/deliveries/"+strconv.FormatInt(delivery, 10)+"/redeliver",
		nil, nil, &out, nil, opts)
	return out, err
}
