package shadeform_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/providerstest"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	"github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

const testKey = "sf_secret_shadeform_key_0123456789"

// description is Shadeform's published description (testdata/README.md says
// where from): every exchange of every adapter test is checked against it.
// It documents 200 answers only, so error answers are not checked.
var description = func() *providerstest.Description {
	d := providerstest.NewDescription("testdata/openapi.yaml")
	d.UndocumentedErrors = true
	return d
}()

type env struct {
	clk   *fakekit.Clock
	fake  *fake.Server
	cloud *shadeform.Cloud
	url   string
}

func newEnv(t *testing.T, opts ...func(*shadeform.Config)) *env {
	t.Helper()
	clk := fakekit.NewClock()
	f := fake.New(testKey, clk.Now)
	srv := httptest.NewServer(description.Check(t, f))
	t.Cleanup(srv.Close)
	cfg := shadeform.Config{APIKey: testKey, BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		Agent: bootstrap.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := shadeform.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{clk: clk, fake: f, cloud: c, url: srv.URL}
}

const h100 = "H100_sxm5x8"

func request(group, cloud, region string, n int) providers.PlaceRequest {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = "agt_" + group + "_" + string(rune('a'+i))
	}
	return providers.PlaceRequest{GroupName: group, OfferID: shadeform.OfferID(cloud, h100, region), Location: region, Count: n,
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcustomer alice@laptop"},
		Agent:   providers.AgentBootstrap{ServerURL: "https://deck.example.com", Tokens: tokens}}
}
