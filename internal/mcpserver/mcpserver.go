// Package mcpserver is Clusterdeck's MCP server (API5): the REST API's
// operations as tools an AI agent calls. There is one set of tools and two
// ways in:
//
//   - `clusterdeck mcp` serves them over stdio to a local agent, calling a
//     Clusterdeck's REST API with CLUSTERDECK_API and CLUSTERDECK_API_KEY,
//     like the CLI (Stdio);
//   - the server serves them over Streamable HTTP at /mcp (Handler), where
//     each request's API key is forwarded to the same server's REST API in
//     process, without a network hop.
//
// Either way a tool is a REST call through package client: the same
// validation, scoping (organisation and the key's environment), refusals
// and OpenAPI-checked answers as the API, written once.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instructions tell the agent how the tools fit together.
const instructions = `Clusterdeck runs multi-node GPU clusters. To start one: list_offers (what can start now),
quote_cluster (locks a whole-cluster price), launch_cluster with the quote_id, then wait_for_cluster
until status is "ready" (billing starts there; it blocks, no polling needed), cluster_connections for SSH and launch commands,
cluster_logs for a node's output, terminate_cluster when the work is done; stop_cluster pauses a ready one
(disks and the volume kept, compute billing ends; refused with stop_unsupported where the provider cannot stop).
A degraded cluster (a machine down) keeps billing: recover_cluster tries once now, set_recovery
restarts machines automatically. A cluster "stopped" (by you, the balance or a budget) bills no compute;
resume_cluster starts it again (after adding funds when the balance stopped it). add_worker grows a ready cluster by one machine of the same offer.
Refusals are tool errors carrying the API's code: no_capacity (see advice), price_changed
(quote again), quota_exceeded, insufficient_balance (shortfall is the amount to add).
For reserved capacity, more machines or a fast fabric, request_quote; what the team agrees comes
back as a private offer in list_offers (privateOffers), quoted with quote_cluster private_offer_id.`

// New is the MCP server whose tools act through c, a client of one
// Clusterdeck with one API key.
func New(c *client.Client) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "clusterdeck", Title: "Clusterdeck", Version: version()},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{api: c}
	for _, add := range t.all() {
		add(s)
	}
	return s
}

// tools are the tool handlers over one client.
type tools struct{ api *client.Client }

// all lists every tool. A tool for a new API operation (add_worker,
// volumes, get_balance as their routes land) is one more entry here: a
// client method, an input type and a handler.
func (t *tools) all() []func(*mcp.Server) {
	return []func(*mcp.Server){
		t.listOffers, t.quoteCluster, t.launchCluster, t.listClusters, t.getCluster,
		t.clusterConnections, t.clusterLogs, t.terminateCluster, t.requestQuote, t.setRecovery, t.recoverCluster, t.verificationTools, t.addWorker,
		t.stopCluster, t.resumeCluster, t.getBalance, t.billingUsage, t.listVolumes, t.createVolume, t.deleteVolume,
		t.waitForCluster, t.listEvents, t.clusterGPUMetrics, t.setGPUWatch, t.runTools, t.reservationTools,
	}
}

// Annotations, set truthfully: every tool acts on Clusterdeck only (a
// closed world); reads change nothing.
func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: new(false)}
}

func writes(title string, destructive, idempotent bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, DestructiveHint: new(destructive), IdempotentHint: idempotent, OpenWorldHint: new(false)}
}

// answer is a tool's result: a line for the agent to act on, then the
// API's JSON as it came (also the structured content).
func answer(summary string, raw []byte) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: summary}, &mcp.TextContent{Text: string(raw)}},
		StructuredContent: json.RawMessage(raw),
	}, nil, nil
}

// failure turns an API refusal into a tool error the agent can act on: the
// code, the message, the field errors and the code's own members (reason,
// advice, old and new prices, shortfall…), with the API's error body as
// structured content. Anything else (the API unreachable) is a plain tool
// error.
func failure(err error) (*mcp.CallToolResult, any, error) {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return nil, nil, err
	}
	text := refusalText(ae)
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if !ae.NotAPI && json.Valid(ae.Body) {
		res.Content = append(res.Content, &mcp.TextContent{Text: string(ae.Body)})
		res.StructuredContent = json.RawMessage(ae.Body)
	}
	return res, nil, nil
}

// refusalText is one readable paragraph of an API error.
func refusalText(ae *client.Error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (HTTP %d): %s", ae.Code, ae.Status, ae.Message)
	for _, k := range sortedKeys(ae.Fields) {
		fmt.Fprintf(&b, "\n- %s: %s", k, ae.Fields[k])
	}
	var reason, shortfall string
	var advice []string
	if ae.Extra("reason", &reason) {
		fmt.Fprintf(&b, "\nreason: %s", reason)
	}
	if ae.Extra("advice", &advice) && len(advice) > 0 {
		fmt.Fprintf(&b, "\nadvice: %s", strings.Join(advice, " "))
	}
	var old, fresh api.Quote
	if ae.Extra("old", &old) {
		fmt.Fprintf(&b, "\nold price: $%s/h (quote %s)", old.USDPerHour, old.ID)
	}
	if ae.Extra("new", &fresh) {
		fmt.Fprintf(&b, "\nnew price: $%s/h (quote %s: launch with it if the new price is acceptable)", fresh.USDPerHour, fresh.ID)
	}
	if ae.Extra("shortfall", &shortfall) {
		fmt.Fprintf(&b, "\namount to add: $%s", shortfall)
	}
	var topUp string
	if ae.Extra("topUpUrl", &topUp) {
		fmt.Fprintf(&b, " (add it at %s)", topUp)
	}
	var resource string
	var limit, inUse, requested int
	if ae.Extra("resource", &resource) && ae.Extra("limit", &limit) && ae.Extra("inUse", &inUse) && ae.Extra("requested", &requested) {
		fmt.Fprintf(&b, "\nquota: %s limit %d, in use %d, requested %d", resource, limit, inUse, requested)
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// call runs one client call that reads its answer's body, and makes the
// tool's result of it.
func call(ctx context.Context, do func(client.Option) error, summary func() string) (*mcp.CallToolResult, any, error) {
	var raw []byte
	if err := do(client.Raw(&raw)); err != nil {
		return failure(err)
	}
	return answer(summary(), raw)
}
