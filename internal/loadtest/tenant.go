package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/web"
)

// One tenant's flood against another's requests (X19): organisation A's
// machine (1 GPU) sends heartbeats as fast as four loops can — half of
// them with 512 samples for 64 GPU indexes, half with 512 samples of its
// one real GPU — and polls its own cluster's 24-hour metrics, while
// organisation B lists its clusters with its API key. B's p99 with the
// flood must stay within 2× of its p99 alone, measured in the same run.

// tenantOrg is one organisation with a ready two-machine cluster of
// 1-GPU machines, its API key and node-0's agent token.
type tenantOrg struct {
	cluster models.Cluster
	apiKey  string
	agent   string
}

func seedTenant(ctx context.Context, store *models.Store, name string) (tenantOrg, error) {
	var t tenantOrg
	u, org, err := store.Signup(ctx, models.SignupInput{Email: name + "@load.example", Name: name,
		Password: "load-test-password-" + name, OrgName: name}, "192.0.2.1")
	if err != nil {
		return t, err
	}
	env, err := store.DefaultEnvironment(ctx, org.ID)
	if err != nil {
		return t, err
	}
	if _, err := store.Deposit(ctx, org.ID, 10_000*models.Micro, "load-"+name, "load test"); err != nil {
		return t, err
	}
	q, err := store.CreateQuote(ctx, org.ID, env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 1})
	if err != nil {
		return t, err
	}
	c, _, err := store.LaunchCluster(ctx, models.LaunchParams{OrgID: org.ID, EnvID: env.ID, QuoteID: q.ID,
		Workload: models.Workload{Name: name, Software: "none"}})
	if err != nil {
		return t, err
	}
	if err := store.MarkPlaced(ctx, c.ID, []models.PlacedNode{{Rank: 0, ProviderNodeID: name + "-0", PrivateIP: "10.77.0.1"},
		{Rank: 1, ProviderNodeID: name + "-1", PrivateIP: "10.77.0.2"}}); err != nil {
		return t, err
	}
	for rank := range 2 {
		for _, step := range models.ProvisionSteps {
			if _, err := store.MarkNodeStep(ctx, c.ID, rank, step, "load test"); err != nil {
				return t, err
			}
		}
	}
	if t.cluster, err = store.MarkJoined(ctx, c.ID, nil); err != nil {
		return t, err
	}
	nodes, err := store.NodesFor(ctx, c.ID)
	if err != nil {
		return t, err
	}
	t.agent = models.AgentToken(t.cluster, nodes[0])
	_, t.apiKey, err = store.CreateAPIKey(ctx, org.ID, env.ID, u.ID, "load")
	return t, err
}

// floodBody is a heartbeat with 512 samples over the last hour, for 64
// GPU indexes or for index 0 only.
func floodBody(now time.Time, indexes int) string {
	var b strings.Builder
	b.WriteString(`{"gpu":{"samples":[`)
	for i := range models.MaxGPUSamplesPerReport {
		if i > 0 {
			b.WriteByte(',')
		}
		at := now.Add(-time.Duration(i%55) * time.Minute).UTC().Format(time.RFC3339)
		fmt.Fprintf(&b, `{"at":%q,"index":%d,"uuid":"GPU-%d","utilizationPct":%d,"memoryUsedMiB":1000,"temperatureC":50,"powerW":300}`,
			at, i%indexes, i%indexes, i%100)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// measureWith is measure with a request of its own (headers, a body).
func (l load) measureWith(ctx context.Context, clients int, do func(context.Context, *http.Client) error) result {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, l.duration)
	defer cancel()
	var (
		sent     atomic.Int64
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var err error
			for ctx.Err() == nil && sent.Add(1) <= int64(l.max) {
				t := time.Now()
				if err = do(ctx, client); err != nil {
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	return result{latencies: all, elapsed: elapsed, err: firstErr}
}

// call sends one request and reads the answer; want lists the statuses
// that are not an error.
func call(ctx context.Context, client *http.Client, method, url, token, body string, want ...int) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if !slices.Contains(want, res.StatusCode) {
		return fmt.Errorf("%s %s: %s", method, url, res.Status)
	}
	return nil
}

// tenantFlood measures B's list alone and beside A's flood and fails when
// B's p99 more than doubles.
func tenantFlood(ctx context.Context, out io.Writer, store *models.Store, app *server, l load) error {
	free := 64
	offer := models.Offer{ProviderOffer: "lt-h100x1", Location: "lt-east", LocationName: "Load test", Interconnect: "infiniband",
		MachineKind: "vm", Accelerator: "H100_80GB", GPUsPerNode: 1, PerGPUHour: 2_490_000, RootDiskGB: 500, DiskGBHour: 100,
		NodesAvailable: &free, Available: true, BootSeconds: 240, PublicIPs: true, VCPUs: 26, MemoryGB: 200}
	if err := store.ReplaceOffers(ctx, "sim", []models.Offer{offer}, store.Now()); err != nil {
		return err
	}
	a, err := seedTenant(ctx, store, "flooder")
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	b, err := seedTenant(ctx, store, "bystander")
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	list := func(ctx context.Context, c *http.Client) error {
		return call(ctx, c, http.MethodGet, app.url+"/v1/gpu/clusters", b.apiKey, "", http.StatusOK)
	}
	clients := max(2, l.clients/8)
	bogus, honest := floodBody(time.Now(), 64), floodBody(time.Now(), 1)
	var beats, refused, polls atomic.Int64
	// flood starts A's four heartbeat loops and its metrics loop, each
	// asking again as soon as it has an answer (Retry-After ignored).
	flood := func() (stop func()) {
		fctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		floodClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for fctx.Err() == nil {
					if i == 4 {
						polls.Add(1)
						_ = call(fctx, floodClient, http.MethodGet, app.url+"/v1/gpu/clusters/"+a.cluster.ID+"/metrics?window=24h", a.apiKey, "", http.StatusOK)
						continue
					}
					body := honest
					if i%2 == 0 {
						body = bogus
					}
					beats.Add(1)
					err := call(fctx, floodClient, http.MethodPost, app.url+"/v1/agent/heartbeat", a.agent, body, http.StatusOK)
					if err != nil && (strings.Contains(err.Error(), "429") || strings.Contains(err.Error(), "400")) {
						refused.Add(1)
					}
				}
			}()
		}
		time.Sleep(200 * time.Millisecond) // the flood is under way
		return func() { cancel(); wg.Wait(); floodClient.CloseIdleConnections() }
	}
	// Rounds of B alone, then beside the flood: the median round's ratio
	// is the verdict, so one burst of noise on a shared machine does not
	// decide it either way.
	const rounds = 3
	type round struct {
		alone, beside result
		ratio         float64
	}
	var rs []round
	for range rounds {
		alone := l.measureWith(ctx, clients, list)
		if alone.err != nil {
			return fmt.Errorf("baseline: %w", alone.err)
		}
		stop := flood()
		beside := l.measureWith(ctx, clients, list)
		stop()
		if beside.err != nil {
			return fmt.Errorf("beside the flood: %w", beside.err)
		}
		rs = append(rs, round{alone, beside, float64(beside.p(99)) / float64(alone.p(99))})
	}
	var stored int64
	if err := store.DB().WithContext(ctx).Model(&models.GPUPoint{}).Where("cluster_id = ?", a.cluster.ID).Count(&stored).Error; err != nil {
		return err
	}
	fmt.Fprintf(out, "\ntenant flood (X19): organisation B lists its clusters with %d clients, alone and beside A's flood, %d rounds\n", clients, rounds)
	for i, r := range rs {
		fmt.Fprintf(out, "  round %d alone:  %6.0f r/s  p50 %s  p99 %s\n", i+1, r.alone.rps(), ms(r.alone.p(50)), ms(r.alone.p(99)))
		fmt.Fprintf(out, "  round %d beside: %6.0f r/s  p50 %s  p99 %s  (p99 × %.2f)\n", i+1, r.beside.rps(), ms(r.beside.p(50)), ms(r.beside.p(99)), r.ratio)
	}
	slices.SortFunc(rs, func(x, y round) int { return cmp.Compare(x.ratio, y.ratio) })
	ratio := rs[len(rs)/2].ratio
	verdict := "within"
	if ratio > 2 {
		verdict = "OVER"
	}
	fmt.Fprintf(out, "  median p99 × %.2f: %s the 2× bound\n", ratio, verdict)
	fmt.Fprintf(out, "  A's heartbeats: %d sent, %d refused (400: GPUs the machine lacks; 429: over its rate, held up to %s); %d metrics polls; %d minute points stored for its 1-GPU machine\n",
		beats.Load(), refused.Load(), web.RefusalHold, polls.Load(), stored)
	if ratio > 2 {
		return fmt.Errorf("tenant flood: B's p99 beside A's flood is %.2f× its p99 alone (median of %d rounds), over the 2× bound", ratio, rounds)
	}
	return nil
}
