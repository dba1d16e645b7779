package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// boundsCluster is a ready two-machine cluster of 1-GPU machines and
// node-0's agent token.
func boundsCluster(t *testing.T, app *testApp, email, org string) (models.Cluster, models.ClusterNode, string) {
	t.Helper()
	ctx := context.Background()
	acc := app.signupAccount(email, org)
	app.seedOffers(testOffer("h100x1", "us-east", 1, 2_490_000, intp(20)))
	app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep-"+email, "t")
	q, err := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
		Workload: models.Workload{Name: "b", Software: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	cl = makeJoined(t, app, cl, true)
	nodes, _ := app.store.NodesFor(ctx, cl.ID)
	return cl, nodes[0], models.AgentToken(cl, nodes[0])
}

// gpuBody is a heartbeat carrying one sample of each index, at at.
func gpuBody(at time.Time, idx ...int) string {
	var s []string
	for _, i := range idx {
		s = append(s, fmt.Sprintf(`{"at":%q,"index":%d,"uuid":"GPU-%d","utilizationPct":50}`, at.UTC().Format(time.RFC3339), i, i))
	}
	return `{"gpu":{"samples":[` + strings.Join(s, ",") + `]}}`
}

func heartbeat(app *testApp, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/agent/heartbeat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return app.do(req)
}

// X19 (a machine reports GPUs it does not have): a 1-GPU machine's
// samples for index 1…63 are refused with 400 and nothing is kept; its
// heartbeats beyond AgentHeartbeatBurst are refused with 429 and
// Retry-After, keep nothing, and come back as the bucket refills; another
// machine's heartbeats are not affected.
func TestAbuseHeartbeatBounds(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppWith(t, db, func(d *Deps) { d.AgentLimitClock = d.Store.Now })
		cl, node, token := boundsCluster(t, app, "flood@example.com", "Flood")
		_, _, other := boundsCluster(t, app, "calm@example.com", "Calm")
		points := func() int64 {
			var n int64
			app.db.Model(&models.GPUPoint{}).Where("cluster_id = ?", cl.ID).Count(&n)
			return n
		}
		now := app.clock.Now()
		for _, idx := range []int{1, 8, 63} {
			rec := heartbeat(app, token, gpuBody(now, 0, idx))
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not one of this machine's GPUs") {
				t.Fatalf("index %d on a 1-GPU machine: %d %s", idx, rec.Code, rec.Body)
			}
		}
		if n := points(); n != 0 {
			t.Fatalf("refused reports kept %d points", n)
		}
		// The refused ones spent 3 of the bucket.
		for i := 3; i < AgentHeartbeatBurst; i++ {
			if rec := heartbeat(app, token, gpuBody(now, 0)); rec.Code != http.StatusOK {
				t.Fatalf("heartbeat %d of %d: %d %s", i+1, AgentHeartbeatBurst, rec.Code, rec.Body)
			}
		}
		var before models.ClusterNode
		app.db.Where("id = ?", node.ID).Take(&before)
		app.clock.Advance(10 * time.Millisecond) // a heartbeat kept now would move heartbeat_at
		rec := heartbeat(app, token, gpuBody(app.clock.Now(), 0))
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "too_many_requests") {
			t.Fatalf("heartbeat %d: %d Retry-After %q %s, want 429 after %d", AgentHeartbeatBurst+1, rec.Code,
				rec.Header().Get("Retry-After"), rec.Body, AgentHeartbeatBurst)
		}
		var after models.ClusterNode
		app.db.Where("id = ?", node.ID).Take(&after)
		if !after.HeartbeatAt.Equal(*before.HeartbeatAt) {
			t.Fatalf("a refused heartbeat moved the node's liveness: %v → %v", before.HeartbeatAt, after.HeartbeatAt)
		}
		if rec := heartbeat(app, other, gpuBody(app.clock.Now(), 0)); rec.Code != http.StatusOK {
			t.Fatalf("another organisation's machine: %d %s", rec.Code, rec.Body)
		}
		app.clock.Advance(time.Second)
		if rec := heartbeat(app, token, gpuBody(app.clock.Now(), 0)); rec.Code != http.StatusOK {
			t.Fatalf("after Retry-After: %d %s", rec.Code, rec.Body)
		}
	})
}

// X19: the agent limits' clock follows the store's and, while that one
// stands still (a development fake clock nobody advances), wall time; it
// never goes back.
func TestAbuseHeartbeatLimitClock(t *testing.T) {
	stored := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := limitClock(func() time.Time { return stored })
	first := clock()
	if !first.Equal(stored) {
		t.Fatalf("first reading %v, want the store's %v", first, stored)
	}
	if second := clock(); second.Before(first) {
		t.Fatalf("went back: %v then %v", first, second)
	}
	stored = stored.Add(time.Hour)
	if got := clock(); got.Before(stored) {
		t.Fatalf("after the store moved an hour: %v, want at least %v", got, stored)
	}
	ahead := clock()
	stored = stored.Add(-2 * time.Hour)
	if got := clock(); got.Before(ahead) {
		t.Fatalf("followed the store back: %v after %v", got, ahead)
	}
}

// X19: the lemons page names what each fault rests on, and which
// customer reports did not count.
func TestAbuseAdminLemonsShowEvidence(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		op := app.signupAccount("op@example.com", "Ops")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		now := app.clock.Now()
		for _, f := range []models.MachineFault{
			{Provider: "sim", Machine: "host-e", ClusterID: "cl_a", Node: "node-0", Kind: models.FaultDied, At: now.Add(-2 * time.Hour),
				Detail: "GPU hardware error: XID 79", OrgID: "org_a", Evidence: models.EvidenceTenant},
			{Provider: "sim", Machine: "host-e", ClusterID: "cl_b", Node: "node-1", Kind: models.FaultDied, At: now.Add(-time.Hour),
				Detail: "stopped at the provider", OrgID: "org_b", Evidence: models.EvidenceProvider, Counted: true},
		} {
			if err := app.db.Create(&f).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := app.db.Create(&models.MachineQuarantine{Provider: "sim", Machine: "host-e", QuarantinedAt: now.Add(-time.Hour),
			Reason: "2 faults in 30 days; evidence: the provider's view"}).Error; err != nil {
			t.Fatal(err)
		}
		row := doc(t, app.login(op).get("/admin/lemons")).Find(`[data-testid=lemon-row][data-machine=host-e]`)
		faults := row.Find(`[data-testid=lemon-fault]`)
		if faults.Length() != 2 || !strings.Contains(faults.First().Text(), "the provider's view") ||
			!strings.Contains(faults.Last().Text(), "the customer's own reports (not counted") ||
			!strings.Contains(row.Text(), "evidence: the provider's view") {
			t.Fatalf("lemon row %q", row.Text())
		}
	})
}

// TestAbuseHeartbeatTokenSpray (X19): node tokens sprayed at random take
// no bucket in the nodes' limiter, so a real machine's bucket is never
// dropped for them (a drained one stays drained); past the strangers'
// burst one address's made-up tokens are refused with 429 before any
// database lookup; a real machine's first heartbeat from an address
// that sprays still gets through once its token is known.
func TestAbuseHeartbeatTokenSpray(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppWith(t, db, func(d *Deps) { d.AgentLimitClock = d.Store.Now })
		_, node, token := boundsCluster(t, app, "sprayed@example.com", "Sprayed")
		from := func(addr, tok string) int {
			req := httptest.NewRequest(http.MethodPost, "/v1/agent/heartbeat", strings.NewReader(gpuBody(app.clock.Now(), 0)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			req.RemoteAddr = addr + ":4000"
			return app.do(req).Code
		}
		for i := range AgentHeartbeatBurst {
			if code := from("203.0.113.7", token); code != http.StatusOK {
				t.Fatalf("heartbeat %d: %d", i+1, code)
			}
		}
		if code := from("203.0.113.7", token); code != http.StatusTooManyRequests {
			t.Fatalf("the real machine past its burst: %d", code)
		}
		// Made-up tokens from many addresses: each is looked up and refused (401) …
		for i := range AgentStrangerBurst + 10 {
			if code := from(fmt.Sprintf("10.0.%d.9", i), fmt.Sprintf("cdn_%s_%064x", node.ID, i)); code != http.StatusUnauthorized {
				t.Fatalf("made-up token %d: %d", i, code)
			}
		}
		// … and takes no bucket beside the real machine's, which is still drained.
		if n := len(app.h.heartbeats.nodes.buckets); n != 1 {
			t.Fatalf("the nodes' limiter holds %d buckets, want the real machine's only", n)
		}
		if code := from("203.0.113.7", token); code != http.StatusTooManyRequests {
			t.Fatalf("the real machine after the spray: %d, want its drained bucket's 429", code)
		}
		// One address past the strangers' burst: 429 with no database work.
		for i := range AgentStrangerBurst {
			from("198.51.100.5", fmt.Sprintf("cdn_x_%d", i))
		}
		before := app.sql.n.Load()
		for i := range 20 {
			if code := from("198.51.100.5", fmt.Sprintf("cdn_y_%d", i)); code != http.StatusTooManyRequests {
				t.Fatalf("a made-up token past the strangers' burst: %d", code)
			}
		}
		if n := app.sql.n.Load() - before; n != 0 {
			t.Fatalf("refusing made-up tokens ran %d queries", n)
		}
		app.clock.Advance(time.Second) // the real machine's bucket refills: it is known, the spray does not touch it
		if code := from("198.51.100.5", token); code != http.StatusOK {
			t.Fatalf("the real machine from the spraying address: %d", code)
		}
	})
}
