package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// FaultKind names what a fault does.
type FaultKind string

// Fault kinds. The first seven are decided when a group is placed; install
// failures are decided at each install.
const (
	// FaultRefuseCapacity: PlaceGroup fails with ErrNoCapacity, taking nothing.
	FaultRefuseCapacity FaultKind = "refuse_capacity"
	// FaultRefuseValidation: PlaceGroup fails with ErrValidation.
	FaultRefuseValidation FaultKind = "refuse_validation"
	// FaultNeverBoots: machine Node stays NodePending forever.
	FaultNeverBoots FaultKind = "never_boots"
	// FaultDies: machine Node vanishes (NodeTerminated) After its boot
	// completes; After 0 loses it just as it would have started running.
	FaultDies FaultKind = "dies"
	// FaultAgentSilent: the agent on machine Node is never started.
	FaultAgentSilent FaultKind = "agent_silent"
	// FaultPeerUnreachable: machine Node reaches no address (Executor.Reach fails).
	FaultPeerUnreachable FaultKind = "peer_unreachable"
	// FaultInstallFails: the next install ("install:<software>") on machine
	// Node fails. Count counts installs, so a later retry can succeed.
	FaultInstallFails FaultKind = "install_fails"
	// FaultCheckFails: the software check reports machine Node unhealthy.
	FaultCheckFails FaultKind = "check_fails"
	// FaultGPUMissing: machine Node's nvidia-smi lists one GPU fewer than
	// its offer has (a GPU fell off the bus).
	FaultGPUMissing FaultKind = "gpu_missing"
	// FaultNCCLSlow: the fabric of a group with machine Node runs at the
	// half speed of NVIDIA/nccl issue 2409 (54–58 % of its line rate): the
	// NCCL check and the verification ring measure it.
	FaultNCCLSlow FaultKind = "nccl_slow"
	// FaultECCErrors: machine Node's GPU 1 reports uncorrectable volatile
	// ECC errors and a pending row remap in nvidia-smi -q, and its kernel
	// log an Xid 48 (X13).
	FaultECCErrors FaultKind = "ecc_errors"
	// FaultStressFails: machine Node's GPU stress (dcgmi diag -r 1) fails.
	FaultStressFails FaultKind = "stress_fails"
	// FaultSlowLink: machine Node's link to the fabric runs at the half
	// speed of NVIDIA/nccl issue 2409 (54–58 % of its line rate): every
	// all-reduce it takes part in (the ring, its pairs) is slow.
	FaultSlowLink FaultKind = "slow_link"
	// FaultFabricSlow: the whole fabric of a group with machine Node runs at
	// the half speed of NVIDIA/nccl issue 2409 (54–58 % of its line rate):
	// the ring and every pair are equally slow (a network incident).
	FaultFabricSlow FaultKind = "fabric_slow"

	// The faults below happen after admission (R1–R5). Injected with the
	// Group of a live placement they hit it at once (After counts from
	// now); otherwise they are scripted onto the next matching placement
	// (After counts from the machine's boot).

	// FaultGoesDown: machine Node stops (NodeStopped) After; a restart
	// brings it back.
	FaultGoesDown FaultKind = "goes_down"
	// FaultUnrecoverable: machine Node stops After and every restart is
	// refused with ErrUnrecoverable.
	FaultUnrecoverable FaultKind = "unrecoverable"
	// FaultHeartbeatsStop: the agent on machine Node falls silent After
	// (the machine keeps running); a restart starts a fresh agent.
	FaultHeartbeatsStop FaultKind = "heartbeats_stop"
	// FaultRestartFails: the next Count restarts of machine Node fail with
	// ErrTransient (decided at each restart; Count 0 = every restart).
	FaultRestartFails FaultKind = "restart_fails"
	// FaultDescribeDelay: the next Count describe calls wait Delay (wall
	// time, or until the caller's context ends) before answering.
	FaultDescribeDelay FaultKind = "describe_delay"

	// GPU hardware faults (X15), after admission like goes_down: from
	// After on, GPU (default 0) of machine Node reports them until the
	// machine restarts.

	// FaultGPUECC: the GPU's volatile uncorrectable ECC count reads 2.
	FaultGPUECC FaultKind = "gpu_ecc"
	// FaultGPUXID: the kernel log reports XID (default 79, "GPU has
	// fallen off the bus") for the GPU.
	FaultGPUXID FaultKind = "gpu_xid"
	// FaultGPUDrops: the GPU vanishes from nvidia-smi.
	FaultGPUDrops FaultKind = "gpu_drops"
)

var faultKinds = []FaultKind{
	FaultRefuseCapacity, FaultRefuseValidation, FaultNeverBoots, FaultDies,
	FaultAgentSilent, FaultPeerUnreachable, FaultInstallFails, FaultCheckFails, FaultGPUMissing,
	FaultNCCLSlow, FaultECCErrors, FaultStressFails, FaultSlowLink, FaultFabricSlow,
	FaultGoesDown, FaultUnrecoverable, FaultHeartbeatsStop, FaultRestartFails, FaultDescribeDelay,
	FaultGPUECC, FaultGPUXID, FaultGPUDrops,
}

// afterAdmission reports the kinds that can hit a live placement.
func afterAdmission(k FaultKind) bool {
	return k == FaultGoesDown || k == FaultUnrecoverable || k == FaultHeartbeatsStop || gpuFault(k)
}

// gpuFault reports the GPU hardware fault kinds.
func gpuFault(k FaultKind) bool { return k == FaultGPUECC || k == FaultGPUXID || k == FaultGPUDrops }

// takenAtCall reports the kinds decided at each call rather than at placement.
func takenAtCall(k FaultKind) bool {
	return k == FaultInstallFails || k == FaultRestartFails || k == FaultDescribeDelay
}

// Fault scripts one failure. Offer, Location and Group narrow which
// placements it matches (empty matches any). It applies to the next Count
// matching placements, or for install_fails the next Count matching
// installs; Count 0 applies until ClearFaults. A node fault whose Node is
// not in a placement does not match that placement; it waits for the
// machine placed alone at that index (PlaceNode: an added worker or a
// replacement), whose placement it hits like a group's. A refusal fault
// refuses a single placement as it would a group's.
//
// As JSON (ParseFaults takes one object or an array); "offer" is the id the
// API shows, with or without its "sim:" prefix:
//
//	[{"kind": "refuse_capacity", "offer": "sim:us-east-1.h100-80gb.8x.bare-metal.infiniband", "count": 1},
//	 {"kind": "dies", "group": "cl_123", "node": 2, "after": "90s"},
//	 {"kind": "install_fails", "node": 1, "software": "slurm", "count": 1}]
type Fault struct {
	Kind     FaultKind `json:"kind"`
	Offer    string    `json:"offer,omitempty"`
	Location string    `json:"location,omitempty"`
	Group    string    `json:"group,omitempty"`
	// Node is the index of the machine a node fault hits (default 0).
	Node int `json:"node,omitempty"`
	// After is how long a "dies" machine runs before it vanishes.
	After Duration `json:"after,omitempty"`
	// Count is how many placements (installs for install_fails) it applies
	// to; 0 means until cleared.
	Count int `json:"count,omitempty"`
	// Software narrows install_fails and check_fails to one software
	// ("slurm", "kubernetes" or "ray"); empty means any.
	Software string `json:"software,omitempty"`
	// Message replaces the upstream message of a refusal.
	Message string `json:"message,omitempty"`
	// Delay is how long a describe_delay fault holds each describe call.
	Delay Duration `json:"delay,omitempty"`
	// GPU is the GPU a gpu_ecc, gpu_xid or gpu_drops fault hits (default 0).
	GPU int `json:"gpu,omitempty"`
	// XID is the code a gpu_xid fault reports (default 79).
	XID int `json:"xid,omitempty"`
}

// Validate reports what is wrong with a fault.
func (f Fault) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(faultKinds, f.Kind) {
		names := make([]string, len(faultKinds))
		for i, k := range faultKinds {
			names[i] = string(k)
		}
		add("unknown kind %q (want one of %s)", f.Kind, strings.Join(names, ", "))
	}
	if f.Node < 0 {
		add("node must not be negative, got %d", f.Node)
	}
	if f.Count < 0 {
		add("count must not be negative, got %d", f.Count)
	}
	if f.After < 0 {
		add("after must not be negative, got %s", f.After)
	}
	if f.After != 0 && f.Kind != FaultDies && !afterAdmission(f.Kind) {
		add("after only applies to %q, %q, %q, %q and the gpu_ faults", FaultDies, FaultGoesDown, FaultUnrecoverable, FaultHeartbeatsStop)
	}
	if (f.GPU != 0 || f.XID != 0) && !gpuFault(f.Kind) {
		add("gpu and xid only apply to %q, %q and %q faults", FaultGPUECC, FaultGPUXID, FaultGPUDrops)
	}
	if f.GPU < 0 || f.GPU > 63 {
		add("gpu must be 0..63, got %d", f.GPU)
	}
	if f.XID != 0 && f.Kind != FaultGPUXID || f.XID < 0 || f.XID > 1000 {
		add("xid only applies to %q faults and must be 1..1000, got %d", FaultGPUXID, f.XID)
	}
	if f.Delay < 0 || f.Delay != 0 && f.Kind != FaultDescribeDelay {
		add("delay only applies to %q faults and must not be negative", FaultDescribeDelay)
	}
	if f.Software != "" {
		if f.Kind != FaultInstallFails && f.Kind != FaultCheckFails {
			add("software only applies to %q and %q faults", FaultInstallFails, FaultCheckFails)
		}
		if !slices.Contains(softwares, f.Software) {
			add("unknown software %q (want slurm, kubernetes or ray)", f.Software)
		}
	}
	if f.Message != "" && !isRefusal(f.Kind) {
		add("message only applies to refusals")
	}
	return errors.Join(errs...)
}

// ParseFaults decodes faults posted as JSON: one object or an array of them.
// Unknown fields and invalid faults are errors naming the fault.
func ParseFaults(data []byte) ([]Fault, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("sim: faults: empty body (want a fault object or an array of them)")
	}
	var faults []Fault
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var err error
	if data[0] == '[' {
		err = dec.Decode(&faults)
	} else {
		var f Fault
		err = dec.Decode(&f)
		faults = []Fault{f}
	}
	if err != nil {
		return nil, fmt.Errorf("sim: faults: %w", err)
	}
	if dec.More() {
		return nil, errors.New("sim: faults: trailing data after the JSON value")
	}
	if err := validateFaults(faults); err != nil {
		return nil, err
	}
	return faults, nil
}

func validateFaults(faults []Fault) error {
	var errs []error
	for i, f := range faults {
		if err := f.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d] (%s): %w", i, f.Kind, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sim: invalid faults:\n%w", errors.Join(errs...))
	}
	return nil
}

// activeFault is an injected fault and how many uses it has left.
type activeFault struct {
	Fault
	left int // 0 = unlimited
}

// Inject adds faults after every fault already injected. It validates them
// all first and injects none when one is invalid. A fault's Offer may be the
// simulator's offer id or the public one the API shows ("sim:" + id); an
// offer the simulator does not have is refused, since it would never match.
func (c *Cloud) Inject(faults ...Fault) (err error) {
	if err := validateFaults(faults); err != nil {
		return err
	}
	if err := c.open(context.Background()); err != nil {
		return err
	}
	defer c.close(&err)
	resolved := make([]Fault, len(faults))
	var errs []error
	for i, f := range faults {
		id, err := c.faultOffer(f.Offer)
		if err != nil {
			errs = append(errs, fmt.Errorf("faults[%d] (%s): %w", i, f.Kind, err))
		}
		f.Offer = id
		resolved[i] = f
	}
	if len(errs) > 0 {
		return fmt.Errorf("sim: invalid faults:\n%w", errors.Join(errs...))
	}
	for _, f := range resolved {
		if g, ok := c.groups[f.Group]; ok && !g.terminated && afterAdmission(f.Kind) && f.Node < len(g.nodes) {
			g.nodes[f.Node].hit(f, c.now())
			continue
		}
		c.faults = append(c.faults, &activeFault{Fault: f, left: f.Count})
	}
	return nil
}

// hit scripts an after-admission fault onto machine n, After from "from".
func (n *node) hit(f Fault, from time.Time) {
	at := from.Add(f.After.D())
	switch f.Kind {
	case FaultGoesDown:
		n.downAt = at
	case FaultUnrecoverable:
		n.downAt, n.unrecoverable = at, true
	case FaultHeartbeatsStop:
		n.silentAt = at
	case FaultGPUECC:
		n.eccAt, n.eccGPU = at, f.GPU
	case FaultGPUXID:
		n.xidAt, n.xidGPU, n.xidCode = at, f.GPU, f.XID
		if n.xidCode == 0 {
			n.xidCode = 79
		}
	case FaultGPUDrops:
		n.dropAt, n.dropGPU = at, f.GPU
	}
}

// faultOffer maps a fault's offer, public or internal id, to the simulator's
// offer id. Callers hold c.mu.
func (c *Cloud) faultOffer(offer string) (string, error) {
	if offer == "" {
		return "", nil
	}
	id := strings.TrimPrefix(offer, c.name+":")
	if _, ok := c.byID[id]; !ok {
		example := ""
		if len(c.offers) > 0 {
			example = fmt.Sprintf(" (e.g. %q)", c.name+":"+c.offers[0].cfg.ID)
		}
		return "", fmt.Errorf("no offer %q: use an id GET /v1/gpu/offers lists%s", offer, example)
	}
	return id, nil
}

// ClearFaults removes every injected fault. Faults already scripted onto
// placed machines stay with them.
func (c *Cloud) ClearFaults() {
	if err := c.open(context.Background()); err != nil {
		c.log.Error("sim: clear faults", "error", err)
		return
	}
	defer c.close(nil)
	c.faults = nil
}

// Faults lists the faults still active, Count being the uses left (0 =
// until cleared).
func (c *Cloud) Faults() []Fault {
	if err := c.open(context.Background()); err != nil {
		c.log.Error("sim: list faults", "error", err)
		return nil
	}
	defer c.close(nil)
	out := make([]Fault, len(c.faults))
	for i, f := range c.faults {
		out[i] = f.Fault
		out[i].Count = f.left
	}
	return out
}

func isRefusal(k FaultKind) bool { return k == FaultRefuseCapacity || k == FaultRefuseValidation }

// scriptedAtPlacement reports the kinds decided when a group is placed.
func scriptedAtPlacement(k FaultKind) bool { return !isRefusal(k) && !takenAtCall(k) }

// matches reports whether f applies to a placement of size count of offer s
// under group name.
func (f *activeFault) matches(s *offerState, group string, count int) bool {
	return (f.Offer == "" || f.Offer == s.cfg.ID) &&
		(f.Location == "" || f.Location == s.loc.ID) &&
		(f.Group == "" || f.Group == group) &&
		(isRefusal(f.Kind) || f.Node < count)
}

// use consumes one use of fault i. Callers hold c.mu.
func (c *Cloud) use(i int) {
	f := c.faults[i]
	if f.left == 0 {
		return
	}
	if f.left--; f.left == 0 {
		c.faults = slices.Delete(c.faults, i, i+1)
	}
}

// takeFault consumes and returns the first fault of a kind accepted by
// kind that matches the placement, or nil. Callers hold c.mu.
func (c *Cloud) takeFault(kind func(FaultKind) bool, s *offerState, group string, count int) *Fault {
	for i, f := range c.faults {
		if kind(f.Kind) && f.matches(s, group, count) {
			taken := f.Fault
			c.use(i)
			return &taken
		}
	}
	return nil
}

// refusal is the error a refusal fault makes PlaceGroup return.
func (c *Cloud) refusal(f *Fault, req providers.PlaceRequest) error {
	class, code, msg := providers.ErrNoCapacity, "insufficient-capacity",
		fmt.Sprintf("not enough capacity to fulfill launch request for %s in %s", req.OfferID, req.Location)
	if f.Kind == FaultRefuseValidation {
		class, code, msg = providers.ErrValidation, "invalid-parameters",
			fmt.Sprintf("launch request for %s rejected", req.OfferID)
	}
	if f.Message != "" {
		msg = f.Message
	}
	return c.errorf(class, "PlaceGroup", code, req.Location, "%s", msg)
}

// applyNodeFaults scripts every matching placement-time node fault onto the
// new group's machines, consuming one use of each. Callers hold c.mu.
func (c *Cloud) applyNodeFaults(g *group) {
	for i := 0; i < len(c.faults); i++ {
		f := c.faults[i]
		if !scriptedAtPlacement(f.Kind) || !f.matches(g.offer, g.name, len(g.nodes)) {
			continue
		}
		g.nodes[f.Node].script(f.Fault)
		before := len(c.faults)
		c.use(i)
		if len(c.faults) < before {
			i-- // the fault was used up and removed
		}
	}
}

// script puts a placement-time node fault onto machine n.
func (n *node) script(f Fault) {
	switch f.Kind {
	case FaultNeverBoots:
		n.neverBoots = true
	case FaultDies:
		n.dies, n.dieAfter = true, f.After.D()
	case FaultAgentSilent:
		n.agentSilent = true
	case FaultPeerUnreachable:
		n.peerUnreachable = true
	case FaultCheckFails:
		n.checkFails = append(n.checkFails, f.Software)
	case FaultGPUMissing:
		n.gpuMissing = true
	case FaultNCCLSlow, FaultFabricSlow:
		n.ncclSlow = true
	case FaultECCErrors:
		n.eccErrors = true
	case FaultStressFails:
		n.stressFails = true
	case FaultSlowLink:
		n.slowLink = true
	case FaultGoesDown, FaultUnrecoverable, FaultHeartbeatsStop, FaultGPUECC, FaultGPUXID, FaultGPUDrops:
		n.hit(f, n.bootAt)
	}
}

// takeInstallFault consumes the first install_fails fault that hits this
// install, reporting whether there was one. Callers hold c.mu.
func (c *Cloud) takeInstallFault(n *node, software string) bool {
	for i, f := range c.faults {
		if f.Kind == FaultInstallFails && f.Node == n.index &&
			(f.Software == "" || f.Software == software) &&
			f.matches(n.g.offer, n.g.name, len(n.g.nodes)) {
			c.use(i)
			return true
		}
	}
	return false
}

// takeNodeFault consumes the first fault of kind that hits machine n now,
// reporting whether there was one. Callers hold c.mu.
func (c *Cloud) takeNodeFault(kind FaultKind, n *node) bool {
	for i, f := range c.faults {
		if f.Kind == kind && f.Node == n.index && f.matches(n.g.offer, n.g.name, len(n.g.nodes)) {
			c.use(i)
			return true
		}
	}
	return false
}

// takeDescribeDelay consumes the first describe_delay fault and returns its
// delay (0 = none). Callers hold c.mu.
func (c *Cloud) takeDescribeDelay() time.Duration {
	for i, f := range c.faults {
		if f.Kind == FaultDescribeDelay {
			c.use(i)
			return f.Delay.D()
		}
	}
	return 0
}

// KillNow makes machine index of a group vanish now (NodeTerminated), as a
// "dies" fault would: a test's or a benchmark's fault on its own clock
// (X17). It reports whether there was such a machine, running.
func (c *Cloud) KillNow(groupName string, index int) (ok bool, err error) {
	if err = c.open(context.Background()); err != nil {
		return false, err
	}
	defer c.close(&err)
	g, found := c.groups[groupName]
	if !found || index < 0 || index >= len(g.nodes) {
		return false, nil
	}
	n, now := g.nodes[index], c.now()
	if st, _ := n.state(now); st != providers.NodeRunning {
		return false, nil
	}
	n.dies, n.dieAfter = true, now.Sub(n.bootAt)
	return true, nil
}
