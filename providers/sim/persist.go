package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clusterdeck/clusterdeck/providers"
)

// The simulated cloud keeps its state in the database it is given (WithDB)
// so it outlives restarts and every instance sees the same cloud (OP4), as
// a real provider would. The state is one versioned JSON document per
// cloud name in sim_clouds: every operation takes the row's lock (SELECT …
// FOR UPDATE on PostgreSQL; SQLite's immediate transactions lock the
// database), reloads the document when another instance changed it, works
// on the in-memory model and writes the document back when it changed. One
// document keeps each operation atomic across stock, machines and faults
// with the same code on both databases. Terminated groups are dropped from
// it a day (cloud time) after they ended, as a real cloud forgets them.
//
// Agents are the one thing that stays in a process: whichever instance
// holds the row's agent lease runs every machine's agent; when it dies the
// lease expires and another instance starts fresh agents (like a machine
// whose agent process restarted).

// forgetTerminated is how long a terminated group is still described.
const forgetTerminated = 24 * time.Hour

// agentLease is how long an instance may run the agents without renewing
// when its caller steps them (StepAgents). Run holds them for
// agentLeaseRounds of its interval instead: 15 s at the server's default
// 2 s, and an instance that rounds faster is taken over as fast when it dies.
const agentLease = 15 * time.Second

// agentLeaseRounds is how many of Run's intervals the agent lease lasts
// (in halves: 15 = 7½ rounds, so a round late by several intervals on a
// busy machine does not hand the agents to another instance).
const agentLeaseRounds = 15

// leaseFor is how long the agent lease lasts: agentLease, or 7½ rounds of
// the interval Run was given. Callers hold c.stepMu.
func (c *Cloud) leaseFor() time.Duration {
	if c.every > 0 {
		return c.every * agentLeaseRounds / 2
	}
	return agentLease
}

// CloudRow is the sim_clouds row. The product's migrations create the
// table (models' 0970_sim_clouds); its model test checks this struct's
// columns against it.
type CloudRow struct {
	Name        string `gorm:"primaryKey;size:64"`
	Version     int64  `gorm:"not null"`
	State       string `gorm:"type:text;not null"`
	AgentHolder string `gorm:"size:200;not null;default:''"`
	AgentUntil  time.Time
	UpdatedAt   time.Time
}

func (CloudRow) TableName() string { return "sim_clouds" }

// WithDB keeps the cloud's state in db (table sim_clouds, which the
// product's migrations create like every table: models' 0970_sim_clouds)
// instead of this process's memory. holder names this process for
// the agent lease.
func WithDB(db *gorm.DB, holder string) Option {
	return func(c *Cloud) { c.db, c.holder, c.wall = db, holder, time.Now }
}

// stateDoc is the persisted state of the cloud.
type stateDoc struct {
	Stock  map[string]int `json:"stock"` // offer id → free machines
	Gens   map[string]int `json:"gens"`
	Groups []groupDoc     `json:"groups"`
	Faults []faultDoc     `json:"faults"`
}

type faultDoc struct {
	Fault
	Left int `json:"left"`
}

type groupDoc struct {
	Name         string                   `json:"name"`
	Gen          int                      `json:"gen"`
	Offer        string                   `json:"offer"`
	Agent        providers.AgentBootstrap `json:"agent"`
	Workload     providers.Workload       `json:"workload,omitzero"`
	PlacedAt     time.Time                `json:"placedAt"`
	Terminated   bool                     `json:"terminated,omitempty"`
	TerminatedAt time.Time                `json:"terminatedAt,omitzero"`
	Nodes        []nodeDoc                `json:"nodes"`
}

type nodeDoc struct {
	ID              string               `json:"id"`
	Host            string               `json:"host,omitempty"`
	BootAt          time.Time            `json:"bootAt"`
	RestartUntil    time.Time            `json:"restartUntil,omitzero"`
	NeverBoots      bool                 `json:"neverBoots,omitempty"`
	Dies            bool                 `json:"dies,omitempty"`
	DieAfter        Duration             `json:"dieAfter,omitempty"`
	AgentSilent     bool                 `json:"agentSilent,omitempty"`
	PeerUnreachable bool                 `json:"peerUnreachable,omitempty"`
	CheckFails      []string             `json:"checkFails,omitempty"`
	GPUMissing      bool                 `json:"gpuMissing,omitempty"`
	NCCLSlow        bool                 `json:"ncclSlow,omitempty"`
	ECCErrors       bool                 `json:"eccErrors,omitempty"`
	StressFails     bool                 `json:"stressFails,omitempty"`
	SlowLink        bool                 `json:"slowLink,omitempty"`
	DownAt          time.Time            `json:"downAt,omitzero"`
	Stopped         bool                 `json:"stopped,omitempty"`
	Released        bool                 `json:"released,omitempty"`
	Unrecoverable   bool                 `json:"unrecoverable,omitempty"`
	SilentAt        time.Time            `json:"silentAt,omitzero"`
	ECCAt           time.Time            `json:"eccAt,omitzero"`
	XIDAt           time.Time            `json:"xidAt,omitzero"`
	DropAt          time.Time            `json:"dropAt,omitzero"`
	ECCGPU          int                  `json:"eccGpu,omitempty"`
	XIDGPU          int                  `json:"xidGpu,omitempty"`
	DropGPU         int                  `json:"dropGpu,omitempty"`
	XIDCode         int                  `json:"xidCode,omitempty"`
	Installed       map[string]time.Time `json:"installed,omitempty"`
	AgentEpoch      int                  `json:"agentEpoch,omitempty"`
	Ran             []Ran                `json:"ran,omitempty"`
}

// encode renders the in-memory model. Callers hold c.mu.
func (c *Cloud) encode() ([]byte, error) {
	doc := stateDoc{Stock: map[string]int{}, Gens: c.gens}
	for _, s := range c.offers {
		doc.Stock[s.cfg.ID] = s.free
	}
	now := c.now()
	for _, name := range sortedKeys(c.groups) {
		g := c.groups[name]
		if g.terminated && now.Sub(g.terminatedAt) > forgetTerminated {
			continue
		}
		gd := groupDoc{Name: g.name, Gen: g.gen, Offer: g.offer.cfg.ID, Agent: g.agent, Workload: g.workload,
			PlacedAt: g.placedAt, Terminated: g.terminated, TerminatedAt: g.terminatedAt}
		for _, n := range g.nodes {
			gd.Nodes = append(gd.Nodes, nodeDoc{ID: n.id, Host: n.host, BootAt: n.bootAt, RestartUntil: n.restartUntil,
				NeverBoots: n.neverBoots, Dies: n.dies, DieAfter: Duration(n.dieAfter), AgentSilent: n.agentSilent,
				PeerUnreachable: n.peerUnreachable, CheckFails: n.checkFails, GPUMissing: n.gpuMissing,
				NCCLSlow: n.ncclSlow, ECCErrors: n.eccErrors, StressFails: n.stressFails, SlowLink: n.slowLink, DownAt: n.downAt, Stopped: n.stopped, Released: n.released, Unrecoverable: n.unrecoverable,
				SilentAt: n.silentAt, Installed: n.installed, AgentEpoch: n.agentEpoch, Ran: n.ran,
				ECCAt: n.eccAt, XIDAt: n.xidAt, DropAt: n.dropAt, ECCGPU: n.eccGPU, XIDGPU: n.xidGPU, DropGPU: n.dropGPU, XIDCode: n.xidCode})
		}
		doc.Groups = append(doc.Groups, gd)
	}
	for _, f := range c.faults {
		doc.Faults = append(doc.Faults, faultDoc{Fault: f.Fault, Left: f.left})
	}
	return json.Marshal(doc)
}

// decode replaces the in-memory model by a persisted one. Offers the
// catalog no longer has keep their groups out of sight. Callers hold c.mu.
func (c *Cloud) decode(data []byte) error {
	var doc stateDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("sim: decode state: %w", err)
	}
	for _, s := range c.offers {
		if free, ok := doc.Stock[s.cfg.ID]; ok {
			s.free = free
		}
	}
	c.gens = doc.Gens
	if c.gens == nil {
		c.gens = map[string]int{}
	}
	c.groups = make(map[string]*group, len(doc.Groups))
	for _, gd := range doc.Groups {
		s, ok := c.byID[gd.Offer]
		if !ok {
			c.log.Warn("sim: group of an offer no longer in the catalog", "group", gd.Name, "offer", gd.Offer)
			continue
		}
		g := &group{name: gd.Name, gen: gd.Gen, offer: s, agent: gd.Agent, workload: gd.Workload, placedAt: gd.PlacedAt,
			terminated: gd.Terminated, terminatedAt: gd.TerminatedAt}
		for i, nd := range gd.Nodes {
			n := &node{g: g, index: i, id: nd.ID, host: nd.Host, bootAt: nd.BootAt, restartUntil: nd.RestartUntil,
				neverBoots: nd.NeverBoots, dies: nd.Dies, dieAfter: nd.DieAfter.D(), agentSilent: nd.AgentSilent,
				peerUnreachable: nd.PeerUnreachable, checkFails: nd.CheckFails, gpuMissing: nd.GPUMissing,
				ncclSlow: nd.NCCLSlow, eccErrors: nd.ECCErrors, stressFails: nd.StressFails, slowLink: nd.SlowLink, downAt: nd.DownAt, stopped: nd.Stopped, released: nd.Released, unrecoverable: nd.Unrecoverable,
				silentAt: nd.SilentAt, installed: nd.Installed, agentEpoch: nd.AgentEpoch, ran: nd.Ran,
				eccAt: nd.ECCAt, xidAt: nd.XIDAt, dropAt: nd.DropAt, eccGPU: nd.ECCGPU, xidGPU: nd.XIDGPU, dropGPU: nd.DropGPU, xidCode: nd.XIDCode}
			if n.installed == nil {
				n.installed = map[string]time.Time{}
			}
			g.nodes = append(g.nodes, n)
		}
		c.groups[g.name] = g
	}
	c.faults = nil
	for _, fd := range doc.Faults {
		c.faults = append(c.faults, &activeFault{Fault: fd.Fault, left: fd.Left})
	}
	return nil
}

// session is one locked operation on the persisted state.
type session struct {
	tx     *gorm.DB
	loaded []byte
}

// open takes c.mu and, with a database, the cloud row's lock, and brings
// the in-memory model up to date. Every open is followed by close.
func (c *Cloud) open(ctx context.Context) error {
	c.mu.Lock()
	if c.db == nil {
		return nil
	}
	if err := c.begin(ctx); err != nil {
		c.mu.Unlock()
		return err
	}
	return nil
}

func (c *Cloud) begin(ctx context.Context) error {
	tx := c.db.WithContext(ctx).Begin()
	if tx.Error != nil {
		return fmt.Errorf("sim: begin: %w", tx.Error)
	}
	var row CloudRow
	q := "SELECT name, version FROM sim_clouds WHERE name = ?"
	if tx.Dialector.Name() == "postgres" {
		q += " FOR UPDATE"
	}
	err := tx.Raw(q, c.name).Scan(&row).Error
	if err == nil && row.Name == "" {
		// First use of this database: store the catalog's stock as version 1
		// (unless another instance just did), then lock that row.
		if err = c.insertRow(tx); err == nil {
			err = tx.Raw(q, c.name).Scan(&row).Error
		}
	}
	if err == nil && row.Version != c.version {
		var state string
		if err = tx.Raw("SELECT state FROM sim_clouds WHERE name = ?", c.name).Scan(&state).Error; err == nil {
			err = c.decode([]byte(state))
			c.version, c.saved = row.Version, nil
		}
	}
	if err != nil {
		tx.Rollback()
		c.version = -1 // reload next time
		return fmt.Errorf("sim: load state: %w", err)
	}
	// The model is the stored version: its encoding is the one this process
	// last loaded or wrote (saved), kept so that an operation encodes the
	// document once (at close), not twice.
	if c.saved == nil {
		if c.saved, err = c.encode(); err != nil {
			tx.Rollback()
			return err
		}
	}
	c.sess = &session{tx: tx, loaded: c.saved}
	return nil
}

// insertRow stores the state built from the catalog as the cloud's first
// version. Callers hold c.mu.
func (c *Cloud) insertRow(tx *gorm.DB) error {
	c.gens, c.groups, c.faults = map[string]int{}, map[string]*group{}, nil
	for _, s := range c.offers {
		s.free = s.initial
	}
	state, err := c.encode()
	if err != nil {
		return err
	}
	c.version = 0 // decode whatever version 1 is now
	return tx.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&CloudRow{Name: c.name, Version: 1, State: string(state)}).Error
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// close writes the state back when the operation changed it, commits and
// releases c.mu. A failed write is reported through *errp when the
// operation itself succeeded.
func (c *Cloud) close(errp *error) {
	defer c.mu.Unlock()
	if c.db == nil || c.sess == nil {
		return
	}
	s := c.sess
	c.sess = nil
	err := c.save(s)
	if err != nil {
		s.tx.Rollback()
		c.version = -1
	} else if err = s.tx.Commit().Error; err != nil {
		c.version = -1
	}
	if c.version == -1 {
		c.saved = nil // reloaded and encoded again next time
	}
	if err != nil && errp != nil && *errp == nil {
		*errp = fmt.Errorf("sim: save state: %w", err)
	} else if err != nil {
		c.log.Error("sim: save state", "error", err)
	}
}

func (c *Cloud) save(s *session) error {
	state, err := c.encode()
	if err != nil || bytes.Equal(state, s.loaded) {
		return err
	}
	res := s.tx.Exec("UPDATE sim_clouds SET state = ?, version = version + 1, updated_at = ? WHERE name = ? AND version = ?",
		string(state), time.Now().UTC(), c.name, c.version)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return errors.New("the state changed underneath (lost row lock)")
	}
	c.version++
	c.saved = state
	return nil
}

// takeAgentLease reports whether this process runs the agents now, taking
// or renewing the lease. Without a database it always does.
func (c *Cloud) takeAgentLease(ctx context.Context) (bool, error) {
	if c.db == nil {
		return true, nil
	}
	now := c.wall().UTC()
	res := c.db.WithContext(ctx).Exec(
		"UPDATE sim_clouds SET agent_holder = ?, agent_until = ? WHERE name = ? AND (agent_holder = ? OR agent_holder = '' OR agent_until IS NULL OR agent_until < ?)",
		c.holder, now.Add(c.leaseFor()), c.name, c.holder, now)
	if res.Error != nil {
		return false, res.Error
	}
	return res.RowsAffected == 1, nil
}

// releaseAgentLease gives the agents up (graceful shutdown) so another
// instance takes them over at once.
func (c *Cloud) releaseAgentLease(ctx context.Context) {
	if c.db == nil {
		return
	}
	c.db.WithContext(ctx).Exec("UPDATE sim_clouds SET agent_holder = '', agent_until = NULL WHERE name = ? AND agent_holder = ?",
		c.name, c.holder)
}
