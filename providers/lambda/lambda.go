// Package lambda adapts Lambda's Public Cloud API v1 (on-demand instances)
// to providers.Provider (OP1).
//
// Lambda sells instance types (gpu_8x_h100_sxm5) per region with a yes/no
// capacity signal, and launches one instance per call, at most one launch
// per 12 seconds per account. A group of N machines is therefore N launches
// in one region, each named "<group>-<index>" and tagged with the group and
// the index; when any launch fails, every machine of the group is
// terminated before the error is returned (all or nothing at our level), and
// a retried placement adopts the machines it finds by tag.
package lambda

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// Name is the provider's stable identifier, stored on offers and clusters.
const Name = "lambda"

// DefaultBaseURL is Lambda's production API server.
const DefaultBaseURL = "https://cloud.lambda.ai"

// Tags every machine we launch carries: the group (the cluster id) and its rank.
const (
	TagGroup = "clusterdeck-group"
	TagIndex = "clusterdeck-index"
)

// BootTime is the typical time from launch to a reachable machine: Lambda
// VMs boot in a few minutes; step deadlines are derived from it (L4).
const BootTime = 10 * time.Minute

// SSHUser is the login of Lambda Stack images.
const SSHUser = "ubuntu"

// Config configures the adapter. APIKey is required; every other field has
// a default.
type Config struct {
	APIKey  string   // LAMBDA_API_KEY; sent as a Bearer token, never logged
	BaseURL string   // default DefaultBaseURL
	Regions []string // regions we sell (LAMBDA_REGIONS); empty = every region Lambda lists
	// SSHKeyName is the operator's key, registered in the Lambda account,
	// that every launch names (Lambda requires exactly one). Required to
	// place: customers' keys are never registered on the account; each
	// machine gets its own cluster's keys through its start-up workload.
	SSHKeyName string
	// ImageFamily picks the machine image (default: Lambda's latest Lambda Stack).
	ImageFamily string
	// Agent is how machines fetch the clusterdeck binary in their start-up script.
	Agent AgentInstall

	HTTPClient *http.Client                               // default: own client with timeouts
	Now        func() time.Time                           // default time.Now
	Sleep      func(context.Context, time.Duration) error // default: a timer honouring ctx
	Retries    int                                        // transient retries per request (default 4; negative = none)
	// RequestInterval and LaunchInterval pace requests and launches
	// (default: Lambda's documented 1 s and 12 s).
	RequestInterval, LaunchInterval time.Duration
	Backoff                         time.Duration // first retry delay (default 2 s)
}

// String never shows the key.
func (c Config) String() string {
	return fmt.Sprintf("lambda.Config{BaseURL: %q, Regions: %v, APIKey: [redacted]}", c.BaseURL, c.Regions)
}

// Cloud is the Lambda adapter. It is safe for concurrent use.
type Cloud struct {
	cfg     Config
	c       *cloudkit.Client
	regions map[string]bool // allowed; nil = all
	// A placement is many calls: one group's are serialised.
	locks cloudkit.Locks
	pace  *pacer // the client's
}

// fleet is how Lambda's instances read: tagged with their group and rank.
var fleet = cloudkit.Fleet[Instance]{Provider: Name, Group: func(in Instance) string { return in.Tag(TagGroup) },
	Rank: index, Alive: alive, Node: node, Location: func(in Instance) string { return in.Region.Name }}

var _ providers.Provider = (*Cloud)(nil)

// New returns the adapter for cfg.
func New(cfg Config) (*Cloud, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("lambda: an API key is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.RequestInterval <= 0 {
		cfg.RequestInterval = RequestInterval
	}
	if cfg.LaunchInterval <= 0 {
		cfg.LaunchInterval = LaunchInterval
	}
	if err := cfg.Agent.Validate(); err != nil {
		return nil, fmt.Errorf("lambda: %w", err)
	}
	c := newClient(cfg)
	return &Cloud{cfg: cfg, c: c, pace: c.Pacer.(*pacer), regions: cloudkit.Set(cfg.Regions)}, nil
}

// Name is "lambda".
func (l *Cloud) Name() string { return Name }

// ListOffers returns one offer per instance type with GPUs and allowed
// region. Lambda only says whether a region has capacity for a type, so
// NodesAvailable is nil and Available carries the yes/no (O1). Prices are
// per type (the same in every region), in micro-dollars per GPU-hour.
func (l *Cloud) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	var types map[string]InstanceTypesItem
	if err := l.c.Do(ctx, opListOffers, http.MethodGet, pathInstanceTypes, nil, &types); err != nil {
		return nil, err
	}
	var regions []Region
	if err := l.c.Do(ctx, opListOffers, http.MethodGet, pathRegions, nil, &regions); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	sort.Slice(regions, func(i, j int) bool { return regions[i].Name < regions[j].Name })
	var offers []providers.Offer
	for _, n := range names {
		it := types[n].InstanceType
		if it.Specs.GPUs <= 0 || it.PriceCentsPerHour <= 0 {
			continue // CPU-only shapes are not sold here
		}
		for _, r := range regions {
			if !l.allowed(r.Name) {
				continue
			}
			available := slices.ContainsFunc(types[n].RegionsWithCapacityAvailable, func(c Region) bool { return c.Name == r.Name })
			offers = append(offers, offerFor(it, r, available))
		}
	}
	return offers, nil
}

func (l *Cloud) allowed(region string) bool { return l.regions == nil || l.regions[region] }

// OfferID is the offer handle for an instance type in a region.
func OfferID(instanceType, region string) string { return instanceType + "." + region }

func offerFor(it InstanceType, r Region, available bool) providers.Offer {
	perGPU := cloudkit.PerGPUHour(it.PriceCentsPerHour, it.Specs.GPUs)
	return providers.Offer{
		Provider: Name, OfferID: OfferID(it.Name, r.Name), Location: r.Name, LocationName: r.Description,
		Interconnect: providers.Ethernet, MachineKind: providers.VM, Accelerator: accelerator(it.GPUDescription),
		GPUsPerNode: it.Specs.GPUs, VCPUs: it.Specs.VCPUs, MemoryGB: it.Specs.MemoryGiB, PerGPUHourUSD: perGPU,
		RootDiskGB: it.Specs.StorageGiB, // included in the machine price: DiskGBHourUSD stays 0
		Available:  available, BootTime: BootTime, PublicIPs: true,
	}
}

var gpuDescRe = regexp.MustCompile(`^(?:Tesla )?(.+?)\s*\((\d+) GB`)

// accelerator turns "H100 (80 GB SXM5)" into "H100_80GB".
func accelerator(desc string) string {
	if m := gpuDescRe.FindStringSubmatch(desc); m != nil {
		return strings.ReplaceAll(m[1], " ", "_") + "_" + m[2] + "GB"
	}
	return strings.ReplaceAll(strings.TrimSpace(desc), " ", "_")
}

// PlaceGroup launches req.Count machines of one instance type in
// req.Location, one launch per machine, paced one per 12 s. Machines already
// tagged with the group are adopted (a retry after a crash launches only the
// missing ranks). When any launch fails, every machine of the group is
// terminated and the launch's error returned.
func (l *Cloud) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	typ, err := l.validate(req)
	if err != nil {
		return providers.Group{}, err
	}
	defer l.locks.Lock(req.GroupName)()
	live, err := l.instances(ctx, opLaunch)
	if err != nil {
		return providers.Group{}, err
	}
	have, err := fleet.Adopt(live[req.GroupName], req.Count,
		func(in Instance) bool { return in.InstanceType.Name == typ && in.Region.Name == req.Location },
		func(in Instance, i int) error {
			return cloudkit.Conflict(Name, opLaunch, req.Location, fmt.Sprintf(
				"group %s already has machine %s (%s in %s, rank %d), not part of %d × %s in %s",
				req.GroupName, in.ID, in.InstanceType.Name, in.Region.Name, i, req.Count, typ, req.Location))
		})
	if err != nil {
		return providers.Group{}, err
	}
	if len(have) < req.Count {
		err := l.launchMissing(ctx, req, typ, have)
		switch {
		case err != nil && cloudkit.Undecided(err):
			// Out of the caller's time, or an answer still to come: the
			// machines launched so far carry the group's tags and the next
			// call adopts them and launches the rest (never launched twice,
			// never terminated while wanted).
			return providers.Group{}, cloudkit.Pending(Name, opLaunch, req.Location,
				fmt.Sprintf("%d of %d machines launched (one launch per %s); the next placement launches the rest",
					len(have), req.Count, l.cfg.LaunchInterval), err)
		case err != nil:
			return providers.Group{}, cloudkit.RolledBack(ctx, Name, req.GroupName, err, l.terminate)
		}
	}
	return fleet.Placed(req.GroupName, req.Location, have, req.Count), nil
}

// LaunchRoom is the time a launch's answer is given to arrive: a launch
// is sent only when the caller's deadline leaves this much after its
// paced slot, so that no launch is cut off in flight.
const LaunchRoom = 10 * time.Second

// errOutOfTime: the next launch's slot leaves no LaunchRoom before the
// caller's deadline (undecided: the placement goes on at the next call).
var errOutOfTime = errors.New("the caller's deadline leaves no time for the next launch")

// validate checks what Lambda would refuse, before anything is launched:
// an instance's name has at most 64 characters, and a launch names one
// SSH key.
func (l *Cloud) validate(req providers.PlaceRequest) (string, error) {
	typ, region, ok := strings.Cut(req.OfferID, ".")
	o := cloudkit.Offer{Parsed: ok && typ != "" && region != "", Form: "<instance type>.<region>", Sold: region, MaxName: 64}
	if !l.allowed(region) {
		o.Disabled = "region " + region + " is not enabled (LAMBDA_REGIONS)"
	}
	if l.cfg.SSHKeyName == "" {
		// A key named in a launch is an account key: a customer's would be
		// left registered on the account. Customers' keys reach their own
		// machines in the start-up's workload (the agent installs them).
		o.Refusal = cloudkit.Invalid(Name, opLaunch, req.Location,
			"Lambda names one account SSH key per launch: set LAMBDA_SSH_KEY_NAME to the operator's key (customers' keys are never registered on the account)")
	}
	return typ, cloudkit.Check(Name, opLaunch, "Lambda", req, o)
}

// launchMissing launches every rank not in have, adding what it launched.
func (l *Cloud) launchMissing(ctx context.Context, req providers.PlaceRequest, typ string, have map[int]Instance) error {
	// Launch requests are rate-limited: ask the cheap catalog first, as
	// Lambda advises, and refuse without launching when the region has none.
	var types map[string]InstanceTypesItem
	if err := l.c.Do(ctx, opLaunch, http.MethodGet, pathInstanceTypes, nil, &types); err != nil {
		return err
	}
	item, ok := types[typ]
	if !ok {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opLaunch, Location: req.Location,
			Message: fmt.Sprintf("instance type %q is not sold", typ)}
	}
	if price := item.InstanceType.PriceCentsPerHour * 10_000; req.AboveCeiling(price) {
		return providers.AboveCeiling(Name, opLaunch, req.Location, typ, price, req.MaxMachineHourUSD)
	}
	if !slices.ContainsFunc(item.RegionsWithCapacityAvailable, func(r Region) bool { return r.Name == req.Location }) {
		return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opLaunch, Location: req.Location,
			Code: "instance-operations/launch/insufficient-capacity", Message: fmt.Sprintf("no %s capacity in %s", typ, req.Location)}
	}
	key := l.cfg.SSHKeyName
	for i := 0; i < req.Count; i++ {
		if _, ok := have[i]; ok {
			continue
		}
		if left, ok := cloudkit.TimeLeft(ctx, l.c.Now(), LaunchRoom); ok && l.pace.launchIn() > left {
			return errOutOfTime
		}
		script, err := StartupScript(l.cfg.Agent, req.Agent.ServerURL, req.Agent.Tokens[i], req.Workload())
		if err != nil {
			return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opLaunch, Location: req.Location, Message: err.Error()}
		}
		lr := LaunchRequest{RegionName: req.Location, InstanceTypeName: typ, SSHKeyNames: []string{key},
			Name: cloudkit.MemberName(req.GroupName, i), UserData: script,
			Tags: []Tag{{Key: TagGroup, Value: req.GroupName}, {Key: TagIndex, Value: strconv.Itoa(i)}}}
		if l.cfg.ImageFamily != "" {
			lr.Image = &ImageSpec{Family: l.cfg.ImageFamily}
		}
		in, err := l.launch(ctx, req, lr, i)
		if err != nil {
			return err
		}
		have[i] = in
	}
	return nil
}

// launch launches one machine. After a transient failure the launch may
// have happened: the group's machines are listed before launching again.
func (l *Cloud) launch(ctx context.Context, req providers.PlaceRequest, lr LaunchRequest, i int) (Instance, error) {
	in, err := cloudkit.Create(ctx, l.c, func() (Instance, error) {
		var out LaunchResponse
		if err := l.c.Do(ctx, opLaunch, http.MethodPost, pathLaunch, lr, &out); err != nil {
			return Instance{}, err
		}
		if len(out.InstanceIDs) != 1 {
			return Instance{}, &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: opLaunch,
				Message: fmt.Sprintf("launch answered %d instance ids for one machine", len(out.InstanceIDs))}
		}
		return Instance{ID: out.InstanceIDs[0], Name: lr.Name, Status: StatusBooting, Tags: lr.Tags}, nil
	}, func() (Instance, bool, error) { return l.member(ctx, req.GroupName, i) })
	return in, cloudkit.AtLocation(err, req.Location)
}

// member is the group's live machine of rank i, if any.
func (l *Cloud) member(ctx context.Context, group string, i int) (Instance, bool, error) {
	live, err := l.instances(ctx, opLaunch)
	if err != nil {
		return Instance{}, false, err
	}
	for _, in := range live[group] {
		if j, ok := index(in); ok && j == i && alive(in) {
			return in, true, nil
		}
	}
	return Instance{}, false, nil
}

// instances lists every instance of the account (one call; the endpoint is
// not paginated) by group tag.
func (l *Cloud) instances(ctx context.Context, op string) (map[string][]Instance, error) {
	var all []Instance
	if err := l.c.Do(ctx, op, http.MethodGet, pathInstances, nil, &all); err != nil {
		return nil, err
	}
	return fleet.ByGroup(all), nil
}

// index is the machine's rank from its tag (or, failing that, its name).
func index(in Instance) (int, bool) { return cloudkit.Rank(in.Tag(TagIndex), in.Name) }

// alive: the machine is not on its way out.
func alive(in Instance) bool {
	return in.Status != StatusTerminated && in.Status != StatusTerminating
}

// node maps an instance onto the neutral node.
func node(in Instance, i int) providers.Node {
	n := providers.Node{ID: in.ID, Index: i, PublicHost: in.IP, PrivateIP: in.PrivateIP, SSHUser: SSHUser,
		MachineHourUSD: in.InstanceType.PriceCentsPerHour * 10_000} // the instance's type as Lambda bills it
	if in.IP != "" {
		n.SSHPort = 22
	}
	switch in.Status {
	case StatusBooting:
		n.State = providers.NodePending
	case StatusActive:
		n.State = providers.NodeRunning
		if restarting(in) {
			n.State = providers.NodeRestarting
		}
	case StatusUnhealthy:
		// Lambda reports machines unhealthy for a while during boot (as
		// SkyPilot, which reads it as still starting): pending, so a
		// provisioning machine is held to its step's deadline (L4), and a
		// ready one is not running for the health pass (R1, R2).
		n.State, n.Message = providers.NodePending, "Lambda reports the machine unhealthy (read as still starting until the step's deadline)"
	case StatusPreempted:
		n.State, n.Message = providers.NodeFailed, "Lambda preempted the machine"
	case StatusTerminating, StatusTerminated:
		n.State = providers.NodeTerminated
	default:
		n.State, n.Message = providers.NodePending, "Lambda status "+in.Status
	}
	return n
}

// DescribeGroup reports the group's machines; ErrNotFound when Lambda
// knows none of them.
func (l *Cloud) DescribeGroup(ctx context.Context, groupName string) (providers.Group, error) {
	return providers.DescribeOne(ctx, Name, opDescribe, "machine", groupName, l.DescribeGroups)
}

// DescribeGroups reports many groups with one list call (R1).
func (l *Cloud) DescribeGroups(ctx context.Context, groupNames []string) (map[string]providers.Group, error) {
	// One listing a job tick for every cluster it describes (R1).
	by, err := providers.Remember(ctx, describeMemo{l}, func() (map[string][]Instance, error) { return l.instances(ctx, opDescribe) })
	if err != nil {
		return nil, err
	}
	return fleet.Describe(groupNames, by), nil
}

// RestartNode restarts one machine of the group (POST
// /instance-operations/restart). A machine Lambda no longer knows, or that
// is terminating, is ErrNotFound; a restart Lambda refuses for now (409,
// the machine still boots) is ErrTransient. A restart already under way
// (the instance's restart action unavailable with vm-action-in-progress)
// is success, and the restart is never resent blindly: after a failure
// that may have been carried out (its answer lost) the instance is read,
// and a restart under way is success.
func (l *Cloud) RestartNode(ctx context.Context, groupName, nodeID string) error {
	var in Instance
	read := func() error {
		return l.c.Do(ctx, opRestart, http.MethodGet, pathInstances+"/"+url.PathEscape(nodeID), nil, &in)
	}
	if err := read(); err != nil {
		return err
	}
	if restarting(in) {
		return nil
	}
	if in.Tag(TagGroup) != groupName || !alive(in) {
		return &providers.Error{Class: providers.ErrNotFound, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("machine %s of group %s is gone", nodeID, groupName)}
	}
	if in.Status == StatusPreempted {
		return &providers.Error{Class: providers.ErrUnrecoverable, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("machine %s was preempted", nodeID)}
	}
	var out struct {
		Restarted []Instance `json:"restarted_instances"`
	}
	_, err := cloudkit.Create(ctx, l.c, func() (struct{}, error) {
		return struct{}{}, l.c.Do(ctx, opRestart, http.MethodPost, pathRestart, InstanceIDs{InstanceIDs: []string{nodeID}}, &out)
	}, func() (struct{}, bool, error) {
		if err := read(); err != nil {
			return struct{}{}, false, err
		}
		return struct{}{}, restarting(in), nil
	})
	return err
}

// restarting: a restart of the instance is under way.
func restarting(in Instance) bool {
	return in.Status == StatusActive && !in.Actions.Restart.Available && in.Actions.Restart.ReasonCode == "vm-action-in-progress"
}

// StopNode is refused: Lambda's on-demand instances cannot be stopped
// (its API has restart and terminate, no stop), so the machine keeps
// running and billing. The refusal is ErrUnsupported; only terminating
// the group releases the machines (the stop job does that instead, B6).
func (l *Cloud) StopNode(ctx context.Context, groupName, nodeID string) error {
	return cloudkit.Unsupported(Name, "StopNode", "", "Lambda cannot stop a machine and start it again; terminate the cluster to release it")
}

// PlaceNode is refused: a machine added to a running group, or put in a
// gone one's place with its interconnect address (L10, X5), needs the
// group's private network to take it at that address, which Lambda's
// launch cannot promise. The refusal is ErrUnsupported and launches
// nothing; the join fails and the cluster stays as it was.
func (l *Cloud) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (providers.Node, error) {
	return providers.Node{}, cloudkit.NoPlaceNode(Name, opPlaceNode, "Lambda", req.Location)
}

// ReleaseNode terminates one machine of the group (POST
// /instance-operations/terminate with its id); the others are untouched. A
// machine Lambda no longer knows, of another group or already terminating,
// is success.
func (l *Cloud) ReleaseNode(ctx context.Context, groupName, nodeID string) error {
	defer l.locks.Lock(groupName)()
	var in Instance
	err := l.c.Do(ctx, opReleaseNode, http.MethodGet, pathInstances+"/"+url.PathEscape(nodeID), nil, &in)
	switch {
	case errors.Is(err, providers.ErrNotFound):
		return nil
	case err != nil:
		return err
	case in.Tag(TagGroup) != groupName || !alive(in):
		return nil
	}
	var out struct {
		Terminated []Instance `json:"terminated_instances"`
	}
	err = l.c.Do(ctx, opReleaseNode, http.MethodPost, pathTerminate, InstanceIDs{InstanceIDs: []string{nodeID}}, &out)
	if errors.Is(err, providers.ErrNotFound) {
		return nil // gone meanwhile
	}
	return err
}

// TerminateGroup terminates every live machine of the group in one call. A
// group Lambda does not know, or machines already gone, are success.
func (l *Cloud) TerminateGroup(ctx context.Context, groupName string) error {
	defer l.locks.Lock(groupName)()
	return l.terminate(ctx, groupName)
}

// terminate is TerminateGroup under the group's lock.
func (l *Cloud) terminate(ctx context.Context, groupName string) error {
	by, err := l.instances(ctx, opTerminate)
	if err != nil {
		return err
	}
	var ids []string
	for _, in := range by[groupName] {
		if alive(in) {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var out struct {
		Terminated []Instance `json:"terminated_instances"`
	}
	err = l.c.Do(ctx, opTerminate, http.MethodPost, pathTerminate, InstanceIDs{InstanceIDs: ids}, &out)
	if !errors.Is(err, providers.ErrNotFound) {
		return err
	}
	// One of them went meanwhile: terminate the rest one by one.
	for _, id := range ids {
		err := l.c.Do(ctx, opTerminate, http.MethodPost, pathTerminate, InstanceIDs{InstanceIDs: []string{id}}, &out)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}

// describeMemo names the account's listing in a job tick's providers.Memo.
type describeMemo struct{ cloud *Cloud }

// StopRefusal implements providers.StopRefuser: the customer's Stop is
// refused ahead with this sentence (StopNode is always ErrUnsupported).
func (l *Cloud) StopRefusal() string {
	return "Lambda cannot stop a machine and start it again: terminate the cluster to end its billing."
}
