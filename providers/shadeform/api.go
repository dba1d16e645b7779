package shadeform

// The Shadeform API shapes this adapter reads and writes, named as in the
// published OpenAPI description (1.0.0); testdata/ holds its examples.

// Paths under the server's base URL (which ends in /v1).
const (
	pathTypes     = "/instances/types"
	pathInstances = "/instances"
	pathCreate    = "/instances/create"
)

// Operation names on errors (providers.Error.Op).
const (
	opListOffers  = "ListOffers"
	opPlace       = "PlaceGroup"
	opDescribe    = "DescribeGroup"
	opRestart     = "RestartNode"
	opTerminate   = "TerminateGroup"
	opPlaceNode   = "PlaceNode"
	opReleaseNode = "ReleaseNode"
)

// Instance statuses (Status).
const (
	StatusCreating        = "creating"
	StatusPendingProvider = "pending_provider"
	StatusPending         = "pending"
	StatusActive          = "active"
	StatusError           = "error"
	StatusDeleting        = "deleting"
	StatusDeleted         = "deleted"
)

// Configuration is an instance type's resources.
type Configuration struct {
	MemoryInGB      int      `json:"memory_in_gb"`
	StorageInGB     int      `json:"storage_in_gb"`
	VCPUs           int      `json:"vcpus"`
	NumGPUs         int      `json:"num_gpus"`
	GPUType         string   `json:"gpu_type"`
	Interconnect    string   `json:"interconnect"`
	NVLink          *bool    `json:"nvlink,omitempty"`
	VRAMPerGPUInGB  int      `json:"vram_per_gpu_in_gb"`
	OSOptions       []string `json:"os_options,omitempty"`
	GPUManufacturer string   `json:"gpu_manufacturer"`
	OS              string   `json:"os,omitempty"` // on instances
}

// Availability is one region's yes/no for a type.
type Availability struct {
	Region      string `json:"region"`
	Available   bool   `json:"available"`
	DisplayName string `json:"display_name"`
}

// BootTime is the type's boot time range.
type BootTime struct {
	MinBootInSec int `json:"min_boot_in_sec"`
	MaxBootInSec int `json:"max_boot_in_sec"`
}

// InstanceType is one shape of one upstream cloud; HourlyPrice is US cents per machine-hour.
type InstanceType struct {
	Cloud             string         `json:"cloud"`
	ShadeInstanceType string         `json:"shade_instance_type"`
	CloudInstanceType string         `json:"cloud_instance_type"`
	Configuration     Configuration  `json:"configuration"`
	HourlyPrice       int64          `json:"hourly_price"`
	DeploymentType    string         `json:"deployment_type"`
	Availability      []Availability `json:"availability"`
	BootTime          *BootTime      `json:"boot_time,omitempty"`
}

// ScriptConfiguration carries the start-up script, base64-encoded.
type ScriptConfiguration struct {
	Base64Script string `json:"base64_script"`
}

// LaunchConfiguration is what runs once the instance is active.
type LaunchConfiguration struct {
	Type                string               `json:"type"`
	DockerConfiguration map[string]any       `json:"docker_configuration,omitempty"`
	ScriptConfiguration *ScriptConfiguration `json:"script_configuration,omitempty"`
}

// CreateRequest is the body of POST /instances/create.
type CreateRequest struct {
	Cloud               string               `json:"cloud"`
	Region              string               `json:"region"`
	ShadeInstanceType   string               `json:"shade_instance_type"`
	ShadeCloud          bool                 `json:"shade_cloud"`
	Name                string               `json:"name"`
	OS                  string               `json:"os,omitempty"`
	TemplateID          string               `json:"template_id,omitempty"`
	LaunchConfiguration *LaunchConfiguration `json:"launch_configuration,omitempty"`
	VolumeIDs           []string             `json:"volume_ids,omitempty"`
	SSHKeyID            string               `json:"ssh_key_id,omitempty"`
	AutoDelete          map[string]string    `json:"auto_delete,omitempty"`
	Alert               map[string]string    `json:"alert,omitempty"`
	VolumeMount         map[string]bool      `json:"volume_mount,omitempty"`
	Tags                []string             `json:"tags,omitempty"`
	Envs                []map[string]string  `json:"envs,omitempty"`
}

// PortMapping is an instance's published port.
type PortMapping struct {
	InternalPort int `json:"internal_port"`
	ExternalPort int `json:"external_port"`
}

// Instance is an instance as the API answers it.
type Instance struct {
	ID                  string               `json:"id"`
	Cloud               string               `json:"cloud"`
	Region              string               `json:"region"`
	ShadeInstanceType   string               `json:"shade_instance_type"`
	CloudInstanceType   string               `json:"cloud_instance_type"`
	CloudAssignedID     string               `json:"cloud_assigned_id"`
	ShadeCloud          bool                 `json:"shade_cloud"`
	Name                string               `json:"name"`
	Configuration       Configuration        `json:"configuration"`
	IP                  string               `json:"ip"`
	SSHUser             string               `json:"ssh_user"`
	SSHPort             int                  `json:"ssh_port"`
	Status              string               `json:"status"`
	StatusDetails       string               `json:"status_details,omitempty"`
	CostEstimate        string               `json:"cost_estimate"`
	HourlyPrice         int64                `json:"hourly_price,omitempty"`
	VolumeIDs           []string             `json:"volume_ids,omitempty"`
	SSHKeyID            string               `json:"ssh_key_id,omitempty"`
	LaunchConfiguration *LaunchConfiguration `json:"launch_configuration,omitempty"`
	AutoDelete          map[string]string    `json:"auto_delete,omitempty"`
	Alert               map[string]string    `json:"alert,omitempty"`
	VolumeMount         map[string]bool      `json:"volume_mount,omitempty"`
	Tags                []string             `json:"tags,omitempty"`
	Envs                []map[string]string  `json:"envs,omitempty"`
	PortMappings        []PortMapping        `json:"port_mappings,omitempty"`
	ActiveAt            string               `json:"active_at,omitempty"`
	CreatedAt           string               `json:"created_at"`
	DeletedAt           string               `json:"deleted_at"`
	BootTime            *BootTime            `json:"boot_time,omitempty"`
}

// SSHKey is a registered key.
type SSHKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
	IsDefault bool   `json:"is_default"`
}

// APIError is the error body Shadeform answers with (not in the published
// description; observed: {"error_code":"INSUFFICIENT_FUNDS","error":"..."}).
type APIError struct {
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
}

// Clusters (the published description's /clusters paths). The adapter
// does not place through them: CreateClusterRequest carries no launch
// configuration, so a cluster's machines could not run the start-up script
// that installs and starts the agent. The fake serves them as documented.

// ClusterAvailability is a cluster type's yes/no in its one region.
type ClusterAvailability struct {
	Region      string `json:"region"`
	DisplayName string `json:"display_name"`
	Available   bool   `json:"available"`
}

// ClusterType is one entry of GET /clusters/types: NumInstances machines
// of ClusterType on Cloud in one region.
type ClusterType struct {
	Cloud        string              `json:"cloud"`
	NumInstances int                 `json:"num_instances"`
	Availability ClusterAvailability `json:"availability"`
	ClusterType  InstanceType        `json:"cluster_type"`
}

// CreateClusterRequest is the body of POST /clusters/create.
type CreateClusterRequest struct {
	Name         string `json:"name"`
	Cloud        string `json:"cloud"`
	Region       string `json:"region"`
	ClusterType  string `json:"cluster_type"`
	NumInstances int    `json:"num_instances"`
	SSHKeyID     string `json:"ssh_key_id,omitempty"`
	OS           string `json:"os,omitempty"`
}

// ClusterRegionInfo is a cluster's region.
type ClusterRegionInfo struct {
	Region      string `json:"region"`
	DisplayName string `json:"display_name"`
}

// Cluster is a cluster as GET /clusters and /clusters/{id}/info answer it;
// HourlyPrice is US cents per hour for the whole cluster.
type Cluster struct {
	ID             string            `json:"id"`
	Cloud          string            `json:"cloud"`
	Name           string            `json:"name"`
	CloudClusterID *string           `json:"cloud_cluster_id"`
	RegionInfo     ClusterRegionInfo `json:"region_info"`
	Status         string            `json:"status"`
	StatusDetails  *string           `json:"status_details"`
	CreatedAt      string            `json:"created_at"`
	UpdatedAt      string            `json:"updated_at"`
	Instances      []Instance        `json:"instances"`
	HourlyPrice    int64             `json:"hourly_price"`
	CostEstimate   *string           `json:"cost_estimate"`
	ActiveAt       *string           `json:"active_at"`
}
