package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Versions the simulated software reports.
const (
	kubeVersion = "v1.30.4"
	rayVersion  = "2.9.3"
)

// SlurmCheckCommand, KubernetesCheckCommand and RayCheckCommand are the
// commands whose output the "check:<software>" steps print:
//
//   - slurm: one "<node> <state> <gres>" line per node, in node order, as
//     printed by `sinfo -N -h -o "%N %T %G"`: "idle" when healthy,
//     "drained" when a check_fails fault hits the node, "down*" when the
//     node is not running or never installed Slurm; gres "gpu:<n>" or
//     "(null)". Then the test job's section (between the SRUN markers):
//     one "<node> <node> gpus=<n>" line per node when every node is idle
//     (n one short on a node with a gpu_missing fault), else the line
//     "test job not started: not every node is idle".
//   - kubernetes: the NodeList of `kubectl get nodes -o json` (kind "List",
//     4-space indent, sorted keys, as kubectl prints it). Every node that
//     joined is listed: Ready "True" with status.allocatable["nvidia.com/gpu"]
//     equal to its GPUs when healthy; Ready "False" and "0" GPUs under
//     check_fails; Ready "Unknown" when it is not running.
//   - ray: the Ray 2.x `ray status` layout (as in Ray 2.8+): healthy nodes
//     under "Active:" as " 1 node_<56 hex>", joined nodes that are down or
//     unhealthy under "Recent failures:" as
//     " node_<id>: RayletUnexpectedlyDied (ip: 10.77.0.x)", nodes that never
//     joined absent; "Total Usage:" sums CPU, GPU, accelerator_type, memory
//     and object store memory of the active nodes.
//
// Each check fails with exit status 127 on a machine where the software is
// not installed, and with exit status 1 when the head (node-0: the Slurm
// controller, the Kubernetes control plane, the Ray head) is not up.
const (
	SlurmCheckCommand      = `sinfo -N -h -o "%N %T %G"; srun -N"$NNODES" --ntasks-per-node=1 …`
	KubernetesCheckCommand = "kubectl get nodes -o json"
	RayCheckCommand        = "ray status"
)

// nodeHealth is how one machine looks to a software check.
type nodeHealth struct {
	n        *node
	joined   bool      // the software is installed on it
	joinedAt time.Time // when it was installed
	running  bool
	healthy  bool // no check_fails fault for this software
}

// check prints the software's status listing as seen from this machine.
// Callers hold c.mu.
func (e *executor) check(software string, now time.Time) (string, error) {
	if _, ok := e.n.installed[software]; !ok {
		return fmt.Sprintf("bash: line 1: %s: command not found\n", checkBinary(software)), exitStatus(127)
	}
	g := e.n.g
	head := g.nodes[0]
	if _, ok := head.installed[software]; !ok || !head.running(now) {
		return headDown(software, head.privateIP()), exitStatus(1)
	}
	nodes := make([]nodeHealth, 0, len(g.nodes))
	for _, n := range g.nodes {
		if n.released {
			continue // gone from the cluster: the tools no longer list it
		}
		at, joined := n.installed[software]
		nodes = append(nodes, nodeHealth{
			n:        n,
			joined:   joined,
			joinedAt: at,
			running:  n.running(now),
			healthy: !slices.ContainsFunc(n.checkFails, func(s string) bool {
				return s == "" || s == software
			}),
		})
	}
	switch software {
	case Slurm:
		return slurmStatus(nodes), nil
	case Kubernetes:
		return e.c.kubeNodes(nodes, now)
	default:
		return e.c.rayStatus(nodes, now), nil
	}
}

func checkBinary(software string) string {
	switch software {
	case Slurm:
		return "sinfo"
	case Kubernetes:
		return "kubectl"
	default:
		return "ray"
	}
}

// headDown is what each tool prints when its head node is unreachable.
func headDown(software, headIP string) string {
	switch software {
	case Slurm:
		return "slurm_load_node: Unable to contact slurm controller (connect failure)\n"
	case Kubernetes:
		return fmt.Sprintf("The connection to the server %s:6443 was refused - did you specify the right host or port?\n", headIP)
	default:
		return "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable.\n"
	}
}

// slurmStatus prints `sinfo -N -h -o "%N %T %G"` and the test job.
func slurmStatus(nodes []nodeHealth) string {
	var b strings.Builder
	allIdle := true
	for _, h := range nodes {
		state := "idle"
		switch {
		case !h.running || !h.joined:
			state = "down*"
		case !h.healthy:
			state = "drained"
		}
		allIdle = allIdle && state == "idle"
		gres := "(null)"
		if g := h.n.g.offer.cfg.GPUsPerNode; g > 0 {
			gres = fmt.Sprintf("gpu:%d", g)
		}
		fmt.Fprintf(&b, "%s %s %s\n", h.n.name(), state, gres)
	}
	b.WriteString(slurmJobBegin + "\n")
	if !allIdle {
		b.WriteString("test job not started: not every node is idle\n")
	}
	for _, h := range nodes {
		if !allIdle {
			break
		}
		gpus := h.n.g.offer.cfg.GPUsPerNode
		if h.n.gpuMissing && gpus > 0 {
			gpus--
		}
		fmt.Fprintf(&b, "%s %s gpus=%d\n", h.n.name(), h.n.name(), gpus)
	}
	b.WriteString(slurmJobEnd + "\n")
	return b.String()
}

// The markers around the Slurm check's test job (the same text as
// readiness.SlurmJobBegin/End; providers import nothing of the module).
const (
	slurmJobBegin = "-----BEGIN CLUSTERDECK SRUN-----"
	slurmJobEnd   = "-----END CLUSTERDECK SRUN-----"
)

// kubeNodes prints `kubectl get nodes -o json`.
func (c *Cloud) kubeNodes(nodes []nodeHealth, now time.Time) (string, error) {
	items := []any{}
	for _, h := range nodes {
		if h.joined {
			items = append(items, c.kubeNode(h, now))
		}
	}
	list := map[string]any{
		"apiVersion": "v1",
		"items":      items,
		"kind":       "List",
		"metadata":   map[string]any{"resourceVersion": ""},
	}
	out, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return "", err
	}
	return string(out) + "\n", nil
}

// kubeNode is one Node object.
func (c *Cloud) kubeNode(h nodeHealth, now time.Time) map[string]any {
	n, o := h.n, h.n.g.offer.cfg
	gpus := strconv.Itoa(o.GPUsPerNode)
	if !h.healthy {
		gpus = "0"
	}
	memKi := int64(o.MemoryGB) << 20
	diskKi := int64(o.RootDiskGB) << 20
	resources := func(mem, disk string) map[string]any {
		return map[string]any{
			"cpu": strconv.Itoa(o.VCPUs), "ephemeral-storage": disk,
			"hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": mem,
			"nvidia.com/gpu": gpus, "pods": "110",
		}
	}
	labels := map[string]any{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.name(), "kubernetes.io/os": "linux",
		"nvidia.com/gpu.count": strconv.Itoa(o.GPUsPerNode), "nvidia.com/gpu.product": gpuProduct(o.Accelerator),
	}
	if n.index == 0 {
		labels["node-role.kubernetes.io/control-plane"] = ""
	}
	conditions, taints := kubeConditions(h, now)
	spec := map[string]any{
		"podCIDR":  fmt.Sprintf("10.244.%d.0/24", n.index),
		"podCIDRs": []any{fmt.Sprintf("10.244.%d.0/24", n.index)},
	}
	if len(taints) > 0 {
		spec["taints"] = taints
	}
	uid := c.uuid("k8s-uid", n.g.name, n.g.gen, n.index)
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"annotations": map[string]any{
				"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
			"creationTimestamp": h.joinedAt.UTC().Format(time.RFC3339),
			"labels":            labels,
			"name":              n.name(),
			"resourceVersion":   strconv.FormatInt(1000+now.Unix()%100000, 10),
			"uid":               uid,
		},
		"spec": spec,
		"status": map[string]any{
			"addresses": []any{
				map[string]any{"address": n.privateIP(), "type": "InternalIP"},
				map[string]any{"address": n.name(), "type": "Hostname"},
			},
			"allocatable":     resources(fmt.Sprintf("%dKi", memKi-102400), strconv.FormatInt(diskKi*1024*9/10, 10)),
			"capacity":        resources(fmt.Sprintf("%dKi", memKi), fmt.Sprintf("%dKi", diskKi)),
			"conditions":      conditions,
			"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": 10250}},
			"nodeInfo": map[string]any{
				"architecture":            "amd64",
				"bootID":                  c.hexID(32, "boot", n.g.name, n.g.gen, n.index, n.agentEpoch),
				"containerRuntimeVersion": "containerd://1.7.20",
				"kernelVersion":           "5.15.0-119-generic",
				"kubeProxyVersion":        kubeVersion,
				"kubeletVersion":          kubeVersion,
				"machineID":               c.hexID(32, "machine", n.g.name, n.g.gen, n.index),
				"operatingSystem":         "linux",
				"osImage":                 "Ubuntu 22.04.4 LTS",
				"systemUUID":              strings.ToUpper(c.uuid("system", n.g.name, n.g.gen, n.index)),
			},
		},
	}
}

// kubeConditions are a node's conditions and taints: Ready True when
// healthy, False under check_fails, Unknown when the kubelet stopped
// posting because the machine is not running.
func kubeConditions(h nodeHealth, now time.Time) ([]any, []any) {
	hb := now.UTC().Format(time.RFC3339)
	since := h.joinedAt.UTC().Format(time.RFC3339)
	cond := func(typ, status, reason, msg string) map[string]any {
		return map[string]any{
			"lastHeartbeatTime": hb, "lastTransitionTime": since,
			"message": msg, "reason": reason, "status": status, "type": typ,
		}
	}
	if !h.running {
		var cs []any
		for _, t := range []string{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"} {
			cs = append(cs, cond(t, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."))
		}
		return cs, []any{
			map[string]any{"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable", "timeAdded": hb},
			map[string]any{"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "timeAdded": hb},
		}
	}
	cs := []any{
		cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
	}
	if !h.healthy {
		cs = append(cs, cond("Ready", "False", "KubeletNotReady",
			"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"))
		return cs, []any{map[string]any{"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready", "timeAdded": hb}}
	}
	cs = append(cs, cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
	return cs, nil
}

// gpuProduct is the GPU feature discovery product label.
func gpuProduct(acc string) string {
	switch acc {
	case accH200:
		return "NVIDIA-H200"
	case accH100:
		return "NVIDIA-H100-80GB-HBM3"
	case accA100:
		return "NVIDIA-A100-SXM4-80GB"
	case accL40S:
		return "NVIDIA-L40S"
	case accRTX4090:
		return "NVIDIA-GeForce-RTX-4090"
	}
	return "NVIDIA-" + strings.ReplaceAll(acc, "_", "-")
}

// rayAcceleratorType is Ray's accelerator_type resource name.
func rayAcceleratorType(acc string) string {
	switch acc {
	case accA100:
		return "A100-80G"
	case accRTX4090:
		return "RTX"
	}
	t, _, _ := strings.Cut(acc, "_")
	return t
}

// rayNodeID is the Ray node id of machine n (56 hex digits, fixed by the seed).
func (c *Cloud) rayNodeID(n *node) string {
	return c.hexID(56, "ray", n.g.name, n.g.gen, n.index)
}

// rayStatus prints `ray status` in the Ray 2.x (2.8+) layout.
func (c *Cloud) rayStatus(nodes []nodeHealth, now time.Time) string {
	const rule = "---------------------------------------------------------------"
	var active, failures []string
	var cpus, gpus, accel int
	var memGiB float64
	o := nodes[0].n.g.offer.cfg
	for _, h := range nodes {
		id := "node_" + c.rayNodeID(h.n)
		switch {
		case !h.joined:
		case h.running && h.healthy:
			active = append(active, " 1 "+id)
			cpus += o.VCPUs
			gpus += o.GPUsPerNode
			accel++
			memGiB += float64(o.MemoryGB)
		default:
			failures = append(failures, fmt.Sprintf(" %s: RayletUnexpectedlyDied (ip: %s)", id, h.n.privateIP()))
		}
	}
	or := func(lines []string, none string) string {
		if len(lines) == 0 {
			return " " + none + "\n"
		}
		return strings.Join(lines, "\n") + "\n"
	}
	g := nodes[0].n.g
	var b strings.Builder
	fmt.Fprintf(&b, "======== Autoscaler status: %s ========\n", now.UTC().Format("2006-01-02 15:04:05.000000"))
	fmt.Fprintf(&b, "GCS request time: %.6fs\n\n", 0.0005+c.fraction("gcs", g.name, now.Unix())*0.002)
	fmt.Fprintf(&b, "Node status\n%s\n", rule)
	fmt.Fprintf(&b, "Active:\n%s", or(active, "(no active nodes)"))
	fmt.Fprintf(&b, "Idle:\n (no idle nodes)\n")
	fmt.Fprintf(&b, "Pending:\n (no pending nodes)\n")
	fmt.Fprintf(&b, "Recent failures:\n%s\n", or(failures, "(no failures)"))
	fmt.Fprintf(&b, "Resources\n%s\n", rule)
	fmt.Fprintf(&b, "Total Usage:\n")
	fmt.Fprintf(&b, " 0.0/%.1f CPU\n", float64(cpus))
	if gpus > 0 {
		fmt.Fprintf(&b, " 0.0/%.1f GPU\n", float64(gpus))
		fmt.Fprintf(&b, " 0.0/%.1f accelerator_type:%s\n", float64(accel), rayAcceleratorType(o.Accelerator))
	}
	fmt.Fprintf(&b, " 0B/%.2fGiB memory\n", memGiB*0.7)
	fmt.Fprintf(&b, " 0B/%.2fGiB object_store_memory\n\n", memGiB*0.3)
	fmt.Fprintf(&b, "Total Demands:\n (no resource demands)\n")
	return b.String()
}

// uuid is a version-4-shaped UUID derived from parts.
func (c *Cloud) uuid(parts ...any) string {
	h := c.hexID(32, parts...)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}
