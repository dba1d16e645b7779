// Package fake is an in-memory Shadeform API server for tests: the
// documented paths and methods (mutations are POST .../<verb>), the
// X-API-KEY header, request and response JSON, and state that behaves like
// the service's: instances go creating → pending_provider → pending →
// active on a clock, with their address and SSH port only once active;
// delete moves them to deleting, then they leave /instances; availability
// per (cloud, type, region) decides both the catalog and the create.
//
// Shadeform documents no error bodies, statuses or rate limits. The fake
// answers with the one body shape seen from the service
// ({"error_code": ..., "error": ...}): 409 INSUFFICIENT_FUNDS (observed),
// 409 OUT_OF_CAPACITY, 400 INVALID_REQUEST, 401 UNAUTHORIZED, 404
// NOT_FOUND, and 429 with Retry-After when PerMinute is set.
//
// Clusters are served as the description has them: GET /clusters/types
// lists ClusterOffers (num_instances machines of a type on a cloud in one
// region, available while the region has that many free), POST
// /clusters/create places every instance or none (409 OUT_OF_CAPACITY),
// GET /clusters and /clusters/{id}/info answer the cluster with its
// instances (which boot like any other and are listed by /instances too),
// and POST /clusters/{id}/delete moves the cluster and its instances to
// deleting.
//
// Its lists are not paginated, as the published description's are not.
//
// Start it with httptest.NewServer(fake.New(...)); it never leaves loopback.
package fake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
)

// NotDeleted is deleted_at of an instance that is not deleted.
const NotDeleted = "0001-01-01T00:00:00Z"

// Cap is a (cloud, shade instance type, region) triple.
type Cap struct{ Cloud, Type, Region string }

// Fault is a scripted answer to a request whose path (under /v1) starts
// with Path, and whose method is Method (empty: any); it is used once.
type Fault struct {
	Method     string
	Path       string
	Status     int
	ErrorCode  string // empty sends a body that is not JSON
	Error      string
	Apply      bool // carry the request out first: the answer is lost, the effect is not
	After      int  // let this many matching requests through first
	RetryAfter string
	// Slow moves the test's clock before the answer (the answer took that
	// long); with Status 0 the request is answered as usual.
	Slow func()
}

// ClusterOffer is a cluster type the fake sells: NumInstances machines of
// Type on Cloud in Region.
type ClusterOffer struct {
	Cloud, Type, Region string
	NumInstances        int
}

// Server is the fake. Exported fields are set before serving (Requests,
// of "METHOD /path" under /v1, and TooMany come with fakekit.Base).
type Server struct {
	fakekit.Base
	Key   string
	Now   func() time.Time
	Types []shadeform.InstanceType // availability is computed from Capacity
	// Capacity is the free machines per (cloud, type, region).
	Capacity map[Cap]int
	// Broke answers creates 409 INSUFFICIENT_FUNDS.
	Broke bool
	// BootDelay: create → active; DeleteDelay: deleting → gone.
	BootDelay, DeleteDelay time.Duration
	// AddressDelay (0 = none): an instance reads active this long before
	// its ip and ssh_port are there (a client must wait for both, as
	// SkyPilot's does).
	AddressDelay time.Duration
	// PerMinute (0 = none): beyond it, 429 with Retry-After.
	PerMinute int
	// ClusterOffers are the cluster types listed by /clusters/types.
	ClusterOffers []ClusterOffer

	instances map[string]*instance
	order     []string
	keys      []shadeform.SSHKey
	creates   []shadeform.CreateRequest
	clusters  map[string]*cluster
	corder    []string
	ccreates  []shadeform.CreateClusterRequest
	seq       int
}

type cluster struct {
	shadeform.Cluster
	members   []string // instance ids
	deletedAt time.Time
}

type instance struct {
	shadeform.Instance
	created, deletedAt time.Time
	num                int
	// trusted is the account key the create installed: the one it named,
	// else the account's default.
	trusted string
}

// ManagedKey stands for Shadeform's managed key, the account's default
// while no key of its own is registered.
// (its id ManagedKeyID).
const ManagedKey, ManagedKeyID = "shadeform-managed-key", "00000000-0000-4000-8000-5ade0f000000"

// Trusted returns the account key each live machine was created with, by
// machine name (the keys of its start-up script come on top).
func (s *Server) Trusted() map[string]string {
	s.Lock()
	defer s.Unlock()
	out := map[string]string{}
	for _, in := range s.instances {
		if in.Status != shadeform.StatusDeleted {
			out[in.Name] = in.trusted
		}
	}
	return out
}

// AddSSHKey registers a key with id on the account, as its holder would.
func (s *Server) AddSSHKey(id, name, pub string) {
	s.Lock()
	defer s.Unlock()
	s.keys = append(s.keys, shadeform.SSHKey{ID: id, Name: name, PublicKey: pub, IsDefault: len(s.keys) == 0})
}

// Catalog is the spec's instance type example (hyperstack A6000) plus an
// 8-GPU H100 type of two clouds.
func Catalog() []shadeform.InstanceType {
	nv := true
	a6000 := shadeform.InstanceType{Cloud: "hyperstack", ShadeInstanceType: "A6000", CloudInstanceType: "gpu_1x_a6000",
		Configuration: shadeform.Configuration{MemoryInGB: 12, StorageInGB: 256, VCPUs: 6, NumGPUs: 1, GPUType: "A6000",
			Interconnect: "pcie", NVLink: &nv, VRAMPerGPUInGB: 48, OSOptions: []string{"ubuntu22.04_cuda12.2_shade_os"}, GPUManufacturer: "nvidia"},
		HourlyPrice: 210, DeploymentType: "vm", BootTime: &shadeform.BootTime{MinBootInSec: 180, MaxBootInSec: 300}}
	h100 := func(cloud string, cents int64) shadeform.InstanceType {
		return shadeform.InstanceType{Cloud: cloud, ShadeInstanceType: "H100_sxm5x8", CloudInstanceType: "gpu_8x_h100_sxm5",
			Configuration: shadeform.Configuration{MemoryInGB: 1800, StorageInGB: 20000, VCPUs: 208, NumGPUs: 8, GPUType: "H100",
				Interconnect: "sxm5", NVLink: &nv, VRAMPerGPUInGB: 80, OSOptions: []string{"ubuntu22.04_cuda12.2_shade_os"}, GPUManufacturer: "nvidia"},
			HourlyPrice: cents, DeploymentType: "vm", BootTime: &shadeform.BootTime{MinBootInSec: 300, MaxBootInSec: 600}}
	}
	return []shadeform.InstanceType{a6000, h100("lambdalabs", 2392), h100("hyperstack", 1904)}
}

// Regions are the regions every type is listed in, with display names.
var Regions = map[string]string{"canada-1": "Canada, Montreal", "us-central-1": "US, Wichita, KS", "us-east-1": "US, Virginia"}

// New returns a fake with the Catalog and no capacity.
func New(key string, now func() time.Time) *Server {
	return &Server{Key: key, Now: now, Types: Catalog(), Capacity: map[Cap]int{}, BootDelay: 5 * time.Minute, DeleteDelay: time.Minute}
}

// Inject queues scripted answers.
func (s *Server) Inject(f ...Fault) {
	for _, f := range f {
		k := fakekit.Fault{Method: f.Method, Path: f.Path, Status: f.Status, RetryAfter: f.RetryAfter, Apply: f.Apply, After: f.After, Slow: f.Slow}
		if f.ErrorCode != "" { // else a body that is not JSON
			k.Body = func(w http.ResponseWriter, status int) { fail(w, status, f.ErrorCode, f.Error) }
		}
		s.Queue(k)
	}
}

// Creates returns every accepted create body.
func (s *Server) Creates() []shadeform.CreateRequest {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.creates)
}

// ClusterCreates returns every accepted cluster create body.
func (s *Server) ClusterCreates() []shadeform.CreateClusterRequest {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.ccreates)
}

// Script returns the decoded start-up script an instance was created with.
func (s *Server) Script(id string) string {
	s.Lock()
	defer s.Unlock()
	in, ok := s.instances[id]
	if !ok || in.LaunchConfiguration == nil || in.LaunchConfiguration.ScriptConfiguration == nil {
		return ""
	}
	b, _ := base64.StdEncoding.DecodeString(in.LaunchConfiguration.ScriptConfiguration.Base64Script)
	return string(b)
}

// Live returns the instances not deleting or gone.
func (s *Server) Live() []shadeform.Instance {
	s.Lock()
	defer s.Unlock()
	var out []shadeform.Instance
	for _, id := range s.order {
		if in, ok := s.instances[id]; ok {
			s.advance(in)
			if in.Status != shadeform.StatusDeleting && in.Status != shadeform.StatusDeleted {
				out = append(out, in.Instance)
			}
		}
	}
	return out
}

// SetStatus forces an instance's status (e.g. "error").
func (s *Server) SetStatus(id, status string) {
	s.Lock()
	defer s.Unlock()
	if in, ok := s.instances[id]; ok {
		in.Status, in.created = status, time.Time{}
	}
}

// SSHKeys returns the account's keys.
func (s *Server) SSHKeys() []shadeform.SSHKey {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.keys)
}

func (s *Server) advance(in *instance) {
	now := s.Now()
	if !in.deletedAt.IsZero() {
		if now.Sub(in.deletedAt) >= s.DeleteDelay {
			delete(s.instances, in.ID)
		}
		return
	}
	if in.created.IsZero() || in.Status == shadeform.StatusActive && in.IP != "" {
		return
	}
	age := now.Sub(in.created)
	switch {
	case age >= s.BootDelay+s.AddressDelay:
		in.Status = shadeform.StatusActive
		in.IP = fmt.Sprintf("203.0.113.%d", 10+in.num)
		in.SSHPort = 22
		in.ActiveAt = in.created.Add(s.BootDelay).UTC().Format(time.RFC3339)
	case age >= s.BootDelay:
		in.Status = shadeform.StatusActive // its address is still to come
		in.ActiveAt = in.created.Add(s.BootDelay).UTC().Format(time.RFC3339)
	case age >= 2*s.BootDelay/3:
		in.Status = shadeform.StatusPending
	case age >= s.BootDelay/3:
		in.Status = shadeform.StatusPendingProvider
	}
}

// fail answers the one error body seen from the service.
func fail(w http.ResponseWriter, status int, code, msg string) {
	fakekit.JSON(w, status, shadeform.APIError{ErrorCode: code, Error: msg})
}

func reply(w http.ResponseWriter, v any) { fakekit.JSON(w, http.StatusOK, v) }

// ServeHTTP answers the API (under /v1).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Lock()
	defer s.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	s.Count(r.Method, path)
	if r.Header.Get("X-API-KEY") != s.Key || s.Key == "" {
		fail(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid API key")
		return
	}
	if s.PerMinute > 0 {
		if _, reset, ok := s.Window(s.Now(), s.PerMinute); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(reset))
			fail(w, http.StatusTooManyRequests, "RATE_LIMITED", "too many requests")
			return
		}
	}
	if s.Scripted(w, r.Method, path, func(w http.ResponseWriter) { s.route(w, r, path) }) {
		return
	}
	s.route(w, r, path)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, path string) {
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	switch {
	case path == "/instances/types" && get:
		s.listTypes(w, r)
	case path == "/instances" && get:
		out := []shadeform.Instance{}
		for _, id := range s.order {
			if in, ok := s.instances[id]; ok {
				s.advance(in)
				if _, still := s.instances[id]; still {
					out = append(out, in.Instance)
				}
			}
		}
		reply(w, map[string][]shadeform.Instance{"instances": out})
	case path == "/instances/create" && post:
		s.create(w, r)
	case path == "/clusters/types" && get:
		s.clusterTypes(w)
	case path == "/clusters/create" && post:
		s.createCluster(w, r)
	case path == "/clusters" && get:
		out := []shadeform.Cluster{}
		for _, id := range s.corder {
			if c, ok := s.clusters[id]; ok && s.clusterLive(c) {
				out = append(out, s.clusterView(c))
			}
		}
		reply(w, map[string][]shadeform.Cluster{"clusters": out})
	case strings.HasPrefix(path, "/clusters/"):
		id, verb, _ := strings.Cut(strings.TrimPrefix(path, "/clusters/"), "/")
		c, ok := s.clusters[id]
		if !ok || !s.clusterLive(c) {
			fail(w, 404, "NOT_FOUND", "cluster not found")
			return
		}
		switch {
		case verb == "info" && get:
			reply(w, s.clusterView(c))
		case verb == "delete" && post:
			if c.deletedAt.IsZero() {
				now := s.Now()
				c.deletedAt, c.Status = now, shadeform.StatusDeleting
				for _, mid := range c.members {
					if in, ok := s.instances[mid]; ok && in.deletedAt.IsZero() {
						in.Status, in.deletedAt, in.DeletedAt = shadeform.StatusDeleting, now, now.UTC().Format(time.RFC3339)
						s.Capacity[Cap{in.Cloud, in.ShadeInstanceType, in.Region}]++
					}
				}
			}
			reply(w, nil)
		default:
			fail(w, 404, "NOT_FOUND", "no such route")
		}
	case path == "/sshkeys" && get:
		reply(w, map[string][]shadeform.SSHKey{"ssh_keys": append([]shadeform.SSHKey{}, s.keys...)})
	case path == "/sshkeys/add" && post:
		var in struct {
			Name      string `json:"name"`
			PublicKey string `json:"public_key"`
		}
		if err := fakekit.Decode(r, &in); err != nil || in.Name == "" || !strings.HasPrefix(in.PublicKey, "ssh-") {
			fail(w, 400, "INVALID_REQUEST", "name and a public key are required")
			return
		}
		s.seq++
		id := fmt.Sprintf("78a0dd5a-0000-4000-8000-%012d", s.seq)
		s.keys = append(s.keys, shadeform.SSHKey{ID: id, Name: in.Name, PublicKey: in.PublicKey, IsDefault: len(s.keys) == 0})
		reply(w, map[string]string{"id": id})
	case strings.HasPrefix(path, "/instances/"):
		id, verb, _ := strings.Cut(strings.TrimPrefix(path, "/instances/"), "/")
		in, ok := s.instances[id]
		if ok {
			s.advance(in)
			_, ok = s.instances[id]
		}
		if !ok {
			fail(w, 404, "NOT_FOUND", "instance not found")
			return
		}
		switch {
		case verb == "info" && get:
			reply(w, in.Instance)
		case verb == "delete" && post:
			if in.Status == shadeform.StatusDeleting {
				reply(w, nil)
				return
			}
			in.Status, in.deletedAt = shadeform.StatusDeleting, s.Now()
			in.DeletedAt = s.Now().UTC().Format(time.RFC3339)
			s.Capacity[Cap{in.Cloud, in.ShadeInstanceType, in.Region}]++
			reply(w, nil)
		case verb == "restart" && post:
			if in.Status != shadeform.StatusActive {
				fail(w, 409, "INVALID_STATE", "instance is "+in.Status)
				return
			}
			reply(w, nil) // stays active throughout
		default:
			fail(w, 404, "NOT_FOUND", "no such route")
		}
	default:
		fail(w, 404, "NOT_FOUND", "no such route")
	}
}

func (s *Server) listTypes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []shadeform.InstanceType{}
	regions := make([]string, 0, len(Regions))
	for k := range Regions {
		regions = append(regions, k)
	}
	sort.Strings(regions)
	for _, t := range s.Types {
		if (q.Get("cloud") != "" && q.Get("cloud") != t.Cloud) || (q.Get("shade_instance_type") != "" && q.Get("shade_instance_type") != t.ShadeInstanceType) ||
			(q.Get("gpu_type") != "" && q.Get("gpu_type") != t.Configuration.GPUType) ||
			(q.Get("num_gpus") != "" && q.Get("num_gpus") != strconv.Itoa(t.Configuration.NumGPUs)) {
			continue
		}
		t.Availability = nil
		some := false
		for _, reg := range regions {
			if q.Get("region") != "" && q.Get("region") != reg {
				continue
			}
			a := s.Capacity[Cap{t.Cloud, t.ShadeInstanceType, reg}] > 0
			some = some || a
			t.Availability = append(t.Availability, shadeform.Availability{Region: reg, Available: a, DisplayName: Regions[reg]})
		}
		if q.Get("available") == "true" && !some {
			continue
		}
		out = append(out, t)
	}
	if q.Get("sort") == "price" {
		sort.SliceStable(out, func(a, b int) bool { return out[a].HourlyPrice < out[b].HourlyPrice })
	}
	reply(w, map[string][]shadeform.InstanceType{"instance_types": out})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in shadeform.CreateRequest
	if err := fakekit.Decode(r, &in); err != nil {
		fail(w, 400, "INVALID_REQUEST", err.Error())
		return
	}
	if in.Cloud == "" || in.Region == "" || in.ShadeInstanceType == "" || in.Name == "" {
		fail(w, 400, "INVALID_REQUEST", "cloud, region, shade_instance_type, shade_cloud and name are required")
		return
	}
	k := slices.IndexFunc(s.Types, func(t shadeform.InstanceType) bool {
		return t.Cloud == in.Cloud && t.ShadeInstanceType == in.ShadeInstanceType
	})
	if k < 0 {
		fail(w, 400, "INVALID_REQUEST", "unknown instance type "+in.ShadeInstanceType+" for cloud "+in.Cloud)
		return
	}
	if _, ok := Regions[in.Region]; !ok {
		fail(w, 400, "INVALID_REQUEST", "unknown region "+in.Region)
		return
	}
	if lc := in.LaunchConfiguration; lc != nil && lc.Type == "script" {
		if lc.ScriptConfiguration == nil {
			fail(w, 400, "INVALID_REQUEST", "script_configuration is required with type script")
			return
		}
		if _, err := base64.StdEncoding.DecodeString(lc.ScriptConfiguration.Base64Script); err != nil {
			fail(w, 400, "INVALID_REQUEST", "base64_script is not base64")
			return
		}
	}
	if in.SSHKeyID != "" && !slices.ContainsFunc(s.keys, func(k shadeform.SSHKey) bool { return k.ID == in.SSHKeyID }) {
		fail(w, 400, "INVALID_REQUEST", "unknown ssh_key_id")
		return
	}
	if s.Broke {
		fail(w, 409, "INSUFFICIENT_FUNDS", "Balance must be a minimum of $5 to launch an instance.")
		return
	}
	c := Cap{in.Cloud, in.ShadeInstanceType, in.Region}
	if s.Capacity[c] <= 0 {
		fail(w, 409, "OUT_OF_CAPACITY", "The selected instance is out of capacity in "+in.Region)
		return
	}
	s.Capacity[c]--
	s.seq++
	t := s.Types[k]
	now := s.Now()
	inst := &instance{created: now, num: s.seq}
	inst.ID = fmt.Sprintf("d290f1ee-6c54-4b01-90e6-%012d", s.seq)
	inst.Cloud, inst.Region, inst.ShadeInstanceType, inst.CloudInstanceType = in.Cloud, in.Region, in.ShadeInstanceType, t.CloudInstanceType
	inst.CloudAssignedID = fmt.Sprintf("13b057d7-e266-4869-985f-%012d", s.seq)
	inst.ShadeCloud, inst.Name, inst.Configuration = in.ShadeCloud, in.Name, t.Configuration
	inst.Configuration.OSOptions = nil
	inst.Configuration.OS = "ubuntu22.04_cuda12.2_shade_os"
	inst.SSHUser, inst.Status, inst.CostEstimate, inst.HourlyPrice = "shadeform", shadeform.StatusCreating, "0.0", t.HourlyPrice
	inst.SSHKeyID, inst.LaunchConfiguration, inst.Tags = in.SSHKeyID, in.LaunchConfiguration, in.Tags
	inst.trusted, inst.SSHKeyID = ManagedKey, ManagedKeyID
	for _, k := range s.keys {
		if k.ID == in.SSHKeyID || (in.SSHKeyID == "" && k.IsDefault) {
			inst.trusted, inst.SSHKeyID = k.PublicKey, k.ID
		}
	}
	inst.CreatedAt = now.UTC().Format(time.RFC3339)
	// deleted_at is required and a date-time in the description: an
	// instance not deleted carries the zero time, as Go services send it.
	inst.DeletedAt = NotDeleted
	inst.BootTime = t.BootTime
	if s.instances == nil {
		s.instances = map[string]*instance{}
	}
	s.instances[inst.ID] = inst
	s.order = append(s.order, inst.ID)
	s.creates = append(s.creates, in)
	reply(w, map[string]string{"id": inst.ID})
}

func (s *Server) clusterTypes(w http.ResponseWriter) {
	out := []shadeform.ClusterType{}
	for _, o := range s.ClusterOffers {
		k := slices.IndexFunc(s.Types, func(t shadeform.InstanceType) bool { return t.Cloud == o.Cloud && t.ShadeInstanceType == o.Type })
		if k < 0 {
			continue
		}
		t := s.Types[k]
		t.Availability = []shadeform.Availability{} // required, not nullable: the cluster's own availability says it
		out = append(out, shadeform.ClusterType{Cloud: o.Cloud, NumInstances: o.NumInstances, ClusterType: t,
			Availability: shadeform.ClusterAvailability{Region: o.Region, DisplayName: Regions[o.Region],
				Available: s.Capacity[Cap{o.Cloud, o.Type, o.Region}] >= o.NumInstances}})
	}
	reply(w, map[string][]shadeform.ClusterType{"cluster_types": out})
}

// clusterLive: a deleted cluster leaves the lists once its instances are gone.
func (s *Server) clusterLive(c *cluster) bool {
	if c.deletedAt.IsZero() {
		return true
	}
	if s.Now().Sub(c.deletedAt) >= s.DeleteDelay {
		delete(s.clusters, c.ID)
		return false
	}
	return true
}

// clusterView is the cluster with its instances as they are now: active
// once every instance is.
func (s *Server) clusterView(c *cluster) shadeform.Cluster {
	out := c.Cluster
	out.Instances = []shadeform.Instance{}
	active := true
	for _, id := range c.members {
		if in, ok := s.instances[id]; ok {
			s.advance(in)
			out.Instances = append(out.Instances, in.Instance)
			active = active && in.Status == shadeform.StatusActive
		}
	}
	if c.deletedAt.IsZero() && active && len(out.Instances) > 0 {
		out.Status = shadeform.StatusActive
		at := out.Instances[len(out.Instances)-1].ActiveAt
		out.ActiveAt, out.StatusDetails = &at, nil
	}
	return out
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	var in shadeform.CreateClusterRequest
	if err := fakekit.Decode(r, &in); err != nil {
		fail(w, 400, "INVALID_REQUEST", err.Error())
		return
	}
	if in.Name == "" || in.Cloud == "" || in.Region == "" || in.ClusterType == "" || in.NumInstances < 1 {
		fail(w, 400, "INVALID_REQUEST", "cloud, region, cluster_type, name and num_instances are required")
		return
	}
	o := slices.IndexFunc(s.ClusterOffers, func(o ClusterOffer) bool {
		return o.Cloud == in.Cloud && o.Type == in.ClusterType && o.Region == in.Region && in.NumInstances <= o.NumInstances
	})
	k := slices.IndexFunc(s.Types, func(t shadeform.InstanceType) bool {
		return t.Cloud == in.Cloud && t.ShadeInstanceType == in.ClusterType
	})
	if o < 0 || k < 0 {
		fail(w, 400, "INVALID_REQUEST", fmt.Sprintf("no cluster type %s of %d instances on %s in %s", in.ClusterType, in.NumInstances, in.Cloud, in.Region))
		return
	}
	if in.SSHKeyID != "" && !slices.ContainsFunc(s.keys, func(k shadeform.SSHKey) bool { return k.ID == in.SSHKeyID }) {
		fail(w, 400, "INVALID_REQUEST", "unknown ssh_key_id")
		return
	}
	if s.Broke {
		fail(w, 409, "INSUFFICIENT_FUNDS", "Balance must be a minimum of $5 to launch an instance.")
		return
	}
	cp := Cap{in.Cloud, in.ClusterType, in.Region}
	if s.Capacity[cp] < in.NumInstances {
		fail(w, 409, "OUT_OF_CAPACITY", "The selected cluster is out of capacity in "+in.Region)
		return
	}
	s.seq++
	now := s.Now()
	t := s.Types[k]
	c := &cluster{}
	c.ID = fmt.Sprintf("8eda86fe-0f36-41ed-9837-%012d", s.seq)
	c.Cloud, c.Name, c.RegionInfo = in.Cloud, in.Name, shadeform.ClusterRegionInfo{Region: in.Region, DisplayName: Regions[in.Region]}
	details := "Cluster is provisioning"
	c.Status, c.StatusDetails = shadeform.StatusCreating, &details
	c.CreatedAt, c.UpdatedAt = now.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)
	c.HourlyPrice = t.HourlyPrice * int64(in.NumInstances)
	cost := "0.0"
	c.CostEstimate = &cost
	for i := 0; i < in.NumInstances; i++ {
		s.Capacity[cp]--
		s.seq++
		inst := &instance{created: now, num: s.seq}
		inst.ID = fmt.Sprintf("d290f1ee-6c54-4b01-90e6-%012d", s.seq)
		inst.Cloud, inst.Region, inst.ShadeInstanceType, inst.CloudInstanceType = in.Cloud, in.Region, in.ClusterType, t.CloudInstanceType
		inst.CloudAssignedID = fmt.Sprintf("13b057d7-e266-4869-985f-%012d", s.seq)
		inst.ShadeCloud, inst.Name, inst.Configuration = true, fmt.Sprintf("%s-%d", in.Name, i), t.Configuration
		inst.Configuration.OSOptions = nil
		inst.Configuration.OS = "ubuntu22.04_cuda12.2_shade_os"
		if in.OS != "" {
			inst.Configuration.OS = in.OS
		}
		inst.SSHUser, inst.Status, inst.CostEstimate, inst.HourlyPrice = "shadeform", shadeform.StatusCreating, "0.0", t.HourlyPrice
		inst.SSHKeyID, inst.CreatedAt, inst.BootTime = in.SSHKeyID, now.UTC().Format(time.RFC3339), t.BootTime
		inst.DeletedAt = NotDeleted
		if s.instances == nil {
			s.instances = map[string]*instance{}
		}
		s.instances[inst.ID] = inst
		s.order = append(s.order, inst.ID)
		c.members = append(c.members, inst.ID)
	}
	if s.clusters == nil {
		s.clusters = map[string]*cluster{}
	}
	s.clusters[c.ID] = c
	s.corder = append(s.corder, c.ID)
	s.ccreates = append(s.ccreates, in)
	reply(w, map[string]string{"id": c.ID})
}
