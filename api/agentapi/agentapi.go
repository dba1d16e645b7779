// Package agentapi holds the wire types of the cluster agent's protocol
// (/v1/agent/…), used by the server (web) and by the agent
// (providers/agent) alike. Each node authenticates with its own token
// (Authorization: Bearer cdn_…); a machine placed with the cluster's
// bootstrap token (cdb_…) first claims its rank (ClaimRequest) to get it.
// It imports nothing of ours.
package agentapi

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// The agent binary a server hands to its machines (OP1): GET
// /agent/<version>/clusterdeck-linux-amd64 is the binary, GET
// /agent/<version>/SHA256SUMS its checksum in sha256sum's format; the
// version is the first 12 hex digits of the binary's SHA-256, and any other
// version answers 404.
const (
	BinaryFile = "clusterdeck-linux-amd64"
	SumsFile   = "SHA256SUMS"
)

// BinaryURL is where a server at base serves the binary of version.
func BinaryURL(base, version string) string {
	return strings.TrimRight(base, "/") + "/agent/" + version + "/" + BinaryFile
}

// BootstrapTokenPrefix starts a cluster's bootstrap token; node tokens
// start with "cdn_".
const BootstrapTokenPrefix = "cdb_"

// ClaimRequest is POST /v1/agent/claim with the cluster's bootstrap token
// (Authorization: Bearer cdb_…): the machine says who it is, and the
// server matches it against the placement's machines.
type ClaimRequest struct {
	// MachineID is the provider's id of this machine (instance id), when
	// the machine knows it; else the server matches Hostname against the
	// machine ids and PrivateIP against the addresses the provider reported.
	MachineID string `json:"machineId,omitempty"`
	Hostname  string `json:"hostname"`
	PrivateIP string `json:"privateIp,omitempty"`
}

// ClaimResponse is the claimed rank and the node token the agent uses for
// every other endpoint from then on.
type ClaimResponse struct {
	Token   string `json:"token"` // cdn_…
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	Rank    int    `json:"rank"`
}

// CheckinRequest is POST /v1/agent/checkin.
type CheckinRequest struct {
	Hostname  string `json:"hostname"`
	PrivateIP string `json:"privateIp"`
	Version   string `json:"version"`
	// NvidiaSMI is what `nvidia-smi --query-gpu=index,name,memory.total,
	// driver_version --format=csv` printed, with its error when it failed
	// (L4): the server checks the node's GPUs against the offer. Absent, no
	// GPU check is made.
	NvidiaSMI *string `json:"nvidiaSmi,omitempty"`
	// MeshPort is the TCP port this agent listens on at PrivateIP for its
	// peers' reach check (step c); 0 = the agent listens on none and its
	// peers dial the machine's SSH port (22). Agents sharing one address
	// (one host) are told apart by it.
	MeshPort int `json:"meshPort,omitempty"`
}

// Peer is another node of the cluster.
type Peer struct {
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
	Address string `json:"address"`
	// Port is where the peer's agent listens for the reach check; 0 = dial
	// the peer's SSH port (22). The reach check dials Address:Port and
	// reports that endpoint (host:port) as reached or unreachable.
	Port int `json:"port,omitempty"`
}

// Endpoint is what the reach check dials and reports for a peer: its
// address, with its agent's port when it has one.
func (p Peer) Endpoint() string {
	if p.Port == 0 || p.Address == "" {
		return p.Address
	}
	return net.JoinHostPort(p.Address, strconv.Itoa(p.Port))
}

// CheckinResponse tells the node who it is and who its peers are.
type CheckinResponse struct {
	Cluster          string `json:"cluster"`
	Node             string `json:"node"`
	Rank             int    `json:"rank"`
	Peers            []Peer `json:"peers"`
	HeartbeatSeconds int    `json:"heartbeatSeconds"`
}

// Unreachable is a peer this node could not reach, and why.
type Unreachable struct {
	Address string `json:"address"`
	Error   string `json:"error"`
}

// PeersRequest is POST /v1/agent/peers: step (c).
type PeersRequest struct {
	Reached     []string      `json:"reached"`
	Unreachable []Unreachable `json:"unreachable"`
}

// PeersResponse says whether this node's mesh step is complete.
type PeersResponse struct {
	MeshComplete bool `json:"meshComplete"`
	// Peers, while the mesh is not complete, is every node with its
	// address as known now: a peer's address may have arrived with its own
	// agent's report after this node checked in (OP1).
	Peers []Peer `json:"peers,omitempty"`
}

// Task kinds.
const (
	TaskInstall = "install" // install the node's role of the cluster's software (S1)
	TaskCheck   = "check"   // run the software's own check (S2)
	TaskNCCL    = "nccl"    // node-0 of a ready cluster: the NCCL all-reduce check (X4)
	TaskVerify  = "verify"  // a verification check before hand-over; Software names it: machine, ring or pair (X13)
)

// NCCLSoftware is the Software of a TaskNCCL task: the agent runs it as the
// step "nccl:nccl-tests".
const NCCLSoftware = "nccl-tests"

// Task is work for one node: a software task (S1, S2) — install the node's
// role of the cluster's software, or run the software's own check — or, on
// node-0 of a ready cluster, the NCCL check (X4). The agent writes Files,
// exports Env, runs Script as the step Kind+":"+Software and posts a
// TaskResult to /v1/agent/tasks/{id}.
type Task struct {
	ID       string            `json:"id"`
	Kind     string            `json:"kind"` // TaskInstall, TaskCheck, TaskNCCL or TaskVerify
	Software string            `json:"software"`
	Role     string            `json:"role"`
	Files    map[string]string `json:"files,omitempty"` // path → content to write first
	Env      map[string]string `json:"env,omitempty"`
	Script   string            `json:"script"`
}

// HeartbeatRequest is POST /v1/agent/heartbeat: liveness, the state of the
// start command once the agent started it in this boot (N3), and the state
// of its mounts step once it began (V4).
type HeartbeatRequest struct {
	Start  *StartState  `json:"start,omitempty"`
	Mounts *MountsState `json:"mounts,omitempty"`
	// GPU is the machine's GPU samples and new XID lines since the last
	// heartbeat the server took (X15); nil when there are none.
	GPU *GPUReport `json:"gpu,omitempty"`
}

// GPUReport is what the agent saw of its GPUs: a sample of every GPU every
// 30 s (nvidia-smi --query-gpu), the kernel log's new XID lines, and, once,
// why it cannot sample (no nvidia-smi). The server refuses a report with
// more than 512 samples or 64 XID lines, or with values no GPU reports,
// and then keeps nothing of the heartbeat (400 bad_request).
type GPUReport struct {
	Samples []GPUSample `json:"samples,omitempty"`
	XIDs    []XIDLine   `json:"xids,omitempty"`
	NoSMI   string      `json:"noNvidiaSmi,omitempty"`
}

// GPUSample is one GPU's reading. A nil value is unknown: nvidia-smi
// printed "[N/A]" or "[Not Supported]".
type GPUSample struct {
	At             time.Time `json:"at"`
	Index          int       `json:"index"`
	UUID           string    `json:"uuid"`
	UtilPct        *int      `json:"utilizationPct"`
	MemUsedMiB     *int      `json:"memoryUsedMiB"`
	MemTotalMiB    *int      `json:"memoryTotalMiB"`
	TempC          *int      `json:"temperatureC"`
	PowerW         *int      `json:"powerW"`
	SMClockMHz     *int      `json:"smClockMHz"`
	ECCUncorrected *int64    `json:"eccUncorrectedVolatile"`
	Throttle       *int64    `json:"throttleReasons"` // clocks_throttle_reasons.active bitmask
}

// XIDLine is one kernel log line of an NVIDIA XID.
type XIDLine struct {
	At   time.Time `json:"at"` // when the agent read it
	Code int       `json:"code"`
	Text string    `json:"text"`
}

// Mounts step states (V4).
const (
	MountsMounting = "mounting" // the step runs (a worker waits for node-0's export)
	MountsMounted  = "mounted"  // the step ended well
	MountsFailed   = "failed"   // the step failed or was cancelled; Error says why
)

// MountsState is how the mounts step this boot's agent began is doing. The
// agent runs it beside its loop, so it keeps heartbeating (and sees its
// cluster end) while a worker waits for node-0's export; the start command
// starts only once it ended.
type MountsState struct {
	State     string     `json:"state"` // MountsMounting, MountsMounted or MountsFailed
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// Start command states.
const (
	StartRunning = "running" // started and not ended
	StartExited  = "exited"  // ended by itself, with ExitCode
	StartFailed  = "failed"  // could not start, or was killed (ExitCode -1)
	StartNone    = "none"    // the machine has no start command; the ports are open
)

// StartState is how the start command this boot's agent started is doing.
type StartState struct {
	State     string     `json:"state"` // StartRunning, StartExited, StartFailed or StartNone
	StartedAt time.Time  `json:"startedAt"`
	ExitCode  *int       `json:"exitCode,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	Error     string     `json:"error,omitempty"`
	// Generation is the run's start generation this command is (X17); 0
	// for the first start and for clusters without a run.
	Generation int `json:"generation,omitempty"`
}

// StartOrder tells the agent the cluster is ready (every machine joined and
// the software passed its check, L5): add the workload's SSH keys for User,
// open the workload's ports to the peers (and to everyone when Publish) and
// start the start command the machine got at placement, once per boot, as
// User in Env. The server sends it while the agent reports no StartState.
type StartOrder struct {
	User    string            `json:"user"`    // the node's SSH user
	Env     map[string]string `json:"env"`     // the node env: N2's variables and the user's
	Publish bool              `json:"publish"` // the machine kind publishes the ports
	// Mounts is V4's folders for this node; nil when it gets none (a
	// container without a volume).
	Mounts *Mounts `json:"mounts,omitempty"`
	// A run's orders (X17). Generation past the agent's: stop the running
	// command (SIGUSR1, then SIGTERM after the grace) and start Script,
	// the resume command, in Env. Stop: stop the command of Generation and
	// start nothing (a machine is being replaced).
	Generation int    `json:"generation,omitempty"`
	Script     string `json:"script,omitempty"`
	Stop       bool   `json:"stop,omitempty"`
	// Warn: a planned stop comes in at least two minutes; send the
	// command of Generation SIGUSR1 now so it checkpoints (X17).
	Warn bool `json:"warn,omitempty"`
}

// Mounts is what the agent mounts before the workload starts (V4): it runs
// the step beside its loop, reports a MountsState with each heartbeat, and
// carries out the rest of the start order once the step ended.
type Mounts struct {
	// Shared: node-0 exports /shared over the private network (NFS) to
	// Clients and every other node mounts it from Head (vm, bare_metal).
	Shared   bool     `json:"shared"`
	Head     string   `json:"head"`     // node-0's private address
	Clients  []string `json:"clients"`  // the other nodes' private addresses
	Hostfile string   `json:"hostfile"` // written to /shared/hostfile by node-0
	// Volume is the cluster's persistent volume: on node-0, synced into
	// Path (/shared/volume) and back; on a container mounted at Path
	// (/volume) on node-0 only.
	Volume *VolumeMount `json:"volume,omitempty"`
}

// VolumeMount is the cluster's volume as the agent mounts it.
type VolumeMount struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	SizeGB int    `json:"sizeGb"`
	Path   string `json:"path"`
}

// HeartbeatResponse is POST /v1/agent/heartbeat's answer: the node's next
// task, or null, and the start order once the cluster is ready.
type HeartbeatResponse struct {
	Task  *Task       `json:"task"`
	Start *StartOrder `json:"start,omitempty"`
}

// TaskResult is POST /v1/agent/tasks/{id}: the task's raw output.
type TaskResult struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
}

// TaskStatus is the answer to a TaskResult: the task's recorded status.
type TaskStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// LogLine is one line of the node's log.
type LogLine struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// LogsRequest is POST /v1/agent/logs (at most 500 lines).
type LogsRequest struct {
	Lines []LogLine `json:"lines"`
}
