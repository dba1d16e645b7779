package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Cloud is the simulated provider. It is safe for concurrent use.
type Cloud struct {
	name    string
	cfg     Config
	now     func() time.Time
	seed    int64
	factory AgentFactory
	log     *slog.Logger

	mu     sync.Mutex
	offers []*offerState          // catalog order
	byID   map[string]*offerState // by offer id
	groups map[string]*group      // live or terminated, by group name
	gens   map[string]int         // placements made per group name
	faults []*activeFault         // injection order
	ckpt   map[string]int         // the training program's checkpoints (X17), in this process only

	stepMu sync.Mutex           // serialises StepAgents
	every  time.Duration        // Run's interval (0: not running); the agent lease lasts 7½ of them (leaseFor)
	agents map[string]agentSlot // this process's running agents, by machine id

	db      *gorm.DB         // nil: the state lives in this process only
	holder  string           // this process, for the agent lease
	wall    func() time.Time // the agent lease's clock: wall time, even under a fake clock
	version int64            // version of the persisted state the model holds
	saved   []byte           // that version's encoding (nil: encode it again)
	sess    *session         // the open operation's transaction
}

// agentSlot is a started agent and the boot of the machine it runs on.
type agentSlot struct {
	epoch int
	agent MachineAgent
}

var _ providers.Provider = (*Cloud)(nil)

// Option configures a Cloud.
type Option func(*Cloud)

// WithClock sets the clock every machine state is computed from (default
// time.Now().UTC()).
func WithClock(now func() time.Time) Option { return func(c *Cloud) { c.now = now } }

// WithSeed makes machine ids, boot jitter and tool output deterministic for
// the seed (default 1).
func WithSeed(seed int64) Option { return func(c *Cloud) { c.seed = seed } }

// WithName sets the provider name stored on offers and groups (default "sim").
func WithName(name string) Option { return func(c *Cloud) { c.name = name } }

// WithAgents runs an in-process cluster agent on every running machine; see
// StepAgents.
func WithAgents(f AgentFactory) Option { return func(c *Cloud) { c.factory = f } }

// WithLogger sets where Run reports agent step errors (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *Cloud) {
		if l != nil {
			c.log = l
		}
	}
}

// offerState is one offer and its remaining stock.
type offerState struct {
	cfg       OfferConfig
	loc       Location // without its offers
	boot      time.Duration
	counted   bool // cfg.NodesAvailable was set
	free      int  // counted: free machines; otherwise hidden capacity left
	initial   int  // free before any placement
	available bool // uncounted: what the location answers when asked
}

// New builds a simulated cloud from cfg. It panics when cfg is invalid, like
// regexp.MustCompile: LoadConfig and ParseConfig validate, DefaultConfig is
// always valid, and cfg.Validate reports the problems of a hand-built one.
func New(cfg Config, opts ...Option) *Cloud {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	c := &Cloud{
		name:   "sim",
		cfg:    cfg,
		now:    func() time.Time { return time.Now().UTC() },
		seed:   1,
		log:    slog.Default(),
		byID:   map[string]*offerState{},
		groups: map[string]*group{},
		gens:   map[string]int{},
		agents: map[string]agentSlot{},
	}
	for _, o := range opts {
		o(c)
	}
	for _, l := range cfg.Locations {
		offers := l.Offers
		l.Offers = nil
		for _, oc := range offers {
			s := &offerState{cfg: oc, loc: l, boot: cfg.bootTime(oc), available: true}
			switch {
			case oc.NodesAvailable != nil:
				s.counted, s.free = true, *oc.NodesAvailable
			default:
				s.free = cfg.hiddenCapacity(oc)
				if oc.Available != nil {
					s.available = *oc.Available
				}
			}
			s.initial = s.free
			s.cfg.NodesAvailable, s.cfg.Available = nil, nil // no aliasing of the caller's config
			c.offers = append(c.offers, s)
			c.byID[oc.ID] = s
		}
	}
	return c
}

// Name is the provider name ("sim" unless WithName).
func (c *Cloud) Name() string { return c.name }

// ListOffers returns every offer with its current stock: a count where the
// location counts, else only whether it has machines (NodesAvailable nil).
func (c *Cloud) ListOffers(ctx context.Context) (_ []providers.Offer, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	defer c.close(&err)
	out := make([]providers.Offer, 0, len(c.offers))
	for _, s := range c.offers {
		out = append(out, c.offer(s))
	}
	return out, nil
}

// offer renders one offer with its stock signal. Callers hold c.mu.
func (c *Cloud) offer(s *offerState) providers.Offer {
	o := providers.Offer{
		Provider:      c.name,
		OfferID:       s.cfg.ID,
		Location:      s.loc.ID,
		LocationName:  s.loc.Name,
		Interconnect:  s.cfg.Interconnect,
		NICs:          s.cfg.NICs,
		NICGbps:       s.cfg.NICGbps,
		MachineKind:   s.cfg.MachineKind,
		Accelerator:   s.cfg.Accelerator,
		GPUsPerNode:   s.cfg.GPUsPerNode,
		VCPUs:         s.cfg.VCPUs,
		MemoryGB:      s.cfg.MemoryGB,
		PerGPUHourUSD: s.cfg.PerGPUHourUSD,
		RootDiskGB:    s.cfg.RootDiskGB,
		DiskGBHourUSD: s.cfg.DiskGBHourUSD,
		Community:     s.loc.Community,
		BootTime:      s.boot,
		PublicIPs:     s.loc.Gateway == "",
		Gateway:       s.loc.Gateway,
	}
	if s.counted {
		n := s.free
		o.NodesAvailable = &n
		o.Available = n > 0
	} else {
		o.Available = s.available && s.free > 0
	}
	return o
}

// PlaceGroup reserves req.Count machines of one offer at once. A retry with
// the same GroupName returns the live group it placed before and takes
// nothing more; a GroupName whose group was terminated places a new group.
// A refused placement takes nothing.
func (c *Cloud) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (_ providers.Group, err error) {
	const op = "PlaceGroup"
	if err := ctx.Err(); err != nil {
		return providers.Group{}, err
	}
	if err := c.open(ctx); err != nil {
		return providers.Group{}, err
	}
	defer c.close(&err)
	now := c.now()
	if g, ok := c.groups[req.GroupName]; ok && !g.terminated {
		if g.offer.cfg.ID != req.OfferID || g.offer.loc.ID != req.Location || len(g.nodes) != req.Count {
			return providers.Group{}, c.errorf(providers.ErrValidation, op, "group-conflict", req.Location,
				"group %q already exists with offer %s, location %s and %d machines",
				req.GroupName, g.offer.cfg.ID, g.offer.loc.ID, len(g.nodes))
		}
		return c.view(g, now), nil
	}
	s, err := c.checkRequest(req)
	if err != nil {
		return providers.Group{}, err
	}
	if f := c.takeFault(isRefusal, s, req.GroupName, req.Count); f != nil {
		return providers.Group{}, c.refusal(f, req)
	}
	if err := c.take(s, req.Count); err != nil {
		return providers.Group{}, err
	}
	g := c.newGroup(s, req, now)
	c.groups[req.GroupName] = g
	return c.view(g, now), nil
}

// checkRequest validates a placement against the catalog. Callers hold c.mu.
func (c *Cloud) checkRequest(req providers.PlaceRequest) (*offerState, error) {
	const op = "PlaceGroup"
	bad := func(format string, args ...any) error {
		return c.errorf(providers.ErrValidation, op, "invalid-parameters", req.Location, format, args...)
	}
	if req.GroupName == "" {
		return nil, bad("group name is required")
	}
	if req.Count < 1 {
		return nil, bad("count must be at least 1, got %d", req.Count)
	}
	s, ok := c.byID[req.OfferID]
	if !ok {
		return nil, bad("unknown offer %q", req.OfferID)
	}
	if s.loc.ID != req.Location {
		return nil, bad("offer %s is sold in %s, not in %q", req.OfferID, s.loc.ID, req.Location)
	}
	if n := len(req.Agent.Tokens); n > 0 && n != req.Count {
		return nil, bad("%d agent tokens for %d machines", n, req.Count)
	}
	if price := c.offer(s).MachineHourUSD(); req.AboveCeiling(price) {
		return nil, providers.AboveCeiling(c.Name(), op, req.Location, "offer "+req.OfferID, price, req.MaxMachineHourUSD)
	}
	return s, nil
}

// take removes n machines from an offer's stock, or refuses without taking
// any. Callers hold c.mu.
func (c *Cloud) take(s *offerState, n int) error {
	noCapacity := func(format string, args ...any) error {
		return c.errorf(providers.ErrNoCapacity, "PlaceGroup", "insufficient-capacity", s.loc.ID, format, args...)
	}
	switch {
	case s.counted && s.free < n:
		return noCapacity("not enough capacity: %d of %s requested, %d free in %s", n, s.cfg.ID, s.free, s.loc.ID)
	case !s.counted && !s.available:
		return noCapacity("no capacity available for %s in %s", s.cfg.ID, s.loc.ID)
	case !s.counted && s.free < n:
		return noCapacity("not enough capacity: %d of %s requested in %s", n, s.cfg.ID, s.loc.ID)
	}
	s.free -= n
	return nil
}

// DescribeGroup reports every machine of the group as of now.
func (c *Cloud) DescribeGroup(ctx context.Context, groupName string) (_ providers.Group, err error) {
	if err := c.describeDelay(ctx); err != nil {
		return providers.Group{}, err
	}
	if err := c.open(ctx); err != nil {
		return providers.Group{}, err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok {
		return providers.Group{}, c.errorf(providers.ErrNotFound, "DescribeGroup", "not-found", "",
			"group %q not found", groupName)
	}
	return c.view(g, c.now()), nil
}

// DescribeGroups reports every named group the cloud knows in one call.
func (c *Cloud) DescribeGroups(ctx context.Context, groupNames []string) (_ map[string]providers.Group, err error) {
	if err := c.describeDelay(ctx); err != nil {
		return nil, err
	}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	defer c.close(&err)
	now := c.now()
	out := make(map[string]providers.Group, len(groupNames))
	for _, name := range groupNames {
		if g, ok := c.groups[name]; ok {
			out[name] = c.view(g, now)
		}
	}
	return out, nil
}

// describeDelay holds a describe call for a describe_delay fault.
func (c *Cloud) describeDelay(ctx context.Context) (err error) {
	if err := c.open(ctx); err != nil {
		return err
	}
	d := c.takeDescribeDelay()
	c.close(&err)
	if err != nil {
		return err
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return c.errorf(providers.ErrTransient, "DescribeGroups", "timeout", "", "describe timed out: %v", ctx.Err())
	case <-t.C:
		return nil
	}
}

// RestartNode reboots one running, pending or restarting machine (or starts a
// stopped one): it reads
// NodeRestarting for a quarter of its boot time, then NodeRunning again with
// the same address. Its agent process starts afresh. A machine that vanished
// or belongs to a terminated group is ErrNotFound.
func (c *Cloud) RestartNode(ctx context.Context, groupName, nodeID string) (err error) {
	const op = "RestartNode"
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated {
		return c.errorf(providers.ErrNotFound, op, "not-found", "", "group %q not found", groupName)
	}
	i := slices.IndexFunc(g.nodes, func(n *node) bool { return n.id == nodeID })
	if i < 0 {
		return c.errorf(providers.ErrNotFound, op, "not-found", g.offer.loc.ID, "machine %q not found in group %q", nodeID, groupName)
	}
	n := g.nodes[i]
	now := c.now()
	if st, _ := n.state(now); st == providers.NodeTerminated {
		return c.errorf(providers.ErrNotFound, op, "not-found", g.offer.loc.ID, "machine %s no longer exists", nodeID)
	}
	if n.unrecoverable {
		return c.errorf(providers.ErrUnrecoverable, op, "host-failed", g.offer.loc.ID, "machine %s cannot be restarted: host hardware fault", nodeID)
	}
	if c.takeNodeFault(FaultRestartFails, n) {
		return c.errorf(providers.ErrTransient, op, "restart-failed", g.offer.loc.ID, "restart of machine %s did not complete", nodeID)
	}
	n.downAt, n.silentAt, n.stopped = time.Time{}, time.Time{}, false
	n.eccAt, n.xidAt, n.dropAt = time.Time{}, time.Time{}, time.Time{} // a reboot clears the GPU faults
	n.restartUntil = now.Add(g.offer.boot / 4)
	n.agentEpoch++
	return nil
}

// StopNode stops one running machine (NodeStopped, "stopped by request")
// until RestartNode starts it again with the same address. Its agent stops
// with it. A machine that is not running is ErrValidation; one that vanished
// or belongs to a terminated group is ErrNotFound.
func (c *Cloud) StopNode(ctx context.Context, groupName, nodeID string) (err error) {
	const op = "StopNode"
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated {
		return c.errorf(providers.ErrNotFound, op, "not-found", "", "group %q not found", groupName)
	}
	i := slices.IndexFunc(g.nodes, func(n *node) bool { return n.id == nodeID })
	if i < 0 {
		return c.errorf(providers.ErrNotFound, op, "not-found", g.offer.loc.ID, "machine %q not found in group %q", nodeID, groupName)
	}
	n := g.nodes[i]
	if st, _ := n.state(c.now()); st != providers.NodeRunning {
		return c.errorf(providers.ErrValidation, op, "incorrect-state", g.offer.loc.ID, "machine %s is %s, not running", nodeID, st)
	}
	n.stopped = true
	n.agentEpoch++
	return nil
}

// TerminateGroup terminates every machine of the group and returns them to
// stock, once. Unknown and already terminated groups are success.
func (c *Cloud) TerminateGroup(ctx context.Context, groupName string) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	defer c.close(&err)
	g, ok := c.groups[groupName]
	if !ok || g.terminated {
		return nil
	}
	g.terminated = true
	g.terminatedAt = c.now()
	for _, n := range g.nodes {
		if !n.released {
			g.offer.free++
		}
	}
	return nil
}

// errorf builds a classified provider error.
func (c *Cloud) errorf(class error, op, code, loc, format string, args ...any) error {
	return &providers.Error{
		Class:    class,
		Provider: c.name,
		Op:       op,
		Code:     code,
		Message:  fmt.Sprintf(format, args...),
		Location: loc,
	}
}

// hash is the seeded source of every deterministic "random" value.
func (c *Cloud) hash(parts ...any) [sha256.Size]byte {
	b := fmt.Appendf(nil, "%d", c.seed)
	for _, p := range parts {
		b = fmt.Appendf(b, "|%v", p)
	}
	return sha256.Sum256(b)
}

// hexID is n hex digits derived from parts.
func (c *Cloud) hexID(n int, parts ...any) string {
	h := c.hash(parts...)
	return hex.EncodeToString(h[:])[:n]
}

// fraction is a deterministic number in [0, 1) derived from parts.
func (c *Cloud) fraction(parts ...any) float64 {
	h := c.hash(parts...)
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
}
