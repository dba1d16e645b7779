package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSmoke drives the real binary's tools both ways in (API5): the
// SDK's client starts `clusterdeck mcp` as an MCP client would, and
// speaks Streamable HTTP to the serving binary's /mcp, with the demo key.
func TestMCPSmoke(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	cmd := exec.Command(binary(t), "mcp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CLUSTERDECK_API=" + s.url, "CLUSTERDECK_API_KEY=" + s.apiKey}
	overHTTP := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerKey(s.apiKey)}}
	for name, tr := range map[string]mcp.Transport{"stdio": &mcp.CommandTransport{Command: cmd}, "http": overHTTP} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "smoke", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 34 { // 15 with add_worker and resume_cluster, stop_cluster, the volumes' three (V1–V3), wait_for_cluster, list_events, cluster_gpu_metrics and set_gpu_watch, verification's three, runs' three (X17), reservations' five (X18)
			t.Errorf("%s: tools %v %v", name, tools, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_offers", Arguments: map[string]any{"nodes": 2}})
		if err != nil || res.IsError || res.StructuredContent == nil {
			t.Errorf("%s: list_offers: %v %+v", name, err, res)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_cluster", Arguments: map[string]any{"cluster_id": "cl_none"}})
		if err != nil || !res.IsError {
			t.Errorf("%s: get_cluster of no cluster: %v %+v", name, err, res)
		}
		if err := cs.Close(); err != nil && name == "http" {
			t.Errorf("%s: close: %v", name, err)
		}
	}
	s.stop(t)
}

// bearerKey sends an API key with every request.
type bearerKey string

func (k bearerKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}
