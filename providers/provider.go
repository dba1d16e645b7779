// Package providers adapts upstream GPU clouds to one contract. Each cloud is a
// subpackage (providers/sim, later real adapters) that implements Provider.
// This package imports nothing from the module: jobs translate its types onto
// models, the way database/sql/driver never imports database/sql.
package providers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sentinel errors every adapter maps its upstream's failures onto, so callers
// branch with errors.Is without knowing which cloud answered. An *Error wraps
// exactly one of them.
var (
	ErrNoCapacity = errors.New("providers: no capacity")
	ErrValidation = errors.New("providers: request rejected")
	ErrQuota      = errors.New("providers: quota exceeded")
	ErrTransient  = errors.New("providers: transient failure")
	ErrNotFound   = errors.New("providers: not found")
	// ErrUnrecoverable: the machine exists but the upstream cannot bring it
	// back (hardware fault, host gone); only a replacement helps (R5, X5).
	ErrUnrecoverable = errors.New("providers: machine cannot be recovered")
	// ErrUnsupported: the upstream has no such operation at all (Lambda
	// cannot stop a machine); retrying never helps.
	ErrUnsupported = errors.New("providers: operation not supported")
	// ErrAuth: the upstream refused our credentials or the account (bad or
	// revoked key, inactive account); nothing succeeds until the operator acts.
	ErrAuth = errors.New("providers: authentication refused")
	// ErrRateLimited: the upstream asked us to slow down; Error.RetryAfter
	// says for how long when it told us.
	ErrRateLimited = errors.New("providers: rate limited")
)

// Error is a classified upstream failure. Class is one of the sentinels above.
type Error struct {
	Class    error
	Provider string
	Op       string // "PlaceGroup", "DescribeGroup", ...
	Code     string // upstream machine code when there is one
	Message  string // upstream human message (never shown to customers verbatim)
	Location string
	// RetryAfter is how long the upstream asked us to wait (Retry-After)
	// before trying again; zero when it did not say.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %v: %s", e.Provider, e.Op, e.Class, e.Message)
}

// Unwrap lets errors.Is(err, providers.ErrNoCapacity) work.
func (e *Error) Unwrap() error { return e.Class }

// CodePriceAboveCeiling is the Code of the refusal to place above the
// placement's price ceiling (PlaceRequest.MaxMachineHourUSD).
const CodePriceAboveCeiling = "price-above-ceiling"

// ErrPriceAboveCeiling matches (errors.Is) an adapter's refusal to place
// because the upstream's current price is above the ceiling the quote
// locked. The refusal is an *Error of Class ErrValidation (nothing is
// placed, and asking again at the same ceiling never helps) with Code
// CodePriceAboveCeiling.
var ErrPriceAboveCeiling = errors.New("providers: price above the ceiling")

// Is makes errors.Is(err, ErrPriceAboveCeiling) true for that refusal.
func (e *Error) Is(target error) bool {
	return target == ErrPriceAboveCeiling && e.Class == ErrValidation && e.Code == CodePriceAboveCeiling
}

// AboveCeiling is the refusal every adapter answers when the placement's
// price ceiling is below what the upstream charges now: what names the
// machine (offer or type), price is its current machine-hour in
// micro-dollars.
func AboveCeiling(provider, op, location, what string, price, ceiling int64) *Error {
	return &Error{Class: ErrValidation, Provider: provider, Op: op, Location: location, Code: CodePriceAboveCeiling,
		Message: fmt.Sprintf("%s costs %d micro-USD per machine-hour, above the ceiling of %d the quote locked", what, price, ceiling)}
}

// AboveCeiling reports whether price (micro-dollars per machine-hour) is
// above the request's ceiling; no ceiling (0) is never exceeded.
func (r PlaceRequest) AboveCeiling(price int64) bool {
	return r.MaxMachineHourUSD > 0 && price > r.MaxMachineHourUSD
}

// Interconnects, machine kinds and accelerators (O1). Plain strings so that
// models can store them without importing this package.
const (
	Ethernet   = "ethernet"
	InfiniBand = "infiniband"
	RoCE       = "roce"

	VM        = "vm"
	BareMetal = "bare_metal"
	Container = "container"
)

// Offer is one purchasable machine shape in one location (O1). Prices are
// integer micro-dollars (1 USD = 1,000,000).
type Offer struct {
	Provider string
	OfferID  string // stable, provider-native handle; unique per provider
	// Upstream is the cloud behind an aggregator (Shadeform's "hyperstack",
	// "lambdalabs", ...); empty when Provider runs the machines itself.
	Upstream     string
	Location     string // e.g. "us-east-1" (provider-native region / datacenter)
	LocationName string // human label, e.g. "Ashburn, US"
	Interconnect string // Ethernet, InfiniBand or RoCE
	// NICs and NICGbps are the machine's cluster-fabric network cards and
	// each one's line rate in Gbit/s (8 and 400 for eight NDR InfiniBand
	// ports). Zero NICs means no fabric of its own: the machines talk over
	// an encrypted Ethernet overlay (O1's 1–2 Gbit/s). Set from the
	// provider's API where it says so, else from the offer's configuration.
	NICs          int
	NICGbps       int
	MachineKind   string // VM, BareMetal or Container
	Accelerator   string // e.g. "H100_80GB"
	GPUsPerNode   int    // 1, 2, 4 or 8
	VCPUs         int
	MemoryGB      int
	PerGPUHourUSD int64 // micro-dollars per GPU-hour at cluster rates
	RootDiskGB    int
	DiskGBHourUSD int64 // micro-dollars per GB-hour of root disk
	Community     bool  // community host, not a datacenter (O5)
	// NodesAvailable is the free-machine count, or nil when the location only
	// says whether it has any (then Available tells which).
	NodesAvailable *int
	Available      bool
	// BootTime is the typical time from placement to a running machine for
	// this machine kind; step deadlines are derived from it (L4).
	BootTime time.Duration
	// PublicIPs is false where nodes are reached through a gateway (N5).
	PublicIPs bool
	Gateway   string // "user@host:port" of the SSH gateway when PublicIPs is false
}

// MachineHourUSD is the price of one machine for one hour in micro-dollars:
// its GPUs plus its root disk (Q3 for a single node).
func (o Offer) MachineHourUSD() int64 {
	return int64(o.GPUsPerNode)*o.PerGPUHourUSD + int64(o.RootDiskGB)*o.DiskGBHourUSD
}

// AgentBootstrap tells a placed machine how to start the cluster agent
// (`clusterdeck agent --server URL --token T`). Real clouds put it in the
// start-up script; the simulated cloud runs the agent in-process.
//
// Token is the cluster's bootstrap token (cdb_…), the same for every
// machine: an adapter that places the whole group with one call and one
// start-up script uses it, and each machine's agent claims its rank at
// check-in, bound to the machine id PlaceGroup returned (so an agent should
// know its machine id, or the provider must report the machine's host name
// or private address). Tokens are per-node tokens (cdn_…) for adapters that
// place machine by machine and prefer to give each its own.
type AgentBootstrap struct {
	ServerURL string
	Token     string   // the cluster's bootstrap token, for every machine
	Tokens    []string // one per node index; a token authenticates exactly one node
}

// PlaceRequest asks for Count identical machines of one offer in one location.
type PlaceRequest struct {
	GroupName string // idempotency key (we pass the cluster id)
	OfferID   string
	Location  string
	Count     int
	Image     string
	Env       map[string]string
	SSHKeys   []string
	Agent     AgentBootstrap
	// Ports are opened between the machines and, where the machine kind
	// allows, published (N2, N3); StartCommand is run once per boot on
	// every machine once the cluster is ready (see Workload).
	Ports        []int
	StartCommand string
	// MaxMachineHourUSD is the price ceiling: one machine-hour at the
	// price the quote locked (micro-dollars). An adapter whose current
	// price for the offer is above it refuses with AboveCeiling (an
	// ErrValidation that errors.Is ErrPriceAboveCeiling) and places
	// nothing; 0 = no ceiling.
	MaxMachineHourUSD int64
	// Volume is the cluster's persistent volume (V1–V4), attached to the
	// head (machine 0); nil for none.
	Volume *Volume
	// Avoid names machines (Node.Host, else Node.ID) the product has
	// quarantined as lemons (X2): an adapter that chooses the
	// machine itself (SSH machines, the simulated cloud) never places on
	// one; a cloud that chooses for us ignores it.
	Avoid []string
}

// Volume is a persistent volume to attach to a group's head machine: the
// upstream keeps it across groups until it is deleted.
type Volume struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	SizeGB int    `json:"sizeGb"`
}

// NodeState is the provider-side state of one machine.
type NodeState string

const (
	NodePending    NodeState = "pending"    // placed, not yet booted
	NodeRunning    NodeState = "running"    // the machine is up
	NodeRestarting NodeState = "restarting" // a restart or start is under way
	NodeStopped    NodeState = "stopped"
	NodeFailed     NodeState = "failed"
	NodeTerminated NodeState = "terminated" // gone (including: the upstream no longer knows it)
)

// Node is one machine of a group as the provider sees it.
type Node struct {
	ID         string // provider-native id
	Index      int    // 0..Count-1, stable: the node's rank
	State      NodeState
	PublicHost string // empty where the offer has no public addresses
	SSHPort    int
	SSHUser    string
	PrivateIP  string // interconnect address; empty when the provider does not say (the agent reports it)
	Message    string
	// Host is the physical machine where the provider names one and may
	// place on it again (SSH machines: the machine's name; the simulated
	// cloud: its host); "" otherwise. Faults follow it across clusters.
	Host string
	// MachineHourUSD is what the provider says it bills for this machine
	// per hour, in micro-dollars, where its API reports it (0 = not said):
	// the provision job checks it against the launch cost (OP1, Q2).
	MachineHourUSD int64
}

// MachineHourUSD is the highest price any machine of the group is billed
// at, as its provider says (0 = not said).
func (g Group) MachineHourUSD() int64 {
	var top int64
	for _, n := range g.Nodes {
		top = max(top, n.MachineHourUSD)
	}
	return top
}

// Group is every machine placed for one PlaceRequest.
type Group struct {
	Provider string
	Name     string // the PlaceRequest.GroupName
	Location string
	Nodes    []Node // sorted by Index
}

// Provider is one upstream GPU cloud. Implementations are safe for concurrent
// use and honour ctx.
type Provider interface {
	// Name is a stable identifier ("sim", "lambda", ...), stored on offers and clusters.
	Name() string
	// ListOffers returns every purchasable shape per location with its stock
	// signal. It creates nothing.
	ListOffers(ctx context.Context) ([]Offer, error)
	// PlaceGroup reserves req.Count machines at once in req.Location. It is
	// idempotent on req.GroupName (a retry adopts the existing group) and all
	// or nothing: when the whole group cannot be placed nothing is left behind
	// and the error wraps ErrNoCapacity or ErrValidation.
	PlaceGroup(ctx context.Context, req PlaceRequest) (Group, error)
	// DescribeGroup reports every machine of the group; machines the upstream
	// no longer knows are reported NodeTerminated. An unknown group is ErrNotFound.
	DescribeGroup(ctx context.Context, groupName string) (Group, error)
	// DescribeGroups reports many groups in one upstream call (R1): every
	// named group the upstream knows, by name. A group missing from the
	// answer is unknown upstream (what DescribeGroup reports as ErrNotFound).
	DescribeGroups(ctx context.Context, groupNames []string) (map[string]Group, error)
	// RestartNode reboots a running machine or starts a stopped one, in
	// place: same hardware, same interconnect address (R3). A machine the
	// upstream no longer knows is ErrNotFound; one it cannot bring back is
	// ErrUnrecoverable; one the upstream does not restart on its own (a
	// member of a group it manages whole) is ErrUnsupported; anything else
	// (ErrTransient) may succeed later.
	RestartNode(ctx context.Context, groupName, nodeID string) error
	// StopNode stops one running machine in place, keeping its disk and
	// interconnect address, until RestartNode starts it again (B6). Its
	// answer is one of: nil (stopping); ErrValidation, the machine is not
	// running (nothing to stop); ErrNotFound, the upstream no longer knows
	// it; ErrUnsupported, the upstream cannot stop this machine (the stop
	// job terminates the cluster instead); anything else (ErrTransient) may
	// succeed later. A provider that cannot stop answers ErrUnsupported,
	// never ErrValidation.
	StopNode(ctx context.Context, groupName, nodeID string) error
	// TerminateGroup releases every machine of the group together. Unknown or
	// already-gone groups are success.
	TerminateGroup(ctx context.Context, groupName string) error
	// PlaceNode reserves one machine of the group's offer in the group's
	// location at index, the machine's rank. index equal to the group's
	// size adds a machine (L10); the index of a machine that is gone,
	// stopped or failed puts a new machine in its place with the same
	// index, name and interconnect address (X5) and releases the old one.
	// A running machine is never replaced (ErrValidation). req names the
	// offer and location (they must be the group's), the workload and
	// exactly one agent token; its Count is ignored. A retry with the same
	// token returns the machine the earlier call placed. An unknown or
	// terminated group is ErrNotFound; no stock is ErrNoCapacity, and a
	// refused placement takes nothing.
	PlaceNode(ctx context.Context, groupName string, index int, req PlaceRequest) (Node, error)
	// ReleaseNode releases one machine of the group and returns it to the
	// upstream; the group's other machines are untouched. An unknown
	// group or machine, or one already released, is success.
	ReleaseNode(ctx context.Context, groupName, nodeID string) error
}

// StopRefuser is implemented by a provider whose machines can never be
// stopped and started again (its StopNode always answers ErrUnsupported):
// StopRefusal says why in a sentence a customer reads, so the product
// refuses a customer's Stop before asking (B6).
type StopRefuser interface {
	StopRefusal() string
}

// StopRefusals names, per registered provider that says so, why its
// machines cannot be stopped.
func (r Registry) StopRefusals() map[string]string {
	out := map[string]string{}
	for name, p := range r {
		if s, ok := p.(StopRefuser); ok {
			out[name] = s.StopRefusal()
		}
	}
	return out
}

// Registry finds an adapter by the name stored on offers and clusters.
type Registry map[string]Provider

// Get returns the named provider.
func (r Registry) Get(name string) (Provider, error) {
	p, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("providers: no provider %q", name)
	}
	return p, nil
}

// Names lists the registered providers in a stable order.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Executor does the cluster agent's work on one machine: reach peers on the
// private network and run the software's install and check commands. The real
// agent runs them with os/exec; the simulated cloud scripts their output.
type Executor interface {
	// Reach returns nil when this machine reaches addr on the private network.
	Reach(ctx context.Context, addr string) error
	// Run runs one named step ("install:slurm", "check:ray", ...) with its
	// shell script and returns the step's combined output.
	Run(ctx context.Context, step, script string) (string, error)
}

// singleMemory are GPU models made with one memory size only: the catalog
// names them without it (O1: "L40S", "RTX_4090").
var singleMemory = map[string]bool{"L40S": true, "L40": true, "L4": true, "RTX_4090": true, "RTX_3090": true,
	"RTX_A6000": true, "A6000": true, "A40": true, "A10": true, "A10G": true}

// AcceleratorName is the provider-neutral name of a GPU model ("H100",
// "RTX 4090") with memGB of memory: "H100_80GB", or the bare model for
// models made in one memory size only ("RTX_4090"), so that offers of one
// GPU compare across providers.
func AcceleratorName(model string, memGB int) string {
	m := strings.Join(strings.Fields(model), "_")
	if singleMemory[strings.ToUpper(m)] || memGB <= 0 {
		return m
	}
	return m + "_" + strconv.Itoa(memGB) + "GB"
}

// DescribeOne is DescribeGroup for an adapter whose upstream lists many
// groups in one call: it asks describeMany for the one group and answers
// ErrNotFound (op, with what the upstream calls a machine) when it is not
// listed.
func DescribeOne(ctx context.Context, provider, op, machine, groupName string,
	describeMany func(context.Context, []string) (map[string]Group, error)) (Group, error) {
	gs, err := describeMany(ctx, []string{groupName})
	if err != nil {
		return Group{}, err
	}
	g, ok := gs[groupName]
	if !ok {
		return Group{}, &Error{Class: ErrNotFound, Provider: provider, Op: op,
			Message: "no " + machine + " of group " + groupName}
	}
	return g, nil
}

// CheckFabricCards checks an offer's fabric cards as an operator configured
// them (the simulated catalog, the SSH machines file): InfiniBand and RoCE
// machines must say their NICs and each one's line rate, since the fabric
// checks are judged by them (X13); Ethernet machines meet on the encrypted
// overlay and have none.
func CheckFabricCards(interconnect string, nics, gbps int) []error {
	var errs []error
	switch {
	case nics < 0 || gbps < 0:
		errs = append(errs, fmt.Errorf("nics and nic_gbps must not be negative, got %d and %d", nics, gbps))
	case interconnect == Ethernet && (nics > 0 || gbps > 0):
		errs = append(errs, errors.New("nics and nic_gbps are for infiniband and roce: ethernet machines meet on the encrypted overlay (about 1 to 2 Gbit/s between machines)"))
	case (interconnect == InfiniBand || interconnect == RoCE) && (nics == 0 || gbps == 0):
		errs = append(errs, fmt.Errorf("interconnect %s needs nics and nic_gbps, the machine's fabric cards and each one's line rate in Gbit/s (e.g. nics: 8, nic_gbps: 400): the fabric checks are judged by them", interconnect))
	}
	return errs
}

// memoKey carries a Memo in a context.
type memoKey struct{}

// Memo holds the listings an adapter read during one job tick, so that
// every cluster the tick handles shares one listing per account (R1)
// instead of a read each: a cloud's request budget goes to creates and
// terminates. Safe for concurrent use.
type Memo struct {
	mu sync.Mutex
	m  map[any]any
}

// WithMemo returns ctx carrying a new, empty Memo: the provision job
// gives one to each tick.
func WithMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &Memo{m: map[any]any{}})
}

// HasMemo reports whether ctx carries a Memo (the caller reads its
// clusters once a tick and comes back: a placement need not wait).
func HasMemo(ctx context.Context) bool {
	_, ok := ctx.Value(memoKey{}).(*Memo)
	return ok
}

// Remember returns what fetch answered for key earlier in ctx's tick, or
// calls it (and keeps a success). Without a Memo in ctx it always calls
// fetch. Only reads whose staleness within a tick is harmless use it: a
// create's reconciliation and a terminate read afresh.
func Remember[T any](ctx context.Context, key any, fetch func() (T, error)) (T, error) {
	m, ok := ctx.Value(memoKey{}).(*Memo)
	if !ok {
		return fetch()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.m[key]; ok {
		return v.(T), nil
	}
	v, err := fetch()
	if err == nil {
		m.m[key] = v
	}
	return v, err
}
