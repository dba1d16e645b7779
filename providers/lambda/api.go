package lambda

// The Lambda Cloud API v1 shapes this adapter reads and writes, named as in
// the published OpenAPI description (v1.10.0); testdata/ holds its examples.

// Paths under the server's base URL.
const (
	pathInstanceTypes = "/api/v1/instance-types"
	pathRegions       = "/api/v1/regions"
	pathInstances     = "/api/v1/instances"
	pathLaunch        = "/api/v1/instance-operations/launch"
	pathRestart       = "/api/v1/instance-operations/restart"
	pathTerminate     = "/api/v1/instance-operations/terminate"
)

// Operation names on errors (providers.Error.Op).
const (
	opListOffers  = "ListOffers"
	opLaunch      = "PlaceGroup"
	opDescribe    = "DescribeGroup"
	opRestart     = "RestartNode"
	opTerminate   = "TerminateGroup"
	opPlaceNode   = "PlaceNode"
	opReleaseNode = "ReleaseNode"
)

// Region is {name, description}, both required.
type Region struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// InstanceTypeSpecs are an instance type's resources.
type InstanceTypeSpecs struct {
	VCPUs      int `json:"vcpus"`
	MemoryGiB  int `json:"memory_gib"`
	StorageGiB int `json:"storage_gib"`
	GPUs       int `json:"gpus"`
}

// InstanceType is one machine shape; its price is per machine-hour in US cents.
type InstanceType struct {
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	GPUDescription    string            `json:"gpu_description"`
	PriceCentsPerHour int64             `json:"price_cents_per_hour"`
	Specs             InstanceTypeSpecs `json:"specs"`
}

// InstanceTypesItem is one value of GET /instance-types' map (keyed by type name).
type InstanceTypesItem struct {
	InstanceType                 InstanceType `json:"instance_type"`
	RegionsWithCapacityAvailable []Region     `json:"regions_with_capacity_available"`
}

// Tag is a key/value pair on an instance. Keys match ^[a-z][a-z0-9-:]+$ (≤ 55).
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ImageSpec names an image by id or by family.
type ImageSpec struct {
	ID     string `json:"id,omitempty"`
	Family string `json:"family,omitempty"`
}

// LaunchRequest is InstanceLaunchRequest (required: region_name,
// instance_type_name, ssh_key_names with exactly one name). It has no
// quantity: one instance per call.
type LaunchRequest struct {
	RegionName       string     `json:"region_name"`
	InstanceTypeName string     `json:"instance_type_name"`
	SSHKeyNames      []string   `json:"ssh_key_names"`
	FileSystemNames  []string   `json:"file_system_names,omitempty"`
	Hostname         string     `json:"hostname,omitempty"`
	Name             string     `json:"name,omitempty"`
	Image            *ImageSpec `json:"image,omitempty"`
	UserData         string     `json:"user_data,omitempty"`
	Tags             []Tag      `json:"tags,omitempty"`
}

// LaunchResponse is InstanceLaunchResponse.
type LaunchResponse struct {
	InstanceIDs []string `json:"instance_ids"`
}

// InstanceIDs is the body of restart and terminate.
type InstanceIDs struct {
	InstanceIDs []string `json:"instance_ids"`
}

// ActionAvailability says whether an operation is possible now.
type ActionAvailability struct {
	Available         bool   `json:"available"`
	ReasonCode        string `json:"reason_code,omitempty"`
	ReasonDescription string `json:"reason_description,omitempty"`
}

// InstanceActions is InstanceActionAvailability.
type InstanceActions struct {
	Migrate    ActionAvailability `json:"migrate"`
	Rebuild    ActionAvailability `json:"rebuild"`
	Restart    ActionAvailability `json:"restart"`
	ColdReboot ActionAvailability `json:"cold_reboot"`
	Terminate  ActionAvailability `json:"terminate"`
}

// Instance statuses (InstanceStatus).
const (
	StatusBooting     = "booting"
	StatusActive      = "active"
	StatusUnhealthy   = "unhealthy"
	StatusTerminated  = "terminated"
	StatusTerminating = "terminating"
	StatusPreempted   = "preempted"
)

// Instance is one machine. ip and private_ip are absent while it boots.
type Instance struct {
	ID              string          `json:"id"`
	Name            string          `json:"name,omitempty"`
	IP              string          `json:"ip,omitempty"`
	PrivateIP       string          `json:"private_ip,omitempty"`
	Status          string          `json:"status"`
	SSHKeyNames     []string        `json:"ssh_key_names"`
	FileSystemNames []string        `json:"file_system_names"`
	Region          Region          `json:"region"`
	InstanceType    InstanceType    `json:"instance_type"`
	Hostname        string          `json:"hostname,omitempty"`
	JupyterToken    string          `json:"jupyter_token,omitempty"`
	JupyterURL      string          `json:"jupyter_url,omitempty"`
	IsReserved      bool            `json:"is_reserved"`
	Actions         InstanceActions `json:"actions"`
	Tags            []Tag           `json:"tags,omitempty"`
}

// Tag returns the value of the tag key, or "".
func (in Instance) Tag(key string) string {
	for _, t := range in.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// SSHKey is one key of the account.
type SSHKey struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	PublicKey string `json:"public_key,omitempty"`
}
