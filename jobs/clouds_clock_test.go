package jobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
	lfake "github.com/clusterdeck/clusterdeck/providers/lambda/fake"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
	rpfake "github.com/clusterdeck/clusterdeck/providers/runpod/fake"
	"github.com/clusterdeck/clusterdeck/providers/shadeform"
	sffake "github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// The real clouds' adapters run through the provision job with its real
// deadlines (the scheduler's: KickTimeout when a launch kicks it, the
// registered timeout when scheduled), on one clock the test moves: the
// database's, the fakes' delays and the adapters' waits (OP1, L3, L4, L7).

// cloudStart runs ahead of the wall: a dialer compares a context's
// deadline (here on the test's clock) with the wall's time.
var cloudStart = time.Date(2031, 1, 6, 9, 0, 0, 0, time.UTC)

// cloud is one real adapter against its fake, and what the test reads of
// the fake: every machine it created (by cluster and rank) and what is
// live now (a machine created and no longer live was deleted).
type cloud struct {
	name     string
	provider providers.Provider
	accel    string
	gpus     int
	// created counts the machines created per group and rank (a rank
	// created twice is a machine billed for two).
	created func() map[string]map[int]int
	// live counts the live machines per group.
	live func() map[string]int
}

// cloudWorld is the database, the scheduler with every job registered,
// one cloud, and the clock.
type cloudWorld struct {
	t     *testing.T
	clk   *fakekit.Clock
	store *models.Store
	sched *jobs.Scheduler
	cloud cloud
	org   models.Org
	env   models.Environment
	// kicked: the one kick of this world ran (the scheduler refuses kicks
	// once stopped, and the kicked tick is waited for by stopping it).
	kicked bool
}

func newCloudWorld(t *testing.T, db *gorm.DB, clk *fakekit.Clock, c cloud) *cloudWorld {
	t.Helper()
	ctx := context.Background()
	store := models.NewStore(db, clk)
	sched := jobs.NewScheduler(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sched.TimeoutsOn(clk.WithTimeout)
	if err := jobs.Register(sched, jobs.Deps{Store: store, Providers: providers.Registry{c.name: c.provider},
		BaseURL: "https://deck.example.com"}); err != nil {
		t.Fatal(err)
	}
	w := &cloudWorld{t: t, clk: clk, store: store, sched: sched, cloud: c}
	if err := sched.RunNow(ctx, "catalog"); err != nil {
		t.Fatalf("catalog: %v", err)
	}
	// Neither cloud counts its stock, and O2 quotes at most 8 machines of
	// an uncounted offer: the offers are counted here (at 64) so that the
	// groups of 16 and 64 machines the adapters must place can be asked for.
	if err := db.Model(&models.Offer{}).Where("provider = ?", c.name).Update("nodes_available", 64).Error; err != nil {
		t.Fatal(err)
	}
	w.org = models.Org{ID: models.NewID("org"), Name: "Acme", MaxMachines: 64, MaxGPUs: 512, CreatedAt: cloudStart}
	w.env = models.Environment{ID: models.NewID("env"), OrgID: w.org.ID, Name: "default", IsDefault: true, CreatedAt: cloudStart}
	if err := db.Create(&w.org).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&w.env).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deposit(ctx, w.org.ID, 100_000*models.Micro, "test-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	return w
}

// launch launches a cluster of n machines of the cloud's offer, as the
// API does; the first tick is the kicked one.
func (w *cloudWorld) launch(n int) models.Cluster {
	w.t.Helper()
	ctx := context.Background()
	q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: w.cloud.accel, Nodes: n, GPUsPerNode: w.cloud.gpus})
	if err != nil {
		w.t.Fatal(err)
	}
	c, _, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID,
		Actor: "test@example.com", Workload: models.Workload{Name: "train", Software: "none"}})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// kick runs the tick a launch kicks (KickTimeout), once per world.
func (w *cloudWorld) kick() {
	w.t.Helper()
	if w.kicked {
		w.t.Fatal("one kick per world")
	}
	w.kicked = true
	w.sched.Kick("provision")
	w.sched.WaitKicked() // the kicked tick runs to its end (Stop would cancel it)
	if err := w.sched.Stop(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	w.check()
}

// tick runs one scheduled tick of the provision, stop and terminate jobs, five
// seconds after the last (their schedule), and checks the invariants.
func (w *cloudWorld) tick() {
	w.t.Helper()
	w.clk.Advance(5 * time.Second)
	for _, job := range []string{"provision", "stop", "terminate"} {
		if err := w.sched.RunNow(context.Background(), job); err != nil {
			w.t.Logf("%s at +%s: %v", job, w.clk.Now().Sub(cloudStart), err)
		}
	}
	w.check()
}

// check fails the test when a machine was created twice, deleted while
// its cluster wanted it, or more machines live than the cluster has.
func (w *cloudWorld) check() {
	w.t.Helper()
	ctx := context.Background()
	live := w.cloud.live()
	for group, ranks := range w.cloud.created() {
		c, err := w.store.ClusterByID(ctx, group)
		if err != nil {
			w.t.Fatalf("machines of an unknown group %s: %v", group, err)
		}
		created := 0
		for rank, n := range ranks {
			created += n
			if n > 1 {
				w.t.Fatalf("cluster %s: rank %d created %d times (+%s)", group, rank, n, w.clk.Now().Sub(cloudStart))
			}
		}
		wanted := c.Status == models.StatusProvisioning && c.TerminateRequestedAt == nil ||
			c.Status == models.StatusReady || c.Status == models.StatusInstalling
		if deleted := created - live[group]; wanted && deleted > 0 {
			w.t.Fatalf("cluster %s (%s): %d machines deleted while wanted (+%s)", group, c.Status, deleted, w.clk.Now().Sub(cloudStart))
		}
		if live[group] > c.Nodes {
			w.t.Fatalf("cluster %s: %d machines live for %d (+%s)", group, live[group], c.Nodes, w.clk.Now().Sub(cloudStart))
		}
	}
}

// bootStep is how far the clock moves between two ticks once every
// machine is placed and only booting: a minute a tick with the tick's own
// 5 s. Nothing but the clouds' boot changes between (no agents run here),
// every step's deadline is minutes long, and each tick costs a listing per
// cluster and the job's database work: half-minute ticks doubled this
// file's CPU under -race for nothing they could see.
const bootStep = 55 * time.Second

// untilRunning ticks until every machine of every cluster runs (its step
// past "running"), for at most limit; a cluster that failed stops the test.
func (w *cloudWorld) untilRunning(limit time.Duration, cs ...models.Cluster) {
	w.t.Helper()
	ctx := context.Background()
	placed := false
	for end := w.clk.Now().Add(limit); ; w.tick() {
		if placed {
			w.clk.Advance(bootStep)
		}
		all := true
		placed = true
		for _, c := range cs {
			now, err := w.store.ClusterByID(ctx, c.ID)
			if err != nil {
				w.t.Fatal(err)
			}
			if now.Status == models.StatusFailed {
				w.t.Fatalf("cluster %s of %d failed at +%s: %s", c.ID, c.Nodes, w.clk.Now().Sub(cloudStart), now.LastError)
			}
			nodes, err := w.store.NodesFor(ctx, c.ID)
			if err != nil {
				w.t.Fatal(err)
			}
			placed = placed && now.PlacedAt != nil
			for _, n := range nodes {
				all = all && now.PlacedAt != nil && n.RunningAt != nil
			}
		}
		if all {
			return
		}
		if w.clk.Now().After(end) {
			w.t.Fatalf("not every machine running after %s", limit)
		}
	}
}

// terminate asks for every cluster's terminate and ticks until nothing of
// theirs is live at the cloud (L7).
func (w *cloudWorld) terminate(cs ...models.Cluster) {
	w.t.Helper()
	for _, c := range cs {
		if _, err := w.store.RequestTerminate(context.Background(), w.org.ID, c.ID, "test@example.com"); err != nil {
			w.t.Fatal(err)
		}
	}
	for range 60 {
		w.tick()
		left := 0
		for _, c := range cs {
			left += w.cloud.live()[c.ID]
		}
		if left == 0 {
			return
		}
	}
	w.t.Fatalf("machines left running after terminate: %v", w.cloud.live())
}

// runpodCloud is the RunPod adapter against its fake at RunPod's timings:
// ranks assigned after longer than a kicked tick, members listed late,
// the minute window's 429s (plus a burst with Retry-After), and creates
// whose answers are lost.
func runpodCloud(t *testing.T, clk *fakekit.Clock, stock int, clusters bool) (cloud, *rpfake.Server) {
	const key = "rpa_secret_runpod_key_0123456789"
	f := rpfake.New(key, clk.Now)
	h100 := rpfake.Cap{GPU: "NVIDIA H100 80GB HBM3", DC: "US-TX-3"}
	f.Stock[h100], f.ClusterCaps[h100] = stock*8, clusters
	f.RankDelay, f.ListDelay = 45*time.Second, 40*time.Second
	for range 2 {
		f.Inject(rpfake.Fault{Method: "GET", Path: "/v2/", After: 3, Status: 429, Detail: "rate limit exceeded for the minute window", RetryAfter: "7"})
	}
	// The first cluster create's answer, and a later pod create's, are
	// lost after they went through: looked for by name, never sent twice.
	f.Inject(rpfake.Fault{Method: "POST", Path: "/v2/clusters", Status: 502, Apply: true},
		rpfake.Fault{Method: "POST", Path: "/v2/pods", After: 2, Status: 502, Apply: true})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	rp, err := runpod.New(runpod.Config{APIKey: key, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		DataCenters: []string{"US-TX-3"},
		Agent:       bootstrap.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}})
	if err != nil {
		t.Fatal(err)
	}
	return cloud{name: runpod.Name, provider: rp, accel: "H100_80GB", gpus: 8,
		created: func() map[string]map[int]int {
			out := map[string]map[int]int{}
			add := func(group string, rank int) {
				if out[group] == nil {
					out[group] = map[int]int{}
				}
				out[group][rank]++
			}
			for _, cc := range f.ClusterCreates() {
				for i := range cc.Compute.PodCount {
					add(cc.Name, i)
				}
			}
			for _, pc := range f.Creates() {
				var i int
				fmt.Sscan(pc.Env[runpod.EnvIndex], &i)
				add(pc.Env[runpod.EnvGroup], i)
			}
			return out
		},
		live: func() map[string]int {
			out := map[string]int{}
			for _, p := range f.Live() {
				out[p.Env[runpod.EnvGroup]]++
			}
			return out
		}}, f
}

// RunPod through the provision job at 2, 8, 16 and 64 machines, one
// Instant Cluster each (and pod by pod at 8): the kicked tick's 30 s end
// before RunPod lists the members and assigns their ranks, the scheduled
// ticks adopt the cluster; the create whose answer was lost is found by
// name (one create); no machine is created twice, deleted while wanted or
// billed for two, and terminate leaves nothing (L3, L4, L7).
func TestProvisionRunPodRealClock(t *testing.T) {
	for _, tc := range []struct {
		n        int
		clusters bool
	}{{2, true}, {8, true}, {16, true}, {64, true}, {8, false}} {
		name := fmt.Sprintf("%d machines", tc.n)
		if !tc.clusters {
			name += " pod by pod"
		}
		t.Run(name, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := fakekit.NewClockAt(cloudStart)
				c, f := runpodCloud(t, clk, tc.n, tc.clusters)
				w := newCloudWorld(t, db, clk, c)
				cl := w.launch(tc.n)
				w.kick()
				w.untilRunning(15*time.Minute, cl)
				if tc.clusters && len(f.ClusterCreates()) != 1 {
					t.Errorf("%d cluster creates", len(f.ClusterCreates()))
				}
				w.terminate(cl)
			})
		})
	}
}

// Four clusters waiting for their ranks in one scheduled tick share its
// two minutes: none is deleted and created again; each is adopted on a
// later tick (L3, L7).
func TestProvisionRunPodFourClustersOneTick(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := fakekit.NewClockAt(cloudStart)
		c, f := runpodCloud(t, clk, 4*2, true)
		w := newCloudWorld(t, db, clk, c)
		var cs []models.Cluster
		for range 4 {
			cs = append(cs, w.launch(2))
		}
		w.tick() // no kick: the scheduled tick finds all four
		w.untilRunning(15*time.Minute, cs...)
		if len(f.ClusterCreates()) != 4 {
			t.Errorf("%d cluster creates for four clusters", len(f.ClusterCreates()))
		}
		w.terminate(cs...)
	})
}

// lambdaCloud is the Lambda adapter against its fake at Lambda's timings:
// one launch per 12 s and one request per second (429 with Retry-After
// when sooner), machines "unhealthy" for two minutes during boot, a burst
// of 429s with Retry-After and a lost launch answer.
func lambdaCloud(t *testing.T, clk *fakekit.Clock, capacity int) (cloud, *lfake.Server) {
	const key = "secret_lambda_key_0123456789abcdef"
	f := lfake.New(key, clk.Now)
	f.SetCapacity("gpu_8x_h100_sxm5gdr", "us-west-1", capacity)
	f.RequestInterval, f.Unhealthy = lambda.RequestInterval, 2*time.Minute
	// Beyond its own pacing: a burst of 429s with Retry-After on the
	// launches and one on the list, and a launch whose answer is lost after
	// it went through (looked for by tag, never launched twice).
	const launch = "/api/v1/instance-operations/launch"
	for range 2 {
		f.Inject(lfake.Fault{Method: "POST", Path: launch, After: 2, Status: 429, Code: "global/too-many-requests",
			Message: "Too many requests.", RetryAfter: "20"})
	}
	f.Inject(lfake.Fault{Method: "POST", Path: launch, After: 1, Status: 502, Apply: true},
		lfake.Fault{Method: "GET", Path: "/api/v1/instances", After: 3, Status: 429, Code: "global/too-many-requests",
			Message: "Too many requests.", RetryAfter: "5"})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	l, err := lambda.New(lambda.Config{APIKey: key, BaseURL: srv.URL, HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		Regions: []string{"us-west-1"}, SSHKeyName: "my-public-key",
		Agent: lambda.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}})
	if err != nil {
		t.Fatal(err)
	}
	tag := func(in lambda.Instance, key string) string { return in.Tag(key) }
	return cloud{name: lambda.Name, provider: l, accel: "H100_80GB", gpus: 8,
		created: func() map[string]map[int]int {
			out := map[string]map[int]int{}
			for _, la := range f.Launches() {
				if la.Status != 200 {
					continue
				}
				in := lambda.Instance{Tags: la.Request.Tags}
				var i int
				fmt.Sscan(tag(in, lambda.TagIndex), &i)
				if out[tag(in, lambda.TagGroup)] == nil {
					out[tag(in, lambda.TagGroup)] = map[int]int{}
				}
				out[tag(in, lambda.TagGroup)][i]++
			}
			return out
		},
		live: func() map[string]int {
			out := map[string]int{}
			for _, in := range f.Live() {
				out[in.Tag(lambda.TagGroup)]++
			}
			return out
		}}, f
}

// Lambda reports machines "unhealthy" for a while during boot: through the
// provision job they are still starting, and the cluster runs once they
// are active; a machine that stays unhealthy fails the cluster at its step's
// deadline (timeout:running), not before (L4).
func TestProvisionLambdaUnhealthyDuringBoot(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := fakekit.NewClockAt(cloudStart)
		c, f := lambdaCloud(t, clk, 4)
		w := newCloudWorld(t, db, clk, c)
		cl := w.launch(2)
		w.kick()
		saw := false
		// A minute a tick once placed: the two unhealthy minutes cannot
		// fall between two ticks.
		for end := clk.Now().Add(10 * time.Minute); !saw && clk.Now().Before(end); clk.Advance(bootStep) {
			w.tick()
			for _, in := range f.Live() {
				saw = saw || in.Status == lambda.StatusUnhealthy
			}
		}
		w.untilRunning(15*time.Minute, cl)
		if !saw {
			t.Fatal("the fake never played unhealthy")
		}
		w.terminate(cl)

		f.Unhealthy = time.Hour // never healthy
		stuck := w.launch(2)
		w.tick()
		ctx := context.Background()
		for {
			now, err := w.store.ClusterByID(ctx, stuck.ID)
			if err != nil {
				t.Fatal(err)
			}
			if now.Status == models.StatusFailed {
				if now.LastError != models.StepTimeout(models.StepRunning).String() || now.PlacedAt == nil ||
					clk.Now().Before(now.StepDeadline(models.StepRunning)) {
					t.Fatalf("a machine unhealthy for ever: %s at %s, deadline %s", now.LastError, clk.Now(), now.StepDeadline(models.StepRunning))
				}
				break
			}
			if clk.Now().After(cloudStart.Add(time.Hour)) {
				t.Fatal("the unhealthy cluster never failed")
			}
			clk.Advance(bootStep)
			w.tick()
		}
		w.tick() // the failed cluster's machines are released
		if n := c.live()[stuck.ID]; n != 0 {
			t.Fatalf("%d machines of the failed cluster left running", n)
		}
	})
}

// Lambda through the provision job at 2, 8, 16 and 64 machines: one
// launch per 12 s (13 s with the pacer's slack) is more than a kicked
// tick's 30 s or a scheduled tick's two minutes hold; the placement goes
// on across ticks, adopting what earlier ticks launched by tag. No machine
// is launched twice (the launch whose answer was lost is found by tag) or
// terminated while wanted, the fake's pacing draws no 429, a scripted
// burst of them is waited out, and terminate leaves nothing (L3, L7).
func TestProvisionLambdaRealClock(t *testing.T) {
	for _, n := range []int{2, 8, 16, 64} {
		t.Run(fmt.Sprintf("%d machines", n), func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := fakekit.NewClockAt(cloudStart)
				c, f := lambdaCloud(t, clk, n)
				w := newCloudWorld(t, db, clk, c)
				cl := w.launch(n)
				w.kick()
				w.untilRunning(25*time.Minute, cl)
				if got := len(f.Launches()); got != n {
					t.Errorf("%d launch requests for %d machines", got, n)
				}
				if f.TooMany() != 0 {
					t.Errorf("the pacing drew %d 429s", f.TooMany())
				}
				if posts := f.Requests("POST /api/v1/instance-operations/launch"); n >= 8 && posts != n+2 {
					t.Errorf("%d launch requests for %d launches: the burst's two 429s were not each waited out and sent again", posts, n)
				}
				w.terminate(cl)
			})
		})
	}
}

// shadeformCloud is the Shadeform adapter against its fake at Shadeform's
// timings: a create is asynchronous (answered "creating" at once), the
// instance goes creating → pending_provider → pending for the H100 type's
// min_boot_in_sec (5 minutes; the type says 5 to 10), reads active a
// minute before its ip and ssh_port are there, and is listed "deleting"
// for a minute after its delete. Shadeform documents no rate limit: a burst of 429s with
// Retry-After (20 s each, a minute in all: longer than a kicked tick) on
// the creates and one on the list, a create whose answer is lost after it
// went through, and a slow list.
func shadeformCloud(t *testing.T, clk *fakekit.Clock, capacity int) (cloud, *sffake.Server) {
	const key = "sf_secret_shadeform_key_0123456789"
	f := sffake.New(key, clk.Now)
	f.Capacity[sffake.Cap{Cloud: "lambdalabs", Type: "H100_sxm5x8", Region: "us-east-1"}] = capacity
	f.BootDelay, f.AddressDelay, f.DeleteDelay = 5*time.Minute, time.Minute, time.Minute
	for range 3 {
		f.Inject(sffake.Fault{Method: "POST", Path: "/instances/create", After: 3, Status: 429,
			ErrorCode: "RATE_LIMITED", Error: "too many requests", RetryAfter: "20"})
	}
	f.Inject(sffake.Fault{Method: "POST", Path: "/instances/create", After: 5, Status: 502, Apply: true},
		sffake.Fault{Method: "GET", Path: "/instances", After: 4, Status: 429, ErrorCode: "RATE_LIMITED", Error: "too many requests", RetryAfter: "7"},
		sffake.Fault{Method: "GET", Path: "/instances", After: 6, Slow: func() { clk.Advance(8 * time.Second) }})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	sf, err := shadeform.New(shadeform.Config{APIKey: key, BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Now: clk.Now, Sleep: clk.Sleep,
		Clouds: []string{"lambdalabs"}, Regions: []string{"us-east-1"},
		Agent: bootstrap.AgentInstall{URL: "https://deck.example.com/dl/clusterdeck-linux-amd64", SHA256: strings.Repeat("ab", 32)}})
	if err != nil {
		t.Fatal(err)
	}
	tag := func(tags []string, prefix string) string {
		for _, s := range tags {
			if v, ok := strings.CutPrefix(s, prefix); ok {
				return v
			}
		}
		return ""
	}
	return cloud{name: shadeform.Name, provider: sf, accel: "H100_80GB", gpus: 8,
		created: func() map[string]map[int]int {
			out := map[string]map[int]int{}
			for _, cr := range f.Creates() {
				g := tag(cr.Tags, shadeform.TagGroup)
				var i int
				fmt.Sscan(tag(cr.Tags, shadeform.TagIndex), &i)
				if out[g] == nil {
					out[g] = map[int]int{}
				}
				out[g][i]++
			}
			return out
		},
		live: func() map[string]int {
			out := map[string]int{}
			for _, in := range f.Live() {
				out[tag(in.Tags, shadeform.TagGroup)]++
			}
			return out
		}}, f
}

// oneWorldSizes are the cluster sizes launched together into one world.
var oneWorldSizes = []int{2, 8, 16, 64}

// launchAll launches a cluster of each of oneWorldSizes into w at once and
// kicks the provision job, so that the kicked tick's 30 s and the
// scheduled ticks' two minutes are shared by 90 machines' placements: the
// org's limits and the offer's count are raised for the four together.
func (w *cloudWorld) launchAll(db *gorm.DB) []models.Cluster {
	w.t.Helper()
	if err := db.Model(&w.org).Updates(map[string]any{"max_machines": 128, "max_gpus": 1024}).Error; err != nil {
		w.t.Fatal(err)
	}
	if err := db.Model(&models.Offer{}).Where("provider = ?", w.cloud.name).Update("nodes_available", 128).Error; err != nil {
		w.t.Fatal(err)
	}
	var cs []models.Cluster
	for _, n := range oneWorldSizes {
		cs = append(cs, w.launch(n))
	}
	w.kick()
	return cs
}

// Shadeform through the provision job: clusters of 2, 8, 16 and 64
// machines launched together into one world (launchAll), under a minute
// of 429s, a lost create answer and a slow list. What a tick could not
// finish is kept and the next tick adopts it by tag; no machine is created
// twice, deleted while wanted or billed for two; machines active without
// their address yet are not running; terminate leaves nothing (L3, L4,
// L7).
func TestProvisionShadeformRealClock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := fakekit.NewClockAt(cloudStart)
		c, f := shadeformCloud(t, clk, 2+8+16+64)
		w := newCloudWorld(t, db, clk, c)
		cs := w.launchAll(db)
		// An instance active without its address yet is not a running
		// machine: the node runs only with the host and port to reach.
		addressless := map[string]bool{}
		for end := clk.Now().Add(15 * time.Minute); len(addressless) == 0 && clk.Now().Before(end); {
			w.tick()
			clk.Advance(bootStep)
			for _, in := range f.Live() {
				if in.Status == shadeform.StatusActive && in.IP == "" {
					addressless[in.ID] = true
				}
			}
		}
		if len(addressless) == 0 {
			t.Fatal("the fake never played an active machine without its address")
		}
		w.tick()
		for _, cl := range cs {
			nodes, err := w.store.NodesFor(context.Background(), cl.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				if n.RunningAt != nil && (addressless[n.ProviderNodeID] || n.PublicHost == "" || n.SSHPort == 0) {
					t.Fatalf("node %s runs without its address (%q:%d)", n.Name, n.PublicHost, n.SSHPort)
				}
			}
		}
		w.untilRunning(20*time.Minute, cs...)
		created := 0
		for _, ranks := range c.created() {
			created += len(ranks)
		}
		if got := len(f.Creates()); got != 2+8+16+64 || created != got {
			t.Errorf("%d creates (%d ranks) for %d machines", got, created, 2+8+16+64)
		}
		if posts := f.Requests("POST /instances/create"); posts != len(f.Creates())+3 {
			t.Errorf("%d create requests for %d creates: the three 429s were not each waited out and sent again", posts, len(f.Creates()))
		}
		w.terminate(cs...)
	})
}

// clockSimCloud is one location of the simulated cloud selling 8×H100 VMs
// that boot in 4 minutes, 128 counted.
const clockSimCloud = `{"locations": [{"id": "test-1", "name": "Testville", "offers": [
  {"id": "h100.8x.vm", "accelerator": "H100_80GB", "machine_kind": "vm", "interconnect": "ethernet",
   "gpus_per_node": 8, "vcpus": 96, "memory_gb": 1000, "per_gpu_hour_usd": 2490000,
   "root_disk_gb": 500, "disk_gb_hour_usd": 100, "nodes_available": 128, "boot_time": "4m"}]}]}`

// simCloud is the simulated cloud in the clock world: it places a group in
// one call under its lock, with nothing to wait for, and boots machines on
// the test's clock. It keeps no log of its creates, so what it created is
// read from its describes after every tick: a rank seen with a second
// machine id was created twice. watch names the clusters to read.
func simCloud(t *testing.T, clk *fakekit.Clock) (c cloud, watch func(models.Cluster)) {
	cfg, err := sim.ParseConfig([]byte(clockSimCloud), "json")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(cfg, sim.WithClock(clk.Now))
	var groups []string
	ids := map[string]map[int]map[string]bool{} // group → rank → machine ids ever seen
	describe := func() map[string]providers.Group {
		gs, err := s.DescribeGroups(context.Background(), groups)
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	return cloud{name: "sim", provider: s, accel: "H100_80GB", gpus: 8,
			created: func() map[string]map[int]int {
				for name, g := range describe() {
					for _, n := range g.Nodes {
						if ids[name] == nil {
							ids[name] = map[int]map[string]bool{}
						}
						if ids[name][n.Index] == nil {
							ids[name][n.Index] = map[string]bool{}
						}
						ids[name][n.Index][n.ID] = true
					}
				}
				out := map[string]map[int]int{}
				for name, ranks := range ids {
					out[name] = map[int]int{}
					for rank, seen := range ranks {
						out[name][rank] = len(seen)
					}
				}
				return out
			},
			live: func() map[string]int {
				out := map[string]int{}
				for name, g := range describe() {
					for _, n := range g.Nodes {
						if n.State != providers.NodeTerminated {
							out[name]++
						}
					}
				}
				return out
			}},
		func(c models.Cluster) { groups = append(groups, c.GroupName()) }
}

// The simulated cloud through the same provision job and deadlines: 2, 8,
// 16 and 64 machines in one world, each placed in one call within the
// kicked tick; none created twice, deleted while wanted or left running
// after terminate (L3, L7).
func TestProvisionSimRealClock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := fakekit.NewClockAt(cloudStart)
		c, watch := simCloud(t, clk)
		w := newCloudWorld(t, db, clk, c)
		cs := w.launchAll(db)
		for _, cl := range cs {
			watch(cl)
			now, err := w.store.ClusterByID(context.Background(), cl.ID)
			if err != nil {
				t.Fatal(err)
			}
			if now.PlacedAt == nil {
				t.Errorf("cluster of %d machines not placed by the kicked tick", cl.Nodes)
			}
		}
		w.check()
		w.untilRunning(15*time.Minute, cs...)
		w.terminate(cs...)
	})
}
