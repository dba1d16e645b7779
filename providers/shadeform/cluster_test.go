package shadeform_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	"github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

// The cluster fixtures decode into the cluster types (the types example
// loosely: its cluster_type repeats the configuration's fields beyond the
// schema), and the fake's answers have the documented fields.
func TestClusterFixturesMatchTypesAndFake(t *testing.T) {
	var cr shadeform.CreateClusterRequest
	strictDecode(t, "testdata/create-cluster-request.json", &cr)
	var resp struct {
		ID string `json:"id"`
	}
	strictDecode(t, "testdata/create-cluster-response.json", &resp)
	var info shadeform.Cluster
	infoKeys := strictDecode(t, "testdata/cluster-info.json", &info)
	data, err := os.ReadFile("testdata/cluster-types.json")
	if err != nil {
		t.Fatal(err)
	}
	var types struct {
		ClusterTypes []shadeform.ClusterType `json:"cluster_types"`
	}
	if err := json.Unmarshal(data, &types); err != nil || len(types.ClusterTypes) != 1 || types.ClusterTypes[0].NumInstances != 2 ||
		types.ClusterTypes[0].ClusterType.ShadeInstanceType != h100 || !types.ClusterTypes[0].Availability.Available {
		t.Fatalf("cluster types example: %+v %v", types, err)
	}
	if cr.NumInstances != 2 || resp.ID == "" || len(info.Instances) != 1 || info.RegionInfo.Region != "houston-usa-1" {
		t.Fatalf("fixtures: %+v %+v %+v", cr, resp, info)
	}

	e := newEnv(t)
	cp := fake.Cap{Cloud: "lambdalabs", Type: h100, Region: "us-east-1"}
	e.fake.Capacity[cp] = 2
	e.fake.ClusterOffers = []fake.ClusterOffer{{Cloud: "lambdalabs", Type: h100, Region: "us-east-1", NumInstances: 2}}
	call := func(path string, in, out any) int {
		t.Helper()
		var body bytes.Buffer
		method := http.MethodGet
		if in != nil {
			method = http.MethodPost
			_ = json.NewEncoder(&body).Encode(in)
		}
		req, _ := http.NewRequest(method, e.url+"/v1"+path, &body)
		req.Header.Set("X-API-KEY", testKey)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if out != nil && res.StatusCode == 200 {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode
	}
	var listed struct {
		ClusterTypes []shadeform.ClusterType `json:"cluster_types"`
	}
	if code := call("/clusters/types", nil, &listed); code != 200 || len(listed.ClusterTypes) != 1 || !listed.ClusterTypes[0].Availability.Available {
		t.Fatalf("types %d %+v", code, listed)
	}
	create := shadeform.CreateClusterRequest{Name: "cl_sf", Cloud: "lambdalabs", Region: "us-east-1", ClusterType: h100, NumInstances: 2}
	if code := call("/clusters/create", create, &resp); code != 200 || resp.ID == "" || e.fake.Capacity[cp] != 0 {
		t.Fatalf("create %d %+v", code, resp)
	}
	if code := call("/clusters/create", create, nil); code != 409 {
		t.Fatalf("a second cluster with no capacity left: %d, want 409", code)
	}
	e.clk.Advance(10 * time.Minute)
	var got map[string]any
	if code := call("/clusters/"+resp.ID+"/info", nil, &got); code != 200 {
		t.Fatalf("info %d", code)
	}
	if k := keys(got); !slices.Equal(k, keys(infoKeys)) {
		t.Errorf("fake cluster fields %v, documented %v", k, keys(infoKeys))
	}
	var c shadeform.Cluster
	call("/clusters/"+resp.ID+"/info", nil, &c)
	if c.Status != shadeform.StatusActive || len(c.Instances) != 2 || c.Instances[1].IP == "" {
		t.Fatalf("booted cluster %+v", c)
	}
	if code := call("/clusters/"+resp.ID+"/delete", struct{}{}, nil); code != 200 || e.fake.Capacity[cp] != 2 || len(e.fake.Live()) != 0 {
		t.Fatalf("delete %d, capacity %d, live %d", code, e.fake.Capacity[cp], len(e.fake.Live()))
	}
	e.clk.Advance(2 * time.Minute)
	if code := call("/clusters/"+resp.ID+"/info", nil, nil); code != 404 {
		t.Fatalf("a deleted cluster: %d, want 404", code)
	}
}
