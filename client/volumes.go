package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/clusterdeck/clusterdeck/api"
)

// Volumes is GET /v1/volumes (V1): the key's environment's volumes.
func (c *Client) Volumes(ctx context.Context, opts ...Option) (api.VolumeList, error) {
	var out api.VolumeList
	err := c.do(ctx, http.MethodGet, "/v1/volumes", nil, nil, &out, nil, opts)
	return out, err
}

// CreateVolume is POST /v1/volumes (V2).
func (c *Client) CreateVolume(ctx context.Context, body api.VolumeBody, opts ...Option) (api.Volume, error) {
	var out api.Volume
	err := c.do(ctx, http.MethodPost, "/v1/volumes", nil, body, &out, nil, opts)
	return out, err
}

// Volume is GET /v1/volumes/{id}.
func (c *Client) Volume(ctx context.Context, id string, opts ...Option) (api.Volume, error) {
	var out api.Volume
	err := c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(id), nil, nil, &out, nil, opts)
	return out, err
}

// GrowVolume is POST /v1/volumes/{id}/grow (V3): refused with
// volume_attached while a cluster holds it.
func (c *Client) GrowVolume(ctx context.Context, id string, sizeGB int, opts ...Option) (api.Volume, error) {
	var out api.Volume
	err := c.do(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(id)+"/grow", nil, api.VolumeGrowBody{SizeGB: sizeGB}, &out, nil, opts)
	return out, err
}

// DeleteVolume is DELETE /v1/volumes/{id} (V3): refused with
// volume_attached while a cluster holds it.
func (c *Client) DeleteVolume(ctx context.Context, id string, opts ...Option) error {
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(id), nil, nil, nil, nil, opts)
}
