package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// X19: a 429 on log shipping keeps the lines and sends
// nothing until Retry-After has passed; then every kept line goes out.
func TestAgentHonoursLogRateLimit(t *testing.T) {
	var mu sync.Mutex
	var shipped []int // lines per accepted logs request
	refused := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/agent/checkin":
			json.NewEncoder(w).Encode(agentapi.CheckinResponse{Cluster: "cl_x", Node: "node-0"})
		case "/v1/agent/peers":
			json.NewEncoder(w).Encode(agentapi.PeersResponse{MeshComplete: true})
		case "/v1/agent/heartbeat":
			w.Write([]byte(`{"task":null}`))
		case "/v1/agent/logs":
			if refused == 0 {
				refused++
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			var req agentapi.LogsRequest
			json.NewDecoder(r.Body).Decode(&req)
			shipped = append(shipped, len(req.Lines))
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := New(Config{Server: srv.URL, Token: "cdn_x_y", Exec: &gpuExec{}, Now: func() time.Time { return now }})
	ctx := context.Background()
	if err := a.Step(ctx); err != nil { // check-in line: refused with 429
		t.Fatalf("step with a 429 on logs: %v", err)
	}
	a.Log("second line")
	now = now.Add(29 * time.Second)
	a.Step(ctx)
	if refused != 1 || len(shipped) != 0 {
		t.Fatalf("before Retry-After: %d refused, %v shipped; want the agent to wait", refused, shipped)
	}
	now = now.Add(2 * time.Second)
	a.Step(ctx)
	if len(shipped) != 1 || shipped[0] < 2 {
		t.Errorf("after Retry-After: shipped %v, want one request with both kept lines", shipped)
	}
}
