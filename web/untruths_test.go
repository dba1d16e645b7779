package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// O3: a price ceiling that leaves nothing says what the cheapest offer
// matching the other filters costs, and its link lifts the ceiling to it.
func TestOffersCeilingSaysCheapestMatch(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		community := testOffer("comm", "home", 8, 500_000, intp(10))
		community.Community = true // cheaper, but not asked for: not the answer
		app.seedOffers(testOffer("big", "us-east", 8, 2_490_000, nil), testOffer("pricier", "eu-west", 8, 2_990_000, nil), community)

		r := app.get("/offers?accelerator=H100_80GB&nodes=2&max_price=5")
		if r.Code != http.StatusOK {
			t.Fatalf("status %d", r.Code)
		}
		d := doc(t, r)
		got := strings.Join(strings.Fields(d.Find(`[data-testid=no-offers] [data-testid=cheapest-match]`).Text()), " ")
		// 2 × (8 × $2.49 + 500 GB × $0.0001) = $39.94 per hour.
		if !strings.Contains(got, "Your ceiling is $5.00 per hour; the cheapest offer matching the other filters costs $39.94 per hour") {
			t.Errorf("the empty state says %q", got)
		}
		lift := d.Find(`[data-testid=lift-ceiling]`)
		if strings.TrimSpace(lift.Text()) != "Lift the ceiling to $39.94" {
			t.Errorf("lift link %q", lift.Text())
		}
		u, err := url.Parse(lift.AttrOr("href", ""))
		if err != nil || u.Path != "/offers" || u.Query().Get("max_price") != "39.94" || u.Query().Get("nodes") != "2" || u.Query().Get("accelerator") != "H100_80GB" {
			t.Fatalf("lift link goes to %q", lift.AttrOr("href", ""))
		}
		// Followed, the ceiling shows the cheapest match and not the pricier.
		d = doc(t, app.get(u.String()))
		if d.Find(`#offer-grid #offer-sim\:big, [data-testid=offer-grid] #offer-sim\:big`).Length() != 1 || d.Find(`[data-testid=offer-grid] #offer-sim\:pricier`).Length() != 0 {
			t.Errorf("after lifting: big %d, pricier %d", d.Find(`[data-testid=offer-grid] #offer-sim\:big`).Length(), d.Find(`[data-testid=offer-grid] #offer-sim\:pricier`).Length())
		}
		if d.Find(`[data-testid=no-offers]`).Length() != 0 {
			t.Error("the lifted ceiling still shows nothing")
		}
		// Without a ceiling an empty answer names no price.
		d = doc(t, app.get("/offers?accelerator=H100_80GB&nodes=2&gpus_per_node=1"))
		if d.Find(`[data-testid=no-offers]`).Length() != 1 || d.Find(`[data-testid=cheapest-match]`).Length() != 0 {
			t.Errorf("an empty answer without a ceiling: %q", d.Find(`[data-testid=no-offers]`).Text())
		}
	})
}

// U*: a customer's error banner and error page keep the request's id out
// of the sentence, behind a closed details toggle, whole and copyable.
func TestRequestIDsBehindDetails(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	c := app.login(app.signupAccount("refs@example.com", "Refs Lab"))
	for _, tc := range []struct {
		name    string
		rec     *httptest.ResponseRecorder
		message string
	}{
		{"htmx banner", c.get("/clusters/nope", "HX-Request", "true"), `[data-testid=flash]`},
		{"error page", c.get("/clusters/nope"), `[data-testid=error-page]`},
	} {
		rid := tc.rec.Header().Get(echo.HeaderXRequestID)
		if rid == "" || tc.rec.Code != http.StatusNotFound {
			t.Fatalf("%s: status %d, request id %q", tc.name, tc.rec.Code, rid)
		}
		d := doc(t, tc.rec)
		box := d.Find(tc.message)
		ref := box.Find(`details[data-testid=request-ref]`)
		if ref.Length() != 1 || ref.Is(`[open]`) {
			t.Fatalf("%s: %d closed details toggles in %q", tc.name, ref.Length(), box.Text())
		}
		if got := ref.Find(`code[data-testid=request-id]`).Text(); got != rid {
			t.Errorf("%s: the reference reads %q, want %q", tc.name, got, rid)
		}
		if ref.Find(`[data-copy=request-`+rid+`]`).Length() != 1 || ref.Find(`#request-`+rid).Length() != 1 {
			t.Errorf("%s: no copy button for the reference", tc.name)
		}
		outside := box.Clone()
		outside.Find(`details`).Remove()
		if strings.Contains(outside.Text(), rid) {
			t.Errorf("%s: the id is in the sentence: %q", tc.name, outside.Text())
		}
	}
}

// U*: a cluster's Logs tab names nodes and steps for people, never the
// server's task ids, and offers the node's log as a text file through the
// caller's organisation only, bounded in size. Real agents install Slurm
// on a simulated cloud and ship their lines over HTTP.
func TestClusterLogsHumanAndDownload(t *testing.T) {
	j := newJourney(t)
	app := j.app
	bg := context.Background()
	acc := app.signupAccount("logs@example.com", "Logs Lab")
	if _, err := app.store.Deposit(bg, acc.org.ID, 1000*models.Micro, "logs-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(bg, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:h100.8x.ib"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(bg, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email,
		Workload: models.Workload{Name: "logs", Software: "slurm"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60 && j.cluster(acc.org.ID, cl.ID).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
	}
	if st := j.cluster(acc.org.ID, cl.ID).Status; st != models.StatusReady {
		t.Fatalf("the cluster is %s", st)
	}
	var taskIDs []string
	if err := app.db.Table("software_tasks").Where("cluster_id = ?", cl.ID).Pluck("id", &taskIDs).Error; err != nil || len(taskIDs) == 0 {
		t.Fatalf("software tasks: %v, %v", taskIDs, err)
	}
	c := app.login(acc)
	d := doc(t, c.get("/clusters/"+cl.ID+"?tab=logs"))
	var opts []string
	d.Find(`#log-node option`).Each(func(_ int, s *goquery.Selection) { opts = append(opts, strings.TrimSpace(s.Text())) })
	if strings.Join(opts, ",") != "node-0 · ready,node-1 · ready" {
		t.Errorf("the log's node picker reads %q", opts)
	}
	if href := d.Find(`[data-testid=log-download]`).AttrOr("href", ""); href != "/clusters/"+cl.ID+"/logs/download?node=0" {
		t.Errorf("download link %q", href)
	}
	if href := doc(t, c.get("/clusters/"+cl.ID+"/logs/panel?node=1", "HX-Request", "true")).Find(`[data-testid=log-download]`).AttrOr("href", ""); href != "/clusters/"+cl.ID+"/logs/download?node=1" {
		t.Errorf("node-1's panel links %q", href)
	}
	for rank := range 2 {
		r := c.get(fmt.Sprintf("/clusters/%s/logs/download?node=%d", cl.ID, rank))
		if r.Code != http.StatusOK || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/plain") ||
			r.Header().Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="logs-node-%d.log"`, rank) {
			t.Fatalf("node-%d download: %d %q %q", rank, r.Code, r.Header().Get("Content-Type"), r.Header().Get("Content-Disposition"))
		}
		body := r.Body.String()
		if !strings.Contains(body, "Installing Slurm (") || !strings.Contains(body, fmt.Sprintf("checked in as node-%d", rank)) {
			t.Errorf("node-%d's log:\n%s", rank, body)
		}
		for _, id := range append(taskIDs, cl.ID) {
			if strings.Contains(body, id) {
				t.Errorf("node-%d's log shows the internal id %s:\n%s", rank, id, body)
			}
		}
	}
	// Another organisation's member gets nothing of it.
	other := app.login(app.signupAccount("other@example.com", "Other Lab"))
	if r := other.get("/clusters/" + cl.ID + "/logs/download?node=0"); r.Code != http.StatusNotFound || strings.Contains(r.Body.String(), "Slurm") {
		t.Errorf("another organisation's download: %d", r.Code)
	}
	if r := c.get("/clusters/" + cl.ID + "/logs/download?node=7"); r.Code != http.StatusUnprocessableEntity {
		t.Errorf("a node out of range: %d", r.Code)
	}
}

// The log file keeps the newest lines that fit its bound and says how many
// older ones it left out.
func TestLogFileBounded(t *testing.T) {
	var lines []models.NodeLogLine
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		lines = append(lines, models.NodeLogLine{At: at.Add(time.Duration(i) * time.Second), Text: fmt.Sprintf("line %03d %s", i, strings.Repeat("x", 80))})
	}
	out := string(logFile(models.Cluster{Name: "b"}, "node-0", lines, 2048))
	if len(out) > 2048 {
		t.Fatalf("%d bytes over the 2048 bound", len(out))
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(got[1], "# the ") || !strings.Contains(got[1], "oldest lines are left out") || !strings.Contains(got[len(got)-1], "line 099") {
		t.Errorf("bounded file:\n%s", out)
	}
	if all := string(logFile(models.Cluster{Name: "b"}, "node-0", lines, 1<<20)); strings.Contains(all, "left out") || !strings.Contains(all, "2026-12-01 10:00:00  line 000") {
		t.Errorf("unbounded file starts %.200q", all)
	}
}

// U*: the operators' private-offer form leads with the customer, the
// shape and the price, ids after; and a status saved in the inbox brings
// the counts beside the filters back with the row.
func TestAdminQuotesReadAsPeopleAndCountsFollow(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		tok := apiKeyFor(t, app, cust)
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		code, qr := apiJSON(t, app, http.MethodPost, "/v1/quote-requests", tok,
			`{"accelerator":"H100_80GB","nodes":4,"gpusPerNode":8,"fabric":"infiniband","startDate":"2026-12-10","durationDays":28}`)
		if code != 201 {
			t.Fatalf("quote request: %d %v", code, qr)
		}
		id := qr["id"].(string)

		d := doc(t, oc.get("/admin/quote-requests/"+id+"/private-offer"))
		if h1 := strings.TrimSpace(d.Find(`[data-testid=admin-private-offer-page] h1`).Text()); !strings.HasPrefix(h1, "Private offer for Ada Labs: 4 × 8") || strings.Contains(h1, id) {
			t.Errorf("heading %q", h1)
		}
		opt := strings.TrimSpace(d.Find(`#offer_id option`).First().Text())
		if !strings.HasPrefix(opt, "Loc us-east · 8 GPUs H100 80GB") || !strings.Contains(opt, "provider price $19.97/machine-h") || !strings.HasSuffix(opt, "· sim:h100x8") {
			t.Errorf("the offer choice reads %q", opt)
		}

		counts := func(d *goquery.Document) string {
			var out []string
			d.Find(`#status-filters [data-testid=status-filter]`).Each(func(_ int, s *goquery.Selection) {
				out = append(out, strings.Join(strings.Fields(s.Text()), " "))
			})
			return strings.Join(out, ", ")
		}
		if got := counts(doc(t, oc.get("/admin/quote-requests"))); got != "All 1, New 1, Contacted 0, Quoted 0, Won 0, Lost 0" {
			t.Fatalf("counts before %q", got)
		}
		rec := oc.post("/admin/quote-requests/"+id+"/status", url.Values{"status": {"contacted"}}, "HX-Request", "true",
			"HX-Current-URL", "http://127.0.0.1/admin/quote-requests?status=new")
		if rec.Code != http.StatusOK {
			t.Fatalf("save: %d %s", rec.Code, rec.Body)
		}
		// A bare <tr> is dropped by an HTML parser outside a table, as
		// htmx wraps it: read the answer inside one.
		d, err := goquery.NewDocumentFromReader(strings.NewReader("<table><tbody>" + rec.Body.String() + "</tbody></table>"))
		if err != nil {
			t.Fatal(err)
		}
		if d.Find(`#qr-`+id).Length() != 1 || d.Find(`#status-filters[hx-swap-oob=true]`).Length() != 1 {
			t.Fatalf("the answer holds the row %d and the counts %d", d.Find(`#qr-`+id).Length(), d.Find(`#status-filters[hx-swap-oob=true]`).Length())
		}
		if got := counts(d); got != "All 1, New 0, Contacted 1, Quoted 0, Won 0, Lost 0" {
			t.Errorf("counts after the save %q", got)
		}
		if got := d.Find(`#status-filters [aria-current=page]`).Text(); !strings.HasPrefix(got, "New") {
			t.Errorf("the filter shown is %q, want New (the page's)", got)
		}
	})
}
