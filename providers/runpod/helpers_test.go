package runpod_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/providerstest"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	"github.com/clusterdeck/clusterdeck/providers/runpod/fake"
)

const testKey = "rpa_secret_runpod_key_0123456789"

// description is RunPod's published REST v2 description (testdata/README.md
// says where from): every exchange of every adapter test is checked against it.
var description = providerstest.NewDescription("testdata/openapi.json")

type env struct {
	clk   *fakekit.Clock
	fake  *fake.Server
	cloud *runpod.Cloud
	url   string
}

func newEnv(t *testing.T, opts ...func(*runpod.Config)) *env {
	t.Helper()
	clk := fakekit.NewClock()
	f := fake.New(testKey, clk.Now)
	srv := httptest.NewServer(description.Check(t, f))
	t.Cleanup(srv.Close)
	cfg := runpod.Config{APIKey: testKey, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		Agent: bootstrap.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := runpod.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{clk: clk, fake: f, cloud: c, url: srv.URL}
}

const h100 = "NVIDIA H100 80GB HBM3"

func request(group, dc string, n int) providers.PlaceRequest {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = "agt_" + group + "_" + string(rune('a'+i))
	}
	return providers.PlaceRequest{GroupName: group, OfferID: runpod.OfferID(dc, 8, h100), Location: dc, Count: n,
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcustomer alice@laptop"},
		Agent:   providers.AgentBootstrap{ServerURL: "https://deck.example.com", Tokens: tokens}}
}
