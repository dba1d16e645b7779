package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Health defaults (R1): an agent is late after three minutes without a
// heartbeat; a machine is unhealthy once its condition held for a minute,
// which takes at least two passes (no flapping on one missed heartbeat,
// and a "not found" answer is confirmed before anything is decided on it).
const (
	DefaultHeartbeatLate  = 3 * time.Minute
	DefaultUnhealthyAfter = time.Minute
	healthBatch           = 1000
)

// Health is R1–R2: it checks every admitted machine of every live cluster
// (not those being stopped, nor stopped ones: B6),
// a batch of clusters at a time: one describe call per provider per batch,
// and the agents' heartbeats from the database. Writes happen only when
// something changed, so a healthy fleet costs two reads per batch.
type Health struct {
	Store          *models.Store
	Providers      providers.Registry
	Mail           *models.ClusterNotify // the degraded mail (E1); nil = none
	Verify         *Verify               // a machine down mid-verification is swapped or named here (X13); nil = a plain Verify
	HeartbeatLate  time.Duration         // 0 = DefaultHeartbeatLate
	UnhealthyAfter time.Duration         // 0 = DefaultUnhealthyAfter
	Batch          int                   // clusters per batch; 0 = 1000
}

// Name implements Job.
func (j *Health) Name() string { return "health" }

// Run implements Job: one pass over every live cluster.
func (j *Health) Run(ctx context.Context) error {
	return eachBatch(ctx, orDefault(j.Batch, healthBatch), j.Store.LiveClustersAfter, j.pass)
}

// eachBatch pages through clusters by id, batch at a time (keyset paging),
// and passes every page; a failed page does not stop the later ones.
func eachBatch(ctx context.Context, batch int,
	load func(ctx context.Context, after string, limit int) ([]models.Cluster, error),
	pass func(context.Context, []models.Cluster) error) error {
	var errs []error
	for after := ""; ; {
		cs, err := load(ctx, after, batch)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(cs) > 0 {
			errs = append(errs, pass(ctx, cs))
			after = cs[len(cs)-1].ID
		}
		if len(cs) < batch {
			return errors.Join(errs...)
		}
	}
}

// orDefault returns v, or def when v is zero or negative (an unset option).
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// pass checks one batch of clusters.
func (j *Health) pass(ctx context.Context, cs []models.Cluster) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	nodes, err := j.Store.HealthNodes(ctx, ids)
	if err != nil {
		return err
	}
	groups, described, errs := j.describe(ctx, cs)
	now := j.Store.Now()
	var marks models.HealthMarks
	type verdict struct {
		c     models.Cluster
		downs []models.DownMachine
		well  bool
	}
	var verdicts []verdict
	for _, c := range cs {
		if !described[c.Provider] || c.Lifecycle().TerminateAsked() {
			continue // unknown this pass: decide nothing on it
		}
		g, found := groups[c.GroupName()]
		v := verdict{c: c, well: true}
		for _, n := range nodes[c.ID] {
			if n.Status.Joining() {
				v.well = false // an added or replacement machine: the join job follows it (L10, X5)
				continue
			}
			if n.MeshAt == nil || n.Status.Gone() {
				continue // not admitted, or ended
			}
			seen, evidence := j.observe(c, n, g, found, now)
			if seen == "" {
				if n.DownSince != nil || n.Status.Unwell() {
					marks.Well = append(marks.Well, n.ID)
				}
				continue
			}
			v.well = false
			marks.Unwell = append(marks.Unwell, n.ID)
			since := now
			if n.DownSince != nil {
				since = *n.DownSince
			}
			// The hold time is positive and its clock starts at the first
			// sighting, so nothing (a "not found" answer included) is
			// declared before a later pass confirms it.
			if now.Sub(since) >= orDefault(j.UnhealthyAfter, DefaultUnhealthyAfter) &&
				!n.Status.Unwell() {
				v.downs = append(v.downs, models.DownMachine{Rank: n.Rank, Name: n.Name, Seen: seen, Evidence: evidence})
			}
		}
		verdicts = append(verdicts, v)
	}
	if err := j.Store.MarkHealth(ctx, marks); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, v := range verdicts {
		var err error
		switch {
		case len(v.downs) > 0 && v.c.Lifecycle().Verifying():
			err = j.verifier().MachinesDown(ctx, v.c, v.downs) // X13: swapped or named now, not at the window's end
		case len(v.downs) > 0:
			_, err = j.Store.MarkMachinesDown(ctx, v.c, v.downs, j.Mail)
		case v.well && v.c.EpisodeStartedAt != nil:
			_, err = j.Store.MarkHealthy(ctx, v.c, j.Mail)
		}
		if err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", v.c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// describe asks each provider about its clusters' groups in one call.
func (j *Health) describe(ctx context.Context, cs []models.Cluster) (map[string]providers.Group, map[string]bool, []error) {
	names := map[string][]string{}
	for _, c := range cs {
		names[c.Provider] = append(names[c.Provider], c.GroupName())
	}
	groups, ok := map[string]providers.Group{}, map[string]bool{}
	var errs []error
	for prov, list := range names {
		p, err := j.Providers.Get(prov)
		if err != nil {
			continue // a disabled provider: nothing can be said about its machines
		}
		got, err := p.DescribeGroups(ctx, list)
		if err != nil {
			errs = append(errs, fmt.Errorf("describe %s: %w", prov, err))
			continue
		}
		for k, g := range got {
			groups[k] = g
		}
		ok[prov] = true
	}
	return groups, ok, errs
}

// verifier is the verify job health hands a verifying cluster's downed
// machines to.
func (j *Health) verifier() *Verify {
	if j.Verify != nil {
		return j.Verify
	}
	return &Verify{Store: j.Store}
}

// observe says what is wrong with machine n of cluster c now, or "" when
// it is well: running at its provider and its agent's heartbeat on time;
// and what that rests on (X19): the provider's view, or the machine's own
// agent (a GPU error it reported, its silence), which the customer
// controls. While c verifies, its machine check judges the GPUs (a
// hardware error is its to report), and an agent running a check answers
// late: it is silent only past a check's lease (X13).
func (j *Health) observe(c models.Cluster, n models.ClusterNode, g providers.Group, found bool, now time.Time) (string, string) {
	verifying := c.Lifecycle().Verifying()
	seen := j.observeProvider(n, g, found)
	if seen != "" {
		return seen, models.EvidenceProvider
	}
	if n.HWFault != "" && !verifying {
		return "GPU hardware error: " + n.HWFault, models.EvidenceTenant // X15: as unwell as a silent agent
	}
	last := n.HeartbeatAt
	if last == nil {
		last = n.MeshAt
	}
	late := orDefault(j.HeartbeatLate, DefaultHeartbeatLate)
	if verifying {
		late = max(late, models.VerifyTaskLease)
	}
	if now.Sub(*last) > late {
		return fmt.Sprintf("agent silent: last heartbeat %s ago", now.Sub(*last).Round(time.Second)), models.EvidenceTenant
	}
	return "", ""
}

// observeProvider is what the provider says is wrong with machine n, ""
// when it reports it running.
func (j *Health) observeProvider(n models.ClusterNode, g providers.Group, found bool) string {
	if !found {
		return "not found at the provider"
	}
	var pn *providers.Node
	for i := range g.Nodes {
		if g.Nodes[i].Index == n.Rank {
			pn = &g.Nodes[i]
			break
		}
	}
	switch {
	case pn == nil:
		return "not found at the provider"
	case pn.State != providers.NodeRunning:
		msg := string(pn.State) + " at the provider"
		if pn.Message != "" {
			msg += " (" + pn.Message + ")"
		}
		return msg
	}
	return ""
}
