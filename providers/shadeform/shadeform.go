// Package shadeform adapts Shadeform's API (an aggregator of GPU clouds)
// to providers.Provider (OP1).
//
// Shadeform sells instance types of many upstream clouds, each per region
// with a yes/no availability. Offers keep the upstream cloud (Offer.Upstream
// and the offer id "<cloud>/<shade instance type>/<region>"): a group's
// machines are all of one upstream cloud in one region, so they share its
// network. A group of N machines is N creates, each named "<group>-<index>"
// and tagged with the group and its rank; when a create is refused, every
// machine of the group is deleted before the error is returned (all or
// nothing at our level). A placement that runs out of its caller's time or
// has an answer still to come keeps what it created, and the next one
// adopts it by tag (L3, L7).
//
// Shadeform cannot stop a machine: StopNode is refused.
package shadeform

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// Name is the provider's stable identifier.
const Name = "shadeform"

// DefaultBaseURL is Shadeform's API server.
const DefaultBaseURL = "https://api.shadeform.ai/v1"

// Tag prefixes every machine we create carries: its group and its rank.
const (
	TagGroup = "clusterdeck-group="
	TagIndex = "clusterdeck-index="
)

// DefaultBootTime is used when a type does not say.
const DefaultBootTime = 10 * time.Minute

// Config configures the adapter. APIKey and Agent.URL are required.
type Config struct {
	APIKey  string   // SHADEFORM_API_KEY; sent as X-API-KEY, never logged
	BaseURL string   // default DefaultBaseURL
	Clouds  []string // SHADEFORM_CLOUDS: upstream clouds sold; empty = all
	Regions []string // SHADEFORM_REGIONS: regions sold; empty = all
	Agent   bootstrap.AgentInstall
	// SSHKeyID is the operator's Shadeform key (SHADEFORM_SSH_KEY_ID)
	// every create names; empty = the account's default key. Customers'
	// keys are never registered on the account: each machine gets its own
	// cluster's keys from its start-up (the agent installs them).
	SSHKeyID string

	HTTPClient *http.Client
	Now        func() time.Time
	Sleep      func(context.Context, time.Duration) error
	Retries    int           // transient retries per request (default 4; negative = none)
	Backoff    time.Duration // first retry delay (default 2 s)
}

// String never shows the key.
func (c Config) String() string {
	return fmt.Sprintf("shadeform.Config{BaseURL: %q, Clouds: %v, Regions: %v, APIKey: [redacted]}", c.BaseURL, c.Clouds, c.Regions)
}

// Cloud is the Shadeform adapter. It is safe for concurrent use.
type Cloud struct {
	cfg     Config
	c       *cloudkit.Client
	clouds  map[string]bool
	regions map[string]bool
	locks   cloudkit.Locks
}

var _ providers.Provider = (*Cloud)(nil)

// fleet is how Shadeform's instances read: tagged with their group and rank.
var fleet = cloudkit.Fleet[Instance]{Provider: Name, Group: func(in Instance) string { return tag(in, TagGroup) },
	Rank: index, Alive: alive, Node: node, Location: func(in Instance) string { return in.Region }}

// New returns the adapter for cfg.
func New(cfg Config) (*Cloud, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("shadeform: an API key is required")
	}
	if err := cfg.Agent.Validate(); err != nil {
		return nil, fmt.Errorf("shadeform: %w", err)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	return &Cloud{cfg: cfg, clouds: cloudkit.Set(cfg.Clouds), regions: cloudkit.Set(cfg.Regions), c: newClient(cfg)}, nil
}

// Name is "shadeform".
func (s *Cloud) Name() string { return Name }

// OfferID is "<cloud>/<shade instance type>/<region>".
func OfferID(cloud, typ, region string) string { return cloud + "/" + typ + "/" + region }

func parseOfferID(id string) (cloud, typ, region string, ok bool) {
	p := strings.Split(id, "/")
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return "", "", "", false
	}
	return p[0], p[1], p[2], true
}

func (s *Cloud) allowed(cloud, region string) bool {
	return (s.clouds == nil || s.clouds[cloud]) && (s.regions == nil || s.regions[region])
}

func (s *Cloud) types(ctx context.Context, op string, q url.Values) ([]InstanceType, error) {
	path := pathTypes
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out struct {
		InstanceTypes []InstanceType `json:"instance_types"`
	}
	if err := s.c.Do(ctx, op, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return out.InstanceTypes, nil
}

// ListOffers returns one offer per upstream cloud, instance type and
// region. Shadeform only says whether a region has the type, so
// NodesAvailable is nil and Available carries the yes/no (O1); the price
// is the type's, per machine-hour in cents, turned into micro-dollars per
// GPU-hour.
func (s *Cloud) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	types, err := s.types(ctx, opListOffers, nil)
	if err != nil {
		return nil, err
	}
	var offers []providers.Offer
	for _, t := range types {
		if t.Configuration.NumGPUs < 1 || t.HourlyPrice <= 0 {
			continue
		}
		for _, a := range t.Availability {
			if s.allowed(t.Cloud, a.Region) {
				offers = append(offers, offer(t, a))
			}
		}
	}
	sort.Slice(offers, func(a, b int) bool { return offers[a].OfferID < offers[b].OfferID })
	return offers, nil
}

func offer(t InstanceType, a Availability) providers.Offer {
	n := int64(t.Configuration.NumGPUs)
	kind := providers.VM
	switch t.DeploymentType {
	case "container":
		kind = providers.Container
	case "baremetal":
		kind = providers.BareMetal
	}
	boot := DefaultBootTime
	if t.BootTime != nil && t.BootTime.MaxBootInSec > 0 {
		boot = time.Duration(t.BootTime.MaxBootInSec) * time.Second
	}
	name := a.DisplayName
	if name == "" {
		name = a.Region
	}
	return providers.Offer{Provider: Name, Upstream: t.Cloud, OfferID: OfferID(t.Cloud, t.ShadeInstanceType, a.Region),
		Location: a.Region, LocationName: name, Interconnect: providers.Ethernet, MachineKind: kind,
		Accelerator: accelerator(t.Configuration), GPUsPerNode: int(n), VCPUs: t.Configuration.VCPUs,
		MemoryGB: t.Configuration.MemoryInGB, PerGPUHourUSD: cloudkit.PerGPUHour(t.HourlyPrice, int(n)),
		RootDiskGB: t.Configuration.StorageInGB, Available: a.Available, BootTime: boot, PublicIPs: true}
}

// accelerator turns {gpu_type "H100", vram 80} into "H100_80GB" (see providers.AcceleratorName).
func accelerator(c Configuration) string {
	return providers.AcceleratorName(c.GPUType, c.VRAMPerGPUInGB)
}

// PlaceGroup creates req.Count machines of one upstream cloud's type in one
// region, one create each; the group's machines already there are adopted.
// When any create fails, every machine of the group is deleted.
func (s *Cloud) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	cloud, typ, region, err := s.validate(req)
	if err != nil {
		return providers.Group{}, err
	}
	defer s.locks.Lock(req.GroupName)()
	by, err := s.instances(ctx, opPlace)
	if err != nil {
		return providers.Group{}, err
	}
	have, err := fleet.Adopt(by[req.GroupName], req.Count,
		func(in Instance) bool { return in.Cloud == cloud && in.ShadeInstanceType == typ && in.Region == region },
		func(in Instance, i int) error {
			return cloudkit.Conflict(Name, opPlace, region, fmt.Sprintf(
				"group %s already has machine %s (rank %d) that is not part of %d × %s", req.GroupName, in.ID, i, req.Count, req.OfferID))
		})
	if err != nil {
		return providers.Group{}, err
	}
	if len(have) < req.Count {
		err := s.createMissing(ctx, req, cloud, typ, region, have)
		switch {
		case err != nil && cloudkit.Undecided(err):
			// Out of the caller's time (a minute of 429s outlasts a kicked
			// tick), or an answer still to come: what was created carries
			// the group's tags, and the next call adopts it and creates
			// the rest (never created twice, never deleted while wanted).
			return providers.Group{}, cloudkit.Pending(Name, opPlace, region,
				fmt.Sprintf("%d of %d machines created; the next placement creates the rest", len(have), req.Count), err)
		case err != nil:
			return providers.Group{}, cloudkit.RolledBack(ctx, Name, req.GroupName, err, s.terminate)
		}
	}
	return fleet.Placed(req.GroupName, region, have, req.Count), nil
}

// CreateRoom is the time a create's answer is given to arrive: a create
// is sent only while the caller's deadline leaves this much, so that none
// is cut off in flight (one that is anyway is adopted by its tags).
const CreateRoom = 5 * time.Second

// errOutOfTime: the caller's deadline leaves no CreateRoom for the next
// create (undecided: the placement goes on at the next call).
var errOutOfTime = errors.New("the caller's deadline leaves no time for the next create")

// validate checks what Shadeform would refuse, before anything is created.
func (s *Cloud) validate(req providers.PlaceRequest) (string, string, string, error) {
	cloud, typ, region, ok := parseOfferID(req.OfferID)
	o := cloudkit.Offer{Parsed: ok, Form: "<cloud>/<instance type>/<region>", Sold: region}
	if !s.allowed(cloud, region) {
		o.Disabled = cloud + " in " + region + " is not enabled (SHADEFORM_CLOUDS, SHADEFORM_REGIONS)"
	}
	return cloud, typ, region, cloudkit.Check(Name, opPlace, "Shadeform", req, o)
}

func (s *Cloud) createMissing(ctx context.Context, req providers.PlaceRequest, cloud, typ, region string, have map[int]Instance) error {
	types, err := s.types(ctx, opPlace, url.Values{"cloud": {cloud}, "shade_instance_type": {typ}})
	if err != nil {
		return err
	}
	k := slices.IndexFunc(types, func(t InstanceType) bool { return t.Cloud == cloud && t.ShadeInstanceType == typ })
	if k < 0 {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: region,
			Message: fmt.Sprintf("%s of %s is not sold", typ, cloud)}
	}
	if price := types[k].HourlyPrice * 10_000; req.AboveCeiling(price) {
		return providers.AboveCeiling(Name, opPlace, region, typ+" of "+cloud, price, req.MaxMachineHourUSD)
	}
	if !slices.ContainsFunc(types[k].Availability, func(a Availability) bool { return a.Region == region && a.Available }) {
		return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opPlace, Location: region,
			Message: fmt.Sprintf("no %s of %s available in %s", typ, cloud, region)}
	}
	for i := 0; i < req.Count; i++ {
		if _, ok := have[i]; ok {
			continue
		}
		if left, ok := cloudkit.TimeLeft(ctx, s.c.Now(), CreateRoom); ok && left <= 0 {
			return errOutOfTime
		}
		script, err := bootstrap.Script(s.cfg.Agent, bootstrap.Systemd, req.Agent.ServerURL, req.Agent.Tokens[i], req.Workload())
		if err != nil {
			return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: region, Message: err.Error()}
		}
		cr := CreateRequest{Cloud: cloud, Region: region, ShadeInstanceType: typ, ShadeCloud: true, Name: cloudkit.MemberName(req.GroupName, i),
			SSHKeyID: s.cfg.SSHKeyID, Tags: []string{TagGroup + req.GroupName, TagIndex + strconv.Itoa(i)},
			LaunchConfiguration: &LaunchConfiguration{Type: "script",
				ScriptConfiguration: &ScriptConfiguration{Base64Script: base64.StdEncoding.EncodeToString([]byte(script))}}}
		in, err := s.create(ctx, req.GroupName, i, cr)
		if err != nil {
			return cloudkit.AtLocation(err, region)
		}
		have[i] = in
	}
	return nil
}

// create creates one machine. After a transient failure the create may
// have happened: the group's machines are listed before creating again.
func (s *Cloud) create(ctx context.Context, group string, i int, cr CreateRequest) (Instance, error) {
	return cloudkit.Create(ctx, s.c, func() (Instance, error) {
		var out struct {
			ID string `json:"id"`
		}
		if err := s.c.Do(ctx, opPlace, http.MethodPost, pathCreate, cr, &out); err != nil {
			return Instance{}, err
		}
		if out.ID == "" {
			return Instance{}, &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: opPlace, Message: "create answered no id"}
		}
		return Instance{ID: out.ID, Cloud: cr.Cloud, Region: cr.Region, ShadeInstanceType: cr.ShadeInstanceType,
			Name: cr.Name, Status: StatusCreating, Tags: cr.Tags}, nil
	}, func() (Instance, bool, error) {
		by, err := s.instances(ctx, opPlace)
		if err != nil {
			return Instance{}, false, err
		}
		for _, in := range by[group] {
			if j, ok := index(in); ok && j == i && alive(in) {
				return in, true, nil
			}
		}
		return Instance{}, false, nil
	})
}

// instances lists the account's instances (one call, not paginated) by group tag.
func (s *Cloud) instances(ctx context.Context, op string) (map[string][]Instance, error) {
	var out struct {
		Instances []Instance `json:"instances"`
	}
	if err := s.c.Do(ctx, op, http.MethodGet, pathInstances, nil, &out); err != nil {
		return nil, err
	}
	return fleet.ByGroup(out.Instances), nil
}

func tag(in Instance, prefix string) string {
	for _, t := range in.Tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}

func index(in Instance) (int, bool) { return cloudkit.Rank(tag(in, TagIndex), in.Name) }

// alive: not deleting (billing stops there) nor deleted.
func alive(in Instance) bool { return in.Status != StatusDeleting && in.Status != StatusDeleted }

// node maps an instance onto the neutral node: running once active with
// its address and SSH port.
func node(in Instance, i int) providers.Node {
	n := providers.Node{ID: in.ID, Index: i, SSHUser: in.SSHUser, MachineHourUSD: in.HourlyPrice * 10_000} // cents per machine-hour
	if in.Status == StatusActive && in.IP != "" && in.SSHPort > 0 {
		n.PublicHost, n.SSHPort = in.IP, in.SSHPort
	}
	switch in.Status {
	case StatusCreating, StatusPendingProvider, StatusPending:
		n.State = providers.NodePending
	case StatusActive:
		n.State = providers.NodeRunning
		if n.PublicHost == "" {
			n.State, n.Message = providers.NodePending, "Shadeform reports the machine active without its address yet"
		}
	case StatusError:
		n.State, n.Message = providers.NodeFailed, "Shadeform reports an error: "+in.StatusDetails
	case StatusDeleting, StatusDeleted:
		n.State = providers.NodeTerminated
	default:
		n.State, n.Message = providers.NodePending, "Shadeform status "+in.Status
	}
	return n
}

// DescribeGroup reports the group's machines; ErrNotFound when Shadeform knows none.
func (s *Cloud) DescribeGroup(ctx context.Context, groupName string) (providers.Group, error) {
	return providers.DescribeOne(ctx, Name, opDescribe, "machine", groupName, s.DescribeGroups)
}

// DescribeGroups reports many groups with one list call (R1).
func (s *Cloud) DescribeGroups(ctx context.Context, groupNames []string) (map[string]providers.Group, error) {
	// One listing a job tick for every cluster it describes (R1).
	by, err := providers.Remember(ctx, describeMemo{s}, func() (map[string][]Instance, error) { return s.instances(ctx, opDescribe) })
	if err != nil {
		return nil, err
	}
	return fleet.Describe(groupNames, by), nil
}

// RestartNode restarts one active machine (POST /instances/{id}/restart).
// A machine gone or of another group is ErrNotFound; one in error is
// ErrUnrecoverable; one still coming up is ErrTransient.
func (s *Cloud) RestartNode(ctx context.Context, groupName, nodeID string) error {
	var in Instance
	if err := s.c.Do(ctx, opRestart, http.MethodGet, "/instances/"+url.PathEscape(nodeID)+"/info", nil, &in); err != nil {
		return err
	}
	switch {
	case tag(in, TagGroup) != groupName || !alive(in):
		return &providers.Error{Class: providers.ErrNotFound, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("machine %s of group %s is gone", nodeID, groupName)}
	case in.Status == StatusError:
		return &providers.Error{Class: providers.ErrUnrecoverable, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("machine %s is in error: %s", nodeID, in.StatusDetails)}
	case in.Status != StatusActive:
		return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("machine %s is %s; try again once it is active", nodeID, in.Status)}
	}
	return s.c.Do(ctx, opRestart, http.MethodPost, "/instances/"+url.PathEscape(nodeID)+"/restart", nil, nil)
}

// StopNode is refused with ErrUnsupported: Shadeform's API has no stop,
// only restart and delete.
func (s *Cloud) StopNode(ctx context.Context, groupName, nodeID string) error {
	return cloudkit.Unsupported(Name, "StopNode", "", "Shadeform cannot stop a machine and start it again; terminate the cluster to release it")
}

// PlaceNode is refused: a machine added to a placed group, or put in a
// gone one's place with its interconnect address (L10, X5), is not
// something Shadeform's instances can promise. The refusal is
// ErrUnsupported and creates nothing; the join fails and the cluster stays
// as it was.
func (s *Cloud) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (providers.Node, error) {
	return providers.Node{}, cloudkit.NoPlaceNode(Name, opPlaceNode, "Shadeform", req.Location)
}

// ReleaseNode deletes one machine of the group; the others are untouched.
// A machine Shadeform no longer knows, of another group or already
// deleting, is success.
func (s *Cloud) ReleaseNode(ctx context.Context, groupName, nodeID string) error {
	defer s.locks.Lock(groupName)()
	by, err := s.instances(ctx, opReleaseNode)
	if err != nil {
		return err
	}
	for _, in := range by[groupName] {
		if in.ID != nodeID || !alive(in) {
			continue
		}
		err := s.c.Do(ctx, opReleaseNode, http.MethodPost, "/instances/"+url.PathEscape(in.ID)+"/delete", nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}

// TerminateGroup deletes every machine of the group. Machines already
// deleting or gone are success.
func (s *Cloud) TerminateGroup(ctx context.Context, groupName string) error {
	defer s.locks.Lock(groupName)()
	return s.terminate(ctx, groupName)
}

func (s *Cloud) terminate(ctx context.Context, groupName string) error {
	by, err := s.instances(ctx, opTerminate)
	if err != nil {
		return err
	}
	for _, in := range by[groupName] {
		if !alive(in) {
			continue
		}
		err := s.c.Do(ctx, opTerminate, http.MethodPost, "/instances/"+url.PathEscape(in.ID)+"/delete", nil, nil)
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
func (s *Cloud) StopRefusal() string {
	return "Shadeform cannot stop a machine and start it again: terminate the cluster to end its billing."
}
