package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	rpfake "github.com/clusterdeck/clusterdeck/providers/runpod/fake"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	sffake "github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

// OP1 with RunPod, both ways it places a group. The Instant Cluster: the
// data center sells them, so the 2 × 8 H100 group is placed with one POST
// /v2/clusters; every pod runs the same command with the cluster's
// bootstrap token, each agent claims its rank with its pod id (RunPod's
// RUNPOD_POD_ID) and the cluster reaches ready through the real agent
// protocol; terminate deletes the cluster. Pod by pod: the data center
// sells no clusters, each pod's command carries what its agent needs, and
// the stop (B6) and resume run through the real stop job.
func TestRunPodSmoke(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		for _, mode := range []string{"instant-cluster", "pods"} {
			t.Run(mode, func(t *testing.T) { runPodSmoke(t, databaseURL, mode == "instant-cluster") })
		}
	})
}

func runPodSmoke(t *testing.T, databaseURL string, clusters bool) {
	f := rpfake.New("runpod_secret_smoke", time.Now)
	f.BootDelay, f.StartDelay, f.RankDelay = 0, 0, 0 // the adapter's tests play the in-between states on their clock
	f.PerMinute = 0                                  // the rate-limit windows are the adapter's tests' business
	h100 := rpfake.Cap{GPU: "NVIDIA H100 80GB HBM3", DC: "US-TX-3"}
	f.Stock[h100], f.ClusterCaps[h100] = 16, clusters
	rp := httptest.NewServer(f)
	defer rp.Close()
	s := startServer(t, databaseURL, "PROVIDERS=runpod", "RUNPOD_API_KEY=runpod_secret_smoke", "RUNPOD_API_URL="+rp.URL,
		"RUNPOD_DATACENTERS=US-TX-3", "RUNPOD_AGENT_URL=http://127.0.0.1:9/clusterdeck", "RUNPOD_AGENT_SHA256=abababababababababababababababababababababababababababababababab")
	var scripts []string
	machines := func() []smokeMachine {
		scripts = nil
		var out []smokeMachine
		for _, p := range f.Live() {
			enc := strings.TrimSuffix(strings.TrimPrefix(p.Args, "sh -c 'echo "), " | base64 -d | sh'")
			b, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				t.Fatalf("pod %s args %q: %v", p.ID, p.Args, err)
			}
			scripts = append(scripts, string(b))
			out = append(out, smokeMachine{ID: p.ID, Script: string(b)})
		}
		return out
	}
	var between []func(string, func(), func())
	if !clusters {
		between = append(between, func(id string, agentsDown, agentsUp func()) {
			// Stop (B6) and resume through the real stop job: RunPod stops
			// the pods (EXITED: the GPUs are no longer billed) and starts them
			// again on the same hosts.
			st := openStore(t, s)
			c, err := st.ClusterByID(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.RequestStop(context.Background(), c.OrgID, id, models.StopByBudget, "smoke"); err != nil {
				t.Fatal(err)
			}
			until(t, id, "stopped", 0, []string{"stop"}, s)
			for _, p := range f.Live() {
				if p.Status != runpod.StatusExited {
					t.Fatalf("pod %s is %s after the stop", p.ID, p.Status)
				}
			}
			agentsDown()
			if _, err := st.RequestResume(context.Background(), c.OrgID, id, "smoke"); err != nil {
				t.Fatal(err)
			}
			s.devRun(t, "stop") // the resume starts every pod
			for _, p := range f.Live() {
				if p.Status != runpod.StatusRunning {
					t.Fatalf("pod %s is %s after the start", p.ID, p.Status)
				}
			}
			agentsUp()
			until(t, id, "ready", 0, []string{"stop", "provision", "install"}, s)
			for _, p := range f.Live() {
				if p.Status != runpod.StatusRunning {
					t.Fatalf("pod %s is %s after the resume", p.ID, p.Status)
				}
			}
		})
	} else {
		between = append(between, func(id string, _, _ func()) {
			// One call placed the group, and each agent claimed the rank
			// of the pod whose id it sent.
			if n, p := f.Requests("POST /v2/clusters"), f.Requests("POST /v2/pods"); n != 1 || p != 0 {
				t.Errorf("%d cluster creates and %d pod creates: want the one group call", n, p)
			}
			if len(scripts) != 2 || scripts[0] != scripts[1] || !strings.Contains(scripts[0], "CLUSTERDECK_TOKEN=cdb_") {
				t.Errorf("every pod of the cluster runs one script with the bootstrap token:\n%s", scripts)
			}
			st := openStore(t, s)
			nodes, err := st.NodesFor(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			live := f.Live()
			for i, n := range nodes {
				if n.ClaimedBy != live[i].ID || n.ProviderNodeID != live[i].ID || n.PrivateIP != *live[i].Cluster.IP {
					t.Errorf("node %s: claimed by %q, machine %q, address %q; pod %s at %s",
						n.Name, n.ClaimedBy, n.ProviderNodeID, n.PrivateIP, live[i].ID, *live[i].Cluster.IP)
				}
			}
		})
	}
	cloudSmoke(t, s, "runpod:"+runpod.OfferID("US-TX-3", 8, "NVIDIA H100 80GB HBM3"), machines,
		func() int { return len(f.Live()) }, between...)
	if clusters && (len(f.Clusters()) != 0 || f.Requests("DELETE /v2/clusters/"+f.ClusterCreatesIDs()[0]) != 1) {
		t.Errorf("terminate must delete the cluster: %d left", len(f.Clusters()))
	}
	for _, sc := range scripts {
		if !strings.Contains(sc, "exec /opt/clusterdeck/clusterdeck agent") {
			t.Errorf("a pod's command must run the agent in the foreground:\n%s", sc)
		}
	}
	if strings.Contains(s.out.String(), "runpod_secret_smoke") {
		t.Error("the server logged the RunPod key")
	}
	s.stop(t)
}

// OP1 with Shadeform: as for RunPod, through Shadeform's launch scripts,
// on an upstream cloud's machines the offer names.
func TestShadeformSmoke(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		f := sffake.New("shadeform_secret_smoke", time.Now)
		f.BootDelay, f.DeleteDelay = 0, 0
		f.Capacity[sffake.Cap{Cloud: "lambdalabs", Type: "H100_sxm5x8", Region: "us-east-1"}] = 2
		sf := httptest.NewServer(f)
		defer sf.Close()
		// No SHADEFORM_AGENT_URL: the machines download this server's own
		// binary from its versioned URL (OP1).
		s := startServer(t, databaseURL, "PROVIDERS=shadeform", "SHADEFORM_API_KEY=shadeform_secret_smoke", "SHADEFORM_API_URL="+sf.URL+"/v1",
			"SHADEFORM_REGIONS=us-east-1", "SHADEFORM_CLOUDS=lambdalabs")
		// The catalog keeps the cloud behind each offer (OP1): Lambda's
		// machines sold through Shadeform say so.
		s.devRun(t, "catalog")
		var offers api.OffersResponse
		if code := s.api(t, http.MethodGet, "/v1/gpu/offers?accelerator=H100_80GB&nodes=2", nil, &offers); code != http.StatusOK {
			t.Fatalf("offers: %d", code)
		}
		found := 0
		for _, g := range offers.Groups {
			for _, o := range g.Offers {
				if o.Provider != "shadeform" || o.Upstream != "lambdalabs" {
					t.Errorf("offer %s: provider %q upstream %q", o.ID, o.Provider, o.Upstream)
				}
				found++
			}
		}
		if found == 0 {
			t.Fatalf("no Shadeform offer listed: %+v", offers)
		}
		downloaded := false
		cloudSmoke(t, s, "shadeform:"+shadeform.OfferID("lambdalabs", "H100_sxm5x8", "us-east-1"), func() []smokeMachine {
			var out []smokeMachine
			for _, in := range f.Live() {
				out = append(out, smokeMachine{ID: in.ID, Script: f.Script(in.ID)})
			}
			if len(out) > 0 && !downloaded {
				agentDownload(t, s, out[0].Script)
				downloaded = true
			}
			return out
		}, func() int { return len(f.Live()) })
		if strings.Contains(s.out.String(), "shadeform_secret_smoke") {
			t.Error("the server logged the Shadeform key")
		}
		s.stop(t)
	})
}

// smokeMachine is one placed machine: the provider's id for it and its
// start-up script.
type smokeMachine struct{ ID, Script string }

// cloudSmoke quotes and launches a 2 × 8 H100 cluster that must land on
// offer, starts one real agent per machine from what its start-up script
// says, waits for ready, terminates and checks that nothing is left.
func cloudSmoke(t *testing.T, s *server, offer string, scripts func() []smokeMachine, live func() int, between ...func(id string, agentsDown, agentsUp func())) string {
	t.Helper()
	s.devRun(t, "catalog")
	var quote struct{ ID, OfferID string }
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/quote",
		map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpusPerNode": 8}, &quote); code != http.StatusCreated {
		t.Fatalf("quote: %d\n%s", code, s.out)
	}
	if quote.OfferID != offer {
		t.Fatalf("quoted offer %q, want %q", quote.OfferID, offer)
	}
	var cl struct{ ID string }
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters", map[string]any{"quoteId": quote.ID, "name": "on-cloud", "software": "none", "verify": false},
		&cl, "Idempotency-Key", "cloud-"+quote.ID); code >= 300 || cl.ID == "" {
		t.Fatalf("launch: %d %+v", code, cl)
	}
	s.devRun(t, "provision")
	sc := scripts()
	if len(sc) != 2 {
		t.Fatalf("%d machines after the provision tick; events:\n%s", len(sc), eventsOf(t, s, cl.ID))
	}
	smi := fakeH100SMI(t)
	var agents []*process
	up := func() {
		agents = nil
		for _, m := range sc {
			script := m.Script
			server, token, workload := userDataValue(script, "CLUSTERDECK_SERVER="), userDataValue(script, "CLUSTERDECK_TOKEN="), hereDoc(script, "CLUSTERDECK_WORKLOAD")
			if server != s.url || token == "" || !strings.HasPrefix(workload, "{") {
				t.Fatalf("start-up script lacks the agent's settings:\n%s", script)
			}
			wl := filepath.Join(t.TempDir(), "workload.json")
			if err := os.WriteFile(wl, []byte(workload), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + smi + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + s.dataDir}
			if strings.Contains(script, "CLUSTERDECK_MACHINE_ID=") {
				// The provider sets the machine's own id in its
				// environment; the script hands it to the agent.
				env = append(env, "CLUSTERDECK_MACHINE_ID="+m.ID)
			}
			agents = append(agents, start(t, env,
				"agent", "--server", server, "--token", token, "--workload", wl, "--every", "200ms"))
		}
	}
	// A machine that stops takes its agent down; started again, it runs
	// its start-up script again.
	down := func() {
		for _, a := range agents {
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	}
	up()
	until(t, cl.ID, "ready", 0, []string{"provision", "install"}, s)
	untilMounted(t, s, cl.ID, agents)
	for _, f := range between {
		f(cl.ID, down, up)
	}
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/terminate", nil, nil); code >= 300 {
		t.Fatalf("terminate: %d", code)
	}
	until(t, cl.ID, "terminated", 0, []string{"terminate"}, s)
	if n := live(); n != 0 {
		t.Errorf("%d machines left running", n)
	}
	for _, a := range agents {
		select {
		case err := <-a.done:
			if err != nil || !strings.Contains(a.out.String(), "the cluster has ended") {
				t.Errorf("agent exited with %v:\n%s", err, a.out)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("agent still running 30 s after terminate:\n%s", a.out)
		}
	}
	return cl.ID
}

// agentDownload runs the download part of a machine's start-up script, as
// the script has it, against the running server, in a temp dir: the script
// names the server's own binary at its versioned URL with its digest, and
// what lands is the binary the test built (OP1).
func agentDownload(t *testing.T, s *server, script string) {
	t.Helper()
	data, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	url := agentapi.BinaryURL(s.url, digest[:12])
	if !strings.Contains(script, bootstrap.Quote(url)) || !strings.Contains(script, digest) {
		t.Fatalf("the start-up script does not download %s with SHA-256 %s:\n%s", url, digest, script)
	}
	_, rest, ok := strings.Cut(script, bootstrap.DownloadBegin+"\n")
	part, _, ok2 := strings.Cut(rest, bootstrap.DownloadEnd+"\n")
	first := "CLUSTERDECK_DIR=" + bootstrap.InstallDir + "\n"
	if !ok || !ok2 || !strings.HasPrefix(part, first) {
		t.Fatalf("no download part in:\n%s", script)
	}
	dir := filepath.Join(t.TempDir(), "opt")
	cmd := exec.Command("sh", "-c", "set -eu\nCLUSTERDECK_DIR="+bootstrap.Quote(dir)+"\n"+strings.TrimPrefix(part, first))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NO_PROXY=*", "no_proxy=*", "HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script's download: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "clusterdeck"))
	if gotSum := sha256.Sum256(got); err != nil || hex.EncodeToString(gotSum[:]) != digest {
		t.Fatalf("downloaded %d bytes (%v), not the server's binary", len(got), err)
	}
	// Another version is not there.
	res, err := http.Get(agentapi.BinaryURL(s.url, strings.Repeat("0", 12)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("another version: %d, want 404", res.StatusCode)
	}
}
