package readiness

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type k8sCase struct {
	name     string
	file     string
	expected []string
	gpus     int
	err      error
	check    func(t *testing.T, r Report)
}

var constructedNodes = []string{"node-0", "node-1", "node-2"}

var k8sFixtures = []k8sCase{
	{
		name: "kubectl get nodes: all Ready", file: "k8s_kubectl_get_nodes_all_ready.txt",
		expected: []string{"k3s-master-01", "1960955-cr63564.twc1.net", "dimweb-b560-hd3"},
		check: func(t *testing.T, r Report) {
			if !r.Ready || len(r.Nodes) != 3 || r.Healthy != 3 {
				t.Fatalf("want ready with 3 nodes: %+v", r)
			}
			if n := node(t, r, "dimweb-b560-hd3"); n.State != "Ready" {
				t.Errorf("State = %q", n.State)
			}
		},
	},
	{
		name: "kubectl get nodes: a node not in the table", file: "k8s_kubectl_get_nodes_all_ready.txt",
		expected: []string{"k3s-master-01", "gpu-worker-1"},
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(r.Missing, []string{"gpu-worker-1"}) || len(r.Unexpected) != 2 {
				t.Fatalf("want gpu-worker-1 missing: %+v", r)
			}
		},
	},
	{
		name: "kubectl get nodes: the table has no GPUs", file: "k8s_kubectl_get_nodes_all_ready.txt",
		expected: []string{"k3s-master-01"}, gpus: 1, err: ErrNoGPUInfo,
	},
	{
		name: "kubectl get nodes: p100 NotReady", file: "k8s_kubectl_get_nodes_one_notready.txt",
		expected: []string{"p100", "ubuntu"},
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 1 {
				t.Fatalf("want not ready: %+v", r)
			}
			wantReason(t, r, "p100", "NotReady", "NotReady")
			wantOK(t, r, "ubuntu")
		},
	},
	{
		name: "legacy NodeList: all NotReady, node1 unschedulable", file: "k8s_nodelist_json_all_notready_legacy_gpu_resource_0.json",
		expected: []string{"node1", "node2", "node3", "node4"},
		check: func(t *testing.T, r Report) {
			if r.Ready || r.Healthy != 0 || len(r.Failing()) != 4 || r.TotalGPUs != 0 {
				t.Fatalf("want 4 failing: %+v", r)
			}
			wantReason(t, r, "node1", "NotReady,SchedulingDisabled", "NotReady (KubeletNotReady", "cordoned (spec.unschedulable)")
			wantReason(t, r, "node2", "NotReady", "KubeletNotReady")
			if n := node(t, r, "node2"); strings.Contains(n.Reason, "cordoned") || n.GPUs != 0 {
				t.Errorf("node2 = %+v", n)
			}
		},
	},
	{
		name: "legacy NodeList: the legacy GPU key reads as 0 GPUs", file: "k8s_nodelist_json_all_notready_legacy_gpu_resource_0.json",
		expected: []string{"node3"}, gpus: 1,
		check: func(t *testing.T, r Report) {
			wantReason(t, r, "node3", "NotReady", "0 allocatable alpha.kubernetes.io/nvidia-gpu, need 1")
		},
	},
	{
		// A bare allocatable map is not a Node: it cannot be judged.
		name: "allocatable-only JSON fragment", file: "k8s_node_status_allocatable_json_gpu0_vgpu16.json",
		expected: []string{"node-0"}, err: ErrFormat,
	},
	{
		// A status-only fragment is named by its Hostname address and, with
		// no Ready condition, fails.
		name: "partial YAML status (kyma)", file: "k8s_node_status_yaml_gpu1_PARTIAL_kyma.yaml",
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Nodes) != 1 || r.TotalGPUs != 1 {
				t.Fatalf("want 1 failing node with 1 GPU: %+v", r)
			}
			wantReason(t, r, "shoot--kyma-stage--c-xxxxxxxx-gpu-z3-59846-4262c", "Unknown", "no Ready condition")
		},
	},
	{
		name: "partial YAML status (podman desktop), expected by name", file: "k8s_node_status_yaml_gpu1_PARTIAL_podman_desktop.yaml",
		expected: []string{"nvidia1"}, gpus: 1,
		check: func(t *testing.T, r Report) {
			if r.Ready {
				t.Fatalf("want not ready: %+v", r)
			}
			wantReason(t, r, "nvidia1", "Unknown", "no Ready condition")
			if n := node(t, r, "nvidia1"); n.GPUs != 1 || strings.Contains(n.Reason, "GPU") {
				t.Errorf("nvidia1 = %+v: its 1 GPU meets the need of 1", n)
			}
		},
	},
	// Constructed NodeLists: no real full NodeList with nvidia.com/gpu exists.
	{
		name: "constructed: all Ready with 8 GPUs", file: "k8s_nodelist_json_constructed_all_ready_gpu8.json",
		expected: constructedNodes, gpus: 8,
		check: func(t *testing.T, r Report) {
			if !r.Ready || r.TotalGPUs != 24 || r.Healthy != 3 {
				t.Fatalf("want ready with 24 GPUs: %+v", r)
			}
			if n := node(t, r, "node-1"); n.GPUs != 8 || n.State != "Ready" {
				t.Errorf("node-1 = %+v", n)
			}
			if r.Summary != "ready: 3/3 nodes pass, 24 GPUs" {
				t.Errorf("Summary = %q", r.Summary)
			}
		},
	},
	{
		name: "constructed: all Ready, more GPUs wanted than allocatable", file: "k8s_nodelist_json_constructed_all_ready_gpu8.json",
		expected: constructedNodes, gpus: 9,
		check: func(t *testing.T, r Report) {
			if r.Ready || len(r.Failing()) != 3 {
				t.Fatalf("want 3 failing: %+v", r)
			}
			wantReason(t, r, "node-0", "Ready", "8 allocatable nvidia.com/gpu, need 9")
		},
	},
	{
		name: "constructed: node-1 NotReady", file: "k8s_nodelist_json_constructed_one_notready_gpu8.json",
		expected: constructedNodes, gpus: 8,
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(failingNames(r), []string{"node-1"}) {
				t.Fatalf("want node-1 failing: %+v", r)
			}
			wantReason(t, r, "node-1", "NotReady", "KubeletNotReady", "cni plugin")
			wantOK(t, r, "node-0", "node-2")
		},
	},
	{
		name: "constructed: node-2 has 0 GPUs allocatable", file: "k8s_nodelist_json_constructed_one_gpu0.json",
		expected: constructedNodes, gpus: 8,
		check: func(t *testing.T, r Report) {
			if r.Ready || !slices.Equal(failingNames(r), []string{"node-2"}) || r.TotalGPUs != 16 {
				t.Fatalf("want node-2 failing, 16 GPUs: %+v", r)
			}
			wantReason(t, r, "node-2", "Ready", "0 allocatable nvidia.com/gpu, need 8")
		},
	},
	{
		name: "constructed: node-2 has 0 GPUs, none required", file: "k8s_nodelist_json_constructed_one_gpu0.json",
		expected: constructedNodes, gpus: 0,
		check: func(t *testing.T, r Report) {
			if !r.Ready {
				t.Fatalf("want ready without a GPU requirement: %+v", r)
			}
		},
	},
	{
		name: "constructed: one Node object, Ready but cordoned", file: "k8s_node_json_constructed_single_ready_cordoned_gpu8.json",
		expected: []string{"node-1"}, gpus: 8,
		check: func(t *testing.T, r Report) {
			if r.Ready {
				t.Fatalf("want not ready: %+v", r)
			}
			wantReason(t, r, "node-1", "Ready,SchedulingDisabled", "cordoned")
		},
	},
}

func k8sFixtureNames() []string {
	var out []string
	for _, c := range k8sFixtures {
		out = append(out, c.file)
	}
	return out
}

func TestKubernetesFixtures(t *testing.T) {
	for _, c := range k8sFixtures {
		t.Run(c.name, func(t *testing.T) {
			r, err := Kubernetes(fixture(t, c.file), c.expected, c.gpus)
			if c.err != nil {
				wantErr(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, r)
			c.check(t, r)
		})
	}
}

func TestGPUsAllocatable(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
	}{
		// nvidia.com/gpu is "0" beside 16 vGPU slots: vGPU profiles are not GPUs.
		{"real allocatable JSON fragment", fixture(t, "k8s_node_status_allocatable_json_gpu0_vgpu16.json"), 0},
		{"real YAML status (kyma)", fixture(t, "k8s_node_status_yaml_gpu1_PARTIAL_kyma.yaml"), 1},
		{"real YAML status (podman desktop)", fixture(t, "k8s_node_status_yaml_gpu1_PARTIAL_podman_desktop.yaml"), 1},
		{"constructed full Node", fixture(t, "k8s_node_json_constructed_single_ready_cordoned_gpu8.json"), 8},
		{"bare status object", `{"allocatable": {"cpu": "8", "nvidia.com/gpu": "4"}}`, 4},
		{"unquoted YAML number", "allocatable:\n  cpu: 8\n  nvidia.com/gpu: 2\n", 2},
		{"no GPU key", `{"cpu": "4", "memory": "16Gi", "pods": "110"}`, 0},
		{"legacy key", `{"cpu": "1", "alpha.kubernetes.io/nvidia-gpu": "2"}`, 2},
		{"nvidia.com/gpu wins over the legacy key", `{"cpu": "1", "nvidia.com/gpu": "8", "alpha.kubernetes.io/nvidia-gpu": "0"}`, 8},
	}
	for _, tt := range tests {
		got, err := GPUsAllocatable(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: GPUsAllocatable = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	for name, in := range map[string]string{
		"empty":                   "",
		"a NodeList":              fixture(t, "k8s_nodelist_json_constructed_all_ready_gpu8.json"),
		"status without allocata": "status:\n  conditions: []\n",
		"not a quantity":          `{"cpu": "1", "nvidia.com/gpu": "lots"}`,
		"fractional":              `{"cpu": "1", "nvidia.com/gpu": "1.5"}`,
		"negative":                `{"cpu": "1", "nvidia.com/gpu": "-1"}`,
		"nested GPU value":        `{"cpu": "1", "nvidia.com/gpu": {"x": 1}}`,
		"unrelated map":           `{"hello": "world"}`,
		"prose":                   "no such node",
		"truncated JSON":          `{"cpu": "1", "nvidia.com/gpu": "8"`,
	} {
		if got, err := GPUsAllocatable(in); err == nil {
			t.Errorf("%s: GPUsAllocatable = %d, want an error", name, got)
		}
	}
}

func TestKubernetesTableStatuses(t *testing.T) {
	// Constructed table rows for statuses no fixture has.
	out := "NAME     STATUS                        ROLES           AGE   VERSION\n" +
		"node-0   Ready,SchedulingDisabled      control-plane   1d    v1.31.9\n" +
		"node-1   Unknown                       <none>          1d    v1.31.9\n" +
		"node-2   Ready                         <none>          1d    v1.31.9\n"
	r, err := Kubernetes(out, constructedNodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	wantReason(t, r, "node-0", "Ready,SchedulingDisabled", "cordoned")
	wantReason(t, r, "node-1", "Unknown", `status "Unknown"`)
	wantOK(t, r, "node-2")
}

func TestKubernetesReadyUnknown(t *testing.T) {
	// Constructed: the node controller marks a lost node Ready=Unknown.
	out := `{"kind":"Node","metadata":{"name":"node-1"},"status":{"conditions":[` +
		`{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."}],` +
		`"allocatable":{"nvidia.com/gpu":"8"}}}`
	r, err := Kubernetes(out, []string{"node-1"}, 8)
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, r, "node-1", "Unknown", `Ready condition is "Unknown"`, "NodeStatusUnknown")
}

func TestKubernetesErrors(t *testing.T) {
	full := fixture(t, "k8s_nodelist_json_constructed_all_ready_gpu8.json")
	tests := []struct {
		name, output string
		gpus         int
		err          error
	}{
		{"empty", "", 0, ErrEmpty},
		{"truncated JSON", full[:len(full)/2], 0, ErrTruncated},
		{"JSON then junk", `{"kind":"List","items":[]} trailing`, 0, ErrFormat},
		{"a Pod list", `{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p"}}]}`, 0, ErrFormat},
		{"a ConfigMap", `{"kind":"ConfigMap","metadata":{"name":"c"}}`, 0, ErrFormat},
		{"node without a name", `{"kind":"Node","status":{"conditions":[{"type":"Ready","status":"True"}]}}`, 0, ErrNoName},
		{"no resources", "No resources found\n", 0, ErrFormat},
		{"connection refused", "The connection to the server localhost:8080 was refused - did you specify the right host or port?\n", 0, ErrFormat},
		{"sinfo output", fixture(t, "slurm_sinfo_default_all_idle.txt"), 0, ErrFormat},
		{"bad GPU quantity type", `{"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":true}}}`, 0, ErrFormat},
		{"YAML list", "- a\n- b\n", 0, ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Kubernetes(tt.output, []string{"node-0"}, tt.gpus)
			wantErr(t, err, tt.err)
		})
	}
	if _, err := Kubernetes(full, constructedNodes, -1); err == nil {
		t.Error("negative gpusPerNode: want an error")
	}
}

func TestKubernetesUnparseableGPUQuantity(t *testing.T) {
	// Constructed: a quantity that is not a whole number fails the node
	// when GPUs are required, and is ignored otherwise.
	out := `{"kind":"Node","metadata":{"name":"node-0"},"status":{"conditions":[{"type":"Ready","status":"True"}],` +
		`"allocatable":{"nvidia.com/gpu":"2k"}}}`
	r, err := Kubernetes(out, []string{"node-0"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, r, "node-0", "Ready", "not a GPU count")
	r, err = Kubernetes(out, []string{"node-0"}, 0)
	if err != nil || !r.Ready {
		t.Fatalf("without a GPU requirement: %+v, %v", r, err)
	}
}

// `kubectl get nodes -o yaml` is read like -o json. The YAML is made here
// from the constructed JSON List.
func TestKubernetesYAMLList(t *testing.T) {
	var doc any
	if err := yaml.Unmarshal([]byte(fixture(t, "k8s_nodelist_json_constructed_one_gpu0.json")), &doc); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Kubernetes(string(b), constructedNodes, 8)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	if r.Ready || !slices.Equal(failingNames(r), []string{"node-2"}) || r.TotalGPUs != 16 {
		t.Fatalf("want node-2 failing, 16 GPUs: %+v", r)
	}
}
