package main

// The catalog walk (X13, L3–L6, O2, S1): every offer of the default
// simulated catalog, launched through the public API with default settings
// at 2 machines and at its largest sellable size up to 8, with each software
// its machine kind runs, must reach `ready` with a passed verification on
// the real binary, on SQLite and PostgreSQL. A feature that breaks any
// offer's journey to a verified hand-over fails here first.

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// walkCase is one launch of the walk.
type walkCase struct {
	offer    api.Offer
	nodes    int
	software string

	id       string    // the cluster, once launched
	launched time.Time // on the server's clock
	done     bool      // judged (passed or failed) and terminate asked for
}

func (c *walkCase) String() string {
	return fmt.Sprintf("%s at %d machines with software %s", c.offer.ID, c.nodes, c.software)
}

// walkBudget is how long, on the server's clock, a launch may take to a
// verified hand-over: the slowest machine kind boots in 12 minutes (bare
// metal), its software installs and the checks run; past this the walk
// reports the cluster stuck where it is.
const walkBudget = 90 * time.Minute

// walkStep is how far each step moves the clock, in minutes: less than
// the health job's default late heartbeat (3 minutes), as every step waits
// for a whole round of the machines' agents.
const walkStep = 2

// TestCatalogWalk launches every startable offer of the default simulated
// catalog (sim.DefaultConfig, community hosts included: include_community)
// through /v1 with the demo API key and default launch settings (no
// `verify` field: verification on, default thresholds), at 2 machines and
// at its largest sellable size up to 8 (min(8, max_nodes): O2), and requires
// each launch to reach `ready` with its verification report "passed", then
// terminates it and requires no machine left behind (X10). A location that
// says it has no machines (nodes_available null, saying no) sells no size:
// the test names those offers and fails on any other offer not sold.
//
// Software (S1): every software an offer's machine kind runs
// (software.Choices; Kubernetes on vm and bare metal only) runs on it. By
// default each size runs once, the software turning with the offer's place
// in the catalog, so every software runs at 2 machines and at the largest
// size on every machine kind and fabric (63 launches). CLUSTERDECK_WALK=full
// walks every size with every software (238 launches, several minutes of
// CPU: the simulated cloud rewrites its one state document, terminated
// clusters included, on every agent action).
//
// It is cheap for what it walks: one server per database, every launch the
// offer's stock holds in flight at once (an offer with few machines walks
// its launches one after another as the earlier ones end), the fake clock
// moved two minutes at a time and the jobs run on demand.
func TestCatalogWalk(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		began := time.Now()
		s := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1",
			// The walk's launches, many at once: the organisation's
			// quota (a server setting, as an operator raises it) and a
			// test-mode deposit cover them. The launches keep the defaults.
			"DEFAULT_MAX_MACHINES=4000", "DEFAULT_MAX_GPUS=32000")
		st := s.store(t)
		ctx := t.Context()
		var me api.Me
		if code := s.api(t, http.MethodGet, "/v1/me", nil, &me); code != http.StatusOK {
			t.Fatalf("GET /v1/me: %d", code)
		}
		if _, err := st.Deposit(ctx, me.Org.ID, 1_000_000*models.Micro, "walk-deposit", "catalog walk"); err != nil {
			t.Fatal(err)
		}

		cases, capacity := walkCases(t, s, os.Getenv("CLUSTERDECK_WALK") == "full")
		inUse := map[string]int{}
		var failures []string
		fail := func(c *walkCase, why string) {
			failures = append(failures, fmt.Sprintf("%s: %s", c, why))
		}
		pending := slices.Clone(cases)
		var live []*walkCase
		step := 0
		for len(pending) > 0 || len(live) > 0 {
			// Launch what the offers' stock holds now, in the walk's order.
			var waiting []*walkCase
			flying := 0 // machines live, for the log
			for _, n := range inUse {
				flying += n
			}
			for _, c := range pending {
				if inUse[c.offer.ID]+c.nodes > capacity[c.offer.ID] {
					waiting = append(waiting, c)
					continue
				}
				if !s.walkLaunch(t, c) {
					waiting = append(waiting, c) // the catalog has not seen the last release yet
					continue
				}
				inUse[c.offer.ID] += c.nodes
				flying += c.nodes
				live = append(live, c)
			}
			pending = waiting

			t0 := time.Now()
			s.advance(t, walkStep)
			for _, job := range []string{"provision", "install", "join", "verify", "terminate"} {
				s.devRun(t, job)
			}
			t1 := time.Now()
			agentRoundWithin(t, s, 3*time.Minute)
			step++
			if step%10 == 0 {
				t.Logf("step %d: %d live (%d machines), %d waiting; jobs %s, round %s", step, len(live), flying, len(pending), t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
			}

			var list api.ClusterList
			if code := s.api(t, http.MethodGet, "/v1/gpu/clusters", nil, &list); code != http.StatusOK {
				t.Fatalf("list clusters: %d", code)
			}
			byID := map[string]api.Cluster{}
			for _, cl := range list.Clusters {
				byID[cl.ID] = cl
			}
			now := s.now(t)
			var still []*walkCase
			for _, c := range live {
				cl := byID[c.id]
				switch {
				case c.done && models.ClusterStatus(cl.Status).Terminal(): // its machines are released
					inUse[c.offer.ID] -= c.nodes
					continue
				case c.done:
				case cl.Status == string(models.StatusReady):
					t.Logf("%s ready after %s", c, now.Sub(c.launched))
					if why := s.walkVerdict(t, c); why != "" {
						fail(c, why)
					}
					s.walkTerminate(t, c)
				case cl.Status == string(models.StatusDegraded), cl.Status == string(models.StatusFailed):
					fail(c, s.walkExplain(t, c))
					s.walkTerminate(t, c)
				case now.Sub(c.launched) > walkBudget:
					fail(c, "not ready after "+walkBudget.String()+" on the server's clock: "+s.walkExplain(t, c))
					s.walkTerminate(t, c)
				}
				still = append(still, c)
			}
			live = still
			if step > 500 {
				t.Fatalf("the walk did not end in 500 steps: %d launches waiting, %d live", len(pending), len(live))
			}
		}
		var doc struct{ N int }
		st.DB().Raw("SELECT length(state) AS n FROM sim_clouds").Scan(&doc)
		t.Logf("sim document %d bytes", doc.N)
		noLeaks(t, s)
		t.Logf("walked %d launches in %d steps of the clock (%s of real time)", len(cases), step, time.Since(began).Round(time.Second))
		for _, f := range failures {
			t.Error(f)
		}
		s.stop(t)
		ps := s.cmd.ProcessState
		t.Logf("the server used %s of CPU (user %s, system %s)", (ps.UserTime() + ps.SystemTime()).Round(time.Millisecond),
			ps.UserTime().Round(time.Millisecond), ps.SystemTime().Round(time.Millisecond))
	})
}

// walkCases lists the walk's launches from what GET /v1/gpu/offers sells at
// 2 machines with community hosts, checked against the default catalog:
// every offer of sim.DefaultConfig is either sold or named as selling no
// size (and why). capacity is each offer's machines at once: its count, or
// the simulated cloud's hidden capacity where the location only says yes.
func walkCases(t *testing.T, s *server, full bool) ([]*walkCase, map[string]int) {
	t.Helper()
	var page api.OffersResponse
	if code := s.api(t, http.MethodGet, "/v1/gpu/offers?nodes=2&include_community=true", nil, &page); code != http.StatusOK {
		t.Fatalf("offers: %d", code)
	}
	sold, startable := map[string]api.Offer{}, 0
	for _, g := range page.Groups {
		for _, o := range g.Offers {
			sold[o.ID] = o
			if o.Availability == "available" {
				startable++
			}
		}
	}
	cfg := sim.DefaultConfig()
	capacity := map[string]int{}
	var cases []*walkCase
	var unsold []string
	total := 0
	for _, loc := range cfg.Locations {
		for _, oc := range loc.Offers {
			total++
			id := "sim:" + oc.ID
			o, ok := sold[id]
			if !ok || o.Availability != "available" {
				why := "not sold at 2 machines"
				if oc.NodesAvailable == nil && oc.Available != nil && !*oc.Available {
					why = "its location says it has no machines (nodes_available null, saying no)"
				} else {
					t.Errorf("offer %s of the default catalog is not startable at 2 machines (%+v): only a location saying no may be", id, o)
				}
				unsold = append(unsold, id+": "+why)
				continue
			}
			capacity[id] = cfg.HiddenCapacity
			if oc.NodesAvailable != nil {
				capacity[id] = *oc.NodesAvailable
			}
			sizes := []int{2}
			if top := min(8, o.MaxNodes); top > 2 {
				sizes = append(sizes, top)
			}
			var runs []string
			for _, sw := range software.Choices() {
				if software.Validate(sw, o.MachineKind) == "" {
					runs = append(runs, sw) // S1: e.g. Kubernetes is not offered on containers
				}
			}
			if full {
				for _, sw := range runs {
					for _, n := range sizes {
						cases = append(cases, &walkCase{offer: o, nodes: n, software: sw})
					}
				}
				continue
			}
			// Each size once, the software turning with the offer's place in
			// the catalog: every software runs at 2 machines and at the
			// largest size on every machine kind and fabric.
			for k, n := range sizes {
				cases = append(cases, &walkCase{offer: o, nodes: n, software: runs[(len(capacity)+k)%len(runs)]})
			}
		}
	}
	if len(sold) != total || startable != total-len(unsold) {
		t.Errorf("the API lists %d offers, %d startable at 2 machines; the default catalog has %d of which %d sell no size", len(sold), startable, total, len(unsold))
	}
	sort.Strings(unsold)
	t.Logf("%d offers of the default catalog, %d launches; offers with no startable size:\n  %s", total, len(cases), strings.Join(unsold, "\n  "))
	return cases, capacity
}

// walkLaunch launches c through the API with default settings; false when
// the offer cannot start it now (409 no_capacity: the stored catalog still
// counts machines a terminated cluster released).
func (s *server) walkLaunch(t *testing.T, c *walkCase) bool {
	t.Helper()
	nodes, gpus, include := c.nodes, c.offer.GPUsPerNode, c.offer.Community
	body := api.LaunchBody{QuoteBody: api.QuoteBody{Accelerator: &c.offer.Accelerator, OfferID: &c.offer.ID, Nodes: &nodes,
		GPUsPerNode: &gpus, IncludeCommunity: &include},
		Name: fmt.Sprintf("walk-%d-%s", c.nodes, c.software), Software: c.software}
	var cl api.Cluster
	key := fmt.Sprintf("walk:%s:%d:%s", c.offer.ID, c.nodes, c.software)
	code := s.api(t, http.MethodPost, "/v1/gpu/clusters", body, &cl, "Idempotency-Key", key)
	if code == http.StatusConflict {
		return false
	}
	if code >= 300 || cl.ID == "" {
		t.Fatalf("launch %s: %d", c, code)
	}
	c.id, c.launched = cl.ID, s.now(t)
	return true
}

// walkVerdict is "" when the ready cluster's verification passed, else why not.
func (s *server) walkVerdict(t *testing.T, c *walkCase) string {
	t.Helper()
	var cl api.Cluster
	s.api(t, http.MethodGet, "/v1/gpu/clusters/"+c.id, nil, &cl)
	if cl.Verification == nil || cl.Verification.Status != "passed" {
		return "ready without a passed verification: " + s.walkExplain(t, c)
	}
	return ""
}

// walkExplain is what a failure says about the cluster: its status, last
// error, verification summary and ring, and its events.
func (s *server) walkExplain(t *testing.T, c *walkCase) string {
	t.Helper()
	var cl api.Cluster
	s.api(t, http.MethodGet, "/v1/gpu/clusters/"+c.id, nil, &cl)
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s is %s", c.id, cl.Status)
	if cl.LastError != nil {
		fmt.Fprintf(&b, ", last error %s", *cl.LastError)
	}
	if v := cl.Verification; v != nil {
		fmt.Fprintf(&b, "; verification %s: %s", v.Status, v.Summary)
		if r := v.Ring; r != nil {
			fmt.Fprintf(&b, " (ring %s: %.1f of %.1f GB/s expected, %d %% against %d %%)", r.Status, r.BusBwGBps, r.ExpectedBusBwGBps, r.Percent, r.ThresholdPercent)
		}
	} else {
		b.WriteString("; no verification report")
	}
	var evs []string
	for _, e := range cl.Events {
		evs = append(evs, fmt.Sprintf("%s %s %s", e.Kind, e.Node, e.Message))
	}
	if len(evs) > 6 {
		evs = evs[len(evs)-6:]
	}
	fmt.Fprintf(&b, "\n    last events:\n      %s", strings.Join(evs, "\n      "))
	return b.String()
}

func (s *server) walkTerminate(t *testing.T, c *walkCase) {
	t.Helper()
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/"+c.id+"/terminate", nil, nil); code >= 300 {
		t.Fatalf("terminate %s (%s): %d", c, c.id, code)
	}
	c.done = true
}

// now is the server's fake clock.
func (s *server) now(t *testing.T) time.Time {
	t.Helper()
	var c struct{ Now time.Time }
	if code := s.api(t, http.MethodGet, "/dev/clock", nil, &c); code != http.StatusOK {
		t.Fatalf("GET /dev/clock: %d", code)
	}
	return c.Now
}
