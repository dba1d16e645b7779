// Package readiness decides whether the software installed on a cluster
// (S1: Slurm, Kubernetes or Ray) is ready on every node, by parsing the raw
// output of that software's own check command (S2):
//
//   - Slurm: every node is idle in sinfo and ran a test job (see
//     [SlurmReady]);
//   - Kubernetes: every node is Ready with its GPUs schedulable
//     (see [Kubernetes]);
//   - Ray: every node is listed as healthy by `ray status`, none pending and
//     no recent failure (see [Ray]).
//
// The agent on the head node runs the command and sends its output to the
// server, which calls [Check] and marks the cluster ready only when the
// returned [Report] is Ready (L5). A Report that is not Ready names every
// failing and missing node with a reason, so the server can show it on the
// cluster page and, after the install deadline, put the reason into the
// degraded event (L6).
//
// Errors versus verdicts: output that is empty, truncated, or not in any
// format this package knows returns an error (wrapping [ErrEmpty],
// [ErrTruncated] or [ErrFormat]); the caller should treat that as "check
// failed, try again", never as ready. Output that parses is always a Report,
// Ready or not. No input makes the package panic (fuzz tests guard that).
//
// Expected nodes: Slurm and Kubernetes match them by exact node name; Ray
// matches node ids or IP addresses (see [Ray]). Expected nodes the output
// does not show are reported as Missing and make the report not Ready. An
// empty expected list means "judge every node the output lists".
//
// The output comes from a machine the customer controls, so it is untrusted:
// the parsers bound hostlist expansion ([MaxHostlist]) and never panic, but
// the caller should still cap the size of what it accepts (a few MiB is far
// more than 64 nodes print).
//
// The package is pure: it reads no files, runs nothing and imports nothing
// from the rest of the module. YAML (`kubectl … -o yaml` and pasted status
// sections) is read with gopkg.in/yaml.v3; everything else uses the standard
// library.
package readiness

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned (wrapped) by the parsers; test with errors.Is.
var (
	// ErrEmpty: the output is empty or only white space.
	ErrEmpty = errors.New("readiness: empty output")
	// ErrFormat: the output is not in a format this package recognises.
	ErrFormat = errors.New("readiness: unrecognised output")
	// ErrTruncated: the output starts in a known format but is cut short.
	ErrTruncated = errors.New("readiness: truncated output")
	// ErrNoName: a Kubernetes object has neither metadata.name nor a Hostname
	// address, so it cannot be matched to an expected node.
	ErrNoName = errors.New("readiness: node object has no name")
	// ErrNoGPUInfo: GPUs were required but the output cannot show them
	// (e.g. the plain `kubectl get nodes` table).
	ErrNoGPUInfo = errors.New("readiness: output has no GPU information")
	// ErrExpected: the expected node list is invalid (a blank entry).
	ErrExpected = errors.New("readiness: invalid expected node")
	// ErrSoftware: Check was asked about software it has no check for.
	ErrSoftware = errors.New("readiness: no check for this software")
)

// NodeResult is one node's verdict.
type NodeResult struct {
	// Node is the node's name as expected (for Ray: the expected string),
	// or as listed by the tool when no nodes were expected.
	Node string `json:"node"`
	// OK is true when the node passes its software's check.
	OK bool `json:"ok"`
	// State is the state as the tool printed it: "idle", "drng@",
	// "IDLE+DRAIN" (Slurm; several partitions' states are joined with ","),
	// "Ready", "NotReady,SchedulingDisabled" (Kubernetes), "active", "idle",
	// "healthy", "pending", "failed" (Ray).
	State string `json:"state"`
	// Reason says why the node does not pass; empty when OK.
	Reason string `json:"reason,omitempty"`
	// GPUs is the number of GPUs the output shows for the node: allocatable
	// nvidia.com/gpu on Kubernetes, the gpu Gres of `scontrol show node` on
	// Slurm; 0 when the output does not say.
	GPUs int `json:"gpus"`
}

// Report is the verdict over the expected nodes.
type Report struct {
	// Software is "slurm", "kubernetes" or "ray".
	Software string `json:"software"`
	// Nodes holds one result per expected node that the output lists, in
	// the order of the expected list (every listed node, in output order,
	// when no nodes were expected).
	Nodes []NodeResult `json:"nodes"`
	// Missing lists the expected nodes the output does not show at all.
	Missing []string `json:"missing,omitempty"`
	// Unexpected lists nodes the output shows that were not expected
	// (Slurm and Kubernetes only). They do not affect Ready.
	Unexpected []string `json:"unexpected,omitempty"`
	// Pending and Failures are the `ray status` lines under "Pending:" and
	// "Recent failures:" (Ray only). Any of them makes the report not Ready.
	Pending  []string `json:"pending,omitempty"`
	Failures []string `json:"failures,omitempty"`
	// Healthy counts the nodes the output reports as passing, expected or
	// not. For Ray it is the sum of the Healthy/Active/Idle counts.
	Healthy int `json:"healthy"`
	// TotalGPUs is the cluster's GPU total as the output shows it: Ray's
	// "x/N GPU" usage line, the sum of allocatable GPUs on Kubernetes, the sum
	// of gpu Gres on Slurm's scontrol output; 0 when the output does not say.
	TotalGPUs int `json:"totalGpus"`
	// Ready is true only when every expected node passes, none is missing
	// and (Ray) nothing is pending or recently failed.
	Ready bool `json:"ready"`
	// Summary is one line for people and for event messages.
	Summary string `json:"summary"`
}

// Failing returns the results of the nodes that do not pass.
func (r Report) Failing() []NodeResult {
	var out []NodeResult
	for _, n := range r.Nodes {
		if !n.OK {
			out = append(out, n)
		}
	}
	return out
}

// Check runs the check of the named software ("slurm", "kubernetes" or its
// short name "k8s", "ray"; case does not matter) on its command's output.
// gpusPerNode is used by Kubernetes and Slurm (0 turns the GPU requirement
// off); Slurm's output is the full check of [SlurmReady] (sinfo and a test
// job on every node). Ray's check is about nodes, whose GPU total is
// reported in Report.TotalGPUs for the caller to compare.
// Software "none" has no check (L5: such a cluster is ready at once), so it
// is an error here like any other name.
func Check(software, output string, expected []string, gpusPerNode int) (Report, error) {
	switch strings.ToLower(strings.TrimSpace(software)) {
	case "slurm":
		return SlurmReady(output, expected, gpusPerNode)
	case "kubernetes", "k8s":
		return Kubernetes(output, expected, gpusPerNode)
	case "ray":
		return Ray(output, expected)
	default:
		return Report{}, fmt.Errorf("%w: %q", ErrSoftware, software)
	}
}

// normalize turns CRLF into LF and reports ErrEmpty for blank output.
func normalize(output string) (string, error) {
	if strings.TrimSpace(output) == "" {
		return "", ErrEmpty
	}
	output = strings.ReplaceAll(output, "\r\n", "\n")
	return strings.TrimPrefix(output, "\ufeff"), nil
}

// cleanExpected drops duplicates (keeping the first) and rejects blanks.
func cleanExpected(expected []string) ([]string, error) {
	seen := make(map[string]bool, len(expected))
	out := make([]string, 0, len(expected))
	for i, e := range expected {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("%w: entry %d is blank", ErrExpected, i)
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// listed is one node as a parser found it, before matching.
type listed struct {
	name string
	res  NodeResult
}

// judgeNamed builds the report for tools that name nodes (Slurm,
// Kubernetes): nodes are matched to expected names exactly.
func judgeNamed(software string, nodes []listed, expected []string) Report {
	r := Report{Software: software}
	byName := make(map[string]NodeResult, len(nodes))
	for _, n := range nodes {
		byName[n.name] = n.res
		if n.res.OK {
			r.Healthy++
		}
		r.TotalGPUs += n.res.GPUs
	}
	if len(expected) == 0 {
		for _, n := range nodes {
			r.Nodes = append(r.Nodes, n.res)
		}
	} else {
		want := make(map[string]bool, len(expected))
		for _, e := range expected {
			want[e] = true
			if res, ok := byName[e]; ok {
				r.Nodes = append(r.Nodes, res)
			} else {
				r.Missing = append(r.Missing, e)
			}
		}
		for _, n := range nodes {
			if !want[n.name] {
				r.Unexpected = append(r.Unexpected, n.name)
			}
		}
	}
	r.Ready = len(r.Nodes) > 0 && len(r.Missing) == 0 && len(r.Failing()) == 0
	r.Summary = summarize(r, len(expected))
	return r
}

// summarize writes Report.Summary for Slurm and Kubernetes.
func summarize(r Report, expected int) string {
	total := expected
	if total == 0 {
		total = len(r.Nodes)
	}
	if r.Ready {
		s := fmt.Sprintf("ready: %d/%d nodes pass", total, total)
		if r.TotalGPUs > 0 {
			s += ", " + gpus(r.TotalGPUs)
		}
		return s
	}
	parts := problems(r, total)
	if total == 0 && len(r.Missing) == 0 {
		parts = append([]string{"no nodes listed"}, parts...)
	}
	return "not ready: " + strings.Join(parts, "; ")
}

// problems lists what keeps a report from being ready.
func problems(r Report, total int) []string {
	var parts []string
	if f := r.Failing(); len(f) > 0 {
		items := make([]string, len(f))
		for i, n := range f {
			items[i] = fmt.Sprintf("%s (%s)", n.Node, n.Reason)
		}
		parts = append(parts, fmt.Sprintf("%d of %d nodes not passing: %s", len(f), total, listShort(items)))
	}
	if len(r.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d missing: %s", len(r.Missing), listShort(r.Missing)))
	}
	if len(r.Pending) > 0 {
		parts = append(parts, "pending: "+listShort(r.Pending))
	}
	if len(r.Failures) > 0 {
		parts = append(parts, "recent failures: "+listShort(r.Failures))
	}
	return parts
}

// listShort joins at most five items and says how many more there are.
func listShort(items []string) string {
	const limit = 5
	if len(items) <= limit {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:limit], ", "), len(items)-limit)
}

// gpus is "1 GPU", "16 GPUs".
func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
