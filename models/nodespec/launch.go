package nodespec

import (
	"fmt"
	"strconv"
	"strings"
)

// Where the hostfile lives (N4, V4).
const (
	// SharedDir is the folder node-0 exports to every node on vm and
	// bare_metal machines.
	SharedDir = "/shared"
	// SharedHostfile is the hostfile's path on vm and bare_metal machines.
	SharedHostfile = SharedDir + "/hostfile"
	// HomeHostfile is the hostfile's path on container machines, which share
	// no folder: the agent writes the same file into the SSH user's home on
	// every node. It is written for the shell, which expands the ~.
	HomeHostfile = "~/hostfile"
)

// NCCLTestBinary is where the node image has nccl-tests' all_reduce_perf,
// built with MPI=1 so one run can span nodes.
const NCCLTestBinary = "/opt/nccl-tests/build/all_reduce_perf"

// Hostfile returns the MPI/DeepSpeed hostfile: one "<name> slots=<GPUs>"
// line per node in rank order. Open MPI's --hostfile and DeepSpeed's
// --hostfile both read this format.
func (c Cluster) Hostfile() string {
	var b strings.Builder
	for _, n := range c.byRank() {
		fmt.Fprintf(&b, "%s slots=%d\n", n.Name, c.GPUsPerNode)
	}
	return b.String()
}

// HostfilePath is where every node finds Hostfile(): SharedHostfile on vm
// and bare_metal (in the folder node-0 shares, V4), HomeHostfile on
// containers.
func (c Cluster) HostfilePath() string {
	if c.HasSharedFolder() {
		return SharedHostfile
	}
	return HomeHostfile
}

// hostList is Open MPI's -H value: "node-0:8,node-1:8,…" (name:slots).
func (c Cluster) hostList() string {
	parts := make([]string, 0, len(c.Nodes))
	for _, n := range c.byRank() {
		parts = append(parts, n.Name+":"+strconv.Itoa(c.GPUsPerNode))
	}
	return strings.Join(parts, ",")
}

// Where a command is run.
const (
	RunOnEveryNode = "every node"
	RunOnAnyNode   = "any node"
	RunOnPrimary   = "node-0"
)

// Command is one ready-made command for the cluster page and the API.
type Command struct {
	// Name identifies the command: "torchrun", "mpirun", "deepspeed",
	// "nccl-all-reduce", "srun", "sbatch", "ray-status", "kubectl".
	Name string
	// RunOn says where to run it: RunOnEveryNode, RunOnAnyNode, the
	// primary's name, or "your computer".
	RunOn string
	// Text is what the customer pastes (one line, or a script).
	Text string
	// Note explains the command in a sentence or two, for the page.
	Note string
}

// Commands are the ready-made commands for one cluster shape (N4).
type Commands struct {
	// Torchrun starts PyTorch's launcher on every node with static
	// rendezvous at rank 0.
	Torchrun Command
	// Mpirun starts one process per GPU across the cluster from node-0
	// (Open MPI).
	Mpirun Command
	// DeepSpeed starts DeepSpeed's launcher from node-0.
	DeepSpeed Command
	// NCCLAllReduce measures the interconnect with nccl-tests' all_reduce_perf.
	NCCLAllReduce Command
	// Software holds commands for the installed software (Slurm, Ray,
	// Kubernetes), in display order; none for SoftwareNone.
	Software []Command
}

// All returns every command in display order.
func (cs Commands) All() []Command {
	return append([]Command{cs.Torchrun, cs.Mpirun, cs.DeepSpeed, cs.NCCLAllReduce}, cs.Software...)
}

// Commands returns the ready-made commands for this cluster's exact shape.
// "train.py" stands for the customer's script and its arguments.
//
// The forms chosen:
//
//   - torchrun uses static rendezvous (--master_addr/--master_port, the
//     default rdzv backend) with the literal shape and $NODE_RANK, so the one
//     command runs unchanged on every node. Flags use the underscore
//     spellings, which every torchrun release accepts (recent ones also
//     accept --nproc-per-node etc.).
//   - mpirun (Open MPI) runs on node-0 with one process per GPU: from the
//     hostfile where /shared exists, else from an explicit -H list. Traffic
//     stays on the interconnect (btl_tcp_if_include). --allow-run-as-root is
//     added when the login user is root, as on most containers.
//   - deepspeed runs on node-0 and reaches the other nodes over SSH by name
//     through pdsh, its default launcher, reading the hostfile at
//     HostfilePath (the agent writes a copy into the home folder on
//     containers).
//   - the NCCL test runs all_reduce_perf with one GPU per MPI process
//     (-g 1, N×G processes) from an explicit -H list, so it needs nothing but
//     the nodes themselves. Messages grow from 8 B to 128 MB on Ethernet
//     (about 1–2 Gbit/s: 8 GB messages would take over an hour) and to 8 GB
//     on InfiniBand and RoCE.
func (c Cluster) Commands() Commands {
	n, g := len(c.Nodes), c.GPUsPerNode
	np := strconv.Itoa(c.WorldSize())
	primary := c.Primary()
	primaryName := primary.Name
	if primaryName == "" {
		primaryName = RunOnPrimary
	}
	iface := c.iface()
	port := strconv.Itoa(c.masterPort())
	root := primary.sshUser() == "root"

	cs := Commands{}

	cs.Torchrun = Command{
		Name:  "torchrun",
		RunOn: RunOnEveryNode,
		Text: fmt.Sprintf("torchrun --nnodes=%d --nproc_per_node=%d --node_rank=$NODE_RANK --master_addr=%s --master_port=%s train.py",
			n, g, primary.PrivateIP, port),
		Note: fmt.Sprintf("Run the same command on every node (%s): each reads its rank from NODE_RANK, and training starts once all of them have joined %s:%s. Replace train.py with your script and its arguments.",
			plural(n, "node"), primary.PrivateIP, port),
	}

	mpi := []string{"mpirun"}
	if root {
		mpi = append(mpi, "--allow-run-as-root")
	}
	mpi = append(mpi, "-np", np)
	if c.HasSharedFolder() {
		mpi = append(mpi, "--hostfile", c.HostfilePath())
	} else {
		mpi = append(mpi, "-H", c.hostList())
	}
	mpi = append(mpi, "-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x", "NCCL_SOCKET_IFNAME", "-x", "PATH",
		"--mca", "btl_tcp_if_include", iface, "python", "train.py")
	cs.Mpirun = Command{
		Name:  "mpirun",
		RunOn: primaryName,
		Text:  strings.Join(mpi, " "),
		Note: fmt.Sprintf("Run on %s: Open MPI starts %s, %d on each node. Each process finds its rank in OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_LOCAL_RANK.",
			primaryName, plural(c.WorldSize(), "process"), g),
	}

	cs.DeepSpeed = Command{
		Name:  "deepspeed",
		RunOn: primaryName,
		Text: fmt.Sprintf("deepspeed --hostfile %s --master_addr %s --master_port %s --num_nodes %d --num_gpus %d train.py",
			c.HostfilePath(), primary.PrivateIP, port, n, g),
		Note: fmt.Sprintf("Run on %s: DeepSpeed reaches the other nodes over SSH by name (it needs pdsh, its default launcher) and starts %s on each.",
			primaryName, plural(g, "process")),
	}

	maxBytes, maxLabel := "128M", "128 MB"
	if c.interconnect() != InterconnectEthernet {
		maxBytes, maxLabel = "8G", "8 GB"
	}
	nccl := []string{"mpirun"}
	if root {
		nccl = append(nccl, "--allow-run-as-root")
	}
	nccl = append(nccl, "-np", np, "-H", c.hostList(),
		"-x", "NCCL_SOCKET_IFNAME="+iface, "-x", "NCCL_DEBUG=WARN",
		"--mca", "btl_tcp_if_include", iface,
		NCCLTestBinary, "-b", "8", "-e", maxBytes, "-f", "2", "-g", "1")
	cs.NCCLAllReduce = Command{
		Name:  "nccl-all-reduce",
		RunOn: primaryName,
		Text:  strings.Join(nccl, " "),
		Note: fmt.Sprintf("Run on %s to measure the interconnect: one process per GPU (%s in all), messages from 8 B to %s. Read the busbw column of the largest size (GB/s; ×8 for Gbit/s): the \"Avg bus bandwidth\" line also averages the tiny, latency-bound sizes.",
			primaryName, np, maxLabel),
	}

	cs.Software = c.softwareCommands(primaryName)
	return cs
}

// softwareCommands returns the commands for the installed software.
func (c Cluster) softwareCommands(primaryName string) []Command {
	n, g := len(c.Nodes), c.GPUsPerNode
	switch c.software() {
	case SoftwareSlurm:
		return []Command{
			{
				Name:  "srun",
				RunOn: RunOnAnyNode,
				Text:  fmt.Sprintf("srun --nodes=%d --ntasks-per-node=1 --gpus-per-node=%d nvidia-smi -L", n, g),
				Note:  "A quick check through Slurm: every node lists its " + itsGPUs(g) + ".",
			},
			{
				Name:  "sbatch",
				RunOn: RunOnAnyNode,
				Text:  c.SbatchScript(),
				Note:  "Save as train.sbatch on any node, submit with `sbatch train.sbatch` and watch it with `squeue`. It runs torchrun once per node of the allocation, with the allocation's first node as the rendezvous.",
			},
		}
	case SoftwareRay:
		return []Command{
			{
				Name:  "ray-status",
				RunOn: primaryName,
				Text:  "ray status",
				Note:  fmt.Sprintf("Lists the Ray nodes and resources: %d nodes and %d GPUs when the whole cluster has joined.", n, c.WorldSize()),
			},
			{
				Name:  "ray-job",
				RunOn: primaryName,
				Text:  "ray job submit --address=http://127.0.0.1:8265 --working-dir . -- python train.py",
				Note:  "Submits your script to the cluster from the head node; inside it, ray.init() joins the running cluster.",
			},
		}
	case SoftwareKubernetes:
		return []Command{{
			Name:  "kubectl",
			RunOn: "your computer",
			Text:  `kubectl --kubeconfig ./kubeconfig get nodes -o 'custom-columns=NAME:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu'`,
			Note:  fmt.Sprintf("With the downloaded kubeconfig: %d nodes, each with %d allocatable nvidia.com/gpu.", n, g),
		}}
	}
	return nil
}

// SbatchScript returns a Slurm batch script that runs torchrun on every node
// of the cluster with c10d rendezvous on the allocation's first node (which
// works for any subset of nodes, unlike MASTER_ADDR).
func (c Cluster) SbatchScript() string {
	return fmt.Sprintf(`#!/bin/bash
#SBATCH --job-name=train
#SBATCH --nodes=%d
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=%d
#SBATCH --output=%%x-%%j.out
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun torchrun --nnodes="$SLURM_NNODES" --nproc_per_node=%d \
  --rdzv_backend=c10d --rdzv_endpoint="$head:%d" --rdzv_id="$SLURM_JOB_ID" \
  train.py
`, len(c.Nodes), c.GPUsPerNode, c.GPUsPerNode, c.masterPort())
}

// plural formats a count with its noun: "1 process", "16 processes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// itsGPUs is "GPU" for one, "8 GPUs" for eight (after "lists its").
func itsGPUs(g int) string {
	if g == 1 {
		return "GPU"
	}
	return strconv.Itoa(g) + " GPUs"
}
