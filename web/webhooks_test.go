package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/models/publicip"
	"github.com/clusterdeck/clusterdeck/providers/webhookout"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// receiver is a real HTTP endpoint on loopback that verifies every
// signature the way docs/api.md tells customers to, and can fail, hang or
// answer.
type receiver struct {
	t       testing.TB
	srv     *httptest.Server
	mode    atomic.Value // "ok", "fail", "hang"
	mu      sync.Mutex
	secrets map[string][]string // path → secrets accepted
	got     []received
	bad     []string
	hits    atomic.Int64
	// concurrency per path (never two requests at once to one endpoint)
	inFlight map[string]int
	maxIn    map[string]int
	delay    time.Duration
	probe    func() string // runs during each request: "" or a violation
	failType atomic.Value  // an event type answered 500 ("" = none)
}

type received struct {
	Path      string
	ID, Type  string
	ClusterID string
	Status    string
	IdemKey   string
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, secrets: map[string][]string{}, inFlight: map[string]int{}, maxIn: map[string]int{}}
	r.mode.Store("ok")
	r.failType.Store("")
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	r.mu.Lock()
	r.inFlight[req.URL.Path]++
	r.maxIn[req.URL.Path] = max(r.maxIn[req.URL.Path], r.inFlight[req.URL.Path])
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[req.URL.Path]--
		r.mu.Unlock()
	}()
	if r.probe != nil {
		if v := r.probe(); v != "" {
			r.mu.Lock()
			r.bad = append(r.bad, v)
			r.mu.Unlock()
		}
	}
	if r.delay > 0 {
		time.Sleep(r.delay) // widens the window two runners would need to overlap
	}
	body, _ := io.ReadAll(req.Body)
	switch r.mode.Load().(string) {
	case "fail":
		http.Error(w, "receiver down for maintenance", http.StatusBadGateway)
		return
	case "hang":
		<-req.Context().Done() // the sender's timeout ends it
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !verifySignature(req.Header.Get("Clusterdeck-Signature"), body, r.secrets[req.URL.Path]) {
		r.bad = append(r.bad, "bad signature on "+req.URL.Path+": "+req.Header.Get("Clusterdeck-Signature"))
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	if !verifyStandard(req.Header, body, r.secrets[req.URL.Path]) {
		r.bad = append(r.bad, "bad webhook-signature on "+req.URL.Path+": "+req.Header.Get("webhook-signature"))
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var ev struct {
		ID, Type string
		Data     struct {
			Cluster api.Cluster `json:"cluster"`
		}
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		r.bad = append(r.bad, "not JSON: "+string(body))
	}
	if ev.Type == r.failType.Load().(string) {
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	r.got = append(r.got, received{Path: req.URL.Path, ID: ev.ID, Type: ev.Type, ClusterID: ev.Data.Cluster.ID,
		Status: ev.Data.Cluster.Status, IdemKey: req.Header.Get("Idempotency-Key")})
	w.WriteHeader(http.StatusNoContent)
}

// verifySignature is docs/api.md's check: any v1 matching HMAC-SHA256 of
// "t.body" under one of the secrets.
func verifySignature(header string, body []byte, secrets []string) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	for _, sec := range secrets {
		m := hmac.New(sha256.New, []byte(sec))
		m.Write([]byte(ts + "."))
		m.Write(body)
		want := hex.EncodeToString(m.Sum(nil))
		for _, s := range sigs {
			if hmac.Equal([]byte(s), []byte(want)) {
				return true
			}
		}
	}
	return false
}

// verifyStandard checks the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature) with the stock Go verifier, given
// the endpoint's "whsec_…" secret as it is shown once (X8).
func verifyStandard(h http.Header, body []byte, secrets []string) bool {
	for _, sec := range secrets {
		wh, err := standardwebhooks.NewWebhook(sec)
		if err == nil && wh.Verify(body, h) == nil {
			return true
		}
	}
	return false
}

func (r *receiver) events() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *receiver) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// webhookJob is the delivery job as main wires it, with a short timeout.
func webhookJob(store *models.Store, holder string) *jobs.Webhooks {
	c := webhookout.New(webhookout.Options{Allow: publicip.NewOutbound(true).Check, Timeout: 300 * time.Millisecond})
	return &jobs.Webhooks{Store: store, Poster: testPoster{c}, Holder: holder, Timeout: 300 * time.Millisecond, BaseURL: "http://127.0.0.1"}
}

type testPoster struct{ c *webhookout.Client }

func (p testPoster) Post(ctx context.Context, url string, h http.Header, body []byte) (jobs.WebhookAnswer, error) {
	a, err := p.c.Post(ctx, url, h, body)
	return jobs.WebhookAnswer{Status: a.Status, Excerpt: a.Excerpt}, err
}

// apiJSON calls the API with a bearer key and decodes a 2xx answer into out.
func (a *testApp) apiJSON(method, path, key, body string, want int, out any) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := a.do(req)
	if rec.Code != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body.String(), want)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			a.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// lifecycle moves cl through ready and terminated, each in its own
// transaction as the jobs do.
func lifecycle(t testing.TB, store *models.Store, cl models.Cluster) {
	t.Helper()
	ctx := context.Background()
	if _, err := store.MarkJoined(ctx, cl.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RequestTerminate(ctx, cl.OrgID, cl.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.MarkTerminated(ctx, cl.ID); err != nil {
		t.Fatal(err)
	}
}

// drain runs job (advancing the clock past every backoff) until nothing is
// pending or rounds run out.
func drain(t testing.TB, store *models.Store, clock *models.FakeClock, rounds int, runners ...*jobs.Webhooks) {
	t.Helper()
	for range rounds {
		var n int64
		if err := store.DB().Model(&models.WebhookDelivery{}).Where("delivered_at IS NULL AND failed_at IS NULL").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		for _, j := range runners {
			if err := j.Run(context.Background()); err != nil {
				t.Logf("webhooks run: %v", err)
			}
		}
		clock.Advance(5 * time.Hour)
	}
	t.Fatalf("deliveries still pending after %d rounds", rounds)
}

// TestWebhooksDeliverEveryEventSignedInOrder is the proof of X8: a
// receiver on loopback that fails, then times out, then recovers — across
// a restart of the server — gets every event of the configured types and
// no other, each signature valid, in order per cluster; another
// environment's endpoint gets nothing.
func TestWebhooksDeliverEveryEventSignedInOrder(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		key := apiKeyFor(t, app, owner)
		rcv := newReceiver(t)
		var ep api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.ready","cluster.terminated"]}`, rcv.url("/a")), http.StatusCreated, &ep)
		if !strings.HasPrefix(ep.Secret, "whsec_") || !ep.Enabled {
			t.Fatalf("created endpoint %+v", ep)
		}
		rcv.secrets["/a"] = []string{ep.Secret}

		// Another environment's endpoint wants everything and must get nothing of this one.
		ctx := context.Background()
		other, err := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: owner.user.Email}).CreateEnvironment(ctx, "staging")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: other.ID, Role: models.RoleOwner, Name: "o"}).
			CreateWebhook(ctx, models.WebhookInput{URL: rcv.url("/other"), Types: models.PublicEventTypes, Enabled: true}); err != nil {
			t.Fatal(err)
		}

		var clusters []models.Cluster
		for _, name := range []string{"alpha", "beta"} {
			cl := launchFor(t, app, owner, name)
			lifecycle(t, app.store, cl)
			clusters = append(clusters, cl)
		}

		// 1. The receiver fails: every attempt is logged, nothing is lost.
		rcv.mode.Store("fail")
		job := webhookJob(app.store, "one")
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		var log api.WebhookAttempts
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		if len(log.Attempts) == 0 || log.Attempts[0].Status != http.StatusBadGateway || !strings.Contains(log.Attempts[0].Answer, "maintenance") {
			t.Fatalf("log after a failing receiver: %+v", log.Attempts)
		}
		// 2. It hangs: the attempt times out (no answer).
		rcv.mode.Store("hang")
		app.clock.Advance(time.Hour)
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		if log.Attempts[0].Status != 0 || !strings.Contains(log.Attempts[0].Error, "timed out") {
			t.Fatalf("log after a hanging receiver: %+v", log.Attempts[0])
		}
		if got := rcv.events(); len(got) != 0 {
			t.Fatalf("accepted while failing: %+v", got)
		}
		// 3. The server restarts (new app and job on the same database) and the receiver recovers.
		app2 := newTestAppSet(t, app.db, loopbackWebhooks, nil)
		app2.clock.Set(app.clock.Now().Add(time.Hour))
		rcv.mode.Store("ok")
		drain(t, app2.store, app2.clock, 20, webhookJob(app2.store, "two"))

		if p := rcv.problems(); len(p) > 0 {
			t.Fatalf("receiver problems: %v", p)
		}
		got := rcv.events()
		perCluster := map[string][]string{}
		seen := map[string]bool{}
		for _, e := range got {
			if e.Path != "/a" {
				t.Errorf("event %s %s reached %s", e.ID, e.Type, e.Path)
			}
			if e.IdemKey != e.ID {
				t.Errorf("Idempotency-Key %q for event %s", e.IdemKey, e.ID)
			}
			if seen[e.ID] {
				continue // at-least-once: a duplicate is allowed, never a loss
			}
			seen[e.ID] = true
			perCluster[e.ClusterID] = append(perCluster[e.ClusterID], e.Type+"/"+e.Status)
		}
		for _, cl := range clusters {
			want := []string{"cluster.ready/ready", "cluster.terminated/terminated"}
			if !slices.Equal(perCluster[cl.ID], want) {
				t.Errorf("cluster %s got %v, want %v in order", cl.Name, perCluster[cl.ID], want)
			}
		}
		if len(perCluster) != len(clusters) {
			t.Errorf("events of unexpected clusters: %v", perCluster)
		}
	})
}

// TestWebhooksTwoInstancesNeverSendTwiceAtOnce runs two job runners on one
// database (two connection pools on PostgreSQL, OP4) at the same time
// without the scheduler's lease: each endpoint is claimed by one of them,
// so no endpoint ever has two requests in flight, every event arrives once
// and in order per cluster (X8).
func TestWebhooksTwoInstancesNeverSendTwiceAtOnce(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		rcv := newReceiver(t)
		rcv.delay = 5 * time.Millisecond
		ctx := context.Background()
		act := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, Role: models.RoleOwner, Name: "o"})
		for _, p := range []string{"/a", "/b", "/c"} {
			w, err := act.CreateWebhook(ctx, models.WebhookInput{URL: rcv.url(p), Types: models.PublicEventTypes, Enabled: true})
			if err != nil {
				t.Fatal(err)
			}
			rcv.secrets[p] = []string{w.Secret}
		}
		var clusters []models.Cluster
		for i := range 4 {
			cl := launchFor(t, app, owner, fmt.Sprintf("c%d", i))
			lifecycle(t, app.store, cl)
			clusters = append(clusters, cl)
		}
		second := models.NewStoreWith(modelstest.SecondInstance(t, app.db), app.clock, app.store.Settings())
		one, two := webhookJob(app.store, "one"), webhookJob(second, "two")
		one.Batch, two.Batch = 2, 2 // many small rounds: many chances to collide
		var wg sync.WaitGroup
		for _, j := range []*jobs.Webhooks{one, two} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 40 {
					if err := j.Run(ctx); err != nil {
						t.Errorf("%s: %v", j.Holder, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		drain(t, app.store, app.clock, 5, one)
		if p := rcv.problems(); len(p) > 0 {
			t.Fatalf("receiver problems: %v", p)
		}
		for p, n := range rcv.maxIn {
			if n != 1 {
				t.Errorf("endpoint %s had %d requests at once", p, n)
			}
		}
		got := rcv.events()
		ids := map[string]int{}
		per := map[string][]string{}
		for _, e := range got {
			ids[e.Path+e.ID]++
			per[e.Path+" "+e.ClusterID] = append(per[e.Path+" "+e.ClusterID], e.Type)
		}
		for k, n := range ids {
			if n != 1 {
				t.Errorf("event %s delivered %d times", k, n)
			}
		}
		for _, p := range []string{"/a", "/b", "/c"} {
			for _, cl := range clusters {
				want := []string{"cluster.provisioning", "cluster.ready", "cluster.terminated"}
				if g := per[p+" "+cl.ID]; !slices.Equal(g, want) {
					t.Errorf("%s cluster %s: %v, want %v", p, cl.Name, g, want)
				}
			}
		}
	})
}

// TestWebhooksPausedAfterThreeDaysAndOwnersMailed: an endpoint whose every
// delivery fails for three days is paused and its owners and admins are
// mailed once; members are not (X8, E2). Enabling it again sends what
// waited.
func TestWebhooksPausedAfterThreeDaysAndOwnersMailed(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		member := app.joinAccount(owner, "member@example.com", models.RoleMember)
		rcv := newReceiver(t)
		rcv.mode.Store("fail")
		ctx := context.Background()
		act := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, Role: models.RoleOwner, Name: "o"})
		w, err := act.CreateWebhook(ctx, models.WebhookInput{URL: rcv.url("/a"), Types: []string{models.TypeClusterProvisioning}, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		rcv.secrets["/a"] = []string{w.Secret}
		launchFor(t, app, owner, "alpha")
		job := webhookJob(app.store, "one")
		for range 30 {
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			app.clock.Advance(4 * time.Hour)
		}
		cur, err := app.store.WebhookForEnv(ctx, owner.org.ID, owner.env.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Enabled || !strings.Contains(cur.PausedReason, "failed since") {
			t.Fatalf("endpoint after three failing days: enabled=%v reason=%q", cur.Enabled, cur.PausedReason)
		}
		var mails []models.OutboxMail
		if err := app.db.Where("kind = ?", models.KindWebhookPausedMail).Find(&mails).Error; err != nil {
			t.Fatal(err)
		}
		if len(mails) != 1 || mails[0].To != owner.user.Email {
			t.Fatalf("pause mails: %+v (member %s must not get one)", mails, member.user.Email)
		}
		hits := rcv.hits.Load()
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if rcv.hits.Load() != hits {
			t.Fatal("a paused endpoint was called")
		}
		// The delivery gave up after three days; a redelivery after the fix arrives.
		rcv.mode.Store("ok")
		if _, err := act.UpdateWebhook(ctx, w.ID, models.WebhookInput{URL: cur.URL, Types: cur.TypeList(), Enabled: true}); err != nil {
			t.Fatal(err)
		}
		var d models.WebhookDelivery
		if err := app.db.Where("endpoint_id = ?", w.ID).Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		if d.FailedAt == nil {
			t.Fatalf("delivery not given up after three days: %+v", d)
		}
		if _, err := act.RedeliverWebhook(ctx, w.ID, d.ID); err != nil {
			t.Fatal(err)
		}
		drain(t, app.store, app.clock, 3, job)
		if got := rcv.events(); len(got) != 1 || got[0].Type != models.TypeClusterProvisioning {
			t.Fatalf("after enable and redeliver: %+v", got)
		}
	})
}

// TestWebhooksAPI walks /v1/webhooks: create (secret once), list, get,
// update, rotate (two signatures during the overlap), test, log,
// redeliver, delete; members are refused, another environment's key sees
// 404, bad input is a 422 that changes nothing (X8, A3, A4).
func TestWebhooksAPI(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		member := app.joinAccount(owner, "member@example.com", models.RoleMember)
		key, memberKey := apiKeyFor(t, app, owner), apiKeyFor(t, app, member)
		rcv := newReceiver(t)
		ctx := context.Background()

		for _, body := range []string{
			`{"url":"ftp://example.com","types":["cluster.ready"]}`,
			`{"url":"https://example.com/h","types":[]}`,
			`{"url":"https://example.com/h","types":["cluster.exploded"]}`,
			`{"url":"http://example.com/h","types":["cluster.ready"]}`,
		} {
			app.apiJSON(http.MethodPost, "/v1/webhooks", key, body, http.StatusUnprocessableEntity, nil)
		}
		app.apiJSON(http.MethodPost, "/v1/webhooks", memberKey, `{"url":"https://example.com/h","types":["cluster.ready"]}`, http.StatusForbidden, nil)
		var list api.WebhookList
		app.apiJSON(http.MethodGet, "/v1/webhooks", key, "", http.StatusOK, &list)
		if len(list.Webhooks) != 0 || !slices.Equal(list.EventTypes, models.PublicEventTypes) {
			t.Fatalf("list after refused creates: %+v", list)
		}

		var ep api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"],"description":"ci"}`, rcv.url("/a")), http.StatusCreated, &ep)
		app.apiJSON(http.MethodGet, "/v1/webhooks", key, "", http.StatusOK, &list)
		if len(list.Webhooks) != 1 || list.Webhooks[0].Secret != "" {
			t.Fatalf("list shows %+v (the secret is shown once)", list.Webhooks)
		}
		var got api.Webhook
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID, key, "", http.StatusOK, &got)
		if got.Secret != "" || got.URL != rcv.url("/a") {
			t.Fatalf("get: %+v", got)
		}
		app.apiJSON(http.MethodPatch, "/v1/webhooks/"+ep.ID, key, `{"enabled":false,"types":["cluster.ready","cluster.failed"]}`, http.StatusOK, &got)
		if got.Enabled || !slices.Equal(got.Types, []string{"cluster.ready", "cluster.failed"}) || got.URL != ep.URL {
			t.Fatalf("patched: %+v", got)
		}
		app.apiJSON(http.MethodPatch, "/v1/webhooks/"+ep.ID, key, `{"enabled":true}`, http.StatusOK, &got)

		var rotated api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/rotate-secret", key, `{"overlapHours":2}`, http.StatusOK, &rotated)
		if rotated.Secret == ep.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousSecretUntil == nil {
			t.Fatalf("rotated: %+v", rotated)
		}
		// During the overlap a receiver that still knows only the old secret verifies the test event.
		rcv.secrets["/a"] = []string{ep.Secret}
		var d api.WebhookDelivery
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, &d)
		if d.Type != models.TypeTest {
			t.Fatalf("test delivery: %+v", d)
		}
		job := webhookJob(app.store, "one")
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		// After the overlap only the new secret signs.
		app.clock.Advance(3 * time.Hour)
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/deliveries/"+fmt.Sprint(d.ID)+"/redeliver", key, "", http.StatusAccepted, &d)
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if p := rcv.problems(); len(p) != 1 || !strings.Contains(p[0], "bad signature") {
			t.Fatalf("old secret after the overlap: problems %v", p)
		}
		var log api.WebhookAttempts
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		if len(log.Attempts) != 2 || log.Attempts[1].Status != http.StatusNoContent || log.Attempts[0].Status != http.StatusBadRequest ||
			log.Attempts[0].EventID != d.EventID {
			t.Fatalf("log: %+v", log.Attempts)
		}

		// Another environment's key: 404 on every operation.
		other, err := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: "o"}).CreateEnvironment(ctx, "staging")
		if err != nil {
			t.Fatal(err)
		}
		_, otherKey, err := app.store.CreateAPIKey(ctx, owner.org.ID, other.ID, owner.user.ID, "staging")
		if err != nil {
			t.Fatal(err)
		}
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID, otherKey, "", http.StatusNotFound, nil)
		app.apiJSON(http.MethodDelete, "/v1/webhooks/"+ep.ID, otherKey, "", http.StatusNotFound, nil)
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", memberKey, "", http.StatusForbidden, nil)

		app.apiJSON(http.MethodDelete, "/v1/webhooks/"+ep.ID, key, "", http.StatusNoContent, nil)
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID, key, "", http.StatusNotFound, nil)
		acts := app.auditActions(owner.org.ID)
		for _, a := range []string{"webhook.create", "webhook.update", "webhook.rotate_secret", "webhook.test", "webhook.redeliver", "webhook.delete"} {
			if !contains(acts, a) {
				t.Errorf("audit log lacks %s: %v", a, acts)
			}
		}
	})
}

// TestAbuseWebhookSecretsSealed: the signing secrets are stored sealed under the
// session encryption key, never in clear (A5), rotation included; a row
// written in clear before sealing is sealed at start-up and still signs;
// under another key a delivery is never sent unsigned: the attempt fails
// and says why.
func TestAbuseWebhookSecretsSealed(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		key := apiKeyFor(t, app, owner)
		rcv := newReceiver(t)
		ctx := context.Background()
		stored := func(id string) (cur, prev string) {
			t.Helper()
			row := struct{ Secret, PrevSecret string }{}
			if err := app.db.Raw("SELECT secret, prev_secret FROM webhook_endpoints WHERE id = ?", id).Scan(&row).Error; err != nil {
				t.Fatal(err)
			}
			return row.Secret, row.PrevSecret
		}
		var ep, rotated api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, rcv.url("/a")), http.StatusCreated, &ep)
		if cur, _ := stored(ep.ID); cur == "" || strings.Contains(cur, ep.Secret) || strings.Contains(cur, strings.TrimPrefix(ep.Secret, "whsec_")) {
			t.Fatalf("stored secret %q for the secret shown %q", cur, ep.Secret)
		}
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/rotate-secret", key, `{"overlapHours":2}`, http.StatusOK, &rotated)
		cur, prev := stored(ep.ID)
		for _, clear := range []string{ep.Secret, rotated.Secret} {
			if strings.Contains(cur, strings.TrimPrefix(clear, "whsec_")) || strings.Contains(prev, strings.TrimPrefix(clear, "whsec_")) {
				t.Fatalf("a secret is stored in clear after rotation: %q %q", cur, prev)
			}
		}
		// Both secrets sign during the overlap: a receiver knowing either verifies.
		rcv.secrets["/a"] = []string{ep.Secret}
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, nil)
		drain(t, app.store, app.clock, 3, webhookJob(app.store, "one"))
		if len(rcv.events()) != 1 || len(rcv.problems()) != 0 {
			t.Fatalf("old secret during the overlap: events %d, problems %v", len(rcv.events()), rcv.problems())
		}

		// A row written in clear (before sealing) is sealed at start-up and signs.
		legacy := "whsec_" + strings.Repeat("4c", 32) // hex, as every secret Clusterdeck made
		if err := app.db.Exec("UPDATE webhook_endpoints SET secret = ?, prev_secret = '' WHERE id = ?", legacy, ep.ID).Error; err != nil {
			t.Fatal(err)
		}
		if n, err := app.store.SealWebhookSecrets(ctx); err != nil || n != 1 {
			t.Fatalf("sealed %d, %v; want 1", n, err)
		}
		if cur, _ := stored(ep.ID); strings.Contains(cur, strings.Repeat("4c", 8)) {
			t.Fatalf("still in clear: %q", cur)
		}
		if n, err := app.store.SealWebhookSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("sealed again: %d, %v", n, err)
		}
		rcv.secrets["/a"] = []string{legacy}
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, nil)
		drain(t, app.store, app.clock, 3, webhookJob(app.store, "one"))
		if len(rcv.events()) != 2 || len(rcv.problems()) != 0 {
			t.Fatalf("legacy secret after sealing: events %d, problems %v", len(rcv.events()), rcv.problems())
		}

		// Under another key nothing is sent unsigned.
		otherSettings := app.store.Settings()
		otherSettings.MachineKeySecret = []byte(strings.Repeat("x", 32))
		other := models.NewStoreWith(app.db, app.clock, otherSettings)
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, nil)
		if err := webhookJob(other, "other").Run(ctx); err != nil {
			t.Fatal(err)
		}
		if hits := len(rcv.events()) + len(rcv.problems()); hits != 2 {
			t.Fatalf("the receiver got %d requests, want none under another key", hits-2)
		}
		var log api.WebhookAttempts
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		if len(log.Attempts) == 0 || !strings.Contains(log.Attempts[0].Error, "does not open") {
			t.Fatalf("the attempt under another key: %+v", log.Attempts)
		}
	})
}

// TestAbuseWebhookLimitsHoldUnderConcurrency: 40 simultaneous creates in one
// environment leave exactly WebhookMaxEndpoints endpoints; environments per
// organisation are bounded the same way; test events and redeliveries are
// rate-limited per endpoint and per organisation with 429 and Retry-After;
// an overlap out of range is refused and the secret is unchanged (A4, X8).
func TestAbuseWebhookLimitsHoldUnderConcurrency(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		key := apiKeyFor(t, app, owner)
		ctx := context.Background()
		post := func(path, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			return app.do(req)
		}
		var wg sync.WaitGroup
		codes := make([]int, 40)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = post("/v1/webhooks", fmt.Sprintf(`{"url":"https://hooks%d.example.com/h","types":["cluster.ready"]}`, i)).Code
			}()
		}
		wg.Wait()
		created := 0
		for _, c := range codes {
			switch c {
			case http.StatusCreated:
				created++
			case http.StatusUnprocessableEntity:
			default:
				t.Fatalf("create answered %d", c)
			}
		}
		var n int64
		app.db.Model(&models.WebhookEndpoint{}).Where("org_id = ?", owner.org.ID).Count(&n)
		if created != models.WebhookMaxEndpoints || n != int64(models.WebhookMaxEndpoints) {
			t.Fatalf("40 parallel creates: %d created, %d stored; want %d", created, n, models.WebhookMaxEndpoints)
		}

		// Environments: parallel creates stop at MaxEnvironments (the default one counts).
		act := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: owner.user.Email})
		var envOK atomic.Int64
		for i := range 15 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := act.CreateEnvironment(ctx, fmt.Sprintf("env-%d", i)); err == nil {
					envOK.Add(1)
				}
			}()
		}
		wg.Wait()
		var envs int64
		app.db.Model(&models.Environment{}).Where("org_id = ?", owner.org.ID).Count(&envs)
		if envs != models.MaxEnvironments || envOK.Load() != models.MaxEnvironments-1 {
			t.Fatalf("environments: %d stored, %d created; want %d in all", envs, envOK.Load(), models.MaxEnvironments)
		}

		// Test events: the endpoint's burst, then 429 with Retry-After; a
		// token comes back after 10 s of the clock.
		var list api.WebhookList
		app.apiJSON(http.MethodGet, "/v1/webhooks", key, "", http.StatusOK, &list)
		ep := list.Webhooks[0]
		accepted, refused := 0, 0
		for range 60 {
			rec := post("/v1/webhooks/"+ep.ID+"/test", "")
			switch rec.Code {
			case http.StatusAccepted:
				accepted++
			case http.StatusTooManyRequests:
				refused++
				if ra := rec.Header().Get("Retry-After"); ra == "" || ra == "0" {
					t.Fatalf("429 without Retry-After: %v", rec.Header())
				}
			default:
				t.Fatalf("test answered %d %s", rec.Code, rec.Body.String())
			}
		}
		if accepted != WebhookSendBurst || refused != 60-WebhookSendBurst {
			t.Fatalf("60 test calls: %d accepted, %d refused; want %d accepted", accepted, refused, WebhookSendBurst)
		}
		var log api.WebhookAttempts
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		app.clock.Advance(10 * time.Second)
		if rec := post("/v1/webhooks/"+ep.ID+"/test", ""); rec.Code != http.StatusAccepted {
			t.Fatalf("after 10 s: %d", rec.Code)
		}
		// Redeliver shares the endpoint's bucket.
		var d models.WebhookDelivery
		if err := app.db.Where("endpoint_id = ?", ep.ID).Order("id").Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		if rec := post(fmt.Sprintf("/v1/webhooks/%s/deliveries/%d/redeliver", ep.ID, d.ID), ""); rec.Code != http.StatusTooManyRequests {
			t.Fatalf("redeliver with the bucket spent: %d", rec.Code)
		}
		// The organisation's share: across its other endpoints, at most its burst.
		orgAccepted := 0
		for _, w := range list.Webhooks[1:] {
			for range WebhookSendBurst {
				if post("/v1/webhooks/"+w.ID+"/test", "").Code == http.StatusAccepted {
					orgAccepted++
				}
			}
		}
		// Its bucket: the burst, less the first endpoint's 11, plus 10 s of refill.
		if want := webhookOrgSendBurst - (WebhookSendBurst + 1) + WebhookOrgSendsPerMinute*10/60; orgAccepted != want {
			t.Fatalf("across the organisation's endpoints %d accepted, want %d", orgAccepted, want)
		}

		// An overlap out of range is refused and changes nothing.
		var before models.WebhookEndpoint
		app.db.Where("id = ?", ep.ID).Take(&before)
		for _, h := range []string{"4611686018427387904", "169", "-1"} {
			if rec := post("/v1/webhooks/"+ep.ID+"/rotate-secret", `{"overlapHours":`+h+`}`); rec.Code != http.StatusUnprocessableEntity && rec.Code != http.StatusBadRequest {
				t.Fatalf("overlapHours %s: %d %s", h, rec.Code, rec.Body.String())
			}
		}
		var after models.WebhookEndpoint
		app.db.Where("id = ?", ep.ID).Take(&after)
		if after.SealedSecret != before.SealedSecret || after.SealedPrevSecret != before.SealedPrevSecret {
			t.Fatal("a refused rotation changed the secret")
		}
	})
}

// TestAbuseWebhooksOneTenantCannotHoldUpAnother: twenty endpoints of one
// organisation that never answer hold at most WebhookOrgShare senders, and
// another organisation's test event is delivered while all of them still
// hang (A4, X8). The slow receivers block until the test lets them go, so
// nothing here depends on how fast the machine is.
func TestAbuseWebhooksOneTenantCannotHoldUpAnother(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		slowOrg := app.signupAccount("slow@example.com", "Slow Inc")
		fastOrg := app.signupAccount("fast@example.com", "Fast Inc")
		slowKey, fastKey := apiKeyFor(t, app, slowOrg), apiKeyFor(t, app, fastOrg)
		slow, fast := newReceiver(t), newReceiver(t)
		for i := range models.WebhookMaxEndpoints {
			var ep api.Webhook
			app.apiJSON(http.MethodPost, "/v1/webhooks", slowKey, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, slow.url(fmt.Sprintf("/s%d", i))), http.StatusCreated, &ep)
			app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", slowKey, "", http.StatusAccepted, nil)
		}
		var ep api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", fastKey, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, fast.url("/f")), http.StatusCreated, &ep)
		fast.secrets["/f"] = []string{ep.Secret}
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", fastKey, "", http.StatusAccepted, nil)

		poster := &holdingPoster{next: testPoster{webhookout.New(webhookout.Options{Allow: publicip.NewOutbound(true).Check, Timeout: time.Hour})},
			hold: slow.srv.URL, release: make(chan struct{})}
		job := &jobs.Webhooks{Store: app.store, Poster: poster, Holder: "one", Timeout: time.Hour, Linger: 50 * time.Millisecond}
		defer func() { close(poster.release); job.Wait() }()
		deadline := time.Now().Add(time.Minute) // a bound for a hung test, not a wait
		tick := func() {
			if time.Now().After(deadline) {
				t.Fatalf("after a minute: %d events at the other organisation, %d slow sends hanging", len(fast.events()), poster.inFlight.Load())
			}
			if err := job.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			runtime.Gosched()
		}
		// The other organisation's event arrives while the slow one holds
		// its whole share of senders, hanging.
		for len(fast.events()) == 0 || poster.inFlight.Load() < models.WebhookOrgShare {
			tick()
		}
		for range 20 { // more ticks claim none of its other 18 endpoints
			tick()
		}
		if n := poster.max.Load(); n != models.WebhookOrgShare || poster.inFlight.Load() != models.WebhookOrgShare {
			t.Fatalf("the slow organisation held %d senders at most (%d now), want %d", n, poster.inFlight.Load(), models.WebhookOrgShare)
		}
	})
}

// holdingPoster holds every request to hold's receiver until release is
// closed, counting how many it holds at once.
type holdingPoster struct {
	next          jobs.WebhookPoster
	hold          string
	release       chan struct{}
	inFlight, max atomic.Int64
}

func (p *holdingPoster) Post(ctx context.Context, url string, h http.Header, body []byte) (jobs.WebhookAnswer, error) {
	if !strings.HasPrefix(url, p.hold) {
		return p.next.Post(ctx, url, h, body)
	}
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		m := p.max.Load()
		if n <= m || p.max.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return jobs.WebhookAnswer{}, errors.New("no answer")
}

// TestWebhookSignatureCarriesTheWallClock: a development server's fake
// clock, ten hours ahead, does not leak into the signature's t=: receivers
// check it against their own clock with a 300 s tolerance (X8).
func TestWebhookSignatureCarriesTheWallClock(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		key := apiKeyFor(t, app, owner)
		var stamp atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ts, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Clusterdeck-Signature"), "t="), ",")
			n, _ := strconv.ParseInt(ts, 10, 64)
			stamp.Store(n)
		}))
		defer srv.Close()
		var ep api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, srv.URL+"/h"), http.StatusCreated, &ep)
		app.clock.Advance(10 * time.Hour)
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, nil)
		drain(t, app.store, app.clock, 3, webhookJob(app.store, "one"))
		if d := time.Since(time.Unix(stamp.Load(), 0)); d < -300*time.Second || d > 300*time.Second {
			t.Fatalf("t= is %s away from the wall clock", d)
		}
	})
}

// TestWebhookEventTypesCoverTheLifecycle: each public cluster event row
// carries its type, and PublicEventType names it (the vocabulary shared
// with the event stream).
func TestWebhookEventTypesCoverTheLifecycle(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		cl := launchFor(t, app, owner, "alpha")
		lifecycle(t, app.store, cl)
		evs, err := app.store.EventsFor(context.Background(), cl.ID)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range evs {
			if typ := models.PublicEventType(e); typ != "" {
				types = append(types, typ)
			}
		}
		if want := []string{"cluster.provisioning", "cluster.ready", "cluster.terminated"}; !slices.Equal(types, want) {
			t.Fatalf("public types %v, want %v", types, want)
		}
	})
}

// TestWebhooksWaitForAnEarlierEventOfTheCluster: while a cluster's earlier
// event fails, its later events wait (in order per cluster), and another
// cluster's events are not held up (X8).
func TestWebhooksWaitForAnEarlierEventOfTheCluster(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		rcv := newReceiver(t)
		ctx := context.Background()
		w, err := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, Role: models.RoleOwner, Name: "o"}).
			CreateWebhook(ctx, models.WebhookInput{URL: rcv.url("/a"), Types: []string{models.TypeClusterProvisioning,
				models.TypeClusterReady, models.TypeClusterTerminated}, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		rcv.secrets["/a"] = []string{w.Secret}
		alpha := launchFor(t, app, owner, "alpha")
		lifecycle(t, app.store, alpha)
		beta := launchFor(t, app, owner, "beta")
		rcv.failType.Store(models.TypeClusterReady)
		job := webhookJob(app.store, "one")
		for range 3 {
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var types []string
		for _, e := range rcv.events() {
			types = append(types, e.ClusterID+" "+e.Type)
		}
		if want := []string{alpha.ID + " cluster.provisioning", beta.ID + " cluster.provisioning"}; !slices.Equal(types, want) {
			t.Fatalf("while alpha's ready fails: %v, want %v (alpha's terminated waits)", types, want)
		}
		rcv.failType.Store("")
		drain(t, app.store, app.clock, 5, job)
		types = nil
		for _, e := range rcv.events() {
			if e.ClusterID == alpha.ID {
				types = append(types, e.Type)
			}
		}
		if want := []string{"cluster.provisioning", "cluster.ready", "cluster.terminated"}; !slices.Equal(types, want) {
			t.Fatalf("alpha: %v, want %v", types, want)
		}
	})
}

// TestWebhooksBillingEvents: a credited top-up is a billing.topup_credited
// event for the organisation's endpoints that want it (every environment),
// sent with the top-up; an endpoint that did not choose it gets nothing (X8, B4).
func TestWebhooksBillingEvents(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Hooks Inc")
		rcv := newReceiver(t)
		ctx := context.Background()
		act := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: owner.env.ID, Role: models.RoleOwner, Name: "o"})
		for p, types := range map[string][]string{"/billing": {models.TypeTopUpCredited}, "/clusters": {models.TypeClusterReady}} {
			w, err := act.CreateWebhook(ctx, models.WebhookInput{URL: rcv.url(p), Types: types, Enabled: true})
			if err != nil {
				t.Fatal(err)
			}
			rcv.secrets[p] = []string{w.Secret}
		}
		tu, err := app.store.CreateTopUp(ctx, owner.org.ID, 25*models.Micro, true, "o")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := app.store.CompleteTestTopUp(ctx, owner.org.ID, tu.ID); err != nil || !ok {
			t.Fatalf("credit: %v %v", ok, err)
		}
		if ok, err := app.store.CompleteTestTopUp(ctx, owner.org.ID, tu.ID); err != nil || ok {
			t.Fatalf("second credit: %v %v", ok, err)
		}
		drain(t, app.store, app.clock, 3, webhookJob(app.store, "one"))
		got := rcv.events()
		if len(got) != 1 || got[0].Path != "/billing" || got[0].Type != models.TypeTopUpCredited {
			t.Fatalf("billing events: %+v", got)
		}
		var d models.WebhookDelivery
		if err := app.db.Where("type = ?", models.TypeTopUpCredited).Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(d.Body, `"amount":"25`) || !strings.Contains(d.Body, tu.ID) {
			t.Fatalf("body %s", d.Body)
		}
	})
}
