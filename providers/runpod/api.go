package runpod

// The RunPod REST API v2 shapes this adapter reads and writes, named as in
// the published OpenAPI description (2.0.0); testdata/ holds its examples.

// Paths under the server's base URL.
const (
	pathGPUs    = "/v2/catalog/gpus"
	pathSSHKeys = "/v2/account/ssh-keys"
	pathPods    = "/v2/pods"
	// pathClusters is Instant Clusters: POST creates one (every member pod
	// in one data center), GET /{id}/pods reads its members, DELETE /{id}
	// deletes it with every member pod.
	pathClusters = "/v2/clusters"
)

// Operation names on errors (providers.Error.Op).
const (
	opListOffers  = "ListOffers"
	opPlace       = "PlaceGroup"
	opDescribe    = "DescribeGroup"
	opRestart     = "RestartNode"
	opStop        = "StopNode"
	opTerminate   = "TerminateGroup"
	opPlaceNode   = "PlaceNode"
	opReleaseNode = "ReleaseNode"
)

// Availability levels of the catalog (AvailabilityLevel).
const (
	AvailNone   = "NONE"
	AvailLow    = "LOW"
	AvailMedium = "MEDIUM"
	AvailHigh   = "HIGH"
)

// Pod statuses (PodStatus).
const (
	StatusProvisioning = "PROVISIONING"
	StatusStarting     = "STARTING"
	StatusRunning      = "RUNNING"
	StatusExited       = "EXITED"
	StatusError        = "ERROR"
	StatusTerminated   = "TERMINATED"
)

// DataCenterAvailability is a data center's stock of one GPU type.
type DataCenterAvailability struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Availability string `json:"availability"`
}

// GpuType is one GPU model of the catalog; prices are USD per single GPU per hour.
type GpuType struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Pool         string `json:"pool,omitempty"`
	Manufacturer string `json:"manufacturer"`
	Memory       int    `json:"memory"`
	Secure       bool   `json:"secure"`
	Community    bool   `json:"community"`
	Price        struct {
		Secure     float64  `json:"secure"`
		Community  float64  `json:"community"`
		Serverless *float64 `json:"serverless,omitempty"`
	} `json:"price"`
	MaxCount struct {
		Secure    int `json:"secure"`
		Community int `json:"community"`
	} `json:"maxCount"`
	Availability string                   `json:"availability,omitempty"`
	DataCenters  []DataCenterAvailability `json:"dataCenters,omitempty"`
}

// GPUConfig is {id, count}.
type GPUConfig struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
}

// CreatePodRequest is the body of POST /v2/pods.
type CreatePodRequest struct {
	Name          string            `json:"name"`
	Image         string            `json:"image"`
	Args          string            `json:"args,omitempty"`
	Disk          int               `json:"disk,omitempty"`
	Ports         []string          `json:"ports,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Cloud         string            `json:"cloud,omitempty"`
	DataCenterIDs []string          `json:"dataCenterIds,omitempty"`
	GPU           *GPUConfig        `json:"gpu,omitempty"`
	StartSSH      bool              `json:"startSsh,omitempty"`
}

// SSHEndpoint is one way to reach a pod over SSH.
type SSHEndpoint struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Username string `json:"username"`
	Command  string `json:"command"`
}

// RuntimePort is a live port mapping.
type RuntimePort struct {
	Private int     `json:"private"`
	Public  *int    `json:"public"`
	Type    string  `json:"type"`
	IP      *string `json:"ip"`
}

// Pod is a pod as the API answers it.
type Pod struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Image        string            `json:"image"`
	Args         string            `json:"args"`
	Disk         int               `json:"disk"`
	Ports        []string          `json:"ports"`
	Env          map[string]string `json:"env"`
	Registry     *string           `json:"registry"`
	Status       string            `json:"status"`
	Actions      []string          `json:"actions"`
	Mounts       map[string]any    `json:"mounts"`
	GPU          *GPUConfig        `json:"gpu,omitempty"`
	Cloud        string            `json:"cloud"`
	DataCenterID *string           `json:"dataCenterId"`
	CudaVersion  *string           `json:"cudaVersion"`
	SSH          struct {
		Proxy  *SSHEndpoint `json:"proxy"`
		Direct *SSHEndpoint `json:"direct"`
	} `json:"ssh"`
	Cluster          *PodCluster `json:"cluster,omitempty"`
	Template         *string     `json:"template"`
	Cost             float64     `json:"cost"`
	Locked           bool        `json:"locked"`
	GlobalNetworking struct {
		Enabled     bool    `json:"enabled"`
		IP          *string `json:"ip,omitempty"`
		InternalDNS *string `json:"internalDns,omitempty"`
	} `json:"globalNetworking"`
	Runtime *struct {
		Uptime int           `json:"uptime"`
		Ports  []RuntimePort `json:"ports"`
	} `json:"runtime"`
	CreatedAt string  `json:"createdAt"`
	StartedAt *string `json:"startedAt"`
}

// Problem is the RFC 9457 error body.
type Problem struct {
	Title  string   `json:"title"`
	Status int      `json:"status"`
	Detail string   `json:"detail"`
	Errors []string `json:"errors,omitempty"`
}

// ClusterCompute is an Instant Cluster's size: podCount pods of
// gpuCountPerPod GPUs of one type.
type ClusterCompute struct {
	GPUTypeID      string `json:"gpuTypeId"`
	GPUCountPerPod int    `json:"gpuCountPerPod"`
	PodCount       int    `json:"podCount"`
}

// CreateClusterRequest is the body of POST /v2/clusters; the container
// fields apply to every member pod alike.
type CreateClusterRequest struct {
	Name          string            `json:"name"`
	Type          string            `json:"type,omitempty"` // APPLICATION, TRAINING, SLURM or RAY
	Compute       ClusterCompute    `json:"compute"`
	DataCenterIDs []string          `json:"dataCenterIds,omitempty"`
	StartSSH      bool              `json:"startSsh,omitempty"`
	Image         string            `json:"image"`
	Args          string            `json:"args,omitempty"`
	Disk          int               `json:"disk,omitempty"`
	Ports         []string          `json:"ports,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
}

// Cluster is an Instant Cluster as the API answers it.
type Cluster struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Type         string         `json:"type"`
	Compute      ClusterCompute `json:"compute"`
	DataCenterID *string        `json:"dataCenterId,omitempty"` // omitted until a pod is placed
	Pods         struct {
		Total    int            `json:"total"`
		ByStatus map[string]int `json:"byStatus"`
	} `json:"pods"`
	Network *struct {
		CIDR      string `json:"cidr"`
		VxlanID   *int   `json:"vxlanId,omitempty"`
		VxlanPort *int   `json:"vxlanPort,omitempty"`
	} `json:"network,omitempty"`
	Primary *struct {
		PodID       string  `json:"podId"`
		Status      string  `json:"status"`
		SSHEndpoint *string `json:"sshEndpoint,omitempty"`
	} `json:"primary,omitempty"`
	CreatedAt string `json:"createdAt"`
}

// PodCluster is a member pod's place in its Instant Cluster: rank
// (NODE_RANK; 0 is the primary) and its address on the cluster's private
// overlay. The description allows both to be missing while the cluster
// provisions: rank is "null until the index is assigned", ip "omitted until
// the address is assigned" — so neither is ever read as a zero value.
type PodCluster struct {
	ID   string  `json:"id"`
	Rank *int    `json:"rank"`
	Role *string `json:"role,omitempty"`
	IP   *string `json:"ip,omitempty"`
}
