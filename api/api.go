// Package api holds the wire types of Clusterdeck's REST API v1: the JSON
// bodies the server (web) writes and reads and the Go client (client)
// sends and decodes, with the names the OpenAPI document
// (/v1/openapi.json) gives their schemas. It imports nothing of ours, so any
// program can use it.
//
// Money is a decimal string of dollars exact to the micro-dollar ("39.94").
package api

import "time"

// Offer is one offer in GET /v1/gpu/offers. Prices are for Nodes machines.
type Offer struct {
	ID                string    `json:"id"`
	Provider          string    `json:"provider"`
	Upstream          string    `json:"upstream,omitempty"` // the cloud behind an aggregator provider
	Location          string    `json:"location"`
	LocationName      string    `json:"locationName"`
	Interconnect      string    `json:"interconnect"`
	MachineKind       string    `json:"machineKind"`
	Accelerator       string    `json:"accelerator"`
	GPUsPerNode       int       `json:"gpusPerNode"`
	VCPUs             int       `json:"vcpus"`
	MemoryGB          int       `json:"memoryGb"`
	Community         bool      `json:"community"`
	NodesAvailable    *int      `json:"nodes_available"`
	MaxNodes          int       `json:"max_nodes"`
	Nodes             int       `json:"nodes"`
	Availability      string    `json:"availability"` // available | reserved_ahead | not_in_stock
	USDPerMachineHour string    `json:"usdPerMachineHour"`
	USDPerHour        string    `json:"usdPerHour"`
	PerGPUUSDPerHour  string    `json:"perGpuUsdPerHour"`
	DiskGBPerNode     int       `json:"diskGbPerNode"`
	RootDiskRate      string    `json:"rootDiskRate"` // dollars per GB-hour
	RefreshedAt       time.Time `json:"refreshedAt"`
	// TrackRecord is how this offer's launches at `nodes` machines went
	// over the last 30 days, from the product's own history (X2).
	TrackRecord TrackRecord `json:"trackRecord"`
}

// TrackRecord is an offer's record at one size over the last 30 days
// (X2): every launch accepted, by outcome, its time to ready and what its
// verifications measured of the fabric. Quotes are unaffected.
type TrackRecord struct {
	Summary              string        `json:"summary"`              // "7 of 9 recent launches succeeded · ready in 9 min", "no launch finished yet" or "no launches yet"
	Launches             int           `json:"launches"`             // every launch accepted, those under way and cancelled too
	Outcomes             TrackOutcomes `json:"outcomes"`             // the launches by outcome
	LaunchesTried        int           `json:"launchesTried"`        // launches that ended in a verdict: every outcome but cancelled and under way
	LaunchesStarted      int           `json:"launchesStarted"`      // of them, every machine came up (all but failedPlacing)
	LaunchesReady        int           `json:"launchesReady"`        // of them, handed over (ready and readyAfterSwap)
	SuccessRate          *float64      `json:"successRate"`          // ready / tried; null when none was tried
	ReadySamples         int           `json:"readySamples"`         // handed-over launches timed
	ReadyMinutesMedian   *int          `json:"readyMinutesMedian"`   // launch accepted → hand-over; null without a sample
	ReadyMinutesP90      *int          `json:"readyMinutesP90"`      // 90th percentile
	VerificationFailures int           `json:"verificationFailures"` // machines that failed verification before hand-over
	MachineFailures      int           `json:"machineFailures"`      // machines declared down after ready
	MachineHours         float64       `json:"machineHours"`         // machine-hours after ready
	FailuresPer1000Hours *float64      `json:"failuresPer1000MachineHours"`
	// Ring is the ring all-reduce bus bandwidth the launches'
	// verifications measured (X13); null when none measured it.
	Ring        *TrackRing `json:"ring"`
	RingSummary string     `json:"ringSummary"` // "ring 368 GB/s (92 % of line rate) · worst 352 GB/s (88 %)", or ""
}

// TrackOutcomes counts a track record's launches by outcome.
type TrackOutcomes struct {
	Ready            int `json:"ready"`            // handed over
	ReadyAfterSwap   int `json:"readyAfterSwap"`   // handed over after verification swapped a machine
	FailedPlacing    int `json:"failedPlacing"`    // not every machine came up
	FailedInstalling int `json:"failedInstalling"` // the software failed
	FailedVerifying  int `json:"failedVerifying"`  // verification failed
	Cancelled        int `json:"cancelled"`        // terminated or stopped before hand-over
	UnderWay         int `json:"underWay"`         // not ended yet
}

// TrackRing is the median and worst ring bus bandwidth of a track record,
// in GB/s and as a share of the line rate of the offer's NICs (NICs × Gb/s
// ÷ 8); the shares are null for an encrypted Ethernet overlay.
type TrackRing struct {
	Samples                 int     `json:"samples"`
	BusBwGBpsMedian         float64 `json:"busBwGBpsMedian"`
	BusBwGBpsWorst          float64 `json:"busBwGBpsWorst"`
	LineRateGBps            float64 `json:"lineRateGBps"` // 0 for an Ethernet overlay
	PercentOfLineRateMedian *int    `json:"percentOfLineRateMedian"`
	PercentOfLineRateWorst  *int    `json:"percentOfLineRateWorst"`
}

// OfferGroup is the offers of one location.
type OfferGroup struct {
	Location     string  `json:"location"`
	LocationName string  `json:"locationName"`
	Nodes        int     `json:"nodes"`
	Offers       []Offer `json:"offers"`
}

// OffersResponse is GET /v1/gpu/offers.
type OffersResponse struct {
	Accelerator      string         `json:"accelerator,omitempty"`
	Nodes            int            `json:"nodes"`
	IncludeCommunity bool           `json:"include_community"`
	Count            int            `json:"count"`
	Groups           []OfferGroup   `json:"groups"`
	PrivateOffers    []PrivateOffer `json:"privateOffers,omitempty"` // X9: the caller's organisation's own
	// RefreshedAt is the latest refresh of the asked shape's prices (absent
	// when the catalog has none); CatalogStale is true when none of them is
	// recent enough to sell: the provider's refresh is failing, not its
	// capacity (O6).
	RefreshedAt  *time.Time `json:"refreshedAt,omitempty"`
	CatalogStale bool       `json:"catalogStale"`
}

// PrivateOffer is an organisation's price-locked offer from a quote request
// (X9): one size of one catalog offer, quoted and launched with its id.
type PrivateOffer struct {
	ID                string    `json:"id"`
	OfferID           string    `json:"offerId"`
	Provider          string    `json:"provider"`
	Location          string    `json:"location"`
	LocationName      string    `json:"locationName"`
	Accelerator       string    `json:"accelerator"`
	Interconnect      string    `json:"interconnect"`
	MachineKind       string    `json:"machineKind"`
	GPUsPerNode       int       `json:"gpusPerNode"`
	Nodes             int       `json:"nodes"`
	USDPerMachineHour string    `json:"usdPerMachineHour"`
	USDPerHour        string    `json:"usdPerHour"`
	ValidUntil        time.Time `json:"validUntil"`
}

// Storage is a quote's persistent volume, shared by every node.
type Storage struct {
	PersistentGB *int `json:"persistentGb,omitempty"`
}

// QuoteBody is POST /v1/gpu/clusters/quote: the priced fields (Q1). A nil
// field is absent. Launch bodies may repeat them (Q5).
type QuoteBody struct {
	Accelerator      *string  `json:"accelerator,omitempty"`
	Nodes            *int     `json:"nodes,omitempty"`
	GPUsPerNode      *int     `json:"gpusPerNode,omitempty"`
	Storage          *Storage `json:"storage,omitempty"`
	MaxHourlyPrice   *string  `json:"maxHourlyPrice,omitempty"`
	Location         *string  `json:"location,omitempty"`
	OfferID          *string  `json:"offerId,omitempty"`
	IncludeCommunity *bool    `json:"include_community,omitempty"`
	PrivateOfferID   *string  `json:"privateOfferId,omitempty"` // X9
	VolumeID         *string  `json:"volumeId,omitempty"`       // V2: mount this volume; pins its location
}

// LaunchBody is POST /v1/gpu/clusters (send an Idempotency-Key header, L1):
// a quote id, or an offer id with a size, and the workload. Orchestrator and
// DockerStartCmd are AI Reserve's names for Software and StartCommand
// (API4): the server reads either name; both with different values is a 422.
type LaunchBody struct {
	QuoteBody
	QuoteID        string            `json:"quoteId,omitempty"`
	Name           string            `json:"name,omitempty"`
	Software       string            `json:"software,omitempty"`
	Orchestrator   string            `json:"orchestrator,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Ports          []int             `json:"ports,omitempty"`
	SSHKeyIDs      []string          `json:"sshKeyIds,omitempty"`
	Image          string            `json:"image,omitempty"`
	StartCommand   string            `json:"startCommand,omitempty"`
	DockerStartCmd string            `json:"dockerStartCmd,omitempty"`
	// GPUWatch sets the stall alert and the opt-in idle rule at launch
	// (X15); absent: stall alerts after 10 minutes, no idle rule.
	GPUWatch *GPUWatchBody `json:"gpuWatch,omitempty"`
	// Verify: verification before hand-over (X13); omitted = true.
	Verify *bool `json:"verify,omitempty"`
}

// LineItem is one line of a quote's price.
type LineItem struct {
	Name       string `json:"name"`
	Quantity   string `json:"quantity"`
	USDPerHour string `json:"usdPerHour"`
}

// Quote is a locked price for a shape (Q1–Q3).
type Quote struct {
	ID                string         `json:"id"`
	Accelerator       string         `json:"accelerator"`
	Nodes             int            `json:"nodes"`
	GPUsPerNode       int            `json:"gpusPerNode"`
	Storage           map[string]int `json:"storage"`
	MaxHourlyPrice    *string        `json:"maxHourlyPrice"`
	Location          string         `json:"location"`
	OfferID           string         `json:"offerId"`
	Provider          string         `json:"provider"`
	MachineKind       string         `json:"machineKind"`
	Interconnect      string         `json:"interconnect"`
	IncludeCommunity  bool           `json:"include_community"`
	USDPerHour        string         `json:"usdPerHour"`
	USDPerMachineHour string         `json:"usdPerMachineHour"`
	PerGPUUSDPerHour  string         `json:"perGpuUsdPerHour"`
	DiskGBPerNode     int            `json:"diskGbPerNode"`
	RootDiskRate      string         `json:"rootDiskRate"`
	LineItems         []LineItem     `json:"lineItems"`
	Availability      string         `json:"availability"`
	ExpiresAt         time.Time      `json:"expiresAt"`
	PrivateOfferID    string         `json:"privateOfferId,omitempty"` // X9
	VolumeID          string         `json:"volumeId,omitempty"`       // V2
}

// ClusterNode is one machine of a cluster.
type ClusterNode struct {
	Name       string `json:"name"`
	Rank       int    `json:"rank"`
	Status     string `json:"status"`
	Step       string `json:"step"`
	Address    string `json:"address"`
	PublicHost string `json:"publicHost,omitempty"`
	GPUs       string `json:"gpus,omitempty"`    // what nvidia-smi showed at check-in (L4)
	Message    string `json:"message,omitempty"` // what the last health pass saw, or why it failed (R1)
	// StartCommand is the start command's state on this node (N3); null
	// when the cluster has no start command.
	StartCommand *NodeStartCommand `json:"startCommand"`
	// Mounts is the node's mounts step in its current boot (V4): /shared
	// and the volume where the machine kind has them. Absent in lists and
	// until the node's agent reported it.
	Mounts *NodeMounts `json:"mounts,omitempty"`
}

// NodeMounts is the state of a node's mounts step: "mounting" until it
// ended, then "mounted" or "failed" (with why).
type NodeMounts struct {
	State     string     `json:"state"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
	Error     string     `json:"error,omitempty"`
}

// NodeStartCommand is the state of the start command on one node in its
// current boot: "waiting" until the cluster is ready and the node's agent
// started it, then "running", "exited" (with exitCode) or "failed" (it
// could not start, or the machine stopped under it: exitCode -1).
type NodeStartCommand struct {
	State     string     `json:"state"`
	StartedAt *time.Time `json:"startedAt"`
	ExitCode  *int       `json:"exitCode"`
	EndedAt   *time.Time `json:"endedAt"`
	Error     string     `json:"error,omitempty"`
}

// Port is one of the workload's ports (N3): open between the nodes on
// every machine, and published on each node's public address where the
// machine kind allows; Tunnel reaches it on node-0 through SSH either way.
type Port struct {
	Port      int      `json:"port"`
	Published bool     `json:"published"`
	Addresses []string `json:"addresses"` // host:port per node, in rank order, when published
	Tunnel    string   `json:"tunnel"`    // ssh -N -L port:localhost:port … to node-0
	Note      string   `json:"note"`
}

// ClusterEvent is one entry of a cluster's history.
type ClusterEvent struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"`
	Node    string    `json:"node,omitempty"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message"`
}

// Cluster is a cluster with its nodes (and, but in lists, its events).
type Cluster struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	Status               string         `json:"status"`
	Accelerator          string         `json:"accelerator"`
	NodeCount            int            `json:"nodeCount"`
	GPUsPerNode          int            `json:"gpusPerNode"`
	Location             string         `json:"location"`
	Provider             string         `json:"provider"`
	OfferID              string         `json:"offerId"`
	QuoteID              string         `json:"quoteId"`
	MachineKind          string         `json:"machineKind"`
	Interconnect         string         `json:"interconnect"`
	Software             string         `json:"software"`
	USDPerHour           string         `json:"usdPerHour"`
	USDPerMachineHour    string         `json:"usdPerMachineHour"`
	ReadyAt              *time.Time     `json:"readyAt"`
	LastError            *string        `json:"lastError"`
	CreatedAt            time.Time      `json:"createdAt"`
	TerminateRequestedAt *time.Time     `json:"terminateRequestedAt,omitempty"`
	EndedAt              *time.Time     `json:"endedAt,omitempty"`
	StopRequestedAt      *time.Time     `json:"stopRequestedAt,omitempty"`   // B6: a stop being carried out
	StopReason           string         `json:"stopReason,omitempty"`        // balance, budget, idle or customer
	StoppedAt            *time.Time     `json:"stoppedAt,omitempty"`         // compute billing ended here
	ResumeRequestedAt    *time.Time     `json:"resumeRequestedAt,omitempty"` // a resume under way
	Nodes                []ClusterNode  `json:"nodes"`
	Recovery             Recovery       `json:"recovery"`
	Events               []ClusterEvent `json:"events,omitempty"`
	NCCL                 *NCCLCheck     `json:"nccl,omitempty"`
	Verification         *Verification  `json:"verification,omitempty"`
	Volume               *ClusterVolume `json:"volume,omitempty"` // V1, V4
}

// ClusterVolume is the cluster's volume and where it is mounted (V4).
type ClusterVolume struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	SizeGB int     `json:"sizeGb"`
	Mounts []Mount `json:"mounts"`
}

// Mount is one folder on the cluster's machines (V4).
type Mount struct {
	Path  string   `json:"path"`
	Nodes []string `json:"nodes"`
	What  string   `json:"what"`
}

// Recovery is a cluster's recovery policy and its current unhealthy
// episode (R3, R4).
type Recovery struct {
	Mode             string           `json:"mode"` // restart or off
	MaxAttempts      int              `json:"maxAttempts"`
	CooldownMinutes  int              `json:"cooldownMinutes"`
	EpisodeStartedAt *time.Time       `json:"episodeStartedAt"` // null: every machine is healthy
	AttemptsUsed     int              `json:"attemptsUsed"`
	LastAttemptAt    *time.Time       `json:"lastAttemptAt"`
	Outcomes         []MachineOutcome `json:"outcomes"` // of the last attempt
	NextAttemptAt    *time.Time       `json:"nextAttemptNotBefore"`
	Requested        bool             `json:"recoverNowRequested"`
	Exhausted        bool             `json:"exhausted"`
}

// MachineOutcome is what one recovery attempt did to one machine.
type MachineOutcome struct {
	Node    string `json:"node"`
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
}

// RecoveryPolicy is the body of PUT /v1/gpu/clusters/{id}/recovery (R3).
type RecoveryPolicy struct {
	Mode            *string `json:"mode"`
	MaxAttempts     *int    `json:"maxAttempts"`
	CooldownMinutes *int    `json:"cooldownMinutes"`
}

// NCCLCheck is the automatic NCCL all-reduce check run once the cluster is
// ready (X4), beside what the interconnect advertises. The measured fields
// are null until Status is "measured".
type NCCLCheck struct {
	Status                   string     `json:"status"` // pending, sent, measured or failed
	BusBandwidthGBps         *float64   `json:"busBandwidthGBps"`
	ExpectedBusBandwidthGBps *float64   `json:"expectedBusBandwidthGBps"`
	AdvertisedGbpsPerNode    *int       `json:"advertisedGbpsPerNode"`
	PercentOfExpected        *int       `json:"percentOfExpected"`
	Warning                  string     `json:"warning,omitempty"`
	Summary                  string     `json:"summary,omitempty"`
	MeasuredAt               *time.Time `json:"measuredAt"`
}

// ClusterList is GET /v1/gpu/clusters.
type ClusterList struct {
	Clusters []Cluster `json:"clusters"`
}

// ConnectionNode is how to reach one node.
type ConnectionNode struct {
	Name       string `json:"name"`
	Rank       int    `json:"rank"`
	Address    string `json:"address"`
	PublicHost string `json:"publicHost,omitempty"`
	SSH        string `json:"ssh"`
}

// Command is a ready-made launcher for the cluster's exact shape.
type Command struct {
	Name    string `json:"name"`
	RunOn   string `json:"runOn"`
	Command string `json:"command"`
	Note    string `json:"note,omitempty"`
}

// Connections is GET /v1/gpu/clusters/{id}/connections (N2–N5).
type Connections struct {
	Cluster         string            `json:"cluster"`
	Status          string            `json:"status"`
	Gateway         *string           `json:"gateway"`
	Env             map[string]string `json:"env"`
	EnvBlock        string            `json:"envBlock"`
	EnvNote         string            `json:"envNote"`
	MallocHint      string            `json:"mallocHint"`
	Readiness       string            `json:"readiness"`
	ReadinessScript string            `json:"readinessScript"`
	SSHConfig       string            `json:"sshConfig"`
	Hostfile        string            `json:"hostfile,omitempty"`
	HostfilePath    string            `json:"hostfilePath,omitempty"`
	Nodes           []ConnectionNode  `json:"nodes"`
	Primary         *ConnectionNode   `json:"primary"`
	Commands        []Command         `json:"commands"`
	Ports           []Port            `json:"ports"`
}

// LogLine is one line of a node's log: an element of LogLines, and the
// data of each "line" event of the log stream.
type LogLine struct {
	ID   int64     `json:"id"`
	Node string    `json:"node"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// LogLines is GET /v1/gpu/clusters/{id}/logs?follow=false.
type LogLines struct {
	Cluster string    `json:"cluster"`
	Node    string    `json:"node"`
	Lines   []LogLine `json:"lines"`
}

// MeOrg is the organisation the credentials act for, with its limits.
type MeOrg struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	MaxMachines int    `json:"maxMachines"`
	MaxGPUs     int    `json:"maxGpus"`
}

// MeEnvironment is the environment the credentials act in.
type MeEnvironment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Me is GET /v1/me: who the credentials act as.
type Me struct {
	Org         MeOrg         `json:"org"`
	Environment MeEnvironment `json:"environment"`
	Role        string        `json:"role"`
	Actor       string        `json:"actor"`
	Email       string        `json:"email,omitempty"`
}

// Contact is who to reach about a quote request.
type Contact struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Phone string `json:"phone"`
}

// QuoteRequestBody is POST /v1/quote-requests (RQ1): ask for reserved
// capacity, a larger cluster or a fast fabric. Without a contact, the key's
// creator is the contact.
type QuoteRequestBody struct {
	Accelerator   string   `json:"accelerator"`
	Nodes         int      `json:"nodes"`
	GPUsPerNode   int      `json:"gpusPerNode"`
	Fabric        string   `json:"fabric"`
	Location      string   `json:"location"`
	StartDate     string   `json:"startDate"`
	DurationDays  int      `json:"durationDays"`
	BudgetPerHour string   `json:"budgetPerHour"`
	Contact       *Contact `json:"contact,omitempty"` // nil: the key's creator
	Notes         string   `json:"notes"`
}

// QuoteRequest is a request for a quote and where it stands (RQ2).
type QuoteRequest struct {
	ID            string    `json:"id"`
	Status        string    `json:"status"`
	Accelerator   string    `json:"accelerator"`
	Nodes         int       `json:"nodes"`
	GPUsPerNode   int       `json:"gpusPerNode"`
	Fabric        string    `json:"fabric"`
	Location      string    `json:"location"`
	StartDate     string    `json:"startDate"`
	DurationDays  int       `json:"durationDays"`
	BudgetPerHour *string   `json:"budgetPerHour"` // dollars per hour, whole cluster; null when not given
	Contact       Contact   `json:"contact"`
	Notes         string    `json:"notes"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// QuoteRequestList is GET /v1/quote-requests.
type QuoteRequestList struct {
	QuoteRequests []QuoteRequest `json:"quoteRequests"`
}

// TopUpBody is POST /v1/billing/top-ups (B4): dollars, like "25.00".
type TopUpBody struct {
	Amount string `json:"amount"`
}

// TopUp is a request to add funds and where it stands (B4, B7).
type TopUp struct {
	ID          string `json:"id"`
	Status      string `json:"status"` // pending or completed
	Amount      string `json:"amount"` // dollars
	TestMode    bool   `json:"testMode"`
	CheckoutURL string `json:"checkoutUrl,omitempty"` // where to pay (Stripe only)
}

// AutoRechargeBody is PUT /v1/billing/auto-recharge (B4): charge amount
// dollars to the saved card when the balance drops below threshold dollars.
type AutoRechargeBody struct {
	Enabled   bool   `json:"enabled"`
	Threshold string `json:"threshold"` // dollars, like "20.00"
	Amount    string `json:"amount"`    // dollars, at least "5.00"
}

// AutoRecharge is the organisation's auto-recharge and why it is paused,
// if it is (B4).
type AutoRecharge struct {
	Enabled   bool          `json:"enabled"`
	Threshold string        `json:"threshold"` // dollars
	Amount    string        `json:"amount"`    // dollars
	CardSaved bool          `json:"cardSaved"` // a card is saved from a top-up
	Paused    *FailedCharge `json:"paused,omitempty"`
}

// FailedCharge is the auto-recharge charge that failed and paused it.
type FailedCharge struct {
	ID          string    `json:"id"`
	Amount      string    `json:"amount"`      // dollars
	FailureCode string    `json:"failureCode"` // card_declined, authentication_required, …
	Message     string    `json:"message"`
	At          time.Time `json:"at"`
}

// BillingBalance is GET /v1/billing/balance (B1): the organisation's
// balance and what it lasts at the current burn. Money in dollars.
type BillingBalance struct {
	Balance        string   `json:"balance"`        // the written ledger less what is accruing (B8)
	Accruing       string   `json:"accruing"`       // usage of open periods, not yet written
	BurnRate       string   `json:"burnRate"`       // dollars per hour of everything running
	HoursRemaining *float64 `json:"hoursRemaining"` // null while nothing runs
	SpendThisMonth string   `json:"spendThisMonth"` // written usage and the open period
	Month          string   `json:"month"`          // YYYY-MM (UTC)
	TestMode       bool     `json:"testMode"`
}

// BillingUsage is GET /v1/billing/usage (B3): the billing page's usage
// lines of one month, a row per machine.
type BillingUsage struct {
	Month    string         `json:"month"`
	Total    string         `json:"total"`
	Clusters []ClusterUsage `json:"clusters"`
	Volumes  []VolumeUsage  `json:"volumes"` // V3, X11: billed until deleted, attached or not
}

// VolumeUsage is one volume's usage in the month.
type VolumeUsage struct {
	VolumeID   string `json:"volumeId"`
	Name       string `json:"name"`
	SizeGB     int    `json:"sizeGb"`
	USDPerHour string `json:"usdPerHour"`
	Minutes    int64  `json:"minutes"`
	Amount     string `json:"amount"`
	Status     string `json:"status"`    // completed or accumulating
	ClusterID  string `json:"clusterId"` // the cluster attached now; "" when detached
	Deleted    bool   `json:"deleted"`
}

// ClusterUsage is one cluster's usage in the month.
type ClusterUsage struct {
	ClusterID string         `json:"clusterId"`
	Name      string         `json:"name"`
	Amount    string         `json:"amount"`
	Status    string         `json:"status"` // completed or accumulating
	Machines  []MachineUsage `json:"machines"`
}

// MachineUsage is one machine's row.
type MachineUsage struct {
	NodeID       string          `json:"nodeId"`
	Node         string          `json:"node"`
	MachinePrice string          `json:"machinePrice"` // dollars per hour
	Minutes      int64           `json:"minutes"`
	Amount       string          `json:"amount"`
	Status       string          `json:"status"` // completed or accumulating
	Intervals    []StateInterval `json:"intervals"`
}

// StateInterval is a span of one machine in one state (X7).
type StateInterval struct {
	State     string     `json:"state"` // running, degraded or stopped
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"` // null while it lasts
}

// VolumeBody is POST /v1/volumes (V2): a volume of the key's environment.
type VolumeBody struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	SizeGB   int    `json:"sizeGb"`
}

// VolumeGrowBody is POST /v1/volumes/{id}/grow (V3): the new, larger size.
type VolumeGrowBody struct {
	SizeGB int `json:"sizeGb"`
}

// Volume is a persistent volume (V1–V5). It bills usdPerHour from its
// creation until deleted, attached or not.
type Volume struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Location     string    `json:"location"`
	LocationName string    `json:"locationName"`
	Provider     string    `json:"provider"`
	SizeGB       int       `json:"sizeGb"`
	GBHourRate   string    `json:"usdPerGbHour"`
	USDPerHour   string    `json:"usdPerHour"`
	ClusterID    *string   `json:"clusterId"` // the cluster attached now; null when detached
	CreatedAt    time.Time `json:"createdAt"`
}

// VolumeList is GET /v1/volumes.
type VolumeList struct {
	Volumes []Volume `json:"volumes"`
}

// ReplaceBody is POST /v1/gpu/clusters/{id}/nodes/{rank}/replace (X5):
// without confirm the answer is the price to confirm; with it the new
// machine is asked for.
type ReplaceBody struct {
	Confirm bool `json:"confirm"`
}

// ReplacePreview is what a replacement costs, shown before it is
// confirmed (X5): one machine of the cluster's offer at its locked rate.
type ReplacePreview struct {
	Cluster           string `json:"cluster"`
	Node              string `json:"node"`
	Rank              int    `json:"rank"`
	Address           string `json:"address"`
	USDPerMachineHour string `json:"usdPerMachineHour"`
	Message           string `json:"message"`
}

// BudgetBody is PUT /v1/billing/budgets/{envId} (B5): the environment's
// monthly budget in dollars, whole cents.
type BudgetBody struct {
	Amount string `json:"amount"` // dollars, like "500.00"
}

// Budgets is GET /v1/billing/budgets (B5, X6): every environment of the
// organisation with its budget and forecast, when the balance runs out and
// each billed cluster's projected run-out, at the current burn.
type Budgets struct {
	Month           string          `json:"month"` // YYYY-MM (UTC): budgets are per calendar month
	Balance         string          `json:"balance"`
	BurnRate        string          `json:"burnRate"`        // dollars per hour of everything billed now
	BalanceRunOutAt *time.Time      `json:"balanceRunOutAt"` // null while nothing burns
	Environments    []Budget        `json:"environments"`
	Clusters        []ClusterRunOut `json:"clusters"`
}

// Budget is one environment's monthly budget and where it stands.
type Budget struct {
	EnvironmentID  string     `json:"environmentId"`
	Environment    string     `json:"environment"`    // its name
	Amount         *string    `json:"amount"`         // dollars a month; null: no budget
	SpendThisMonth string     `json:"spendThisMonth"` // written usage and the open hour
	BurnRate       string     `json:"burnRate"`       // dollars per hour
	Percent        int        `json:"percent"`        // spend of the budget, rounded down; 0 without one
	Reached        bool       `json:"reached"`
	ForecastAt     *time.Time `json:"forecastAt"` // when the budget is reached at the current burn; null: not this month
	Alerts         []int      `json:"alerts"`     // thresholds (50, 80, 100) reached this month
	EnforceAt      *time.Time `json:"enforceAt"`  // reached: when its clusters are (were) stopped
}

// ClusterRunOut is a billed cluster's projected run-out (X6).
type ClusterRunOut struct {
	ClusterID   string     `json:"clusterId"`
	Name        string     `json:"name"`
	Environment string     `json:"environment"`
	RunOutAt    *time.Time `json:"runOutAt"` // null: nothing runs out this month at the current burn
	By          string     `json:"by"`       // budget or balance: which runs out first
}

// Event is one entry of the event feed (GET /v1/events): a cluster's
// event with its id, the feed's cursor, and its public type ("" for the
// entries that only tell the story: node steps, requests, notes). The id
// is opaque ("evt_" and 26 letters and digits, the same as the webhook's
// event id): ask with after=id for the events after it; ids do not sort.
type Event struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Cluster string    `json:"cluster"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"`
	Node    string    `json:"node,omitempty"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message"`
}

// EventList is one page of the feed: ask again with after=next (the last
// event's id, or the cursor asked with when the page is empty; "0" before
// the first event); hasMore says the page was full.
type EventList struct {
	Events  []Event `json:"events"`
	Next    string  `json:"next"`
	HasMore bool    `json:"hasMore"`
}

// Verification is the hand-over report (X13): every machine's check,
// VerifyAgainRequest is the body of POST /v1/gpu/clusters/{id}/verify: the
// customer confirms that verification takes every GPU of the cluster for
// minutes, disrupting what runs there (X13). Without it: 422
// confirmation_required.
type VerifyAgainRequest struct {
	ConfirmDisruption bool `json:"confirmDisruption"`
}

// the ring all-reduce against its threshold, every pair, the swaps made.
type Verification struct {
	Run                 int                `json:"run"`
	Rerun               bool               `json:"rerun"`
	Status              string             `json:"status"` // running, passed or failed
	Summary             string             `json:"summary"`
	StartedAt           time.Time          `json:"startedAt"`
	FinishedAt          *time.Time         `json:"finishedAt,omitempty"`
	Thresholds          VerifyThresholds   `json:"thresholds"`
	Machines            []VerifiedMachine  `json:"machines"`
	Ring                *VerifiedRing      `json:"ring,omitempty"`
	Pairs               []VerifiedPair     `json:"pairs"`
	MedianPairBusBwGBps float64            `json:"medianPairBusBwGBps,omitempty"`
	Swaps               []VerificationSwap `json:"swaps"`
	MaxSwaps            int                `json:"maxSwaps"`
}

// VerifyThresholds are what the report was judged by.
type VerifyThresholds struct {
	RingPercent            int `json:"ringPercent"`
	PairBelowMedianPercent int `json:"pairBelowMedianPercent"`
	IdleTempMaxC           int `json:"idleTempMaxC"`
}

// VerifiedMachine is one machine's check.
type VerifiedMachine struct {
	Node         string   `json:"node"`
	Rank         int      `json:"rank"`
	MachineID    string   `json:"machineId,omitempty"`
	Status       string   `json:"status"` // pending, swapping, passed or failed
	GPUs         string   `json:"gpus"`
	Errors       []string `json:"errors"`
	Stress       string   `json:"stress"`
	StressPassed bool     `json:"stressPassed"`
	StressDetail string   `json:"stressDetail,omitempty"`
	MaxTempC     int      `json:"maxTempC,omitempty"`
}

// VerifiedRing is the all-reduce across every machine (NCCL_ALGO=Ring).
type VerifiedRing struct {
	Status            string  `json:"status"` // pending, passed or failed
	BusBwGBps         float64 `json:"busBwGBps"`
	ExpectedBusBwGBps float64 `json:"expectedBusBwGBps"` // what a healthy ring reaches on the machines' NICs (X13)
	// LineRateGBps is one machine's NICs together (0 on the encrypted
	// overlay); FloorBusBwGBps the least bus bandwidth that passes.
	LineRateGBps     float64 `json:"lineRateGBps"`
	FloorBusBwGBps   float64 `json:"floorBusBwGBps"`
	Overlay          bool    `json:"overlay,omitempty"`
	Percent          int     `json:"percent"`
	ThresholdPercent int     `json:"thresholdPercent"`
	Detail           string  `json:"detail,omitempty"`
}

// VerifiedPair is one pair's all-reduce.
type VerifiedPair struct {
	A         string  `json:"a"`
	B         string  `json:"b"`
	Status    string  `json:"status"` // pending, passed, slow or failed
	BusBwGBps float64 `json:"busBwGBps"`
	Detail    string  `json:"detail,omitempty"`
}

// VerificationSwap is one machine swapped before hand-over.
type VerificationSwap struct {
	Node         string    `json:"node"`
	MachineID    string    `json:"machineId,omitempty"`
	Reason       string    `json:"reason"`
	At           time.Time `json:"at"`
	Outcome      string    `json:"outcome"` // joining, joined or failed
	NewMachineID string    `json:"newMachineId,omitempty"`
	// JoinedAt is when the replacement joined (At is when the swap began).
	JoinedAt *time.Time `json:"joinedAt,omitempty"`
}

// ReservationBody is POST /v1/reservations (X18): an offer (or the
// organisation's private offer) at a size, from a start on a whole hour for
// a whole number of hours. preview prices it and states its terms without
// booking.
type ReservationBody struct {
	OfferID        string `json:"offerId,omitempty"`
	PrivateOfferID string `json:"privateOfferId,omitempty"`
	Nodes          int    `json:"nodes,omitempty"`
	StartAt        string `json:"startAt"`
	DurationHours  int    `json:"durationHours"`
	FromClusterID  string `json:"fromClusterId,omitempty"`
	Preview        bool   `json:"preview,omitempty"`
}

// ReservationChangeBody is PATCH /v1/reservations/{id}: a new start and term
// within the change window, at the locked price.
type ReservationChangeBody struct {
	StartAt       string `json:"startAt"`
	DurationHours int    `json:"durationHours"`
}

// ReservationTerms are the windows and money stated before booking.
type ReservationTerms struct {
	FullRefundUntil time.Time `json:"fullRefundUntil"`
	HalfRefundUntil time.Time `json:"halfRefundUntil"`
	ChangeUntil     time.Time `json:"changeUntil"`
	LaunchAt        time.Time `json:"launchAt"`
	Deposit         string    `json:"deposit"`
	Total           string    `json:"total"`
	Source          string    `json:"source"`
	SourceText      string    `json:"sourceText"`
}

// ReservationEvent is one step of a reservation's trail.
type ReservationEvent struct {
	Type      string    `json:"type"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"createdAt"`
}

// Reservation is one booking and where it stands.
type Reservation struct {
	ID                string             `json:"id"`
	Status            string             `json:"status"`
	OfferID           string             `json:"offerId"`
	PrivateOfferID    string             `json:"privateOfferId"`
	QuoteRequestID    string             `json:"quoteRequestId"`
	Provider          string             `json:"provider"`
	Location          string             `json:"location"`
	Accelerator       string             `json:"accelerator"`
	Nodes             int                `json:"nodes"`
	GPUsPerNode       int                `json:"gpusPerNode"`
	StartAt           time.Time          `json:"startAt"`
	EndAt             time.Time          `json:"endAt"`
	DurationHours     int                `json:"durationHours"`
	USDPerMachineHour string             `json:"usdPerMachineHour"`
	USDPerHour        string             `json:"usdPerHour"`
	Terms             ReservationTerms   `json:"terms"`
	ClusterID         string             `json:"clusterId"`
	HandedOverAt      *time.Time         `json:"handedOverAt"`
	LateCredit        string             `json:"lateCredit"`
	Refund            string             `json:"refund"`
	LastError         string             `json:"lastError"`
	Events            []ReservationEvent `json:"events"`
	CreatedAt         time.Time          `json:"createdAt"`
}

// ReservationList is GET /v1/reservations.
type ReservationList struct {
	Reservations []Reservation `json:"reservations"`
}

// AvailabilityDay is one day of an offer's calendar.
type AvailabilityDay struct {
	Date     string `json:"date"`
	Free     int    `json:"free"`
	Bookable bool   `json:"bookable"`
}

// Availability is GET /v1/gpu/offers/{id}/availability (X18).
type Availability struct {
	OfferID           string            `json:"offerId"`
	Nodes             int               `json:"nodes"`
	Source            string            `json:"source"`
	SourceText        string            `json:"sourceText"`
	LeadMinutes       int               `json:"leadMinutes"`
	USDPerMachineHour string            `json:"usdPerMachineHour"`
	Days              []AvailabilityDay `json:"days"`
}
