package views

import (
	"context"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// ClustersPage is /clusters.
type ClustersPage struct {
	Meta        Meta
	Rows        []ClusterRow
	AnyUnderWay bool // poll the rows while anything is under way on a cluster (Cluster.UnderWay)
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
	Price    string // "$67.20/h" while it can bill, "$0.00 in all" once ended (B1)
	PriceOf  string // what Price is: "Price / hour" or "Cost"
	UnderWay bool
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
	CanResume    bool // resume a stopped cluster (B6)
	Alternatives []OfferAlternative
	Connect      *ConnectView // once the cluster is ready
	LogRanks     []int
	Recovery     *RecoveryView     // health and recovery (R3–R5); nil once ended
	NCCL         *NCCLView         // the automatic NCCL check, once planned (X4)
	Verification *VerificationView // the hand-over report, once verification started (X13)
	Ended        *EndedView        // once terminated or failed (B1)
	Storage      *StorageView      // V4: what is mounted where; nil when nothing is
	Tab          string            // the section shown: overview, connect, logs or events
	Tabs         []TabView
	Problem      *ProblemView  // lastError as a sentence (L4, L6, R2, R5)
	Progress     *ProgressView // while the cluster starts (L11)
	HeaderSSH    string        // node-0's SSH command, once it can be reached (N5)
	LogLines     []LogLineView // an ended cluster's last lines, shown instead of a stream (N6)
	LogRank      int           // the node whose log the logs section shows
	RecentEvents []EventView   // the overview's last few events
	// Join is one more machine for a ready cluster (L10) or in a down
	// machine's place (X5); nil once ended.
	Join *JoinView
	// ResumeBlocked says why Resume is off while the environment's budget
	// is reached (B5, A4), with the way forward; nil: it is on.
	ResumeBlocked *Flash
	// Stop is the customer's Stop (B6): nil when it does not apply (not
	// ready or degraded, or something under way).
	Stop *StopView
	// GPU is what the GPUs are doing, per machine and for the cluster
	// (X15, gpu.go); nil before the cluster is up.
	GPU *GPUView
	// Watch is the stall alert and the idle rule (X15); nil once ended.
	Watch *WatchView
}

// StopView is Stop on the cluster page: the confirm's question and what
// it says keeps billing, or why the provider cannot stop (Refused).
type StopView struct {
	Title, Detail string
	Refused       string // "Stop is off: Lambda cannot stop …"; "" = Stop is on
}

// JoinView offers "Add worker" and "Replace" with the machine-hour price
// shown before the customer confirms.
type JoinView struct {
	MachineHour string // "$19.97/h"
	CanAdd      bool   // a ready cluster with no machine joining
	NextNode    string // "node-2"
	Joining     string // the node joining now, "" = none
}

// TerminateDetail is the terminate dialog's detail: what goes (the
// machines and their disks) and what stays (an attached volume, billed until
// it is deleted): V1.
func (p ClusterPage) TerminateDetail() string {
	s := "Every machine is released together and its disks are deleted; billing stops for the machines."
	if p.Storage != nil && p.Storage.VolumeName != "" {
		s += " The volume " + p.Storage.VolumeName + " is kept and stays billed for its storage until you delete it on the Volumes page."
	}
	return s + " A terminated cluster cannot be started again."
}

// StorageView is the cluster's shared folder and volume (V1, V4).
type StorageView struct {
	VolumeID, VolumeName, VolumeNote string
	Mounts                           []MountView
	Nodes                            []MountStateView // each node's mounts step in its boot, once the cluster is ready
}

// MountStateView is how one node's mounts step is doing (V4).
type MountStateView struct {
	Node  string
	State string // waiting, mounting, mounted, failed
	Label string
}

// MountView is one folder and the nodes that have it.
type MountView struct {
	Path, Nodes, What string
}

// Cluster page sections (tabs).
const (
	TabOverview = "overview"
	TabConnect  = "connect"
	TabLogs     = "logs"
	TabEvents   = "events"
)

// ClusterTabs lists the cluster page's sections in order.
var ClusterTabs = []string{TabOverview, TabConnect, TabLogs, TabEvents}

// TabView is one section link of the cluster page.
type TabView struct {
	ID, Label, Href string
	Current         bool
}

// ProblemView is a cluster's lastError for people: what happened, what it
// means for billing and what to do; the code in small print.
type ProblemView struct {
	Tone     string // failed or degraded
	Sentence string
	Advice   string
	Code     string
}

// ProgressView is a starting cluster's progress line: "Booting · 1 of 2
// machines booted · usually about 12 min for bare metal · 3:10 elapsed",
// with GivesUp ("gives up at 04:20") as secondary text.
type ProgressView struct {
	Phase, Count, Usual, Elapsed, GivesUp string
}

// LogNodeLabel is a node as the log's picker names it: its name and what
// it is doing ("node-1 · ready"), never an internal id.
func (p ClusterPage) LogNodeLabel(rank int) string {
	for _, n := range p.Nodes {
		if n.Rank == rank {
			if n.Status == "" {
				return n.Name
			}
			return n.Name + " · " + n.Status
		}
	}
	return "node-" + strconv.Itoa(rank)
}

// LogLineView is one stored log line.
type LogLineView struct {
	At, Text string
}

// EndedView is what an ended cluster cost and when it ended.
type EndedView struct {
	At, RanFor, TotalCost string
	Ran                   string // how long it ran, from launch to the end: "1 h 30 min"
	// ReserveAgain opens the booking form with this cluster's offer and
	// size (X18: reserve the same shape again).
	ReserveAgain string
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
// Badge is the word the status badge shows: "terminating" once a terminate
// is under way (L7), whatever state the machines are still in.
func (v ClusterView) Badge() string {
	if v.Terminating {
		return TerminatingBadge
	}
	return v.Status
}

// TerminatingBadge is the badge of a cluster being terminated.
const TerminatingBadge = "terminating"

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
	BillingLabel string // the label of ReadyAt ("" is "Billing since")
	LastError    string
	Software     string
	Created      string
	Terminating  bool
	Stop         string // the stop or resume under way, or the stop in force (B6); "" = none
	Kubeconfig   bool   // node-0 reported its kubeconfig: offer the download
	// KubeconfigPending: a Kubernetes cluster whose node-0 has not reported
	// its kubeconfig yet; the page says it is not available yet.
	KubeconfigPending bool
}

// NodeView is one node with its provisioning timeline (X3, L11).
type NodeView struct {
	Name    string
	Rank    int
	Status  string // derived from the cluster's status and the node's step (domain.ShownNodeStatus)
	Detail  string // what it is doing while the cluster starts, or why it failed
	Address string
	GPUs    string // what nvidia-smi showed at check-in
	Steps   []StepView
	Message string
	Start   *StartView // the start command in this boot (N3); nil when the cluster has none
	// CanReplace: the machine is down and nothing else joins (X5).
	CanReplace bool
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
	Deadline string // when it must finish: "gives up at 12:04", while active
}

// EventView is one entry of the cluster's history.
type EventView struct {
	At      string // "3 Dec 14:05:09": events span days
	When    string // RFC 3339, for the time element
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
	EnvMasked  string    // EnvBlock with the customer's values masked; "" when they gave none
	Env        []EnvView // every variable with where it comes from
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

// EnvView is one environment variable as the connect section lists it.
type EnvView struct {
	Name, Value string
	Scope       string // "every node", "per node" or "yours"
	Masked      bool   // the customer's value: hidden until revealed
	Note        string
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
	case string(domain.StatusProvisioning):
		return "inline-flex items-center gap-1.5 rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	case string(domain.StatusInstalling), string(domain.StatusVerifying):
		return "inline-flex items-center gap-1.5 rounded-full bg-indigo-50 px-2 py-0.5 text-xs font-medium text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case string(domain.StatusReady), "running":
		return "inline-flex items-center gap-1.5 rounded-full bg-green-50 px-2 py-0.5 text-xs font-medium text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case string(domain.StatusDegraded):
		return "inline-flex items-center gap-1.5 rounded-full bg-amber-50 px-2 py-0.5 text-xs font-medium text-amber-900 ring-1 ring-amber-200 dark:bg-amber-950 dark:text-amber-200 dark:ring-amber-800"
	case string(domain.StatusFailed):
		return "inline-flex items-center gap-1.5 rounded-full bg-red-50 px-2 py-0.5 text-xs font-medium text-red-800 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-800"
	case string(domain.CapacityNew): // quote requests (RQ2)
		return "inline-flex items-center gap-1.5 rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	case string(domain.CapacityContacted):
		return "inline-flex items-center gap-1.5 rounded-full bg-indigo-50 px-2 py-0.5 text-xs font-medium text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case string(domain.CapacityQuoted):
		return "inline-flex items-center gap-1.5 rounded-full bg-violet-50 px-2 py-0.5 text-xs font-medium text-violet-800 ring-1 ring-violet-200 dark:bg-violet-950 dark:text-violet-200 dark:ring-violet-800"
	case string(domain.CapacityWon):
		return "inline-flex items-center gap-1.5 rounded-full bg-green-50 px-2 py-0.5 text-xs font-medium text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case TerminatingBadge:
		return "inline-flex items-center gap-1.5 rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-700 ring-1 ring-slate-300 dark:bg-slate-800 dark:text-slate-300 dark:ring-slate-600"
	case string(domain.StatusTerminated):
		return "inline-flex items-center gap-1.5 rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-500 line-through ring-1 ring-slate-200 dark:bg-slate-800 dark:text-slate-400 dark:ring-slate-700"
	default: // domain.StatusStopped
		return "inline-flex items-center gap-1.5 rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-700 ring-1 ring-slate-200 dark:bg-slate-800 dark:text-slate-300 dark:ring-slate-700"
	}
}

func dotClass(s string) string {
	switch s {
	case string(domain.StatusProvisioning):
		return "h-1.5 w-1.5 rounded-full bg-sky-500 animate-pulse"
	case string(domain.StatusInstalling), string(domain.StatusVerifying):
		return "h-1.5 w-1.5 rounded-full bg-indigo-500 animate-pulse"
	case string(domain.StatusReady), "running":
		return "h-1.5 w-1.5 rounded-full bg-green-500"
	case string(domain.StatusDegraded):
		return "h-1.5 w-1.5 rounded-full bg-amber-500"
	case string(domain.StatusFailed):
		return "h-1.5 w-1.5 rounded-full bg-red-500"
	case string(domain.CapacityNew):
		return "h-1.5 w-1.5 rounded-full bg-sky-500"
	case string(domain.CapacityContacted):
		return "h-1.5 w-1.5 rounded-full bg-indigo-500"
	case string(domain.CapacityQuoted):
		return "h-1.5 w-1.5 rounded-full bg-violet-500"
	case string(domain.CapacityWon):
		return "h-1.5 w-1.5 rounded-full bg-green-500"
	case TerminatingBadge:
		return "h-1.5 w-1.5 rounded-full bg-slate-500 animate-pulse"
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

func mountStateClass(state string) string {
	switch state {
	case "mounted":
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
	Alternatives     []OfferAlternative // what can start now when the offer ran out (L2)
	OffersURL        string             // the offers page for this shape, with Alternatives
	Already          *ClusterRow
	Software         []SoftwareOption
	Storage          LaunchStorage // V1, V2, V5
	VerifyBilling    string        // what verification and its swaps cost: nothing (X13)
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
	Problem   string // the volume asked for cannot be priced: why (shown beside the size)
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
	// The countdown: when the lock ends and the server's now, both RFC 3339
	// (the browser's clock only measures time since the page came), whether
	// it already lapsed, and the page that locks a fresh price.
	ExpiresISO, NowISO string
	Lapsed             bool
	RequoteURL         string
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
	IdleAction   string // X15: "" = no idle rule
	IdleHours    string
	Verify       bool // verification before hand-over (X13)
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

// proseSpan is a run of prose or of inline code.
type proseSpan struct {
	Text string
	Code bool
}

// proseSpans splits text written with `backticks` into prose and code, so
// the page shows code as code instead of literal backticks. An unpaired
// backtick stays as it is.
func proseSpans(text string) []proseSpan {
	var out []proseSpan
	for {
		open := strings.IndexByte(text, '`')
		if open < 0 {
			break
		}
		closing := strings.IndexByte(text[open+1:], '`')
		if closing < 0 {
			break
		}
		if open > 0 {
			out = append(out, proseSpan{Text: text[:open]})
		}
		out = append(out, proseSpan{Text: text[open+1 : open+1+closing], Code: true})
		text = text[open+1+closing+1:]
	}
	if text != "" {
		out = append(out, proseSpan{Text: text})
	}
	return out
}

// proseCodeClass styles inline code in prose.
const proseCodeClass = "rounded bg-slate-100 px-1 font-mono text-[0.85em] text-slate-800 dark:bg-slate-800 dark:text-slate-100"

// Prose shows text written with `backticks` with the code as <code>, and
// nothing added between the runs (a space before a comma would show).
func Prose(text string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		for _, s := range proseSpans(text) {
			if s.Code {
				b.WriteString(`<code class="` + proseCodeClass + `">` + html.EscapeString(s.Text) + `</code>`)
			} else {
				b.WriteString(html.EscapeString(s.Text))
			}
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

func tabClass(current bool) string {
	if current {
		return "-mb-px shrink-0 border-b-2 border-indigo-600 px-3 py-2 text-sm font-medium text-indigo-700 dark:border-indigo-400 dark:text-indigo-300"
	}
	return "-mb-px shrink-0 border-b-2 border-transparent px-3 py-2 text-sm text-slate-600 hover:border-slate-300 hover:text-slate-900 dark:text-slate-400 dark:hover:text-slate-100"
}

// problemClass colours the error banner: red for a failed cluster, amber
// for a degraded one.
func problemClass(tone string) string {
	if tone == string(domain.StatusFailed) {
		return "mb-4 rounded-md bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-100 dark:ring-red-900"
	}
	return "mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200 dark:bg-amber-950 dark:text-amber-100 dark:ring-amber-900"
}

// nodeStatusClass colours a node's status like its cluster's (one
// vocabulary, UI.md): the words a cluster also has take its colours.
func nodeStatusClass(s string) string {
	switch s {
	case string(domain.NodeDown), string(domain.NodeDegraded):
		return statusClass(string(domain.StatusDegraded))
	case string(domain.NodeRestarting):
		return statusClass(string(domain.StatusProvisioning))
	case string(domain.NodeLost):
		return statusClass(string(domain.StatusFailed))
	case string(domain.NodeReleased), string(domain.NodeTerminating):
		return statusClass(string(domain.StatusStopped))
	}
	return statusClass(s)
}

func nodeDotClass(s string) string {
	switch s {
	case string(domain.NodeDown), string(domain.NodeDegraded):
		return dotClass(string(domain.StatusDegraded))
	case string(domain.NodeRestarting):
		return dotClass(string(domain.StatusProvisioning))
	case string(domain.NodeLost):
		return dotClass(string(domain.StatusFailed))
	}
	return dotClass(s)
}

// TabHref is the address of one section of the cluster page.
func TabHref(id, tab string) string {
	if tab == "" || tab == TabOverview {
		return "/clusters/" + id
	}
	return "/clusters/" + id + "?tab=" + tab
}

// connectUnavailable says why there is nothing to connect to yet, or any more.
func connectUnavailable(p ClusterPage) string {
	st := domain.ClusterStatus(p.C.Status)
	switch {
	case p.C.Terminating || st.Terminal() && !st.Failed():
		return "The cluster is terminated or terminating: its machines are released, so there is nothing to connect to."
	case st.Failed():
		return "The cluster failed to start and its machines were released, so there is nothing to connect to."
	}
	return "SSH commands, the environment and launcher recipes appear here once every machine is up and has joined."
}

func envScopeClass(scope string) string {
	switch scope {
	case EnvPerNode:
		return "shrink-0 rounded bg-indigo-50 px-1.5 font-sans text-[11px] font-medium text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case EnvYours:
		return "shrink-0 rounded bg-amber-50 px-1.5 font-sans text-[11px] font-medium text-amber-900 ring-1 ring-amber-200 dark:bg-amber-950 dark:text-amber-200 dark:ring-amber-800"
	}
	return "shrink-0 font-sans text-[11px] text-slate-500"
}

// Where an environment variable's value comes from.
const (
	EnvEveryNode = "every node"
	EnvPerNode   = "per node"
	EnvYours     = "yours"
)

// isWaiting is a node message that says the node waits for a peer to come
// up (domain.WaitingForPeers): shown as a wait, not as a warning.
func isWaiting(msg string) bool { return strings.HasPrefix(msg, domain.WaitingForPeers) }

func nodeMessageClass(msg string) string {
	if isWaiting(msg) {
		return "text-slate-600 dark:text-slate-400"
	}
	return "text-amber-700 dark:text-amber-400"
}

// VerificationView is the hand-over report (X13).
type VerificationView struct {
	Status    string // running, passed, failed
	Title     string // "Verified before hand-over", "Verification run 2 (no swaps)"
	Summary   string
	Window    string // while it runs: "Gives up at 14:32 UTC; a swap extends it: …"
	Ring      string // "454.4 GB/s · 87 % of 516.7 GB/s (at least 85 %)"; "" before it ran
	RingState string
	Machines  []VerifiedMachineView
	Pairs     []VerifiedPairView
	Median    string
	Swaps     []SwapView
	SwapsUsed string // "1 of 1 swaps used"
	CanRerun  bool
	CanKeep   bool
	// Disruption is what running it again does to the customer's jobs,
	// confirmed in a dialog before it runs (X13).
	Disruption string
}

// VerifiedMachineView is one machine's line of the report.
type VerifiedMachineView struct {
	Node, Machine, State, GPUs, Stress string
	Errors                             []string
}

// VerifiedPairView is one pair's line of the report.
type VerifiedPairView struct {
	Pair, BusBW, State, Detail string
}

// SwapView is one swap of the report.
type SwapView struct {
	Node, Reason, Outcome string
	// At is when the swap began; Joined when the replacement joined ("" until it has).
	At, Joined string
}

func verifyStateClass(s string) string {
	switch s {
	case "passed", "joined":
		return "text-emerald-700 dark:text-emerald-400"
	case "failed", "slow":
		return "text-rose-700 dark:text-rose-400"
	}
	return "text-slate-500"
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
