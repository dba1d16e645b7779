package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/clusterdeck/clusterdeck/api"
)

// OffersQuery narrows GET /v1/gpu/offers; zero fields are not sent.
type OffersQuery struct {
	Accelerator      string // e.g. H100_80GB
	Nodes            int    // machines in the cluster; prices are for all of them
	GPUsPerNode      int
	Interconnect     string // ethernet, infiniband or roce
	MachineKind      string // vm, bare_metal or container
	MaxPrice         string // dollars per hour for the whole cluster
	IncludeCommunity bool
	Sort             string // cluster_price (the default), gpu_price or track_record
}

func (q OffersQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"accelerator": q.Accelerator, "interconnect": q.Interconnect, "machine_kind": q.MachineKind, "max_price": q.MaxPrice, "sort": q.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Nodes != 0 {
		v.Set("nodes", strconv.Itoa(q.Nodes))
	}
	if q.GPUsPerNode != 0 {
		v.Set("gpus_per_node", strconv.Itoa(q.GPUsPerNode))
	}
	if q.IncludeCommunity {
		v.Set("include_community", "true")
	}
	return v
}

// Offers is GET /v1/gpu/offers: what can start now, by location (public).
func (c *Client) Offers(ctx context.Context, q OffersQuery, opts ...Option) (api.OffersResponse, error) {
	var out api.OffersResponse
	err := c.do(ctx, http.MethodGet, "/v1/gpu/offers", q.values(), nil, &out, nil, opts)
	return out, err
}

// QuoteFor is the body of a quote for nodes × gpusPerNode accelerators.
func QuoteFor(accelerator string, nodes, gpusPerNode int) api.QuoteBody {
	return api.QuoteBody{Accelerator: &accelerator, Nodes: &nodes, GPUsPerNode: &gpusPerNode}
}

// Quote is POST /v1/gpu/clusters/quote: a price locked for a while (Q1–Q4).
func (c *Client) Quote(ctx context.Context, body api.QuoteBody, opts ...Option) (api.Quote, error) {
	var out api.Quote
	err := c.do(ctx, http.MethodPost, "/v1/gpu/clusters/quote", nil, body, &out, nil, opts)
	return out, err
}

// Launch is POST /v1/gpu/clusters with idempotencyKey (L1): created is
// false when the key already launched this cluster. An empty key sends
// none, and a retry may then launch twice; use NewIdempotencyKey.
func (c *Client) Launch(ctx context.Context, body api.LaunchBody, idempotencyKey string, opts ...Option) (cl api.Cluster, created bool, err error) {
	var header http.Header
	if idempotencyKey != "" {
		header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	var status int
	opts = append(opts, func(c *call) { c.status = &status })
	cl, err = c.cluster(ctx, http.MethodPost, "/v1/gpu/clusters", body, header, opts)
	return cl, status == http.StatusCreated, err
}

// Clusters is GET /v1/gpu/clusters: the organisation's clusters (without events).
func (c *Client) Clusters(ctx context.Context, opts ...Option) ([]api.Cluster, error) {
	var out api.ClusterList
	err := c.do(ctx, http.MethodGet, "/v1/gpu/clusters", nil, nil, &out, nil, opts)
	return out.Clusters, err
}

// Cluster is GET /v1/gpu/clusters/{id}: the cluster, its nodes and events.
func (c *Client) Cluster(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodGet, clusterPath(id), nil, nil, opts)
}

// Terminate is POST /v1/gpu/clusters/{id}/terminate (L7): accepted in every
// state; every machine is released together.
func (c *Client) Terminate(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/terminate", nil, nil, opts)
}

// Recovery is the cluster's recovery object (R4): GET /v1/gpu/clusters/{id}'s
// policy, open unhealthy episode and last attempt.
func (c *Client) Recovery(ctx context.Context, id string, opts ...Option) (api.Recovery, error) {
	cl, err := c.Cluster(ctx, id, opts...)
	return cl.Recovery, err
}

// SetRecovery is PUT /v1/gpu/clusters/{id}/recovery (R3): the automatic
// recovery policy; an *Error with Fields names what is wrong.
func (c *Client) SetRecovery(ctx context.Context, id string, policy api.RecoveryPolicy, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPut, clusterPath(id)+"/recovery", policy, nil, opts)
}

// RecoveryPolicyOf is the body of SetRecovery: mode "restart" or "off".
func RecoveryPolicyOf(mode string, maxAttempts, cooldownMinutes int) api.RecoveryPolicy {
	return api.RecoveryPolicy{Mode: &mode, MaxAttempts: &maxAttempts, CooldownMinutes: &cooldownMinutes}
}

// Recover is POST /v1/gpu/clusters/{id}/recover (R5): one recovery attempt
// at once; an *Error with Code "nothing_to_recover" when no machine is down.
func (c *Client) Recover(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/recover", nil, nil, opts)
}

// VerifyAgain is POST /v1/gpu/clusters/{id}/verify (X13): the
// hand-over's verification runs again on a ready cluster; nothing is
// swapped. confirmDisruption says the customer accepts that the checks
// take every GPU meanwhile; without it the server answers 422
// confirmation_required with what they would disrupt (X13).
func (c *Client) VerifyAgain(ctx context.Context, id string, confirmDisruption bool, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/verify", api.VerifyAgainRequest{ConfirmDisruption: confirmDisruption}, nil, opts)
}

// KeepUnverified is POST /v1/gpu/clusters/{id}/keep (X13): a cluster
// that failed verification is kept as it is (degraded → ready).
func (c *Client) KeepUnverified(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/keep", nil, nil, opts)
}

// AddWorker is POST /v1/gpu/clusters/{id}/workers (L10): one more machine
// of the cluster's offer joins it; admitted like a launch (an *Error with
// Code quota_exceeded, insufficient_balance or no_capacity when not).
func (c *Client) AddWorker(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/workers", nil, nil, opts)
}

// ReplacePreview is POST /v1/gpu/clusters/{id}/nodes/{rank}/replace without
// confirm (X5): what the replacement costs; nothing changes.
func (c *Client) ReplacePreview(ctx context.Context, id string, rank int, opts ...Option) (api.ReplacePreview, error) {
	var out api.ReplacePreview
	err := c.do(ctx, http.MethodPost, clusterPath(id)+"/nodes/"+strconv.Itoa(rank)+"/replace", nil, api.ReplaceBody{}, &out, nil, opts)
	return out, err
}

// ReplaceNode is the confirmed replacement of machine rank, which is down
// (X5): a new machine with the same name and address joins in its place.
func (c *Client) ReplaceNode(ctx context.Context, id string, rank int, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/nodes/"+strconv.Itoa(rank)+"/replace", api.ReplaceBody{Confirm: true}, nil, opts)
}

// Resume is POST /v1/gpu/clusters/{id}/resume (B6): a stopped cluster's
// machines start again, all or nothing; an *Error with Code
// "insufficient_balance" (with the amount to add and the top-up link) when
// the balance does not pass launch admission, "not_stopped" unless the
// cluster is stopped.
func (c *Client) Resume(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/resume", nil, nil, opts)
}

// Stop is POST /v1/gpu/clusters/{id}/stop (B6): every machine of a ready
// cluster is stopped, disks and the volume kept; compute billing ends once
// all are. An *Error with Code "stop_unsupported" (the provider cannot stop
// machines; Message says why) or "not_running" (not ready or degraded, or
// something under way).
func (c *Client) Stop(ctx context.Context, id string, opts ...Option) (api.Cluster, error) {
	return c.cluster(ctx, http.MethodPost, clusterPath(id)+"/stop", nil, nil, opts)
}

// Connections is GET /v1/gpu/clusters/{id}/connections (N2–N5): an
// *Error with Code "not_connectable" until every machine is up.
func (c *Client) Connections(ctx context.Context, id string, opts ...Option) (api.Connections, error) {
	var out api.Connections
	err := c.do(ctx, http.MethodGet, clusterPath(id)+"/connections", nil, nil, &out, nil, opts)
	return out, err
}

// Logs is GET /v1/gpu/clusters/{id}/logs?follow=false: the stored lines of
// the node of that rank (N6). FollowLogs follows them.
func (c *Client) Logs(ctx context.Context, id string, rank int, opts ...Option) (api.LogLines, error) {
	var out api.LogLines
	q := url.Values{"node": {strconv.Itoa(rank)}, "follow": {"false"}}
	err := c.do(ctx, http.MethodGet, clusterPath(id)+"/logs", q, nil, &out, nil, opts)
	return out, err
}

func clusterPath(id string) string { return "/v1/gpu/clusters/" + url.PathEscape(id) }

// cluster calls and reads a cluster the caller goes on to use by its id.
func (c *Client) cluster(ctx context.Context, method, path string, body any, header http.Header, opts []Option) (api.Cluster, error) {
	var cl api.Cluster
	if err := c.do(ctx, method, path, nil, body, &cl, header, opts); err != nil {
		return cl, err
	}
	if cl.ID == "" {
		return cl, errors.New("could not read the API's answer: it names no cluster id")
	}
	return cl, nil
}

// GPUMetrics is GET /v1/gpu/clusters/{id}/metrics (X15): window "1h",
// "24h" or "30d" ("" = 1h).
func (c *Client) GPUMetrics(ctx context.Context, id, window string, opts ...Option) (api.GPUMetrics, error) {
	var out api.GPUMetrics
	var q url.Values
	if window != "" {
		q = url.Values{"window": {window}}
	}
	err := c.do(ctx, http.MethodGet, clusterPath(id)+"/metrics", q, nil, &out, nil, opts)
	return out, err
}

// GPUWatch is GET /v1/gpu/clusters/{id}/gpu-watch (X15).
func (c *Client) GPUWatch(ctx context.Context, id string, opts ...Option) (api.GPUWatch, error) {
	var out api.GPUWatch
	err := c.do(ctx, http.MethodGet, clusterPath(id)+"/gpu-watch", nil, nil, &out, nil, opts)
	return out, err
}

// SetGPUWatch is PUT /v1/gpu/clusters/{id}/gpu-watch (X15): fields left
// nil keep their value.
func (c *Client) SetGPUWatch(ctx context.Context, id string, body api.GPUWatchBody, opts ...Option) (api.GPUWatch, error) {
	var out api.GPUWatch
	err := c.do(ctx, http.MethodPut, clusterPath(id)+"/gpu-watch", nil, body, &out, nil, opts)
	return out, err
}
