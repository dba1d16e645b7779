package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/labstack/echo/v4"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testApp is the real router over a real, migrated database with a fake clock.
type testApp struct {
	t     testing.TB
	e     *echo.Echo
	store *models.Store
	clock *models.FakeClock
	db    *gorm.DB
	sql   *sqlCounter
	h     *handler // the server's handler: its in-memory bounds, for tests that look at them
}

func newTestApp(t testing.TB, db *gorm.DB) *testApp { return newTestAppSet(t, db, nil, nil) }

// newTestAppWith is newTestApp with edit applied to the web layer's
// dependencies before the server is built.
func newTestAppWith(t testing.TB, db *gorm.DB, edit func(*Deps)) *testApp {
	return newTestAppSet(t, db, nil, edit)
}

// testSettings are the store's settings in tests, as main builds them.
func testSettings() models.Settings {
	return models.Settings{
		MachineKeySecret:   []byte(strings.Repeat("s", 32)), // seals webhook secrets, as main sets it from SESSION_ENC_KEY
		WebhookClusterView: WebhookClusterView,
	}
}

// newTestAppSet is newTestApp with set applied to the store's settings
// before the store is built (they are fixed from then on) and edit to the
// web layer's dependencies before the server is built.
func newTestAppSet(t testing.TB, db *gorm.DB, set func(*models.Settings), edit func(*Deps)) *testApp {
	t.Helper()
	counter := &sqlCounter{}
	db = db.Session(&gorm.Session{Logger: counter})
	clock := models.NewFakeClock(testNow)
	settings := testSettings()
	if set != nil {
		set(&settings)
	}
	store := models.NewStoreWith(db, clock, settings)
	d := Deps{
		Config: Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FakeClock: clock,
		Static: static.FS, LogPoll: 5 * time.Millisecond,
		RefusalHold: -1, // tests read their 429s at once; the load harness measures the hold
	}
	if edit != nil {
		edit(&d)
	}
	e, h := newServer(d)
	return &testApp{t: t, e: e, store: store, clock: clock, db: db, sql: counter, h: h}
}

// eachApp runs fn against a fresh app on SQLite and on PostgreSQL.
func eachApp(t *testing.T, fn func(t *testing.T, app *testApp)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newTestApp(t, db)) })
}

// eachAppSet is eachApp with set applied to the store's settings.
func eachAppSet(t *testing.T, set func(*models.Settings), fn func(t *testing.T, app *testApp)) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, newTestAppSet(t, db, set, nil)) })
}

// loopbackWebhooks lets webhook endpoints on this machine be used, as a
// development server does (X8).
func loopbackWebhooks(s *models.Settings) { s.WebhookAllowLoopback = true }

// do serves req; /v1 exchanges are checked against the OpenAPI document.
func (a *testApp) do(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	validating(a.t, a.e).ServeHTTP(rec, req)
	return rec
}

func (a *testApp) get(path string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return a.do(req)
}

func (a *testApp) seedOffers(offers ...models.Offer) {
	a.t.Helper()
	if err := a.store.ReplaceOffers(context.Background(), "sim", offers, a.clock.Now()); err != nil {
		a.t.Fatal(err)
	}
}

func doc(t testing.TB, rec *httptest.ResponseRecorder) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func intp(n int) *int { return &n }

func testOffer(id, loc string, gpus int, perGPU models.Money, avail *int) models.Offer {
	return models.Offer{
		ProviderOffer: id, Location: loc, LocationName: "Loc " + loc, Interconnect: "infiniband", NICs: gpus, NICGbps: 400,
		MachineKind: "vm", Accelerator: "H100_80GB", GPUsPerNode: gpus, PerGPUHour: perGPU,
		RootDiskGB: 500, DiskGBHour: 100, NodesAvailable: avail, Available: avail == nil || *avail > 0,
		BootSeconds: 240, PublicIPs: true, VCPUs: 96, MemoryGB: 1024,
	}
}

// sqlCounter is a GORM logger that counts every statement run.
type sqlCounter struct{ n atomic.Int64 }

func (c *sqlCounter) LogMode(logger.LogLevel) logger.Interface      { return c }
func (c *sqlCounter) Info(context.Context, string, ...interface{})  {}
func (c *sqlCounter) Warn(context.Context, string, ...interface{})  {}
func (c *sqlCounter) Error(context.Context, string, ...interface{}) {}
func (c *sqlCounter) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

func manyOffers(n int) []models.Offer {
	out := make([]models.Offer, 0, n)
	accels := models.Accelerators
	for i := 0; i < n; i++ {
		o := testOffer(fmt.Sprintf("o%05d", i), fmt.Sprintf("loc-%02d", i%40), models.GPUCounts[i%4], models.Money(1_000_000+i*137), intp(i%70))
		o.Accelerator = accels[i%len(accels)]
		out = append(out, o)
	}
	return out
}

func openSQLite(t testing.TB) *gorm.DB { return modelstest.Open(t, "sqlite") }
