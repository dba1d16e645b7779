package readiness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// GPUResource is the extended resource the NVIDIA device plugin advertises.
const GPUResource = "nvidia.com/gpu"

// LegacyGPUResource is the pre-device-plugin GPU resource of Kubernetes
// before 1.10. It is read when GPUResource is absent; "0" still means 0.
const LegacyGPUResource = "alpha.kubernetes.io/nvidia-gpu"

// k8sNode is the part of a Node object the check reads.
type k8sNode struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Allocatable map[string]quantity `json:"allocatable"`
		Conditions  []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

// k8sDoc is a List/NodeList or a single Node.
type k8sDoc struct {
	k8sNode
	Items []k8sNode `json:"items"`
}

// quantity is a resource quantity: kubectl prints strings ("8", "3920m"),
// YAML may leave small numbers unquoted.
type quantity string

// UnmarshalJSON accepts a JSON string or number.
func (q *quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*q = quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("quantity %s is neither a string nor a number", clip(string(b)))
	}
	*q = quantity(n.String())
	return nil
}

// Kubernetes judges `kubectl get nodes -o json` output (a List/NodeList, or
// one Node object; `-o yaml` is read the same way) per S2: a node passes
// when its Ready condition is True, it is not cordoned
// (spec.unschedulable), and, when gpusPerNode > 0, its allocatable
// nvidia.com/gpu (or the legacy alpha.kubernetes.io/nvidia-gpu) is at least
// gpusPerNode. Other extended resources, such as vGPU profiles
// ("nvidia.com/GRID_T4-8Q"), are not GPUs for this check.
//
// The plain `kubectl get nodes` table (NAME STATUS ROLES AGE VERSION) is
// accepted for readiness only: STATUS must be "Ready" without
// "SchedulingDisabled"; with gpusPerNode > 0 it returns ErrNoGPUInfo.
//
// Partial objects: a node's name is metadata.name, or else its Hostname
// address (so a pasted `status:` section still names its node); an object
// with neither is an error wrapping ErrNoName, because it cannot be matched
// to an expected node. A named object with no Ready condition fails with
// the reason "no Ready condition". Use [GPUsAllocatable] to read GPUs from
// fragments.
//
// Expected nodes are matched by exact name; with none expected, every
// listed node is judged.
func Kubernetes(output string, expected []string, gpusPerNode int) (Report, error) {
	expected, err := cleanExpected(expected)
	if err != nil {
		return Report{}, err
	}
	if gpusPerNode < 0 {
		return Report{}, fmt.Errorf("kubernetes: gpusPerNode %d is negative", gpusPerNode)
	}
	output, err = normalize(output)
	if err != nil {
		return Report{}, fmt.Errorf("kubernetes: %w", err)
	}
	if isKubectlTable(output) {
		if gpusPerNode > 0 {
			return Report{}, fmt.Errorf("kubernetes: %w: the `kubectl get nodes` table cannot show GPUs; use -o json", ErrNoGPUInfo)
		}
		nodes, err := parseKubectlTable(output)
		if err != nil {
			return Report{}, err
		}
		return judgeNamed("kubernetes", nodes, expected), nil
	}
	doc, err := decodeK8s(output)
	if err != nil {
		return Report{}, err
	}
	items := doc.Items
	switch {
	case doc.Kind == "List" || doc.Kind == "NodeList" || doc.Items != nil:
	case doc.Kind == "Node" || doc.Kind == "" && (doc.Metadata.Name != "" || doc.Status.Conditions != nil ||
		doc.Status.Addresses != nil || doc.Status.Allocatable != nil):
		items = []k8sNode{doc.k8sNode}
	default:
		return Report{}, fmt.Errorf("kubernetes: %w: not a Node or NodeList (kind %q)", ErrFormat, clip(doc.Kind))
	}
	nodes := make([]listed, 0, len(items))
	for i, item := range items {
		if item.Kind != "" && item.Kind != "Node" {
			return Report{}, fmt.Errorf("kubernetes: %w: item %d is a %s, not a Node", ErrFormat, i, clip(item.Kind))
		}
		res, err := judgeK8sNode(item, gpusPerNode)
		if err != nil {
			return Report{}, fmt.Errorf("kubernetes: item %d: %w", i, err)
		}
		nodes = append(nodes, listed{name: res.Node, res: res})
	}
	return judgeNamed("kubernetes", nodes, expected), nil
}

// judgeK8sNode judges one Node object.
func judgeK8sNode(n k8sNode, gpusPerNode int) (NodeResult, error) {
	res := NodeResult{Node: n.Metadata.Name}
	if res.Node == "" {
		for _, a := range n.Status.Addresses {
			if a.Type == "Hostname" && a.Address != "" {
				res.Node = a.Address
				break
			}
		}
	}
	if res.Node == "" {
		return res, ErrNoName
	}
	var whys []string
	res.State = "Unknown"
	ready := false
	found := false
	for _, c := range n.Status.Conditions {
		if c.Type != "Ready" {
			continue
		}
		found = true
		switch c.Status {
		case "True":
			ready = true
			res.State = "Ready"
		case "False":
			res.State = "NotReady"
			whys = append(whys, "NotReady"+conditionDetail(c.Reason, c.Message))
		default:
			whys = append(whys, fmt.Sprintf("Ready condition is %q", c.Status)+conditionDetail(c.Reason, c.Message))
		}
	}
	if !found {
		whys = append(whys, "no Ready condition")
	}
	if n.Spec.Unschedulable {
		res.State += ",SchedulingDisabled"
		whys = append(whys, "cordoned (spec.unschedulable)")
	}
	gpus, key, err := allocatableGPUs(n.Status.Allocatable)
	res.GPUs = gpus
	switch {
	case err != nil && gpusPerNode > 0:
		whys = append(whys, err.Error())
	case gpusPerNode > 0 && gpus < gpusPerNode:
		if key == "" {
			key = GPUResource
		}
		whys = append(whys, fmt.Sprintf("%d allocatable %s, need %d", gpus, key, gpusPerNode))
	}
	res.OK = ready && len(whys) == 0
	res.Reason = strings.Join(whys, "; ")
	return res, nil
}

func conditionDetail(reason, message string) string {
	switch {
	case reason != "" && message != "":
		return fmt.Sprintf(" (%s: %s)", reason, clipN(message, 160))
	case reason != "":
		return " (" + reason + ")"
	case message != "":
		return " (" + clipN(message, 160) + ")"
	}
	return ""
}

// allocatableGPUs reads the GPU count from an allocatable map and says
// which key it came from ("" when there is no GPU key: 0 GPUs).
func allocatableGPUs(alloc map[string]quantity) (int, string, error) {
	for _, key := range []string{GPUResource, LegacyGPUResource} {
		q, ok := alloc[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(q)))
		if err != nil || n < 0 {
			return 0, key, fmt.Errorf("%s quantity %q is not a GPU count", key, clip(string(q)))
		}
		return n, key, nil
	}
	return 0, "", nil
}

// GPUsAllocatable reads the allocatable GPU count from a Kubernetes
// fragment in JSON or YAML: a whole Node, a `status:` section (as pasted
// from `kubectl get node X -o yaml`), a bare status object, or the bare
// allocatable map (`-o jsonpath='{.status.allocatable}'`). It returns 0 when
// the allocatable map has no GPU key, and an error for a list, for a status
// without allocatable, or for a GPU value that is not a whole number.
func GPUsAllocatable(fragment string) (int, error) {
	fragment, err := normalize(fragment)
	if err != nil {
		return 0, fmt.Errorf("kubernetes: %w", err)
	}
	var m map[string]any
	if err := decodeAny(fragment, &m); err != nil {
		return 0, err
	}
	if _, ok := m["items"]; ok {
		return 0, fmt.Errorf("kubernetes: %w: a list holds several nodes; use Kubernetes", ErrFormat)
	}
	if s, ok := m["status"].(map[string]any); ok {
		m = s
	}
	if a, ok := m["allocatable"].(map[string]any); ok {
		m = a
	} else if _, ok := m["conditions"]; ok {
		return 0, fmt.Errorf("kubernetes: %w: status has no allocatable section", ErrFormat)
	} else if _, ok := m["capacity"]; ok {
		return 0, fmt.Errorf("kubernetes: %w: status has no allocatable section", ErrFormat)
	}
	alloc := make(map[string]quantity, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			alloc[k] = quantity(v)
		case json.Number:
			alloc[k] = quantity(v.String())
		default:
			if k == GPUResource || k == LegacyGPUResource {
				return 0, fmt.Errorf("kubernetes: %w: %s is not a quantity", ErrFormat, k)
			}
		}
	}
	resourceKeys := []string{"cpu", "memory", "pods", GPUResource, LegacyGPUResource}
	if !slices.ContainsFunc(resourceKeys, func(k string) bool { _, ok := alloc[k]; return ok }) {
		return 0, fmt.Errorf("kubernetes: %w: no allocatable resources found", ErrFormat)
	}
	n, _, err := allocatableGPUs(alloc)
	if err != nil {
		return 0, fmt.Errorf("kubernetes: %w: %v", ErrFormat, err)
	}
	return n, nil
}

// decodeK8s decodes JSON or YAML into a k8sDoc.
func decodeK8s(output string) (k8sDoc, error) {
	var doc k8sDoc
	if err := decodeAny(output, &doc); err != nil {
		return doc, err
	}
	return doc, nil
}

// decodeAny decodes JSON (when the text starts with '{' or '[') or else
// YAML into v, via JSON so that one set of struct tags serves both.
func decodeAny(text string, v any) error {
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(v); err != nil {
			if strings.Contains(err.Error(), "unexpected EOF") {
				return fmt.Errorf("kubernetes: %w: JSON ends early: %v", ErrTruncated, err)
			}
			return fmt.Errorf("kubernetes: %w: bad JSON: %v", ErrFormat, err)
		}
		if dec.More() {
			return fmt.Errorf("kubernetes: %w: text after the JSON object", ErrFormat)
		}
		return nil
	}
	var y any
	if err := yamlUnmarshal([]byte(text), &y); err != nil {
		return fmt.Errorf("kubernetes: %w: neither JSON nor YAML: %v", ErrFormat, err)
	}
	if _, ok := y.(map[string]any); !ok {
		return fmt.Errorf("kubernetes: %w: not a JSON or YAML object", ErrFormat)
	}
	b, err := json.Marshal(y)
	if err != nil {
		return fmt.Errorf("kubernetes: %w: YAML cannot be read as an object: %v", ErrFormat, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("kubernetes: %w: YAML has unexpected types: %v", ErrFormat, err)
	}
	return nil
}

// yamlUnmarshal is yaml.Unmarshal with any panic in the decoder turned into
// an error, so corrupt input can never take the server down.
func yamlUnmarshal(b []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("YAML decoder failed: %v", r)
		}
	}()
	return yaml.Unmarshal(b, v)
}

// isKubectlTable reports whether the output starts with the header of the
// `kubectl get nodes` table.
func isKubectlTable(output string) bool {
	lines := strings.SplitN(strings.TrimLeft(output, "\n"), "\n", 2)
	cols := strings.Fields(lines[0])
	return len(cols) >= 2 && cols[0] == "NAME" && slices.Contains(cols, "STATUS")
}

// parseKubectlTable parses `kubectl get nodes` (also -o wide).
func parseKubectlTable(output string) ([]listed, error) {
	lines := strings.Split(strings.TrimLeft(output, "\n"), "\n")
	header := strings.Fields(lines[0])
	statusCol := slices.Index(header, "STATUS")
	var out []listed
	for i, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) <= statusCol {
			return nil, fmt.Errorf("kubernetes: %w: table line %d has no STATUS", ErrTruncated, i+2)
		}
		name, status := f[0], f[statusCol]
		if err := checkNameChars(name); err != nil {
			return nil, fmt.Errorf("kubernetes: %w: table line %d: %v", ErrFormat, i+2, err)
		}
		res := NodeResult{Node: name, State: status}
		var whys []string
		parts := strings.Split(status, ",")
		switch parts[0] {
		case "Ready":
		case "NotReady":
			whys = append(whys, "NotReady")
		default:
			whys = append(whys, fmt.Sprintf("status %q", clip(status)))
		}
		for _, p := range parts[1:] {
			if p == "SchedulingDisabled" {
				whys = append(whys, "cordoned (SchedulingDisabled)")
			} else {
				whys = append(whys, "status flag "+clip(p))
			}
		}
		res.OK = len(whys) == 0
		res.Reason = strings.Join(whys, "; ")
		out = append(out, listed{name: name, res: res})
	}
	return out, nil
}
