package api

import "time"

// RunBody is POST /v1/runs (X17): a shape (accelerator, nodes,
// gpusPerNode) or a list of acceptable offers under maxHourlyPrice, the
// image and command, env, a volume (a new one of volumeGb, or volumeId)
// with the checkpoint directory on it, the resume command and env, the
// restart budget and the finish rule.
type RunBody struct {
	Name              string            `json:"name,omitempty"`
	Accelerator       string            `json:"accelerator,omitempty"`
	Nodes             int               `json:"nodes"`
	GPUsPerNode       int               `json:"gpusPerNode,omitempty"`
	Offers            []string          `json:"offers,omitempty"`
	MaxHourlyPrice    string            `json:"maxHourlyPrice,omitempty"`
	Location          string            `json:"location,omitempty"`
	VolumeGB          int               `json:"volumeGb,omitempty"`
	VolumeID          string            `json:"volumeId,omitempty"`
	Image             string            `json:"image,omitempty"`
	Command           string            `json:"command"`
	Env               map[string]string `json:"env,omitempty"`
	CheckpointDir     string            `json:"checkpointDir"`
	CheckpointSeconds int               `json:"checkpointSeconds,omitempty"`
	ResumeCommand     string            `json:"resumeCommand,omitempty"`
	ResumeEnv         map[string]string `json:"resumeEnv,omitempty"`
	RestartBudget     int               `json:"restartBudget,omitempty"`
	FinishRule        string            `json:"finishRule,omitempty"` // "all" (default) or "rank0"
	HookURL           string            `json:"hookUrl,omitempty"`
	Verify            *bool             `json:"verify,omitempty"`
	SSHKeyIDs         []string          `json:"sshKeyIds,omitempty"`
}

// Run is a run (X17) with its bill: paid machine-minutes, productive
// minutes, ETTR and every interruption.
type Run struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Status         string            `json:"status"` // launching, running, recovering, finished, failed
	Message        string            `json:"message"`
	ClusterID      string            `json:"clusterId"`
	QuoteID        string            `json:"quoteId"`
	OfferID        string            `json:"offerId"`
	Accelerator    string            `json:"accelerator"`
	Nodes          int               `json:"nodes"`
	GPUsPerNode    int               `json:"gpusPerNode"`
	USDPerHour     string            `json:"usdPerHour"`
	Image          string            `json:"image,omitempty"`
	Command        string            `json:"command"`
	ResumeCommand  string            `json:"resumeCommand,omitempty"`
	CheckpointDir  string            `json:"checkpointDir"`
	FinishRule     string            `json:"finishRule"`
	RestartBudget  int               `json:"restartBudget"`
	Restarts       int               `json:"restarts"`
	CreatedAt      time.Time         `json:"createdAt"`
	RanksStartedAt *time.Time        `json:"ranksStartedAt,omitempty"`
	EndedAt        *time.Time        `json:"endedAt,omitempty"`
	Bill           RunBill           `json:"bill"`
	Interruptions  []RunInterruption `json:"interruptions"`
}

// RunBill is the effective training time (X17).
type RunBill struct {
	PaidMachineMinutes int64  `json:"paidMachineMinutes"`
	ProductiveMinutes  int64  `json:"productiveMinutes"`
	WallMinutes        int64  `json:"wallMinutes"`
	ETTRPercent        string `json:"ettrPercent"` // e.g. "97.4"
	LostMinutes        int64  `json:"lostMinutes"`
}

// RunInterruption is one stop of the ranks (X17).
type RunInterruption struct {
	Cause            string     `json:"cause"` // machine_dead, fatal_xid, hang, planned, rank_failed
	Node             string     `json:"node"`
	Message          string     `json:"message"`
	FailedAt         time.Time  `json:"failedAt"`
	DetectedAt       time.Time  `json:"detectedAt"`
	DetectionSeconds int64      `json:"detectionSeconds"`
	ResumedAt        *time.Time `json:"resumedAt,omitempty"`
	ResumeSeconds    *int64     `json:"resumeSeconds,omitempty"` // detection to the ranks running again
	LostSeconds      int64      `json:"lostSeconds"`
	Replaced         bool       `json:"replaced"`
	Warned           bool       `json:"warned"`
	CheckpointLanded *bool      `json:"checkpointLanded,omitempty"`
}

// RunList is GET /v1/runs.
type RunList struct {
	Runs []Run `json:"runs"`
}
