package views

import "github.com/clusterdeck/clusterdeck/models"

// ClustersPage is /clusters.
type ClustersPage struct {
	Meta        Meta
	Rows        []ClusterRow
	AnyStarting bool // poll the rows while a cluster is starting
	HasSSHKeys  bool
}

// ClusterRow is one cluster in the list.
type ClusterRow struct {
	ID       string
	Name     string
	Status   string
	Shape    string
	Location string
	Age      string
	Price    string
	Starting bool
}

// ClusterPage is /clusters/{id}.
type ClusterPage struct {
	Meta         Meta
	C            ClusterView
	Nodes        []NodeView
	Events       []EventView
	Live         bool // poll for changes while the cluster is not terminal
	CanTerminate bool
	CanRetry     bool // retry install (degraded by software)
	Alternatives []OfferAlternative
	Connect      *ConnectView // once the cluster is ready
	LogRanks     []int
	Recovery     *RecoveryView // health and recovery (R3–R5); nil once ended
	NCCL         *NCCLView     // the automatic NCCL check, once planned (X4)
	Ended        *EndedView    // once terminated or failed (B1)
	Storage      *StorageView  // V4: what is mounted where; nil when nothing is
}

// StorageView is the cluster's shared folder and volume (V1, V4).
type StorageView struct {
	VolumeID, VolumeName, VolumeNote string
	Mounts                           []MountView
}

// MountView is one folder and the nodes that have it.
type MountView struct {
	Path, Nodes, What string
}

// EndedView is what an ended cluster cost and when it ended.
type EndedView struct {
	At, RanFor, TotalCost string
}

// NCCLView is the NCCL check beside what the interconnect advertises.
type NCCLView struct {
	State      string // pending, sent, measured, failed
	Measured   string // "338.8 GB/s bus bandwidth"
	Expected   string // "375.0 GB/s expected from InfiniBand at 3.2 Tbit/s per node"
	Percent    string // "90 %"
	Warning    string
	Message    string // why there is no measurement
	MeasuredAt string
}

// ClusterView is the cluster's header.
type ClusterView struct {
	ID           string
	Name         string
	Status       string
	Shape        string
	Location     string
	Interconnect string
	Kind         string
	Price        string // whole cluster per hour, locked
	MachinePrice string
	ReadyAt      string
	LastError    string
	Software     string
	Created      string
	Terminating  bool
	Kubeconfig   bool // node-0 reported its kubeconfig: offer the download
	// KubeconfigPending: a Kubernetes cluster whose node-0 has not reported
	// its kubeconfig yet; the page says it is not available yet.
	KubeconfigPending bool
}

// NodeView is one node with its provisioning timeline (X3, L11).
type NodeView struct {
	Name    string
	Rank    int
	Status  string
	Address string
	GPUs    string // what nvidia-smi showed at check-in
	Steps   []StepView
	Message string
	Start   *StartView // the start command in this boot (N3); nil when the cluster has none
}

// StartView is a node's start command state.
type StartView struct {
	State string // waiting, running, exited, failed
	Label string
}

// StepView is one step of a node's timeline against its deadline.
type StepView struct {
	Label    string
	State    string // done, active, waiting, failed
	At       string // when it finished
	Deadline string // when it must finish
	Left     string // time left before the deadline, while active
}

// EventView is one entry of the cluster's history.
type EventView struct {
	At      string
	Kind    string
	Status  string
	Node    string
	Step    string
	Message string
}

// OfferAlternative is an offer that can start now for a failed cluster's shape.
type OfferAlternative struct {
	Label     string
	Price     string
	LaunchURL string
}

// ConnectView is how to get in (N4, N5); filled by the software/connections work.
type ConnectView struct {
	PrimarySSH string
	Nodes      []ConnectNode
	EnvBlock   string
	EnvMasked  string // EnvBlock with the customer's values masked; "" when they gave none
	Hostfile   string
	Commands   []CommandView
	Readiness  string
	Malloc     string
	StartCmd   string     // the start command every node runs once per boot (N3)
	Ports      []PortView // the workload's ports
}

// PortView is one of the workload's ports: where it is open and how to reach it.
type PortView struct {
	Port      string
	Published bool
	Addresses []string
	Tunnel    string
	Note      string
}

// ConnectNode is one node's SSH command and interconnect address.
type ConnectNode struct {
	Name, Address, SSH string
}

// CommandView is a ready-made command with a copy button.
type CommandView struct {
	ID, Title, RunOn, Text, Note string
}

func statusClass(s string) string {
	switch s {
	case string(models.StatusProvisioning):
		return "inline-flex items-center gap-1.5 rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	case string(models.StatusInstalling):
		return "inline-flex items-center gap-1.5 rounded-full bg-indigo-50 px-2 py-0.5 text-xs font-medium text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case string(models.StatusReady), "running":
		return "inline-flex items-center gap-1.5 rounded-full bg-green-50 px-2 py-0.5 text-xs font-medium text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case string(models.StatusDegraded):
		return "inline-flex items-center gap-1.5 rounded-full bg-amber-50 px-2 py-0.5 text-xs font-medium text-amber-900 ring-1 ring-amber-200 dark:bg-amber-950 dark:text-amber-200 dark:ring-amber-800"
	case string(models.StatusFailed):
		return "inline-flex items-center gap-1.5 rounded-full bg-red-50 px-2 py-0.5 text-xs font-medium text-red-800 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-800"
	case string(models.CapacityNew): // quote requests (RQ2)
		return "inline-flex items-center gap-1.5 rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	case string(models.CapacityContacted):
		return "inline-flex items-center gap-1.5 rounded-full bg-indigo-50 px-2 py-0.5 text-xs font-medium text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case string(models.CapacityQuoted):
		return "inline-flex items-center gap-1.5 rounded-full bg-violet-50 px-2 py-0.5 text-xs font-medium text-violet-800 ring-1 ring-violet-200 dark:bg-violet-950 dark:text-violet-200 dark:ring-violet-800"
	case string(models.CapacityWon):
		return "inline-flex items-center gap-1.5 rounded-full bg-green-50 px-2 py-0.5 text-xs font-medium text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case string(models.StatusTerminated):
		return "inline-flex items-center gap-1.5 rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-500 line-through ring-1 ring-slate-200 dark:bg-slate-800 dark:text-slate-400 dark:ring-slate-700"
	default: // models.StatusStopped
		return "inline-flex items-center gap-1.5 rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-700 ring-1 ring-slate-200 dark:bg-slate-800 dark:text-slate-300 dark:ring-slate-700"
	}
}

func dotClass(s string) string {
	switch s {
	case string(models.StatusProvisioning):
		return "h-1.5 w-1.5 rounded-full bg-sky-500 animate-pulse"
	case string(models.StatusInstalling):
		return "h-1.5 w-1.5 rounded-full bg-indigo-500 animate-pulse"
	case string(models.StatusReady), "running":
		return "h-1.5 w-1.5 rounded-full bg-green-500"
	case string(models.StatusDegraded):
		return "h-1.5 w-1.5 rounded-full bg-amber-500"
	case string(models.StatusFailed):
		return "h-1.5 w-1.5 rounded-full bg-red-500"
	case string(models.CapacityNew):
		return "h-1.5 w-1.5 rounded-full bg-sky-500"
	case string(models.CapacityContacted):
		return "h-1.5 w-1.5 rounded-full bg-indigo-500"
	case string(models.CapacityQuoted):
		return "h-1.5 w-1.5 rounded-full bg-violet-500"
	case string(models.CapacityWon):
		return "h-1.5 w-1.5 rounded-full bg-green-500"
	}
	return "h-1.5 w-1.5 rounded-full bg-slate-400"
}

// startClass colours a node's start command state.
func startClass(state string) string {
	switch state {
	case "running":
		return "text-green-800 dark:text-green-200"
	case "failed":
		return "text-red-800 dark:text-red-200"
	}
	return "text-slate-500"
}

func stepClass(state string) string {
	switch state {
	case "done":
		return "rounded px-1.5 py-0.5 text-xs bg-green-50 text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-900"
	case "active":
		return "rounded px-1.5 py-0.5 text-xs bg-sky-50 text-sky-800 ring-1 ring-sky-300 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	case "failed":
		return "rounded px-1.5 py-0.5 text-xs bg-red-50 text-red-800 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-900"
	}
	return "rounded px-1.5 py-0.5 text-xs text-slate-400 ring-1 ring-slate-200 dark:ring-slate-700"
}

// LaunchPage is /clusters/new: the locked price, then the workload (X1, X12).
type LaunchPage struct {
	Meta             Meta
	Quote            QuoteView
	Form             LaunchForm
	Problems         map[string]string
	SSHKeys          []SSHKeyOption
	Balance          string
	BalanceAfterHour string
	Committed        string             // one hour of the organisation's live clusters, "" when none (L2)
	Shortfall        string             // L2's refusal with how much to add, "" when the balance covers the launch
	TopUpURL         string             // where to add funds, with Shortfall
	Alternatives     []OfferAlternative // what can start now when the offer ran out (issue 11)
	OffersURL        string             // the offers page for this shape, with Alternatives
	Already          *ClusterRow
	Software         []SoftwareOption
	Storage          LaunchStorage // V1, V2, V5
}

// LaunchStorage is the launch page's persistent volume: what the quote
// holds, and a form to price the offer with another choice.
type LaunchStorage struct {
	Current   string
	Community bool // V5: no volume; Reason says why
	Private   bool // a private offer's price is fixed: no choice here
	Reason    string
	Location  string
	OfferID   string
	Nodes     int
	VolumeID  string // mounted
	NewGB     string // created with the cluster
	Rate      string
	Volumes   []VolumeOption // detached volumes of the environment in this location
}

// VolumeOption is one volume the launch can mount.
type VolumeOption struct{ ID, Label string }

// QuoteView shows a locked price and its breakdown.
type QuoteView struct {
	ID           string
	Shape        string
	Location     string
	Interconnect string
	Kind         string
	Price        string
	MachinePrice string
	ExpiresAt    string
	Lines        []LineView
	Community    bool
}

// LineView is one line item of a quote.
type LineView struct {
	Name, Quantity, Price string
}

// LaunchForm is the workload form as typed.
type LaunchForm struct {
	QuoteID      string
	FormToken    string
	Name         string
	Software     string
	Image        string
	StartCommand string
	Env          string // KEY=VALUE lines
	Ports        string // comma-separated
	SSHKeyIDs    []string
}

// SSHKeyOption is one of the user's keys to install on every node.
type SSHKeyOption struct {
	ID, Name, Fingerprint string
	Checked               bool
}

// SoftwareOption is one choice of cluster software (S1).
type SoftwareOption struct {
	Value, Label, Help string
	Checked            bool
}
