package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// eventPage is GET /v1/events decoded.
type eventPage struct {
	Events []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Cluster string `json:"cluster"`
		Status  string `json:"status"`
	} `json:"events"`
	Next    string `json:"next"`
	HasMore bool   `json:"hasMore"`
}

func getEvents(t *testing.T, app *testApp, tok, query string) (int, eventPage) {
	t.Helper()
	req := httptest.NewRequest("GET", "/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := app.do(req)
	var p eventPage
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("GET /v1/events%s: %v %s", query, err, rec.Body)
		}
	}
	return rec.Code, p
}

// allEvents pages through the feed from 0 with pages of limit.
func allEvents(t *testing.T, app *testApp, tok, extra string, limit int) (ids []string, types []string, clusters map[string]bool) {
	t.Helper()
	clusters = map[string]bool{}
	after := "0"
	for pages := 0; ; pages++ {
		code, p := getEvents(t, app, tok, fmt.Sprintf("?after=%s&limit=%d%s", after, limit, extra))
		if code != 200 || pages > 100 {
			t.Fatalf("page after %s: %d", after, code)
		}
		if len(p.Events) > limit {
			t.Fatalf("a page of %d events with limit %d", len(p.Events), limit)
		}
		for _, e := range p.Events {
			ids, clusters[e.Cluster] = append(ids, e.ID), true
			if e.Type != "" {
				types = append(types, e.Type)
			}
		}
		if n := len(p.Events); (n > 0 && p.Next != p.Events[n-1].ID) || (n == 0 && p.Next != after) {
			t.Fatalf("next %s after %s: not the last event's id, nor the cursor asked with on an empty page", p.Next, after)
		}
		after = p.Next
		if !p.HasMore {
			return ids, types, clusters
		}
	}
}

// X16, API1, API5, L8: GET /v1/events pages the key's
// environment's events by cursor, each with its public type; another
// environment's or organisation's key never sees them, and bad cursors,
// limits and clusters are refused.
func TestAPIEventsPaged(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("events@example.com", "Events")
		tok := apiKeyFor(t, app, acc)
		staging, err := app.store.CreateEnvironment(ctx, acc.org.ID, "staging")
		if err != nil {
			t.Fatal(err)
		}
		accStaging := acc
		accStaging.env = staging
		stagingTok := apiKeyFor(t, app, accStaging)
		other := app.signupAccount("other@example.com", "Other")
		otherTok := apiKeyFor(t, app, other)

		cl := launchFor(t, app, acc, "followed")
		hidden := launchFor(t, app, accStaging, "staging-one")
		makeJoined(t, app, cl, true)
		cur, _ := app.store.ClusterByID(ctx, cl.ID)
		for rank := 1; rank >= 0; rank-- { // the cluster degrades, then one more machine goes down
			if cur, err = app.store.MarkMachinesDown(ctx, cur, []models.DownMachine{{Rank: rank, Name: fmt.Sprintf("node-%d", rank), Seen: "stopped at the provider"}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := app.store.RequestTerminate(ctx, acc.org.ID, cl.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		stored, _ := app.store.EventsFor(ctx, cl.ID)
		var public []string
		for _, e := range stored {
			public = append(public, app.store.ClusterEventID(e))
		}

		for _, limit := range []int{1, 3, 500} {
			ids, types, clusters := allEvents(t, app, tok, "", limit)
			if !slices.Equal(ids, public) || len(clusters) != 1 || !clusters[cl.ID] {
				t.Fatalf("limit %d: %d events %v of %v, want the %d of %s in order", limit, len(ids), ids, clusters, len(stored), cl.ID)
			}
			if want := []string{"cluster.provisioning", "cluster.ready", "cluster.degraded", "node.down", "cluster.terminated"}; !slices.Equal(types, want) {
				t.Errorf("limit %d: types %v, want %v", limit, types, want)
			}
		}
		// The cursor: after an event, only the later ones.
		mid := len(stored) / 2
		if code, p := getEvents(t, app, tok, "?after="+public[mid]); code != 200 || len(p.Events) != len(stored)-mid-1 || p.Events[0].ID != public[mid+1] || p.HasMore {
			t.Errorf("after %s: %d %+v", public[mid], code, p)
		}
		if code, p := getEvents(t, app, tok, "?after="+public[len(public)-1]); code != 200 || len(p.Events) != 0 || p.Next != public[len(public)-1] {
			t.Errorf("after the last: %d %+v", code, p)
		}
		if _, _, clusters := allEvents(t, app, tok, "&cluster="+cl.ID, 2); len(clusters) != 1 {
			t.Errorf("cluster filter: %v", clusters)
		}

		// Scoping: the staging key sees only staging's cluster, another org nothing.
		if ids, _, clusters := allEvents(t, app, stagingTok, "", 50); len(ids) == 0 || len(clusters) != 1 || !clusters[hidden.ID] {
			t.Errorf("staging key: %v", clusters)
		}
		if ids, _, _ := allEvents(t, app, otherTok, "", 50); len(ids) != 0 {
			t.Errorf("another organisation's key saw %d events", len(ids))
		}
		for _, k := range []string{stagingTok, otherTok} {
			if code, _ := getEvents(t, app, k, "?cluster="+cl.ID); code != 404 {
				t.Errorf("another scope's cluster filter: %d, want 404", code)
			}
		}

		for _, bad := range []string{"?after=-1", "?after=x", "?after=evt_x", "?limit=0", "?limit=501", "?wait=61", "?cluster=cl_nope"} {
			if code, _ := getEvents(t, app, tok, bad); code != 422 && !(code == 404 && strings.Contains(bad, "cluster")) {
				t.Errorf("%s: %d", bad, code)
			}
		}
		if code, _ := getEvents(t, app, "", ""); code != 401 {
			t.Errorf("without a key: %d", code)
		}
	})
}

// sseEvent is one server-sent event as read off the wire.
type sseEvent struct {
	id, name, data, retry string
	comment               bool
}

// typ is the public type inside the event's data ("" for none).
func (e sseEvent) typ() string {
	var v struct{ Type string }
	_ = json.Unmarshal([]byte(e.data), &v)
	return v.Type
}

// readSSE reads a stream's events (and comments) onto a channel.
func readSSE(resp *http.Response) <-chan sseEvent {
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" || ev.comment || ev.retry != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.comment = true
			case strings.HasPrefix(line, "retry: "):
				ev.retry = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return out
}

// X16: the stream over a real connection, served by a second
// instance on the same database while the first writes the events: the
// backlog, new events as they are written, keep-alive comments that carry
// the stream past the server's WriteTimeout, and a reconnect with
// Last-Event-ID that resumes exactly after the last event received.
func TestAPIEventStream(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestApp(t, db)
		second := newTestAppWith(t, modelstest.SecondInstance(t, db), func(d *Deps) { d.KeepAlive = 300 * time.Millisecond })
		ctx := context.Background()
		acc := app.signupAccount("stream@example.com", "Stream")
		tok := apiKeyFor(t, app, acc)
		other := app.signupAccount("stranger@example.com", "Stranger")

		srv := httptest.NewUnstartedServer(validating(t, second.e))
		// Shorter than the keep-alive: only deadlines moved on keep the stream.
		srv.Config.WriteTimeout, srv.Config.ReadTimeout = 100*time.Millisecond, 100*time.Millisecond
		srv.Start()
		t.Cleanup(srv.Close) // after the streams close (cleanups run last first)
		open := func(ctx context.Context, lastID string, query ...string) <-chan sseEvent {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events"+strings.Join(query, ""), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Accept", "text/event-stream")
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := readSSE(resp)
			// The stream opens with the reconnection delay (X16).
			select {
			case ev := <-events:
				if ev.retry != "5000" || ev.data != "" {
					t.Fatalf("the stream opened with %+v, not retry: 5000", ev)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no retry: at the start of the stream")
			}
			return events
		}
		limit := time.After(30 * time.Second)
		next := func(events <-chan sseEvent, comments bool) sseEvent {
			t.Helper()
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						t.Fatal("the stream closed")
					}
					if ev.comment != comments || ev.retry != "" {
						continue
					}
					return ev
				case <-limit:
					t.Fatal("the stream stalled")
				}
			}
		}

		cl := launchFor(t, app, acc, "streamed")
		launchFor(t, app, other, "not-yours")
		sctx, cancel := context.WithCancel(ctx)
		events := open(sctx, "")
		first := next(events, false)
		// Unnamed (the default "message"), so onmessage gets it; the type is in the data.
		if first.name != "" || first.typ() != "cluster.provisioning" || !strings.Contains(first.data, `"cluster":"`+cl.ID+`"`) || !strings.Contains(first.data, `"type":"cluster.provisioning"`) {
			t.Fatalf("backlog: %+v", first)
		}
		// Quiet: keep-alive comments, each past the 100 ms timeouts.
		next(events, true)
		next(events, true)

		makeJoined(t, app, cl, false)
		var last sseEvent
		var ids []string
		for last.typ() != "cluster.ready" {
			last = next(events, false)
			ids = append(ids, last.id)
			if strings.Contains(last.data, "not-yours") {
				t.Fatal("another organisation's event in the stream")
			}
		}
		cancel() // the client goes

		// Written while nobody listens; the reconnect resumes after the last one received.
		if _, err := app.store.RequestTerminate(ctx, acc.org.ID, cl.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.MarkTerminated(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		stored, _ := app.store.EventsFor(ctx, cl.ID)
		var want []string
		seen := false
		for _, e := range stored {
			if seen {
				want = append(want, app.store.ClusterEventID(e))
			}
			seen = seen || app.store.ClusterEventID(e) == last.id
		}
		again := open(ctx, last.id)
		var got []string
		for len(got) < len(want) {
			got = append(got, next(again, false).id)
		}
		if !slices.Equal(got, want) {
			t.Errorf("resumed after %s: %v, want %v (before: %v)", last.id, got, want, ids)
		}

		// ?named=true names each event with a public type by it, for addEventListener clients.
		named := open(ctx, "", "?named=true")
		if ev := next(named, false); ev.name != "cluster.provisioning" || ev.typ() != ev.name {
			t.Errorf("named stream: %+v", ev)
		}
		req := httptest.NewRequest("GET", "/v1/events?named=maybe", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "text/event-stream")
		if rec := app.do(req); rec.Code != 422 || !strings.Contains(rec.Body.String(), `"named"`) {
			t.Errorf("named=maybe: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestAbuseEventStreamsBounded: one API key holds at most MaxStreamsPerKey event
// streams and long polls at once, one organisation MaxStreamsPerOrg; one
// more gets 429 with Retry-After, another organisation is not affected,
// and a stream whose client left gives its slot back (A4, X16).
func TestAbuseEventStreamsBounded(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestApp(t, db)
		acc := app.signupAccount("streams@example.com", "Streams")
		tok := apiKeyFor(t, app, acc)
		other := apiKeyFor(t, app, app.signupAccount("other@example.com", "Other"))
		srv := httptest.NewServer(app.e)
		t.Cleanup(srv.Close)
		open := func(key, query string, stream bool) (*http.Response, context.CancelFunc) {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events"+query, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			if stream {
				req.Header.Set("Accept", "text/event-stream")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			t.Cleanup(func() { cancel(); resp.Body.Close() })
			return resp, cancel
		}
		var cancels []context.CancelFunc
		for range MaxStreamsPerKey - 1 {
			resp, cancel := open(tok, "", true)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d", resp.StatusCode)
			}
			cancels = append(cancels, cancel)
		}
		// A long poll counts too: the tenth slot, held until its wait ends.
		done := make(chan int, 1)
		go func() {
			resp, _ := open(tok, "?wait=60", false)
			done <- resp.StatusCode
		}()
		deadline := time.Now().Add(30 * time.Second) // a bound for a hung test, not a wait
		var resp *http.Response
		for {
			resp, _ = open(tok, "", true)
			if resp.StatusCode == http.StatusTooManyRequests || time.Now().After(deadline) {
				break
			}
			// the long poll had not started yet: this stream holds the slot (kept open)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("stream %d of one key: %d, Retry-After %q", MaxStreamsPerKey+1, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if resp, _ := open(tok, "?wait=5", false); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a long poll beyond the bound: %d", resp.StatusCode)
		}
		if resp, _ := open(tok, "", false); resp.StatusCode != http.StatusOK {
			t.Fatalf("a plain page of events is not bounded: %d", resp.StatusCode)
		}
		if resp, _ := open(other, "", true); resp.StatusCode != http.StatusOK {
			t.Fatalf("another organisation's stream: %d", resp.StatusCode)
		}
		// The organisation's bound: its other keys fill it, one more is refused.
		ctx := context.Background()
		newKey := func(name string) string {
			_, key, err := app.store.CreateAPIKey(ctx, acc.org.ID, acc.env.ID, acc.user.ID, name)
			if err != nil {
				t.Fatal(err)
			}
			return key
		}
		for i := 1; i < MaxStreamsPerOrg/MaxStreamsPerKey; i++ {
			key := newKey(fmt.Sprintf("k%d", i))
			for range MaxStreamsPerKey {
				if resp, _ := open(key, "", true); resp.StatusCode != http.StatusOK {
					t.Fatalf("key %d: %d before the organisation's bound", i, resp.StatusCode)
				}
			}
		}
		if resp, _ := open(newKey("last"), "", true); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(readAll(resp), "organisation") {
			t.Fatalf("beyond the organisation's %d: %d", MaxStreamsPerOrg, resp.StatusCode)
		}
		// A client that leaves gives its slot back.
		cancels[0]()
		for {
			resp, _ := open(tok, "", true)
			if resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a closed stream's slot never came back")
			}
			resp.Body.Close()
			runtime.Gosched()
		}
	})
}

func readAll(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestAbuseOpaqueEventIDs (X19): two organisations' events interleave in
// one table, yet neither learns anything from its ids: they are opaque
// (not numbers, not ordered across organisations, never another's), the
// cursor does not move on another organisation's events, another's ids and
// the numeric cursors of before are refused, a webhook's event id is the
// feed's, and Last-Event-ID resumes exactly after the event named.
func TestAbuseOpaqueEventIDs(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		a, b := app.signupAccount("ids-a@example.com", "Ids A"), app.signupAccount("ids-b@example.com", "Ids B")
		tokA, tokB := apiKeyFor(t, app, a), apiKeyFor(t, app, b)
		if _, err := app.store.As(models.Actor{OrgID: a.org.ID, EnvID: a.env.ID, Role: models.RoleOwner, Name: "o"}).
			CreateWebhook(ctx, models.WebhookInput{URL: "https://hooks.example/a", Types: models.PublicEventTypes, Enabled: true}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 { // interleaved: the rows' ids alternate between the organisations
			launchFor(t, app, a, fmt.Sprintf("a%d", i))
			launchFor(t, app, b, fmt.Sprintf("b%d", i))
		}
		idsA, _, _ := allEvents(t, app, tokA, "", 3)
		idsB, _, _ := allEvents(t, app, tokB, "", 3)
		if len(idsA) < 4 || len(idsB) < 4 {
			t.Fatalf("events: %d and %d", len(idsA), len(idsB))
		}
		shape := regexp.MustCompile(`^evt_[0-9a-z]{26}$`)
		var rows []models.ClusterEvent
		if err := app.store.DB().Order("id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var inOrder []string // every public id, in the order the rows were written
		seen := map[string]bool{}
		for _, e := range rows {
			id := app.store.ClusterEventID(e)
			inOrder = append(inOrder, id)
			if !shape.MatchString(id) || seen[id] {
				t.Errorf("row %d: public id %q is not opaque and unique", e.ID, id)
			}
			seen[id] = true
		}
		if slices.IsSorted(inOrder) {
			t.Errorf("public ids sort in the order the platform wrote them: %v", inOrder)
		}
		for _, id := range idsB {
			if slices.Contains(idsA, id) {
				t.Errorf("%s is an id of both organisations", id)
			}
		}

		// The cursor stays put while only another organisation writes.
		lastB := idsB[len(idsB)-1]
		launchFor(t, app, a, "a-more")
		if code, p := getEvents(t, app, tokB, "?after="+lastB); code != 200 || len(p.Events) != 0 || p.Next != lastB {
			t.Errorf("B after its last event while A writes: %d %+v, want no events and the same cursor", code, p)
		}
		// Another organisation's id, a forged one, the numeric cursors of before: refused, with a reason.
		for query, want := range map[string]string{"?after=" + idsA[0]: "this feed gave you", "?after=1": "opaque",
			"?after=evt_" + strings.Repeat("0", 26): "this feed gave you"} {
			req := httptest.NewRequest("GET", "/v1/events"+query, nil)
			req.Header.Set("Authorization", "Bearer "+tokB)
			if rec := app.do(req); rec.Code != 422 || !strings.Contains(rec.Body.String(), want) {
				t.Errorf("B %s: %d %s", query, rec.Code, rec.Body)
			}
		}
		// Last-Event-ID resumes after the event it names, nothing lost or repeated.
		for k := range idsB {
			req := httptest.NewRequest("GET", "/v1/events?limit=500", nil)
			req.Header.Set("Authorization", "Bearer "+tokB)
			req.Header.Set("Last-Event-ID", idsB[k])
			var p eventPage
			if rec := app.do(req); rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
				t.Fatalf("Last-Event-ID %s: %d %s", idsB[k], rec.Code, rec.Body)
			}
			var got []string
			for _, e := range p.Events {
				got = append(got, e.ID)
			}
			if want := idsB[k+1:]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("resumed after %s: %v, want %v", idsB[k], got, want)
			}
		}
		// A webhook's event id is the feed's id of the same event.
		var deliveries []models.WebhookDelivery
		if err := app.store.DB().Where("org_id = ? AND cluster_id <> ''", a.org.ID).Find(&deliveries).Error; err != nil || len(deliveries) == 0 {
			t.Fatalf("deliveries: %d %v", len(deliveries), err)
		}
		idsA, _, _ = allEvents(t, app, tokA, "", 500)
		for _, d := range deliveries {
			if !slices.Contains(idsA, d.EventID) {
				t.Errorf("webhook event id %s is not an id of the feed %v", d.EventID, idsA)
			}
		}
	})
}

// TestAbuseLogStreamsBounded (X19): log streams count with event streams
// against the same bounds: one API key's MaxStreamsPerKey log streams
// leave it no event stream and no further log stream (429 with
// Retry-After), another organisation is not affected, and a log stream
// whose client left gives its slot back.
func TestAbuseLogStreamsBounded(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestApp(t, db)
		acc := app.signupAccount("logstreams@example.com", "Logs")
		other := app.signupAccount("calm-logs@example.com", "Calm")
		tok, otherTok := apiKeyFor(t, app, acc), apiKeyFor(t, app, other)
		cl, oc := launchFor(t, app, acc, "logged"), launchFor(t, app, other, "calm")
		srv := httptest.NewServer(app.e)
		t.Cleanup(srv.Close)
		open := func(key, path string) (*http.Response, context.CancelFunc) {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			t.Cleanup(func() { cancel(); resp.Body.Close() })
			return resp, cancel
		}
		logs := "/v1/gpu/clusters/" + cl.ID + "/logs?node=0"
		var first context.CancelFunc
		for i := range MaxStreamsPerKey {
			resp, cancel := open(tok, logs)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("log stream %d: %d", i+1, resp.StatusCode)
			}
			if first == nil {
				first = cancel
			}
		}
		for _, path := range []string{logs, "/v1/events"} {
			if resp, _ := open(tok, path); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s beyond the key's %d streams: %d", path, MaxStreamsPerKey, resp.StatusCode)
			}
		}
		if resp, _ := open(otherTok, "/v1/gpu/clusters/"+oc.ID+"/logs?node=0"); resp.StatusCode != http.StatusOK {
			t.Fatalf("another organisation's log stream: %d", resp.StatusCode)
		}
		first()
		deadline := time.Now().Add(30 * time.Second) // a bound for a hung test, not a wait
		for {
			resp, _ := open(tok, logs)
			if resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a closed log stream's slot never came back")
			}
			resp.Body.Close()
			runtime.Gosched()
		}
	})
}
