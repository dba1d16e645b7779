package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// L7, U*: one rule for every question a page asks (views.Confirm): no
// template writes data-confirm itself, so every confirmed form names its
// consequence.
func TestConfirmsGoThroughOneRule(t *testing.T) {
	files, err := filepath.Glob("../views/*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "data-confirm=") {
				t.Errorf("%s:%d writes data-confirm itself: use views.Confirm(consequence, …)", filepath.Base(f), i+1)
			}
		}
	}
}

// L7, B6, X13 on the cluster page: what starts billing asks with the
// price (resume, add a worker, keep a cluster that failed verification),
// what loads the GPUs asks as a warning (run verification again), what
// destroys asks as a danger (terminate).
func TestClusterActionsConfirmByConsequence(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("asks@example.com", "Askers")
		c := app.login(owner)
		tok := apiKeyFor(t, app, owner)
		form := func(d *goquery.Document, action string) *goquery.Selection {
			t.Helper()
			f := d.Find(`form[action$="` + action + `"]`)
			if f.Length() != 1 {
				t.Fatalf("%d forms for %s", f.Length(), action)
			}
			return f
		}
		asks := func(f *goquery.Selection, kind views.Consequence, price string) {
			t.Helper()
			a, _ := f.Attr("action")
			got, _ := f.Attr("data-consequence")
			q, _ := f.Attr("data-confirm")
			detail, _ := f.Attr("data-confirm-detail")
			label, _ := f.Attr("data-confirm-label")
			if got != string(kind) || q == "" {
				t.Errorf("%s asks %q styled %q, want %q", a, q, got, kind)
			}
			if price != "" && (!strings.Contains(detail, price) || !strings.Contains(label, price)) {
				t.Errorf("%s starts billing without its price %s: %q / %q", a, price, detail, label)
			}
		}

		stopped := stoppedFor(t, app, owner, "stopped")
		asks(form(doc(t, c.get("/clusters/"+stopped.ID)), "/resume"), views.Bills, models.PriceUSD(stopped.USDPerHour)+"/h")

		ready := makeJoined(t, app, launchFor(t, app, owner, "ready"), true)
		d := doc(t, c.get("/clusters/"+ready.ID))
		asks(form(d, "/terminate"), views.Destroys, "")
		worker, _ := form(d, "/workers").Attr("data-confirm-detail")
		asks(form(d, "/workers"), views.Bills, "")
		if q, _ := form(d, "/workers").Attr("data-confirm"); !strings.Contains(q+worker, models.PriceUSD(ready.MachineHour)) {
			t.Errorf("add worker asks %q without the machine's price %s", q, models.PriceUSD(ready.MachineHour))
		}
		if code, out := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+ready.ID+"/verify", tok, `{"confirmDisruption": true}`); code != http.StatusAccepted {
			t.Fatalf("verify again: %d %v", code, out)
		}
		app.db.Model(&models.VerifyRun{}).Where("cluster_id = ?", ready.ID).Update("status", models.VerifyFailed)
		asks(form(doc(t, c.get("/clusters/"+ready.ID)), "/verify"), views.Stresses, "")

		// A launch's failed verification is not billed (X13): the page says
		// so, and that keeping the cluster starts billing.
		app.db.Model(&models.Cluster{}).Where("id = ?", ready.ID).Updates(map[string]any{"status": models.StatusDegraded,
			"last_error": "verification_failed:fabric", "unbilled_at": app.clock.Now()})
		d = doc(t, c.get("/clusters/"+ready.ID))
		asks(form(d, "/keep"), views.Bills, models.PriceUSD(ready.USDPerHour)+"/h")
		if advice := d.Find(`[data-testid=problem-advice]`).Text(); !strings.Contains(advice, "Nothing is billed yet") || strings.Contains(advice, "billing continues") {
			t.Errorf("a held cluster's advice: %q", advice)
		}
	})
}
