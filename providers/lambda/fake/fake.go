// Package fake is an in-memory Lambda Cloud API v1 server for tests: the
// documented paths, methods, Bearer/Basic authentication, request and
// response JSON, error envelopes and codes, and rate-limit answers, over
// state that behaves like the cloud's (instances that boot, restart and
// terminate on a clock; capacity per instance type and region; a quota).
//
// Start it with httptest.NewServer(fake.New(...)); it never leaves loopback.
package fake

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
)

// Cap is a (instance type, region) pair.
type Cap struct{ Type, Region string }

// Fault is a scripted answer to the next request on Path (e.g.
// "/api/v1/instance-operations/launch", matched whole) and Method (empty:
// any); it is used once.
type Fault struct {
	Method     string
	Path       string
	Status     int
	Code       string // error.code; empty sends a body that is not the JSON envelope
	Message    string
	RetryAfter string // Retry-After header, if any
	// Apply carries the request out before answering the fault: the
	// answer is lost, the effect is not (a launch that did happen).
	Apply bool
	// After lets this many requests on Path through first.
	After int
	// Slow moves the test's clock before the answer (the answer took that
	// long); with Status 0 the request is answered as usual.
	Slow func()
}

// Launch is one accepted or refused launch request, for assertions.
type Launch struct {
	At      time.Time
	Request lambda.LaunchRequest
	Status  int
}

// Server is the fake. Exported fields are set before serving; the methods
// are safe to call while it serves (Requests and TooMany, which counts the
// 429 answers the pacing rules sent, come with fakekit.Base).
type Server struct {
	fakekit.Base
	Key     string           // the account's API key
	Now     func() time.Time // the test's clock
	Types   map[string]lambda.InstanceType
	Regions []lambda.Region
	// Capacity is the free machines per (type, region). The catalog lists a
	// region under regions_with_capacity_available when it is above zero; a
	// launch takes one and a termination gives it back.
	Capacity map[Cap]int
	// Quota is the most live instances the account may have (0 = no limit).
	Quota int
	// BootDelay: booting → active; TerminateDelay: terminating → gone;
	// RestartDelay: how long a restart keeps the restart action busy.
	BootDelay, TerminateDelay, RestartDelay time.Duration
	// Unhealthy: a booting machine reports "unhealthy" for this long
	// before "active" (Lambda does during boot; SkyPilot reads it as
	// still starting), its addresses not yet assigned.
	Unhealthy time.Duration
	// LaunchInterval and RequestInterval enforce the documented pacing
	// with 429 answers (0 disables each).
	LaunchInterval, RequestInterval time.Duration
	// Inactive answers 403 global/account-inactive to everything.
	Inactive bool
	// PrivateNet is the first three octets (with the dot) of the private
	// addresses machines get at boot: "10.0.2." when empty. A test whose
	// "machines" are agents on its own host sets a loopback net ("127.0.2."),
	// so their reach checks stay on the host.
	PrivateNet string

	instances  map[string]*instance
	order      []string
	keys       []lambda.SSHKey
	lastLaunch time.Time
	lastAny    time.Time
	launches   []Launch
	seq        int
}

type instance struct {
	lambda.Instance
	userData      string
	trusted       string // the public key of the account key the launch named
	created       time.Time
	terminatedAt  time.Time
	restartUntil  time.Time
	bootUnhealthy bool // "unhealthy" as a stage of its boot (Unhealthy), not forced
	num           int  // addresses: 198.51.100.(1+num), PrivateNet (10.0.2.) + (100+num)
}

// Catalog is a small catalog in the documented shapes (the instance type
// example of the published spec plus two more of Lambda's type names).
func Catalog() (map[string]lambda.InstanceType, []lambda.Region) {
	types := map[string]lambda.InstanceType{
		"gpu_8x_h100_sxm5gdr": {Name: "gpu_8x_h100_sxm5gdr", Description: "8x H100 (80 GB SXM5)", GPUDescription: "H100 (80 GB SXM5)",
			PriceCentsPerHour: 3592, Specs: lambda.InstanceTypeSpecs{VCPUs: 208, MemoryGiB: 1800, StorageGiB: 24780, GPUs: 8}},
		"gpu_1x_a10": {Name: "gpu_1x_a10", Description: "1x A10 (24 GB PCIe)", GPUDescription: "A10 (24 GB PCIe)",
			PriceCentsPerHour: 75, Specs: lambda.InstanceTypeSpecs{VCPUs: 30, MemoryGiB: 200, StorageGiB: 1400, GPUs: 1}},
		"cpu_4x_general": {Name: "cpu_4x_general", Description: "4x CPU", GPUDescription: "None",
			PriceCentsPerHour: 12, Specs: lambda.InstanceTypeSpecs{VCPUs: 4, MemoryGiB: 16, StorageGiB: 100, GPUs: 0}},
	}
	regions := []lambda.Region{
		{Name: "us-east-1", Description: "Virginia, USA"},
		{Name: "us-west-1", Description: "California, USA"},
		{Name: "europe-central-1", Description: "Germany"},
	}
	return types, regions
}

// New returns a fake with the Catalog, one SSH key named "my-public-key",
// the documented pacing and the given key and clock.
func New(key string, now func() time.Time) *Server {
	types, regions := Catalog()
	return &Server{
		Key: key, Now: now, Types: types, Regions: regions, Capacity: map[Cap]int{},
		BootDelay: 3 * time.Minute, TerminateDelay: time.Minute, RestartDelay: 2 * time.Minute,
		LaunchInterval: lambda.LaunchInterval,
		keys:           []lambda.SSHKey{{ID: "0920582c7ff041399e34823a0be62549", Name: "my-public-key", PublicKey: "ssh-ed25519 AAAAC3Nza my-public-key"}},
	}
}

// Inject queues scripted answers.
func (s *Server) Inject(f ...Fault) {
	for _, f := range f {
		k := fakekit.Fault{Method: f.Method, Path: f.Path, Exact: true, Status: f.Status, RetryAfter: f.RetryAfter, Apply: f.Apply, After: f.After, Slow: f.Slow}
		if f.Code != "" { // else a body that is not the JSON envelope
			k.Body = func(w http.ResponseWriter, status int) { fail(w, status, f.Code, f.Message, "") }
		}
		s.Queue(k)
	}
}

// Launches returns every launch request so far.
func (s *Server) Launches() []Launch {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.launches)
}

// UserData returns the user_data the instance was launched with.
func (s *Server) UserData(id string) string {
	s.Lock()
	defer s.Unlock()
	if in, ok := s.instances[id]; ok {
		return in.userData
	}
	return ""
}

// Live returns the instances that are not terminating or gone, by id.
func (s *Server) Live() []lambda.Instance {
	s.Lock()
	defer s.Unlock()
	s.advance()
	var out []lambda.Instance
	for _, id := range s.order {
		if in := s.instances[id]; in.Status != lambda.StatusTerminating && in.Status != lambda.StatusTerminated {
			out = append(out, in.Instance)
		}
	}
	return out
}

// SetStatus forces an instance's status (e.g. "unhealthy", "preempted").
func (s *Server) SetStatus(id, status string) {
	s.Lock()
	defer s.Unlock()
	if in, ok := s.instances[id]; ok {
		in.Status, in.bootUnhealthy = status, false
	}
}

// Trusted returns the account key each live instance was launched with
// (its public key), by instance name; the keys of its user_data come on top.
func (s *Server) Trusted() map[string]string {
	s.Lock()
	defer s.Unlock()
	out := map[string]string{}
	for _, in := range s.instances {
		if in.Status != lambda.StatusTerminating && in.Status != lambda.StatusTerminated {
			out[in.Name] = in.trusted
		}
	}
	return out
}

// AddSSHKey registers a key as if made in Lambda's dashboard.
func (s *Server) AddSSHKey(name, public string) {
	s.Lock()
	defer s.Unlock()
	s.keys = append(s.keys, lambda.SSHKey{ID: s.id(), Name: name, PublicKey: public})
}

// SSHKeys returns the account's keys.
func (s *Server) SSHKeys() []lambda.SSHKey {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.keys)
}

// instanceRe is getInstance's path; an id that is not one of Lambda's is
// answered as the description says of any unknown instance (404,
// global/object-does-not-exist).
var instanceRe = regexp.MustCompile(`^/api/v1/instances/([^/]+)$`)

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Lock()
	defer s.Unlock()
	s.Count(r.Method, r.URL.Path)
	now := s.Now()
	s.advance()
	if !s.authorized(r) {
		fail(w, http.StatusUnauthorized, "global/invalid-api-key", "API key was invalid, expired, or deleted.",
			"Check your API key or create a new one, then try again.")
		return
	}
	if s.Inactive {
		fail(w, http.StatusForbidden, "global/account-inactive", "Your account is inactive.",
			"Make sure you have verified your email address and have a valid payment method. Contact Support if problems continue.")
		return
	}
	if s.Scripted(w, r.Method, r.URL.Path, func(w http.ResponseWriter) { s.route(w, r, now) }) {
		return
	}
	s.route(w, r, now)
}

// route answers a request on its path.
func (s *Server) route(w http.ResponseWriter, r *http.Request, now time.Time) {
	// Lambda does not document its rate-limit answer; SkyPilot handles 429,
	// which is what this fake sends, with Retry-After in seconds.
	if s.RequestInterval > 0 && !s.lastAny.IsZero() && now.Sub(s.lastAny) < s.RequestInterval {
		s.tooMany(w, s.RequestInterval-now.Sub(s.lastAny))
		return
	}
	s.lastAny = now
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/instance-types":
		s.listTypes(w)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/regions":
		s.ok(w, s.Regions)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/instances":
		s.listInstances(w)
	case r.Method == http.MethodGet && instanceRe.MatchString(r.URL.Path):
		s.getInstance(w, instanceRe.FindStringSubmatch(r.URL.Path)[1])
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/instance-operations/launch":
		s.launch(w, r, now)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/instance-operations/restart":
		s.restart(w, r, now)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/instance-operations/terminate":
		s.terminate(w, r, now)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/ssh-keys":
		s.ok(w, s.keys)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/ssh-keys":
		s.addKey(w, r)
	default:
		fail(w, http.StatusNotFound, "global/not-found", "The requested resource was not found.", "")
	}
}

// authorized accepts "Bearer KEY" and Basic with the key as user and an
// empty password, as documented.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(h, "Bearer "); ok {
		return k == s.Key
	}
	if b, ok := strings.CutPrefix(h, "Basic "); ok {
		dec, err := base64.StdEncoding.DecodeString(b)
		return err == nil && string(dec) == s.Key+":"
	}
	return false
}

// ok answers the {"data": …} envelope.
func (s *Server) ok(w http.ResponseWriter, data any) {
	fakekit.JSON(w, http.StatusOK, map[string]any{"data": data})
}

// suggestions are the published description's suggestion for each error
// code whose answer requires one (1.8.3's ApiError* schemas list it as
// required, most with a default): a fault or refusal that names none gets
// this one, so that every answer holds to the schema of its code.
var suggestions = map[string]string{
	"global/invalid-api-key":       "Check your API key or create a new one, then try again.",
	"global/account-inactive":      "Make sure you have verified your email address and have a valid payment method. Contact Support if problems continue.",
	"global/invalid-address":       "Make sure your billing address is valid. Contact Support if problems continue.",
	"global/quota-exceeded":        "Contact Support to increase your quota.",
	"global/internal-error":        "Try again later. Contact Support if the problem persists.",
	"global/object-does-not-exist": "Check the name or ID, then try again.",
}

// messages are the description's default messages, for a fault that
// names none (message is required by every error schema).
var messages = map[string]string{
	"global/invalid-api-key":                           "API key was invalid, expired, or deleted.",
	"global/account-inactive":                          "Your account is inactive.",
	"global/quota-exceeded":                            "Quota exceeded.",
	"global/internal-error":                            "An internal server error occurred.",
	"global/invalid-parameters":                        "Invalid request data.",
	"instance-operations/launch/insufficient-capacity": "Not enough capacity to fulfill launch request.",
}

// fail answers the {"error": …} envelope.
func fail(w http.ResponseWriter, status int, code, message, suggestion string) {
	if message == "" {
		message = cmp.Or(messages[code], "Request failed.")
	}
	e := map[string]string{"code": code, "message": message}
	if suggestion = cmp.Or(suggestion, suggestions[code]); suggestion != "" {
		e["suggestion"] = suggestion
	}
	fakekit.JSON(w, status, map[string]any{"error": e})
}

func (s *Server) tooMany(w http.ResponseWriter, wait time.Duration) {
	s.RefusedTooMany()
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	fail(w, http.StatusTooManyRequests, "global/too-many-requests", "Too many requests.", "")
}

func (s *Server) invalid(w http.ResponseWriter, message string) {
	fail(w, http.StatusBadRequest, "global/invalid-parameters", message, "")
}

// id is a 32-hex-digit id like Lambda's.
func (s *Server) id() string {
	s.seq++
	return fmt.Sprintf("0920582c7ff041399e34823a%08x", s.seq)
}

// advance moves every instance along its lifecycle to Now.
func (s *Server) advance() {
	now := s.Now()
	for _, id := range s.order {
		in := s.instances[id]
		switch {
		case in.Status == lambda.StatusBooting && s.Unhealthy > 0 && !now.Before(in.created.Add(s.BootDelay)) &&
			now.Before(in.created.Add(s.BootDelay+s.Unhealthy)):
			in.Status, in.bootUnhealthy = lambda.StatusUnhealthy, true
		case (in.Status == lambda.StatusBooting || in.Status == lambda.StatusUnhealthy && in.bootUnhealthy) &&
			!now.Before(in.created.Add(s.BootDelay+s.Unhealthy)):
			in.Status, in.bootUnhealthy = lambda.StatusActive, false
			in.IP = fmt.Sprintf("198.51.100.%d", 1+in.num%250)
			prefix := s.PrivateNet
			if prefix == "" {
				prefix = "10.0.2."
			}
			in.PrivateIP = fmt.Sprintf("%s%d", prefix, 100+in.num%150)
			in.Hostname = in.IP
			in.JupyterURL = "https://jupyter-" + in.ID + ".lambdaspaces.com/?token=" + in.JupyterToken
		case in.Status == lambda.StatusTerminating && !now.Before(in.terminatedAt.Add(s.TerminateDelay)):
			in.Status = lambda.StatusTerminated
		}
		in.Actions = s.actions(in, now)
	}
	// Terminated instances leave the account's list a while later.
	keep := s.order[:0]
	for _, id := range s.order {
		in := s.instances[id]
		if in.Status == lambda.StatusTerminated && !now.Before(in.terminatedAt.Add(2*s.TerminateDelay)) {
			delete(s.instances, id)
			continue
		}
		keep = append(keep, id)
	}
	s.order = keep
}

func (s *Server) actions(in *instance, now time.Time) lambda.InstanceActions {
	yes := lambda.ActionAvailability{Available: true}
	no := func(code, why string) lambda.ActionAvailability {
		return lambda.ActionAvailability{ReasonCode: code, ReasonDescription: why}
	}
	switch {
	case in.Status == lambda.StatusBooting:
		n := no("vm-has-not-launched", "The instance has not launched yet.")
		return lambda.InstanceActions{Migrate: n, Rebuild: n, Restart: n, ColdReboot: n, Terminate: yes}
	case in.Status == lambda.StatusTerminating || in.Status == lambda.StatusTerminated:
		n := no("vm-is-terminating", "The instance is terminating.")
		return lambda.InstanceActions{Migrate: n, Rebuild: n, Restart: n, ColdReboot: n, Terminate: n}
	case now.Before(in.restartUntil):
		n := no("vm-action-in-progress", "An action is in progress.")
		return lambda.InstanceActions{Migrate: n, Rebuild: n, Restart: n, ColdReboot: n, Terminate: yes}
	}
	return lambda.InstanceActions{Migrate: yes, Rebuild: yes, Restart: yes, ColdReboot: yes, Terminate: yes}
}

func (s *Server) listTypes(w http.ResponseWriter) {
	out := map[string]lambda.InstanceTypesItem{}
	for name, t := range s.Types {
		item := lambda.InstanceTypesItem{InstanceType: t, RegionsWithCapacityAvailable: []lambda.Region{}}
		for _, r := range s.Regions {
			if s.Capacity[Cap{name, r.Name}] > 0 {
				item.RegionsWithCapacityAvailable = append(item.RegionsWithCapacityAvailable, r)
			}
		}
		out[name] = item
	}
	s.ok(w, out)
}

func (s *Server) listInstances(w http.ResponseWriter) {
	out := []lambda.Instance{}
	for _, id := range s.order {
		out = append(out, s.instances[id].Instance)
	}
	s.ok(w, out)
}

func (s *Server) getInstance(w http.ResponseWriter, id string) {
	in, ok := s.instances[id]
	if !ok {
		s.notFound(w, id)
		return
	}
	s.ok(w, in.Instance)
}

func (s *Server) notFound(w http.ResponseWriter, id string) {
	fail(w, http.StatusNotFound, "global/object-does-not-exist", "Specified instance does not exist: "+id, "")
}

var (
	tagKeyRe   = regexp.MustCompile(`^[a-z][a-z0-9-:]+$`)
	hostnameRe = regexp.MustCompile(`^[a-z0-9][0-9a-z-]{0,62}$`)
)

func (s *Server) launch(w http.ResponseWriter, r *http.Request, now time.Time) {
	var req lambda.LaunchRequest
	record := func(status int) { s.launches = append(s.launches, Launch{At: now, Request: req, Status: status}) }
	if s.LaunchInterval > 0 && !s.lastLaunch.IsZero() && now.Sub(s.lastLaunch) < s.LaunchInterval {
		record(http.StatusTooManyRequests)
		s.tooMany(w, s.LaunchInterval-now.Sub(s.lastLaunch))
		return
	}
	s.lastLaunch = now
	if err := fakekit.Decode(r, &req); err != nil {
		record(http.StatusBadRequest)
		s.invalid(w, "Invalid request body: "+err.Error())
		return
	}
	status, code, msg := s.checkLaunch(req)
	record(status)
	if status != http.StatusOK {
		fail(w, status, code, msg, "")
		return
	}
	s.Capacity[Cap{req.InstanceTypeName, req.RegionName}]--
	id := s.id()
	region := s.region(req.RegionName)
	in := &instance{Instance: lambda.Instance{ID: id, Name: req.Name, Status: lambda.StatusBooting,
		SSHKeyNames: req.SSHKeyNames, FileSystemNames: []string{}, Region: region,
		InstanceType: s.Types[req.InstanceTypeName], Tags: req.Tags,
		JupyterToken: strings.Repeat("0", 32)},
		userData: req.UserData, created: now, num: s.seq}
	for _, k := range s.keys {
		if k.Name == req.SSHKeyNames[0] {
			in.trusted = k.PublicKey // Lambda installs the named key at launch
		}
	}
	in.Actions = s.actions(in, now)
	if s.instances == nil {
		s.instances = map[string]*instance{}
	}
	s.instances[id] = in
	s.order = append(s.order, id)
	s.ok(w, lambda.LaunchResponse{InstanceIDs: []string{id}})
}

// checkLaunch validates a launch as the documented schema and error table say.
func (s *Server) checkLaunch(req lambda.LaunchRequest) (int, string, string) {
	bad := func(m string) (int, string, string) { return http.StatusBadRequest, "global/invalid-parameters", m }
	if req.RegionName == "" || req.InstanceTypeName == "" {
		return bad("region_name and instance_type_name are required")
	}
	if len(req.SSHKeyNames) != 1 {
		return bad("Exactly one SSH key must be specified")
	}
	if len(req.Name) > 64 {
		return bad("name must be 64 characters or fewer")
	}
	if req.Hostname != "" && !hostnameRe.MatchString(req.Hostname) {
		return bad("invalid hostname")
	}
	if len(req.UserData) > 1<<20 {
		return bad("user_data cannot exceed 1MB")
	}
	for _, t := range req.Tags {
		if !tagKeyRe.MatchString(t.Key) || len(t.Key) > 55 || len(t.Value) > 128 {
			return bad("invalid tag " + t.Key)
		}
	}
	if _, ok := s.Types[req.InstanceTypeName]; !ok {
		return bad("Invalid instance type " + req.InstanceTypeName)
	}
	if s.region(req.RegionName).Name == "" {
		return bad("Invalid region " + req.RegionName)
	}
	if !slices.ContainsFunc(s.keys, func(k lambda.SSHKey) bool { return k.Name == req.SSHKeyNames[0] }) {
		return http.StatusBadRequest, "global/object-does-not-exist", "Specified SSH key does not exist: " + req.SSHKeyNames[0]
	}
	if s.Quota > 0 {
		live := 0
		for _, in := range s.instances {
			if in.Status != lambda.StatusTerminated && in.Status != lambda.StatusTerminating {
				live++
			}
		}
		if live >= s.Quota {
			return http.StatusBadRequest, "global/quota-exceeded", "Quota exceeded"
		}
	}
	if s.Capacity[Cap{req.InstanceTypeName, req.RegionName}] <= 0 {
		return http.StatusBadRequest, "instance-operations/launch/insufficient-capacity", "Not enough capacity to fulfill launch request."
	}
	return http.StatusOK, "", ""
}

func (s *Server) region(name string) lambda.Region {
	for _, r := range s.Regions {
		if r.Name == name {
			return r
		}
	}
	return lambda.Region{}
}

func (s *Server) ids(w http.ResponseWriter, r *http.Request) ([]*instance, bool) {
	var req lambda.InstanceIDs
	if err := fakekit.Decode(r, &req); err != nil || len(req.InstanceIDs) == 0 {
		s.invalid(w, "instance_ids is required")
		return nil, false
	}
	var out []*instance
	for _, id := range req.InstanceIDs {
		in, ok := s.instances[id]
		if !ok || in.Status == lambda.StatusTerminated {
			s.notFound(w, id)
			return nil, false
		}
		out = append(out, in)
	}
	return out, true
}

func (s *Server) restart(w http.ResponseWriter, r *http.Request, now time.Time) {
	ins, ok := s.ids(w, r)
	if !ok {
		return
	}
	for _, in := range ins {
		if !in.Actions.Restart.Available {
			fail(w, http.StatusConflict, "global/conflict", "The request conflicts with the current state of the resource.", "")
			return
		}
	}
	out := []lambda.Instance{}
	for _, in := range ins {
		in.restartUntil = now.Add(s.RestartDelay)
		in.Actions = s.actions(in, now)
		out = append(out, in.Instance)
	}
	s.ok(w, map[string]any{"restarted_instances": out})
}

func (s *Server) terminate(w http.ResponseWriter, r *http.Request, now time.Time) {
	ins, ok := s.ids(w, r)
	if !ok {
		return
	}
	out := []lambda.Instance{}
	for _, in := range ins {
		if in.Status != lambda.StatusTerminating {
			in.Status = lambda.StatusTerminating
			in.terminatedAt = now
			s.Capacity[Cap{in.InstanceType.Name, in.Region.Name}]++
		}
		in.Actions = s.actions(in, now)
		out = append(out, in.Instance)
	}
	s.ok(w, map[string]any{"terminated_instances": out})
}

func (s *Server) addKey(w http.ResponseWriter, r *http.Request) {
	var req lambda.SSHKey
	if err := fakekit.Decode(r, &req); err != nil || req.Name == "" || req.ID != "" {
		s.invalid(w, "name is required")
		return
	}
	for _, k := range s.keys {
		if k.Name == req.Name {
			fail(w, http.StatusBadRequest, "global/duplicate", "An SSH key with this name already exists.", "")
			return
		}
	}
	k := lambda.SSHKey{ID: s.id(), Name: req.Name, PublicKey: req.PublicKey}
	s.keys = append(s.keys, k)
	s.ok(w, k)
}

// SetCapacity sets the free machines of a type in a region.
func (s *Server) SetCapacity(typ, region string, n int) {
	s.Lock()
	defer s.Unlock()
	s.Capacity[Cap{Type: typ, Region: region}] = n
}

// Free returns the free machines of a type in a region.
func (s *Server) Free(typ, region string) int {
	s.Lock()
	defer s.Unlock()
	return s.Capacity[Cap{Type: typ, Region: region}]
}
