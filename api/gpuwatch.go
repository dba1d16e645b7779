package api

import "time"

// GPUWatch is a cluster's stall alert and opt-in idle rule (X15), with the
// episode each has open: GET and PUT /v1/gpu/clusters/{id}/gpu-watch.
type GPUWatch struct {
	Stall StallWatch `json:"stall"`
	Idle  IdleWatch  `json:"idle"`
	// Summary says the settings in one sentence.
	Summary string `json:"summary"`
}

// StallWatch is the stall alert: on unless switched off.
type StallWatch struct {
	Enabled bool       `json:"enabled"`
	Minutes int        `json:"minutes"` // how long a stall must hold before the alert
	Current *string    `json:"current"` // the open stall, as the alert said it; null = none
	Since   *time.Time `json:"since"`   // when the open stall began
}

// IdleWatch is the idle rule: off unless opted in.
type IdleWatch struct {
	Enabled      bool       `json:"enabled"`
	ThresholdPct int        `json:"thresholdPct"` // every GPU below this utilization is idle
	Hours        int        `json:"hours"`        // idle this long: mail the owners
	Action       string     `json:"action"`       // mail, stop or terminate
	GraceMinutes int        `json:"graceMinutes"` // from the mail to the stop or terminate
	IdleSince    *time.Time `json:"idleSince"`    // the open idle episode; null = a GPU works, or no rule
	MailedAt     *time.Time `json:"mailedAt"`
	ActionAt     *time.Time `json:"actionAt"` // when the stop or terminate is due (after the mail), or was requested
}

// GPUWatchBody is the body of PUT /v1/gpu/clusters/{id}/gpu-watch and the
// launch's gpuWatch: a field left out keeps its value (at launch, the
// default).
type GPUWatchBody struct {
	Stall *StallWatchBody `json:"stall,omitempty"`
	Idle  *IdleWatchBody  `json:"idle,omitempty"`
}

// StallWatchBody sets the stall alert.
type StallWatchBody struct {
	Enabled *bool `json:"enabled,omitempty"`
	Minutes *int  `json:"minutes,omitempty"`
}

// IdleWatchBody sets the idle rule.
type IdleWatchBody struct {
	Enabled      *bool   `json:"enabled,omitempty"`
	ThresholdPct *int    `json:"thresholdPct,omitempty"`
	Hours        *int    `json:"hours,omitempty"`
	Action       *string `json:"action,omitempty"`
	GraceMinutes *int    `json:"graceMinutes,omitempty"`
}

// GPUMetrics is GET /v1/gpu/clusters/{id}/metrics?window=1h|24h|30d: what
// the GPUs are doing (X15), per machine and GPU, and the whole cluster's
// utilization per step.
type GPUMetrics struct {
	Cluster     string           `json:"cluster"`
	Window      string           `json:"window"`
	From        time.Time        `json:"from"`
	To          time.Time        `json:"to"`
	StepSeconds int              `json:"stepSeconds"`
	Summary     string           `json:"summary"`
	ClusterUtil []GPUValue       `json:"clusterUtilization"`
	Nodes       []GPUMetricsNode `json:"nodes"`
}

// GPUMetricsNode is one machine's GPUs.
type GPUMetricsNode struct {
	Rank    int             `json:"rank"`
	Name    string          `json:"name"`
	NoSMI   string          `json:"noNvidiaSmi,omitempty"`
	Fault   string          `json:"fault,omitempty"`
	FaultAt *time.Time      `json:"faultAt,omitempty"`
	XIDs    []XIDLine       `json:"xids"`
	LastAt  *time.Time      `json:"lastReportAt"`
	GPUs    []GPUMetricsGPU `json:"gpus"`
}

// XIDLine is one kernel log line with an NVIDIA XID.
type XIDLine struct {
	At   time.Time `json:"at"`
	Code int       `json:"code"`
	Text string    `json:"text"`
}

// GPUMetricsGPU is one GPU's series.
type GPUMetricsGPU struct {
	Index  int        `json:"index"`
	UUID   string     `json:"uuid"`
	Now    *GPUValue  `json:"now"`
	Points []GPUValue `json:"points"`
}

// GPUValue is one GPU's values at the start of a step; nil = unknown.
type GPUValue struct {
	At             time.Time `json:"at"`
	UtilPct        *int      `json:"utilizationPct"`
	MemUsedMiB     *int      `json:"memoryUsedMiB"`
	MemTotalMiB    *int      `json:"memoryTotalMiB"`
	TempC          *int      `json:"temperatureC"`
	PowerW         *int      `json:"powerW"`
	SMClockMHz     *int      `json:"smClockMHz"`
	ECCUncorrected *int64    `json:"eccUncorrected"`
	Throttle       *int64    `json:"throttleReasons"`
}
