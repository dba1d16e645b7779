package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// gpuExec answers the GPU query as a broken driver does and reaches nobody.
type gpuExec struct{ steps []string }

func (e *gpuExec) Reach(context.Context, string) error { return errors.New("unreachable") }

func (e *gpuExec) Run(_ context.Context, step, script string) (string, error) {
	e.steps = append(e.steps, step+" "+script)
	return "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", errors.New("gpus: exit status 9")
}

// The agent checks in with what nvidia-smi printed, its error included, so
// the server can say why a node has no usable GPUs (L4).
func TestCheckinSendsNvidiaSMI(t *testing.T) {
	var got agentapi.CheckinRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/checkin" {
			_ = json.NewDecoder(r.Body).Decode(&got)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"cluster":"cl_x","node":"node-0","rank":0,"peers":[],"heartbeatSeconds":10}`))
	}))
	defer srv.Close()
	ex := &gpuExec{}
	a := New(Config{Server: srv.URL, Token: "cdn_x", Exec: ex, HTTP: srv.Client()})
	_ = a.Step(context.Background())
	if len(ex.steps) == 0 || ex.steps[0] != "gpus "+GPUQuery {
		t.Fatalf("steps run: %q", ex.steps)
	}
	if got.NvidiaSMI == nil || !strings.Contains(*got.NvidiaSMI, "NVIDIA-SMI has failed") || !strings.Contains(*got.NvidiaSMI, "exit status 9") {
		t.Errorf("checked in with nvidiaSmi %v", got.NvidiaSMI)
	}
}
