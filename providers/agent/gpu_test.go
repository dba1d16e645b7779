package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

func val[T int | int64](p *T) string {
	if p == nil {
		return "unknown"
	}
	return itoa(int64(*p))
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// X15: real nvidia-smi output parses; "[N/A]" is unknown, not zero.
func TestParseGPUSamplesRealOutput(t *testing.T) {
	at := time.Date(2026, 7, 14, 8, 12, 53, 0, time.UTC)
	for file, want := range map[string]string{
		"nvidia_smi_query_gpu_csv_h100_590_load.txt":         "0 GPU-00000000-0000-0000-0000-000000000000 util=100 mem=19818/81559 temp=59 power=632 sm=1980 ecc=0 throttle=0",
		"nvidia_smi_query_gpu_csv_rtx4080super_595_load.txt": "0 GPU-00000000-0000-0000-0000-000000000000 util=7 mem=1474/16376 temp=46 power=84 sm=2805 ecc=unknown throttle=0",
		"nvidia_smi_query_gpu_csv_h200_mig_590_load.txt":     "0 GPU-00000000-0000-0000-0000-000000000000 util=unknown mem=16959/143771 temp=36 power=295 sm=1980 ecc=0 throttle=0",
	} {
		raw, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseGPUSamples(string(raw), at)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %d samples, %v", file, len(got), err)
		}
		s := got[0]
		line := strings.Join([]string{itoa(int64(s.Index)), s.UUID, "util=" + val(s.UtilPct), "mem=" + val(s.MemUsedMiB) + "/" + val(s.MemTotalMiB),
			"temp=" + val(s.TempC), "power=" + val(s.PowerW), "sm=" + val(s.SMClockMHz), "ecc=" + val(s.ECCUncorrected), "throttle=" + val(s.Throttle)}, " ")
		if line != want || !s.At.Equal(at) {
			t.Errorf("%s:\n got %s\nwant %s", file, line, want)
		}
	}
}

// The agent's own query shape: no header, no units, its column order;
// "[Not Supported]" and "[N/A]" are unknown; a line without an index is an error.
func TestParseGPUSamplesNoHeader(t *testing.T) {
	out := "0, GPU-5c1e4b5a-0000-0000-0000-000000000001, 45, 1024, 81559, 40, 72.34, 1980, 0, 0x0000000000000004\n" +
		"1, GPU-5c1e4b5a-0000-0000-0000-000000000002, [N/A], [N/A], 81559, [N/A], [Not Supported], [N/A], [N/A], [Not Supported]\n"
	got, err := ParseGPUSamples(out, time.Unix(0, 0))
	if err != nil || len(got) != 2 {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	if *got[0].UtilPct != 45 || *got[0].PowerW != 72 || *got[0].Throttle != 4 || *got[0].ECCUncorrected != 0 {
		t.Errorf("GPU 0: %+v", got[0])
	}
	g := got[1]
	if g.Index != 1 || g.UtilPct != nil || g.MemUsedMiB != nil || g.TempC != nil || g.PowerW != nil || g.SMClockMHz != nil ||
		g.ECCUncorrected != nil || g.Throttle != nil || *g.MemTotalMiB != 81559 {
		t.Errorf("GPU 1: unknowns read as values: %+v", g)
	}
	if _, err := ParseGPUSamples("No devices were found, x\n", time.Unix(0, 0)); err == nil {
		t.Error("a line without an index parsed")
	}
}

func TestParseXID(t *testing.T) {
	for line, want := range map[string]int{
		"[ 4123.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.":      79,
		"NVRM: Xid (PCI:0000:18:00): 48, pid=4711, name=python3, An uncorrectable double bit error": 48,
		"[ 12.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07":                         0,
	} {
		if got, _ := ParseXID(line); got != want {
			t.Errorf("%q: %d, want %d", line, got, want)
		}
	}
}

// telemetryExec prints GPU samples, the kernel log it is given and can
// lack nvidia-smi.
type telemetryExec struct {
	mu    sync.Mutex
	noSMI bool
	util  int
	dmesg string
	runs  map[string]int
}

func (e *telemetryExec) Reach(context.Context, string) error { return nil }

func (e *telemetryExec) Run(_ context.Context, step, _ string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs == nil {
		e.runs = map[string]int{}
	}
	e.runs[step]++
	switch step {
	case GPUSampleStep:
		if e.noSMI {
			return "sh: 1: nvidia-smi: not found\n", &exitErr{127}
		}
		return "0, GPU-a, " + itoa(int64(e.util)) + ", 100, 81559, 40, 70.00, 1980, 0, 0x0000000000000000\n" +
			"1, GPU-b, " + itoa(int64(e.util)) + ", 100, 81559, 41, 71.00, 1980, 0, 0x0000000000000000\n", nil
	case XIDStep:
		return e.dmesg, nil
	}
	return "", nil
}

type exitErr struct{ code int }

func (e *exitErr) Error() string { return "exit status " + itoa(int64(e.code)) }

// gpuServer records each heartbeat's GPU report; refuse answers 400 "gpu: …".
type gpuServer struct {
	mu      sync.Mutex
	reports []*agentapi.GPUReport
	refuse  bool
}

func (s *gpuServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/v1/agent/checkin":
		json.NewEncoder(w).Encode(agentapi.CheckinResponse{Cluster: "cl_x", Node: "node-0", Rank: 0, Peers: []agentapi.Peer{{Name: "node-0"}}})
	case "/v1/agent/peers":
		json.NewEncoder(w).Encode(agentapi.PeersResponse{MeshComplete: true})
	case "/v1/agent/heartbeat":
		var req agentapi.HeartbeatRequest
		json.NewDecoder(r.Body).Decode(&req)
		s.reports = append(s.reports, req.GPU)
		if s.refuse && req.GPU != nil {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"code":"bad_request","message":"gpu: samples[0]: utilization 140 outside 0..100."}}`))
			return
		}
		json.NewEncoder(w).Encode(agentapi.HeartbeatResponse{})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// X15: samples every 30 s go with the next heartbeat, once;
// what the server did not take waits; new XID lines only (the log read at
// start is the baseline); a refused report is dropped.
func TestAgentSendsGPUSamplesWithHeartbeats(t *testing.T) {
	srv := &gpuServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	old := "[ 10.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception\n"
	ex := &telemetryExec{util: 50, dmesg: old}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := New(Config{Server: hs.URL, Token: "cdn_x", Exec: ex, HTTP: hs.Client(), Now: func() time.Time { return now }})
	ctx := context.Background()
	step := func() *agentapi.GPUReport {
		t.Helper()
		if err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.reports[len(srv.reports)-1]
	}
	r := step()
	if r == nil || len(r.Samples) != 2 || *r.Samples[1].UtilPct != 50 || r.Samples[1].UUID != "GPU-b" || len(r.XIDs) != 0 {
		t.Fatalf("first heartbeat: %+v (an XID from before the agent started is not news)", r)
	}
	now = now.Add(10 * time.Second)
	if r := step(); r != nil {
		t.Fatalf("10 s later: %+v, want nothing (sent already, next sample at 30 s)", r)
	}
	now = now.Add(20 * time.Second)
	ex.dmesg = old + "[ 4123.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
	if r := step(); r == nil || len(r.Samples) != 2 || len(r.XIDs) != 1 || r.XIDs[0].Code != 79 {
		t.Fatalf("30 s later: %+v", r)
	}
	now = now.Add(30 * time.Second)
	srv.refuse = true
	if err := a.Step(ctx); err == nil {
		t.Fatal("a refused heartbeat is no error")
	}
	srv.refuse = false
	now = now.Add(10 * time.Second)
	if r := step(); r != nil {
		t.Fatalf("after a refusal: %+v, want the refused report dropped", r)
	}
	if ex.runs[GPUSampleStep] != 3 {
		t.Errorf("%d samples in 70 s, want 3", ex.runs[GPUSampleStep])
	}
}

// X15: a machine without nvidia-smi says so once.
func TestAgentReportsNoNvidiaSMIOnce(t *testing.T) {
	srv := &gpuServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ex := &telemetryExec{noSMI: true}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := New(Config{Server: hs.URL, Token: "cdn_x", Exec: ex, HTTP: hs.Client(), Now: func() time.Time { return now }})
	for range 4 {
		if err := a.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(30 * time.Second)
	}
	var said []string
	for _, r := range srv.reports {
		if r != nil {
			said = append(said, r.NoSMI)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "nvidia-smi: not found") {
		t.Fatalf("reports: %q, want one saying nvidia-smi is not found", said)
	}
}
