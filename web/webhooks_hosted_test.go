package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// X8: one URL is one endpoint per environment — a second endpoint for it,
// however the URL is spelled, is refused saying which one has it, through
// the form and the API, and a PATCH onto another endpoint's URL too;
// another environment may use it.
func TestWebhookURLOncePerEnvironment(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("once@example.com", "Once")
		key := apiKeyFor(t, app, owner)
		var first, second api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, `{"url":"https://hooks.example.com/cd","types":["cluster.ready"]}`, http.StatusCreated, &first)
		for _, again := range []string{"https://hooks.example.com/cd", "HTTPS://Hooks.Example.com:443/cd", " https://hooks.example.com/cd "} {
			code, out := apiJSON(t, app, http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.failed"]}`, again))
			if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(out), first.ID) || !strings.Contains(fmt.Sprint(out), "arrive twice") {
				t.Errorf("%q again: %d %v", again, code, out)
			}
		}
		rec := app.login(owner).post("/settings/webhooks", url.Values{"url": {"https://hooks.example.com/cd"}, "types": {"cluster.ready"}, "enabled": {"1"}})
		if got := doc(t, rec).Find(`[data-testid=problem-url]`).Text(); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(got, "already has an endpoint for this URL ("+first.ID+")") {
			t.Errorf("the form: %d %q", rec.Code, got)
		}
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, `{"url":"https://hooks.example.com/other","types":["cluster.ready"]}`, http.StatusCreated, &second)
		if code, out := apiJSON(t, app, http.MethodPatch, "/v1/webhooks/"+second.ID, key, `{"url":"https://hooks.example.com/cd/"}`); code != http.StatusOK {
			t.Errorf("another path is another URL: %d %v", code, out) // "/cd/" is not "/cd"
		}
		if code, out := apiJSON(t, app, http.MethodPatch, "/v1/webhooks/"+second.ID, key, `{"url":"https://hooks.example.com/cd"}`); code != http.StatusUnprocessableEntity {
			t.Errorf("PATCH onto another endpoint's URL: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, http.MethodPatch, "/v1/webhooks/"+first.ID, key, `{"url":"https://hooks.example.com/cd","description":"same"}`); code != http.StatusOK {
			t.Errorf("PATCH keeping its own URL: %d", code)
		}
		ws, err := app.store.WebhooksFor(ctx, owner.org.ID, owner.env.ID)
		if err != nil || len(ws) != 2 {
			t.Fatalf("%d endpoints (%v), want 2", len(ws), err)
		}
		staging, err := app.store.As(models.Actor{OrgID: owner.org.ID, Role: models.RoleOwner, Name: "o"}).CreateEnvironment(ctx, "staging")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.As(models.Actor{OrgID: owner.org.ID, EnvID: staging.ID, Role: models.RoleOwner, Name: "o"}).
			CreateWebhook(ctx, models.WebhookInput{URL: "https://hooks.example.com/cd", Types: []string{"cluster.ready"}, Enabled: true}); err != nil {
			t.Errorf("another environment's endpoint for the URL: %v", err)
		}
		// "Every event type" on the form subscribes to all of them.
		rec = app.login(owner).post("/settings/webhooks", url.Values{"url": {"https://hooks.example.com/all"}, "all_types": {"1"}, "enabled": {"1"}})
		if rec.Code != http.StatusOK {
			t.Fatalf("every event type: %d", rec.Code)
		}
		ws, _ = app.store.WebhooksFor(ctx, owner.org.ID, owner.env.ID)
		for _, w := range ws {
			if w.URL == "https://hooks.example.com/all" && len(w.TypeList()) != len(models.PublicEventTypes) {
				t.Errorf("every event type subscribed %d of %d", len(w.TypeList()), len(models.PublicEventTypes))
			}
		}
	})
}

// X8: a failed test event is one try: it is in the log with its error, is
// not retried, and does not make the endpoint "failing" — only real
// deliveries do.
func TestWebhookFailedTestIsNotFailing(t *testing.T) {
	eachAppSet(t, loopbackWebhooks, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("tests@example.com", "Testers")
		key := apiKeyFor(t, app, owner)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String() + "/gone"
		l.Close() // nothing listens: the connection is refused
		var ep api.Webhook
		app.apiJSON(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"types":["cluster.ready"]}`, closed), http.StatusCreated, &ep)
		app.apiJSON(http.MethodPost, "/v1/webhooks/"+ep.ID+"/test", key, "", http.StatusAccepted, nil)
		job := webhookJob(app.store, "tests")
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		w, err := app.store.WebhookForEnv(ctx, owner.org.ID, owner.env.ID, ep.ID)
		if err != nil || w.FailingSince != nil {
			t.Fatalf("after a failed test event the endpoint is failing since %v (%v)", w.FailingSince, err)
		}
		var log api.WebhookAttempts
		app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log)
		if len(log.Attempts) != 1 || log.Attempts[0].Status != 0 || !strings.Contains(log.Attempts[0].Error, "refused") {
			t.Fatalf("log %+v", log.Attempts)
		}
		app.clock.Advance(time.Hour)
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if app.apiJSON(http.MethodGet, "/v1/webhooks/"+ep.ID+"/deliveries", key, "", http.StatusOK, &log); len(log.Attempts) != 1 {
			t.Errorf("a failed test event was retried: %d attempts", len(log.Attempts))
		}
		if d := doc(t, app.login(owner).get("/settings/webhooks")); strings.Contains(d.Text(), "Failing since") {
			t.Error("the page says the endpoint is failing after a test event")
		}
		// A real event that fails does.
		cl := launchFor(t, app, owner, "real")
		lifecycle(t, app.store, cl)
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if w, _ := app.store.WebhookForEnv(ctx, owner.org.ID, owner.env.ID, ep.ID); w.FailingSince == nil {
			t.Error("a failed real delivery did not mark the endpoint failing")
		}
	})
}

// webhookVerifyExample is the Go example of the webhooks page
// (views.WebhookVerifyGo), word for word: TestWebhookVerifyExampleGo
// checks the text is this function's and that it accepts what
// models.WebhookSignature signs.
func webhookVerifyExample(body []byte, header, secret string, now time.Time) bool {
	var t string
	var sigs []string
	for _, p := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(p, "=")
		if k == "t" {
			t = v
		} else if k == "v1" {
			sigs = append(sigs, v)
		}
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t + "."))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	return slices.ContainsFunc(sigs, func(s string) bool { return hmac.Equal([]byte(s), []byte(want)) })
}

func TestWebhookVerifyExampleGo(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "webhooks_hosted_test.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "webhookVerifyExample" {
			fn.Doc = nil
			if err := printer.Fprint(&src, fset, fn); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := strings.Replace(src.String(), "func webhookVerifyExample(", "func verify(", 1); got != views.WebhookVerifyGo {
		t.Errorf("the page's Go example is not the tested function:\n%s\n---\n%s", views.WebhookVerifyGo, got)
	}
	now := time.Now()
	body := []byte(`{"id":"evt_1","type":"cluster.ready"}`)
	header := models.WebhookSignature([]string{"whsec_old", "whsec_new"}, now, body)
	for _, c := range []struct {
		body   []byte
		secret string
		at     time.Time
		want   bool
	}{
		{body, "whsec_new", now, true},
		{body, "whsec_old", now.Add(4 * time.Minute), true},
		{body, "whsec_other", now, false},
		{append(body, ' '), "whsec_new", now, false},
		{body, "whsec_new", now.Add(6 * time.Minute), false},
	} {
		if got := webhookVerifyExample(c.body, header, c.secret, c.at); got != c.want {
			t.Errorf("verify(%s, %s, +%s) = %v", c.body, c.secret, c.at.Sub(now), got)
		}
	}
}
