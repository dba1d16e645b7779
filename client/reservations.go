package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/clusterdeck/clusterdeck/api"
)

// Reserve is POST /v1/reservations (X18) with idempotencyKey: created is
// false for a preview or when the key already booked.
func (c *Client) Reserve(ctx context.Context, body api.ReservationBody, idempotencyKey string, opts ...Option) (r api.Reservation, created bool, err error) {
	var header http.Header
	if idempotencyKey != "" {
		header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	var status int
	opts = append(opts, func(c *call) { c.status = &status })
	err = c.do(ctx, http.MethodPost, "/v1/reservations", nil, body, &r, header, opts)
	return r, status == http.StatusCreated, err
}

// Reservations is GET /v1/reservations.
func (c *Client) Reservations(ctx context.Context, opts ...Option) (api.ReservationList, error) {
	var out api.ReservationList
	err := c.do(ctx, http.MethodGet, "/v1/reservations", nil, nil, &out, nil, opts)
	return out, err
}

// Reservation is GET /v1/reservations/{id}, with its trail.
func (c *Client) Reservation(ctx context.Context, id string, opts ...Option) (api.Reservation, error) {
	var out api.Reservation
	err := c.do(ctx, http.MethodGet, "/v1/reservations/"+url.PathEscape(id), nil, nil, &out, nil, opts)
	return out, err
}

// CancelReservation is POST /v1/reservations/{id}/cancel.
func (c *Client) CancelReservation(ctx context.Context, id string, opts ...Option) (api.Reservation, error) {
	var out api.Reservation
	err := c.do(ctx, http.MethodPost, "/v1/reservations/"+url.PathEscape(id)+"/cancel", nil, nil, &out, nil, opts)
	return out, err
}

// Availability is GET /v1/gpu/offers/{id}/availability: days 1–120, nodes 2–512.
func (c *Client) Availability(ctx context.Context, offerID string, nodes, days int, opts ...Option) (api.Availability, error) {
	q := url.Values{}
	if nodes > 0 {
		q.Set("nodes", strconv.Itoa(nodes))
	}
	if days > 0 {
		q.Set("days", strconv.Itoa(days))
	}
	var out api.Availability
	err := c.do(ctx, http.MethodGet, "/v1/gpu/offers/"+url.PathEscape(offerID)+"/availability", q, nil, &out, nil, opts)
	return out, err
}
