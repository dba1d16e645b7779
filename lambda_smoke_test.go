package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/lambda"
	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
)

// OP1 with Lambda: the real server sells a fake Lambda (on loopback) through
// the real jobs; the machine's start-up script carries what the real agent
// needs (the server's URL, its token and the workload), and the agent
// started with exactly those brings the cluster to ready through the real
// agent protocol; terminate leaves nothing running at Lambda.
func TestLambdaSmoke(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		f := fake.New("lambda_secret_smoke", time.Now)
		f.BootDelay = 0
		f.LaunchInterval = 100 * time.Millisecond // the server paces itself the same (LAMBDA_LAUNCH_INTERVAL)
		f.SetCapacity("gpu_8x_h100_sxm5gdr", "us-west-1", 2)
		// The machines are agents on this host: their private network is
		// loopback, so the mesh check dials nothing off the host.
		f.PrivateNet = "127.0.2."
		lam := httptest.NewServer(f)
		defer lam.Close()
		s := startServer(t, databaseURL, "PROVIDERS=lambda", "LAMBDA_API_KEY=lambda_secret_smoke", "LAMBDA_API_URL="+lam.URL,
			"LAMBDA_REGIONS=us-west-1", "LAMBDA_SSH_KEY_NAME=my-public-key", "LAMBDA_AGENT_URL=http://127.0.0.1:9/clusterdeck", "LAMBDA_AGENT_SHA256=abababababababababababababababababababababababababababababababab",
			"LAMBDA_REQUEST_INTERVAL=10ms", "LAMBDA_LAUNCH_INTERVAL=100ms")
		s.devRun(t, "catalog")

		var quote struct{ ID, OfferID string }
		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/quote",
			map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpusPerNode": 8}, &quote); code != http.StatusCreated {
			t.Fatalf("quote: %d\n%s", code, s.out)
		}
		if quote.OfferID != "lambda:"+lambda.OfferID("gpu_8x_h100_sxm5gdr", "us-west-1") {
			t.Fatalf("quoted offer %q", quote.OfferID)
		}
		var cl struct{ ID string }
		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters", map[string]any{"quoteId": quote.ID, "name": "on-lambda", "software": "none", "verify": false},
			&cl, "Idempotency-Key", "lambda-"+quote.ID); code >= 300 || cl.ID == "" {
			t.Fatalf("launch: %d %+v", code, cl)
		}
		s.devRun(t, "provision")
		live := f.Live()
		if len(live) != 2 || live[0].Tag(lambda.TagGroup) != cl.ID || live[1].Tag(lambda.TagGroup) != cl.ID {
			t.Fatalf("machines at Lambda after the provision tick: %+v\nevents:\n%s\nlaunches: %s", live, eventsOf(t, s, cl.ID), launches(f))
		}

		// Boot each machine as cloud-init would: run what its user-data says.
		smi := fakeH100SMI(t)
		var agents []*process
		for _, m := range live {
			ud := f.UserData(m.ID)
			server, token, workload := userDataValue(ud, "CLUSTERDECK_SERVER="), userDataValue(ud, "CLUSTERDECK_TOKEN="), hereDoc(ud, "CLUSTERDECK_WORKLOAD")
			if server != s.url || token == "" || !strings.HasPrefix(workload, "{") {
				t.Fatalf("user-data lacks the agent's settings:\n%s", ud)
			}
			wl := filepath.Join(t.TempDir(), "workload.json")
			if err := os.WriteFile(wl, []byte(workload), 0o600); err != nil {
				t.Fatal(err)
			}
			agent := start(t, []string{"PATH=" + smi + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + s.dataDir},
				"agent", "--server", server, "--token", token, "--workload", wl, "--every", "200ms")
			agents = append(agents, agent)
		}
		until(t, cl.ID, "ready", 0, []string{"provision", "install"}, s)
		untilMounted(t, s, cl.ID, agents) // V4: a vm gets /shared

		// The addresses Lambda assigned at boot are the nodes' (none was known at placement).
		store := openStore(t, s)
		for rank, m := range f.Live() {
			_, n := node(t, store, cl.ID, rank)
			if m.IP == "" || n.PublicHost != m.IP || n.PrivateIP != m.PrivateIP || n.SSHPort != 22 || n.SSHUser != "ubuntu" {
				t.Errorf("node-%d: host %q private %q port %d user %q; Lambda says %s / %s", rank, n.PublicHost, n.PrivateIP,
					n.SSHPort, n.SSHUser, m.IP, m.PrivateIP)
			}
		}

		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/terminate", nil, nil); code >= 300 {
			t.Fatalf("terminate: %d", code)
		}
		until(t, cl.ID, "terminated", 0, []string{"terminate"}, s)
		if live := f.Live(); len(live) != 0 {
			t.Errorf("machines left running at Lambda: %+v", live)
		}
		// The agents learn that the cluster ended and stop by themselves.
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
		if strings.Contains(s.out.String(), "lambda_secret_smoke") {
			t.Error("the server logged the Lambda key")
		}
		s.stop(t)
	})
}

// userDataValue is the value of the user-data line starting with prefix.
func userDataValue(ud, prefix string) string {
	for _, l := range strings.Split(ud, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// hereDoc is the body of the here-document ended by word.
func hereDoc(ud, word string) string {
	_, rest, _ := strings.Cut(ud, "<<'"+word+"'\n")
	body, _, _ := strings.Cut(rest, "\n"+word+"\n")
	return body
}

// fakeH100SMI is a directory holding an nvidia-smi that answers as a
// machine with eight H100s (Lambda's gpu_8x_h100_sxm5gdr) does.
func fakeH100SMI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'index, name, memory.total [MiB], driver_version'\nfor i in 0 1 2 3 4 5 6 7; do echo \"$i, NVIDIA H100 80GB HBM3, 81559 MiB, 550.90.07\"; done\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// launches lists the fake's launch requests as "name status at" lines.
func launches(f *fake.Server) string {
	var b strings.Builder
	for _, l := range f.Launches() {
		fmt.Fprintf(&b, "%s %d %s\n", l.Request.Name, l.Status, l.At.Format(time.StampMilli))
	}
	return b.String()
}
