package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// TestRouteWalk proves A3 for every registered route: it walks e.Routes()
// (pages, partials, API), so a route added later is covered automatically,
// and requests each one
//
//   - signed out: a protected route answers 401, 403 or 404, or (page GETs)
//     a redirect to /login, and never shows org A's data;
//   - as the owner of org B (session + CSRF for pages, B's API key for /v1),
//     with org A's ids in the path: 404, as if A's resource did not exist
//     (403 in the operators' /admin area, with ids or without); without
//     ids: no error and none of A's data in the body;
//   - as org A's owner, GET routes with A's ids answer (the positive control
//     that proves the 404s above come from scoping, not from bad ids).
//
// Afterwards A's keys, members, invitations and quota must be untouched.
//
// A route with :params needs an entry in walkParams (below) that creates org
// A's resource and returns the path's values; the test fails until it has
// one. A public route needs an entry in walkPublic.
func TestRouteWalk(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		f := newWalkFixture(t, app)
		if walked := walkRoutes(t, f); walked < 20 {
			t.Errorf("walked only %d routes", walked)
		}
		f.checkAIntact(t)
	})
}

// The walk itself fails a route with :params that has no walkParams entry,
// a protected-looking route that answers signed-out visitors, and a route
// that ignores the org.
func TestRouteWalkCatchesUncoveredRoutes(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	f := newWalkFixture(t, app)
	app.e.GET("/things/:id", func(c echo.Context) error { return c.String(200, "thing") })
	app.e.GET("/leaky", func(c echo.Context) error { return c.String(200, "AlphaCorpZQ secrets") })
	rec := &errRecorder{}
	walkRoutes(rec, f)
	want := []string{"GET /things/:id takes parameters but has no entry", "signed out GET /leaky = 200", "shows org A's data"}
	for _, w := range want {
		found := false
		for _, e := range rec.errs {
			found = found || strings.Contains(e, w)
		}
		if !found {
			t.Errorf("the walk did not report %q; it reported %q", w, rec.errs)
		}
	}
}

type walkT interface {
	Helper()
	Errorf(format string, args ...any)
}

type errRecorder struct{ errs []string }

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// walkRoutes requests every registered route as described above and returns
// how many it walked.
func walkRoutes(t walkT, f *walkFixture) int {
	t.Helper()
	routes := f.app.e.Routes()
	sort.Slice(routes, func(i, j int) bool {
		return routes[i].Path+routes[i].Method < routes[j].Path+routes[j].Method
	})
	walked := 0
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue
		}
		walked++
		key := r.Method + " " + r.Path
		if _, ok := walkExempt[r.Path]; ok || strings.HasPrefix(r.Path, "/dev/") {
			continue
		}
		params := map[string]string{}
		if hasParams(r.Path) {
			gen, ok := walkParams[r.Path]
			if !ok {
				t.Errorf("%s takes parameters but has no entry in walkParams (web/routewalk_test.go): "+
					"add one that creates org A's resource and returns the values", key)
				continue
			}
			params = gen(f)
		}
		path, ok := fillPath(r.Path, params)
		if !ok {
			t.Errorf("%s: walkParams does not give every parameter (got %v)", key, params)
			continue
		}
		api := strings.HasPrefix(r.Path, "/v1/")

		// Signed out.
		rec := f.anon(r.Method, path)
		f.noLeak(t, "signed out "+key, rec)
		if !walkPublic[r.Path] {
			ok := rec.Code == 401 || rec.Code == 403 || rec.Code == 404 ||
				(rec.Code == 303 && strings.HasPrefix(location(rec), "/login"))
			if !ok {
				t.Errorf("signed out %s %s = %d (Location %q); want 401/403/404 or a redirect to /login (or list it in walkPublic)",
					r.Method, path, rec.Code, location(rec))
			}
		}

		// As org B.
		var recs []*httptest.ResponseRecorder
		if api {
			recs = append(recs, f.asBKey(r.Method, path))
		}
		if !api || r.Method == http.MethodGet {
			recs = append(recs, f.asB(r.Method, path))
		}
		for _, rec := range recs {
			f.noLeak(t, "org B "+key, rec)
			switch {
			case len(params) > 0 && walkCapability[r.Path]:
				if rec.Code != 404 {
					t.Errorf("org B %s %s with an unknown token = %d, want 404", r.Method, path, rec.Code)
				}
			case strings.HasPrefix(r.Path, "/admin"): // every operator page, with ids or not (OP2)
				if rec.Code != 403 {
					t.Errorf("org B (not an operator) %s %s = %d, want 403", r.Method, path, rec.Code)
				}
			case len(params) > 0:
				if rec.Code != 404 {
					t.Errorf("org B %s %s with org A's ids = %d, want 404\n%.300s", r.Method, path, rec.Code, rec.Body)
				}
			default:
				if rec.Code >= 500 {
					t.Errorf("org B %s %s = %d", r.Method, path, rec.Code)
				}
			}
		}

		// As org A's key for another environment (A3): A's
		// objects in the default environment answer 404 like B's, and
		// lists do not show them.
		if api {
			f.otherEnvKey(t, key, path, len(params) > 0 && !walkCapability[r.Path])
		}

		// Positive control: A reaches its own resources.
		if _, stateful := walkStateful[r.Path]; len(params) > 0 && r.Method == http.MethodGet && !walkCapability[r.Path] && !stateful &&
			!strings.HasPrefix(r.Path, "/admin") { // A is no operator: TestAdminPages reaches them as one
			var rec *httptest.ResponseRecorder
			if api {
				rec = f.asAKey(r.Method, path)
			} else {
				rec = f.asA(r.Method, path)
			}
			if rec.Code >= 400 {
				t.Errorf("org A's own %s %s = %d: the walk's ids are wrong", r.Method, path, rec.Code)
			}
		}
	}
	return walked
}

// walkPublic lists routes anyone may use signed out. Everything else must
// refuse a signed-out visitor.
var walkPublic = map[string]bool{
	"/":                               true,
	"/healthz":                        true,
	"/readyz":                         true,
	"/metrics":                        true, // loopback or METRICS_TOKEN only: TestMetrics
	"/static*":                        true,
	"/offers":                         true,
	"/signup":                         true,
	"/login":                          true,
	"/logout":                         true,
	"/invites/:token":                 true, // the token is the capability (see walkCapability)
	"/forgot-password":                true,
	"/reset-password/:token":          true, // the token is the capability
	"/v1/gpu/offers":                  true,
	"/v1/gpu/offers/:id/availability": true, // X18: the calendar, like the offers
	"/v1/openapi.json":                true,
	"/agent/:version/:file":           true, // the agent binary, public: TestAgentBinary
}

// walkCapability lists routes whose parameter is a secret token rather than
// an id: holding it is the permission. The walk sends an unknown token and
// expects 404.
var walkCapability = map[string]bool{
	"/invites/:token":        true,
	"/invites/:token/accept": true,
	"/reset-password/:token": true,
	"/agent/:version/:file":  true, // not a secret, but the same answer: an unknown version is 404 (TestAgentBinary)
}

// walkExempt lists routes outside org scoping, with the reason. /dev/… routes
// (development tools, never registered in production) are exempt as a group.
var walkExempt = map[string]string{
	"/webhooks/stripe":                "signature-verified, not org-scoped: TestStripeWebhook",
	"/v1/agent/claim":                 "bootstrap-token protocol, not org-scoped: TestAgentClaim",
	"/v1/gpu/offers/:id/availability": "the public catalog's calendar, not org-scoped: TestReservationAPIJourney",
	"/v1/agent/checkin":               "node-token protocol, not org-scoped: TestAgentAuth and jobs' TestTaskProtocol",
	"/v1/agent/peers":                 "node-token protocol, not org-scoped: TestAgentAuth",
	"/v1/agent/heartbeat":             "node-token protocol, not org-scoped: TestAgentAuth",
	"/v1/agent/logs":                  "node-token protocol, not org-scoped: TestAgentAuth",
	"/v1/agent/tasks/:task":           "node-token protocol, not org-scoped: TestAgentAuth and jobs' TestTaskProtocol",
}

// walkParams gives, per route pattern, the path values pointing at org A's
// resources (creating them as needed).
var walkParams = map[string]func(f *walkFixture) map[string]string{
	"/invites/:token": func(f *walkFixture) map[string]string { return map[string]string{"token": "not-a-real-invite-token"} },
	"/agent/:version/:file": func(f *walkFixture) map[string]string {
		return map[string]string{"version": "000000000000", "file": "clusterdeck-linux-amd64"}
	},
	"/invites/:token/accept":                   func(f *walkFixture) map[string]string { return map[string]string{"token": "not-a-real-invite-token"} },
	"/reset-password/:token":                   func(f *walkFixture) map[string]string { return map[string]string{"token": "not-a-real-reset-token"} },
	"/orgs/:id/switch":                         func(f *walkFixture) map[string]string { return map[string]string{"id": f.A.org.ID} },
	"/environments/:id/switch":                 func(f *walkFixture) map[string]string { return map[string]string{"id": f.envA.ID} },
	"/settings/ssh-keys/:id/delete":            func(f *walkFixture) map[string]string { return map[string]string{"id": f.sshA.ID} },
	"/settings/api-keys/:id/revoke":            func(f *walkFixture) map[string]string { return map[string]string{"id": f.keyA.ID} },
	"/settings/team/invites/:id/revoke":        func(f *walkFixture) map[string]string { return map[string]string{"id": f.inviteA.ID} },
	"/settings/team/members/:id/role":          func(f *walkFixture) map[string]string { return map[string]string{"id": f.memberA.user.ID} },
	"/settings/team/members/:id/remove":        func(f *walkFixture) map[string]string { return map[string]string{"id": f.memberA.user.ID} },
	"/admin/orgs/:id/quota":                    func(f *walkFixture) map[string]string { return map[string]string{"id": f.A.org.ID} },
	"/clusters/:id":                            clusterA,
	"/billing/usage/:id":                       clusterA,
	"/billing/budgets/:envId":                  defaultEnvA,
	"/billing/budgets/:envId/delete":           defaultEnvA,
	"/v1/billing/budgets/:envId":               defaultEnvA,
	"/clusters/:id/terminate":                  clusterA,
	"/clusters/:id/retry-install":              clusterA,
	"/clusters/:id/kubeconfig":                 clusterA,
	"/clusters/:id/logs/stream":                clusterA,
	"/clusters/:id/logs/download":              clusterA,
	"/clusters/:id/logs/panel":                 clusterA,
	"/v1/gpu/clusters/:id":                     clusterA,
	"/v1/gpu/clusters/:id/terminate":           clusterA,
	"/v1/gpu/clusters/:id/connections":         clusterA,
	"/v1/gpu/clusters/:id/logs":                clusterA,
	"/v1/gpu/clusters/:id/kubeconfig":          clusterA,
	"/v1/gpu/clusters/:id/retry-install":       clusterA,
	"/quote-requests/:id":                      quoteRequestA,
	"/v1/quote-requests/:id":                   quoteRequestA,
	"/reservations/:id":                        reservationA, // X18
	"/v1/reservations/:id":                     reservationA,
	"/v1/reservations/:id/cancel":              reservationA,
	"/admin/quote-requests/:id/status":         quoteRequestA,
	"/admin/quote-requests/:id/private-offer":  quoteRequestA,
	"/admin/quote-requests/:id/private-offers": quoteRequestA,
	"/admin/orgs/:id/balance":                  func(f *walkFixture) map[string]string { return map[string]string{"id": f.A.org.ID} },
	"/admin/orgs/:id/adjustments":              func(f *walkFixture) map[string]string { return map[string]string{"id": f.A.org.ID} },
	"/admin/orgs/:id/top-ups/:topUp/reverse":   func(f *walkFixture) map[string]string { return map[string]string{"id": f.A.org.ID, "topUp": "tu_none"} },
	"/admin/providers/:name/markup":            func(f *walkFixture) map[string]string { return map[string]string{"name": "sim"} },
	"/admin/jobs/:name/run":                    func(f *walkFixture) map[string]string { return map[string]string{"name": "catalog"} },
	"/admin/machines/:name/delete":             func(f *walkFixture) map[string]string { return map[string]string{"name": "desk-1"} },
	"/admin/lemons/:id/release": func(f *walkFixture) map[string]string {
		return map[string]string{"id": strconv.FormatInt(f.app.seedLemon("walk-h01").ID, 10)}
	},
	"/clusters/:id/recovery":                                clusterA,
	"/clusters/:id/recover":                                 clusterA,
	"/v1/gpu/clusters/:id/recovery":                         clusterA,
	"/v1/gpu/clusters/:id/recover":                          clusterA,
	"/clusters/:id/verify":                                  clusterA,
	"/clusters/:id/keep":                                    clusterA,
	"/v1/gpu/clusters/:id/verify":                           clusterA,
	"/v1/gpu/clusters/:id/keep":                             clusterA,
	"/volumes/:id/grow":                                     volumeA,
	"/volumes/:id/delete":                                   volumeA,
	"/v1/volumes/:id":                                       volumeA,
	"/settings/webhooks/:id":                                webhookA,
	"/settings/webhooks/:id/test":                           webhookA,
	"/settings/webhooks/:id/rotate":                         webhookA,
	"/settings/webhooks/:id/toggle":                         webhookA,
	"/settings/webhooks/:id/delete":                         webhookA,
	"/settings/webhooks/:id/deliveries/:delivery/redeliver": webhookA,
	"/v1/webhooks/:id":                                      webhookA,
	"/v1/webhooks/:id/rotate-secret":                        webhookA,
	"/v1/webhooks/:id/test":                                 webhookA,
	"/v1/webhooks/:id/deliveries":                           webhookA,
	"/v1/webhooks/:id/deliveries/:delivery/redeliver":       webhookA,
	"/v1/volumes/:id/grow":                                  volumeA,
	"/runs/:id":                                             runA,
	"/v1/runs/:id":                                          runA,
	"/clusters/:id/resume":                                  clusterA,
	"/v1/gpu/clusters/:id/resume":                           clusterA,
	"/clusters/:id/stop":                                    clusterA,
	"/v1/gpu/clusters/:id/stop":                             clusterA,
	"/clusters/:id/workers":                                 clusterA,
	"/v1/gpu/clusters/:id/workers":                          clusterA,
	"/clusters/:id/nodes/:rank/replace":                     clusterNodeA,
	"/v1/gpu/clusters/:id/nodes/:rank/replace":              clusterNodeA,
	"/clusters/:id/gpu-watch":                               clusterA, // X15
	"/v1/gpu/clusters/:id/gpu-watch":                        clusterA,
	"/v1/gpu/clusters/:id/metrics":                          clusterA,
}

func clusterNodeA(f *walkFixture) map[string]string {
	return map[string]string{"id": f.clusterA.ID, "rank": "1"}
}

func volumeA(f *walkFixture) map[string]string { return map[string]string{"id": f.volumeA.ID} }

// webhookA is A's endpoint (in A's default environment) and its test delivery.
func webhookA(f *walkFixture) map[string]string {
	return map[string]string{"id": f.webhookA.ID, "delivery": strconv.FormatInt(f.webhookDeliveryA, 10)}
}

func reservationA(f *walkFixture) map[string]string {
	return map[string]string{"id": f.reservationA.ID}
}

func quoteRequestA(f *walkFixture) map[string]string {
	return map[string]string{"id": f.quoteRequestA.ID}
}

// defaultEnvA is A's default environment, where A's cluster lives (not
// envA, the other environment's key's).
func defaultEnvA(f *walkFixture) map[string]string { return map[string]string{"envId": f.A.env.ID} }

func clusterA(f *walkFixture) map[string]string { return map[string]string{"id": f.clusterA.ID} }

// runA is a run of A's on A's cluster (X17).
func runA(f *walkFixture) map[string]string {
	var rs []models.Run
	f.app.db.Where("org_id = ?", f.A.org.ID).Limit(1).Find(&rs)
	if len(rs) == 1 {
		return map[string]string{"id": rs[0].ID}
	}
	r := models.Run{ID: models.NewID("run"), OrgID: f.A.org.ID, EnvID: f.clusterA.EnvID, Name: "walk", Status: models.RunRunning,
		ClusterID: f.clusterA.ID, Nodes: f.clusterA.Nodes, FinishRule: models.FinishAllRanks, CreatedAt: f.app.store.Now()}
	if err := f.app.db.Create(&r).Error; err != nil {
		f.t.Fatal(err)
	}
	return map[string]string{"id": r.ID}
}

// walkStateful lists GET routes whose answer to A depends on the cluster's
// state, so the positive control does not apply (B still gets 404).
var walkStateful = map[string]string{
	"/clusters/:id/kubeconfig":         "404 unless Kubernetes, 409 until node-0 reports its kubeconfig",
	"/v1/gpu/clusters/:id/kubeconfig":  "404 unless Kubernetes, 409 until node-0 reports its kubeconfig",
	"/v1/gpu/clusters/:id/connections": "409 until every machine is up",
}

// walkFixture is two organisations. Everything of A's carries the marker
// "alphacorpzq", which must never appear in a response to B or to a
// signed-out visitor.
type walkFixture struct {
	t       *testing.T
	app     *testApp
	A, B    account
	memberA account
	envA    models.Environment
	sshA    models.SSHKey
	keyA    models.APIKey
	tokenA  string
	// tokenAOtherEnv is A's key for envA; A's cluster and quote request
	// live in A's default environment.
	tokenAOtherEnv string
	inviteA        models.Invite
	clusterA       models.Cluster
	tokenB         string
	cookiesA       *client

	quoteRequestA models.QuoteRequest
	volumeA       models.Volume
	reservationA  models.Reservation

	webhookA         models.WebhookEndpoint
	webhookDeliveryA int64
}

const walkMarker = "alphacorpzq"

func newWalkFixture(t *testing.T, app *testApp) *walkFixture {
	ctx := context.Background()
	f := &walkFixture{t: t, app: app}
	f.A = app.signupAccount("alice@alphacorpzq.example", "AlphaCorpZQ Research")
	f.B = app.signupAccount("bravo@bravo.example", "Bravo Labs")
	f.memberA = app.joinAccount(f.A, "bob@alphacorpzq.example", models.RoleMember)
	var err error
	if f.envA, err = app.store.CreateEnvironment(ctx, f.A.org.ID, "alphacorpzq-prod"); err != nil {
		t.Fatal(err)
	}
	if f.sshA, err = app.store.AddSSHKey(ctx, f.A.org.ID, f.A.user.ID, "alphacorpzq-laptop", testSSHKey(t, "alphacorpzq@laptop")); err != nil {
		t.Fatal(err)
	}
	if f.keyA, f.tokenA, err = app.store.CreateAPIKey(ctx, f.A.org.ID, f.A.env.ID, f.A.user.ID, "alphacorpzq-ci"); err != nil {
		t.Fatal(err)
	}
	if _, f.tokenAOtherEnv, err = app.store.CreateAPIKey(ctx, f.A.org.ID, f.envA.ID, f.A.user.ID, "alphacorpzq-prod-ci"); err != nil {
		t.Fatal(err)
	}
	if f.inviteA, _, err = app.store.CreateInvite(ctx, f.A.org.ID, models.RoleOwner, f.A.user.ID, "carol@alphacorpzq.example", models.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if err := app.store.AuditLog(ctx, models.AuditEntry{OrgID: f.A.org.ID, Actor: "alice@alphacorpzq.example", Action: "test.marker", Target: walkMarker}); err != nil {
		t.Fatal(err)
	}
	if _, f.tokenB, err = app.store.CreateAPIKey(ctx, f.B.org.ID, f.B.env.ID, f.B.user.ID, "bravo-ci"); err != nil {
		t.Fatal(err)
	}
	f.clusterA = launchFor(t, app, f.A, "alphacorpzq-train")
	if f.quoteRequestA, err = app.store.CreateQuoteRequest(ctx, models.QuoteRequestInput{
		OrgID: f.A.org.ID, EnvID: f.A.env.ID, UserID: f.A.user.ID, Requester: f.A.user.Email,
		Accelerator: "H100_80GB", Nodes: 128, GPUsPerNode: 8, Fabric: "infiniband", Location: "alphacorpzq-dc",
		StartDate: "2027-01-04", Duration: 4, DurationUnit: "weeks", ContactName: "Alice AlphaCorpZQ",
		ContactEmail: "alice@alphacorpzq.example", Notes: "alphacorpzq pretraining run",
	}, models.CapacityNotify{}, models.AuditEntry{Actor: f.A.user.Email}); err != nil {
		t.Fatal(err)
	}
	if f.volumeA, err = app.store.As(models.Actor{OrgID: f.A.org.ID, EnvID: f.A.env.ID, UserID: f.A.user.ID, Role: models.RoleOwner,
		Name: f.A.user.Email}).CreateVolume(ctx, models.VolumeInput{Name: "alphacorpzq-ckpt", Location: f.clusterA.Location, SizeGB: 50}); err != nil {
		t.Fatal(err)
	}
	ownerA := app.store.As(models.Actor{OrgID: f.A.org.ID, EnvID: f.A.env.ID, UserID: f.A.user.ID, Role: models.RoleOwner, Name: f.A.user.Email})
	now := app.store.Now()
	f.reservationA = models.Reservation{ID: models.NewID("rsv"), OrgID: f.A.org.ID, EnvID: f.A.env.ID, OfferID: f.clusterA.OfferID,
		Accelerator: f.clusterA.Accelerator, GPUsPerNode: f.clusterA.GPUsPerNode, Nodes: 2, MachineHour: f.clusterA.MachineHour,
		Source: models.SourceBestEffort, StartAt: now.Add(30 * 24 * time.Hour).Truncate(time.Hour), EndAt: now.Add(31 * 24 * time.Hour).Truncate(time.Hour),
		LeadSeconds: 3600, Deposit: 10 * models.Micro, Status: models.ReservationBooked, CreatedBy: "alice@alphacorpzq.example", CreatedAt: now, UpdatedAt: now}
	if err := app.store.DB().Create(&f.reservationA).Error; err != nil {
		t.Fatal(err)
	}
	if f.webhookA, err = ownerA.CreateWebhook(ctx, models.WebhookInput{URL: "https://alphacorpzq.example/hooks",
		Description: "alphacorpzq alerts", Types: []string{models.TypeClusterReady}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	d, err := ownerA.SendTestWebhook(ctx, f.webhookA.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.webhookDeliveryA = d.ID
	f.cookiesA = app.login(f.A)
	return f
}

var paramRE = regexp.MustCompile(`:[A-Za-z_]+|\*`)

func hasParams(path string) bool { return strings.Contains(path, ":") }

func fillPath(pattern string, params map[string]string) (string, bool) {
	ok := true
	out := paramRE.ReplaceAllStringFunc(pattern, func(p string) string {
		if p == "*" {
			return "x"
		}
		v, found := params[p[1:]]
		if !found {
			ok = false
		}
		return url.PathEscape(v)
	})
	return out, ok
}

func (f *walkFixture) request(method, path string) *http.Request {
	var req *http.Request
	if method == http.MethodGet || method == http.MethodHead {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(""))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if strings.HasSuffix(req.URL.Path, "/logs/stream") || strings.HasSuffix(req.URL.Path, "/logs") {
		// A log stream follows until the client leaves: leave after a moment.
		ctx, cancel := context.WithTimeout(req.Context(), 300*time.Millisecond)
		f.t.Cleanup(cancel)
		req = req.WithContext(ctx)
	}
	return req
}

// anon requests as a signed-out visitor (with a valid CSRF pair, so the
// answer is about authentication, not CSRF).
func (f *walkFixture) anon(method, path string) *httptest.ResponseRecorder {
	c := f.app.client()
	req := f.request(method, path)
	req.Header.Set("X-CSRF-Token", c.token())
	return c.do(req)
}

// asB requests as B's owner with a fresh session (B's own actions in the walk,
// like "log out everywhere", must not spoil the next request).
func (f *walkFixture) asB(method, path string) *httptest.ResponseRecorder {
	c := f.app.login(f.B)
	req := f.request(method, path)
	req.Header.Set("X-CSRF-Token", c.token())
	return c.do(req)
}

func (f *walkFixture) asBKey(method, path string) *httptest.ResponseRecorder {
	req := f.request(method, path)
	req.Header.Set("Authorization", "Bearer "+f.tokenB)
	return f.app.do(req)
}

func (f *walkFixture) asA(method, path string) *httptest.ResponseRecorder {
	return f.cookiesA.do(f.request(method, path))
}

func (f *walkFixture) asAKey(method, path string) *httptest.ResponseRecorder {
	req := f.request(method, path)
	req.Header.Set("Authorization", "Bearer "+f.tokenA)
	return f.app.do(req)
}

func (f *walkFixture) asAOtherEnvKey(method, path string) *httptest.ResponseRecorder {
	req := f.request(method, path)
	req.Header.Set("Authorization", "Bearer "+f.tokenAOtherEnv)
	return f.app.do(req)
}

// otherEnvKey requests an API route with A's key for another environment
// than A's objects: 404 when the path names one, else no trace of them.
func (f *walkFixture) otherEnvKey(t walkT, key, path string, names bool) {
	t.Helper()
	method, _, _ := strings.Cut(key, " ")
	rec := f.asAOtherEnvKey(method, path)
	if names {
		if rec.Code != http.StatusNotFound {
			t.Errorf("org A's key for another environment %s %s = %d, want 404\n%.300s", method, path, rec.Code, rec.Body)
		}
		return
	}
	body := rec.Body.String()
	if rec.Code >= 500 || strings.Contains(body, f.clusterA.ID) || strings.Contains(body, f.quoteRequestA.ID) {
		t.Errorf("org A's key for another environment %s = %d shows the default environment's objects\n%.300s", key, rec.Code, body)
	}
}

func (f *walkFixture) noLeak(t walkT, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := strings.ToLower(rec.Body.String() + rec.Header().Get("Location") + rec.Header().Get("HX-Redirect"))
	if strings.Contains(body, walkMarker) {
		i := strings.Index(body, walkMarker)
		t.Errorf("%s shows org A's data (%d): …%s…", what, rec.Code, body[max(0, i-120):min(len(body), i+60)])
	}
}

// checkAIntact verifies nothing of A's changed during the walk.
func (f *walkFixture) checkAIntact(t *testing.T) {
	ctx := context.Background()
	s := f.app.store
	if _, err := s.AuthenticateAPIKey(ctx, f.tokenA); err != nil {
		t.Errorf("A's API key stopped working: %v", err)
	}
	if keys, _ := s.SSHKeys(ctx, f.A.org.ID, f.A.user.ID); len(keys) != 1 {
		t.Errorf("A's SSH keys: %d", len(keys))
	}
	if inv, _ := s.PendingInvites(ctx, f.A.org.ID); len(inv) != 1 {
		t.Errorf("A's pending invites: %d", len(inv))
	}
	if cl, err := s.ClusterForOrg(ctx, f.A.org.ID, f.clusterA.ID); err != nil || cl.TerminateRequestedAt != nil || cl.Status != models.StatusProvisioning {
		t.Errorf("A's cluster changed during the walk: %+v %v", cl, err)
	}
	if qr, err := s.QuoteRequestForOrg(ctx, f.A.org.ID, f.quoteRequestA.ID); err != nil || qr.Status != models.CapacityNew || qr.OperatorNote != "" {
		t.Errorf("A's quote request changed during the walk: %+v %v", qr, err)
	}
	if v, err := s.VolumeForOrg(ctx, f.A.org.ID, f.volumeA.ID); err != nil || v.SizeGB != 50 || v.DeletedAt != nil {
		t.Errorf("A's volume changed during the walk: %+v %v", v, err)
	}
	members, _ := s.Members(ctx, f.A.org.ID)
	if len(members) != 2 {
		t.Errorf("A's members: %+v", members)
	}
	for _, m := range members {
		if (m.UserID == f.A.user.ID && m.Role != models.RoleOwner) || (m.UserID == f.memberA.user.ID && m.Role != models.RoleMember) {
			t.Errorf("A's member %s has role %s", m.Email, m.Role)
		}
	}
	if org, _ := s.OrgByID(ctx, f.A.org.ID); org.MaxMachines != models.DefaultMaxMachines || org.MaxGPUs != models.DefaultMaxGPUs {
		t.Errorf("A's quota changed: %+v", org)
	}
	if envs, _ := s.Environments(ctx, f.A.org.ID); len(envs) != 2 {
		t.Errorf("A's environments: %d", len(envs))
	}
}
