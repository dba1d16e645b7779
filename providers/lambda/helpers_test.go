package lambda_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
	"github.com/clusterdeck/clusterdeck/providers/providerstest"
)

const testKey = "secret_lambda_key_0123456789abcdef"

// description is the newest public copy of Lambda's published description
// the repository may keep (1.8.3, under MIT; the adapter follows 1.10.0,
// testdata/README.md says where from and what differs): every exchange of
// every adapter test is checked against it.
// descriptionGaps is what the kept 1.8.3 copy lacks against 1.10.0, which
// the adapter follows (docs/providers.md, "Lambda Cloud"): the check lets exactly
// these through, and fails when the copy has one of them (a newer copy).
var descriptionGaps = []providerstest.Gap{
	{Operation: "GET /api/v1/regions", Why: "listRegions (1.10.0): the regions the catalog offers"},
	{Schema: "Instance", Property: "is_reserved", Why: "1.10.0's instance says whether it is reserved capacity"},
	{Schema: "InstanceActionUnavailableCode", Value: "vm-action-in-progress", Why: "1.10.0: an action (a restart) is in progress"},
	{Operation: "POST /api/v1/instance-operations/restart", Status: 409, Why: "global/conflict: a restart the instance's state does not allow (1.10.0's restart while booting)"},
	{Status: 429, Why: "rate limited: neither version documents the answer; the fake sends 429 with Retry-After"},
	{Status: 500, Why: "an upstream failure: documented by neither version, played by the fake"},
	{Status: 502, Why: "an upstream failure: documented by neither version, played by the fake"},
	{Status: 503, Why: "provider/internal-unavailable: described in prose by both versions, listed by neither"},
}

var description = func() *providerstest.Description {
	d := providerstest.NewDescription("testdata/openapi.json")
	d.Strict = true
	d.Gaps = descriptionGaps
	return d
}()

// newClock is the tests' time: Sleep moves it instead of waiting, and
// records every wait the adapter asked for.
func newClock() *fakekit.Clock { return fakekit.NewClock() }

// env is an adapter talking to a fake Lambda on loopback.
type env struct {
	t     *testing.T
	clk   *fakekit.Clock
	fake  *fake.Server
	cloud *lambda.Cloud
	url   string
}

func newEnv(t *testing.T, opts ...func(*lambda.Config)) *env {
	t.Helper()
	clk := newClock()
	f := fake.New(testKey, clk.Now)
	srv := httptest.NewServer(description.Check(t, f))
	t.Cleanup(srv.Close)
	cfg := lambda.Config{APIKey: testKey, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		Agent: lambda.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64",
			SHA256: strings.Repeat("ab", 32)}, SSHKeyName: "my-public-key"}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := lambda.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clk: clk, fake: f, cloud: c, url: srv.URL}
}

const h100 = "gpu_8x_h100_sxm5gdr"

// request asks for n machines of the fake's H100 type in region.
func request(group, region string, n int) providers.PlaceRequest {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = "agt_" + group + "_" + string(rune('a'+i))
	}
	return providers.PlaceRequest{GroupName: group, OfferID: lambda.OfferID(h100, region), Location: region, Count: n,
		SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcustomer alice@laptop"},
		Agent:   providers.AgentBootstrap{ServerURL: "https://deck.example.com", Tokens: tokens}}
}

// must returns v, or stops the test (with a panic the test reports) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func getJSON(t *testing.T, url, key string) map[string]any {
	t.Helper()
	req := must(http.NewRequest(http.MethodGet, url, nil))
	req.Header.Set("Authorization", "Bearer "+key)
	return doJSON(t, req)
}

func getJSONBasic(t *testing.T, url, key string) map[string]any {
	t.Helper()
	req := must(http.NewRequest(http.MethodGet, url, nil))
	req.SetBasicAuth(key, "")
	return doJSON(t, req)
}

func doJSON(t *testing.T, req *http.Request) map[string]any {
	t.Helper()
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readJSON(t *testing.T, file string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(must(os.ReadFile(file)), &out); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// keyPaths lists every object key path of v ("actions.restart.available"),
// sorted; array elements share their array's path.
func keyPaths(v map[string]any, prefix string) []string {
	var out []string
	for k, x := range v {
		p := prefix + k
		out = append(out, p)
		switch x := x.(type) {
		case map[string]any:
			out = append(out, keyPaths(x, p+".")...)
		case []any:
			for _, el := range x {
				if m, ok := el.(map[string]any); ok {
					out = append(out, keyPaths(m, p+"[].")...)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	return must(strconv.Atoi(s))
}
